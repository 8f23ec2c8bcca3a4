import Foundation
@testable import PacerNode
import PacerCore
import PacerDisplays
import PacerTestSupport
import Testing

@Suite("Display outputs configuration")
struct DisplayConfigurationTests {
    func load(_ yaml: String) throws(ConfigurationError) -> NodeConfiguration {
        let directory = try! makeTemporaryDirectory("pacer-display-config")
        let file = directory.appendingPathComponent("pacer.yaml")
        try! yaml.write(to: file, atomically: false, encoding: .utf8)
        return try NodeConfiguration.load(flags: .init(configFile: file.path), environment: [:], hostname: "node")
    }

    /// The problems a file gives, as `KEY: REASON`.
    func problems(_ yaml: String) -> [String] {
        do {
            _ = try load(yaml)
            return []
        } catch {
            return error.problems.map { "\($0.key): \($0.reason)" }
        }
    }

    @Test("no displays without the section; two lines make an AWTRIX clock with the defaults")
    func defaults() throws {
        #expect(try load("").displays.isEmpty)
        let config = try load("""
            displays:
              - {type: awtrix, prefix: awtrix_gym, timer: main}
            """)
        var expected = AwtrixDisplay(prefix: "awtrix_gym", timers: ["main"])
        expected.app = "pacer"
        #expect(config.displays == [.awtrix(expected)])
        #expect(expected.appTopic(for: "main") == "awtrix_gym/custom/pacer")
    }

    @Test("every key of both types is read")
    func everyKey() throws {
        let config = try load("""
            displays:
              - type: awtrix
                prefix: clocks/tc001
                timers: [main, kitchen]
                app: timer
                switch_to: true
                lifetime: 30s
                notify: true
                rtttl: "beep:d=4,o=5,b=100:c6"
                icons: {work: "1234", rest: fire}
              - type: wled
                topic: wled/rig
                timer: main
                segment: 2
                brightness: 90
                leds: 60
                idle: dim
            """)
        guard case .awtrix(let a) = config.displays.first, case .wled(let w) = config.displays.last else {
            Issue.record("expected an AWTRIX and a WLED output, got \(config.displays)")
            return
        }
        #expect(a.prefix == "clocks/tc001" && a.timers == ["main", "kitchen"] && a.app == "timer")
        #expect(a.switchTo && a.lifetimeSeconds == 30 && a.notify && a.rtttl == "beep:d=4,o=5,b=100:c6" && a.sound == nil)
        #expect(a.icons == [.work: "1234", .rest: "fire"])
        #expect(a.appTopic(for: "kitchen") == "clocks/tc001/custom/timer_kitchen")
        #expect(w.topic == "wled/rig" && w.timer == "main" && w.segment == 2 && w.brightness == 90)
        #expect(w.progressLEDs == 60 && w.idle == .dim && w.apiTopic == "wled/rig/api")
    }

    @Test("a bad value names its key and says what would do", arguments: [
        ("displays: {type: awtrix}", "displays: expected a list"),
        ("displays: [{prefix: a, timer: main}]", "displays[0].type: missing: give awtrix or wled"),
        ("displays: [{type: lametric, prefix: a, timer: main}]", "displays[0].type: expected awtrix or wled, got 'lametric'"),
        ("displays: [{type: awtrix, timer: main}]", "displays[0].prefix: missing"),
        ("displays: [{type: awtrix, prefix: 'awtrix/#', timer: main}]", "displays[0].prefix: expected a topic without '+', '#'"),
        ("displays: [{type: awtrix, prefix: a}]", "displays[0].timers: missing"),
        ("displays: [{type: awtrix, prefix: a, timers: []}]", "displays[0].timers: list at least one timer id"),
        ("displays: [{type: awtrix, prefix: a, timer: main, timers: [x]}]", "displays[0].timers: give either timer or timers"),
        ("displays: [{type: awtrix, prefix: a, timers: [Main]}]", "displays[0].timers[0]: a timer id is 1 to 64 characters"),
        ("displays: [{type: awtrix, prefix: a, timers: [a, ab]}]", "displays[0].timers: the apps 'pacer_a' and 'pacer_ab' clash"),
        ("displays: [{type: awtrix, prefix: a, timer: main, app: 'my app'}]", "displays[0].app: an app name is one topic level"),
        ("displays: [{type: awtrix, prefix: a, timer: main, lifetime: 1s}]", "displays[0].lifetime: must be between"),
        ("displays: [{type: awtrix, prefix: a, timer: main, sound: alarm, rtttl: x}]", "displays[0].rtttl: give either sound"),
        ("displays: [{type: awtrix, prefix: a, timer: main, icons: {wrok: 1}}]", "displays[0].icons.wrok: unknown key"),
        ("displays: [{type: awtrix, prefix: a, timer: main, colour: red}]", "displays[0].colour: unknown key"),
        ("displays: [{type: wled, timer: main}]", "displays[0].topic: missing"),
        ("displays: [{type: wled, topic: wled/rig}]", "displays[0].timer: missing"),
        ("displays: [{type: wled, topic: wled/rig, timer: main, brightness: 300}]", "displays[0].brightness: must be between 1 and 255, got 300"),
        ("displays: [{type: wled, topic: wled/rig, timer: main, segment: -1}]", "displays[0].segment: must be between 0 and 31"),
        ("displays: [{type: wled, topic: wled/rig, timer: main, leds: 0}]", "displays[0].leds: must be between 1 and 1500"),
        ("displays: [{type: wled, topic: wled/rig, timer: main, idle: glow}]", "displays[0].idle: expected off or dim, got 'glow'"),
        ("displays: [{type: wled, topic: '/wled', timer: main}]", "displays[0].topic: expected a topic"),
    ])
    func badValue(yaml: String, expected: String) {
        let found = problems(yaml)
        #expect(found.contains { $0.hasPrefix(expected) }, "\(yaml) gave \(found)")
    }

    @Test("a problem carries the file's line")
    func line() {
        do {
            _ = try load("""
                node: gym
                displays:
                  - type: wled
                    topic: wled/rig
                    timer: main
                    brightness: 0
                """)
            Issue.record("expected a problem")
        } catch {
            #expect(error.problems.map(\.line) == [6])
        }
    }
}

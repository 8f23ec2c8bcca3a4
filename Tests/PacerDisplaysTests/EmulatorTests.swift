import Foundation
import PacerCore
import PacerDisplays
import PacerTestSupport
import Testing

@Suite("The AWTRIX and WLED emulators, fed directly")
struct EmulatorTests {
    let display = AwtrixDisplay(prefix: "awtrix_gym", timers: ["main"])

    /// The emulator after the outputs' messages for the tabata at `now` (started at t0).
    func clock(at now: Millis, _ configure: (inout AwtrixDisplay) -> Void = { _ in }) throws -> AwtrixEmulator {
        var shown = display
        configure(&shown)
        var outputs = DisplayOutputs([.awtrix(shown)])
        var timer = try TimerFixture.tabata()
        timer.start(at: t0)
        timer.advance(to: now)
        var emulator = AwtrixEmulator(prefix: "awtrix_gym")
        for message in outputs.update(timer.snapshot(now), now: now) {
            emulator.receive(topic: message.topic, payload: message.payload, now: now)
        }
        return emulator
    }

    @Test("an app's matrix: the digits and round as pixels in their colours, the bar on the bottom row")
    func matrix() throws {
        let emulator = try clock(at: t0 + 5_500)
        let matrix = emulator.matrix(at: t0 + 5_500)
        #expect(matrix.text() == "0:15 1/8", "\n\(matrix.art)")
        #expect(matrix.textColour == DisplayPalette.work.pixel)
        let bar = (0..<32).map { matrix[$0, 7] }
        #expect(bar.filter { $0 == DisplayPalette.work.pixel }.count == 8, "27 % of 32 columns")
        #expect(bar.dropFirst(8).allSatisfy { $0 == DisplayPalette.work.scaled(0.15).pixel })
        // The round is white.
        #expect((0..<32).contains { x in (1...5).contains { matrix[x, $0] == Pixel(255, 255, 255) } })

        let rest = try clock(at: t0 + 21_000).matrix(at: t0 + 21_000)
        #expect(rest.text() == "0:09 1/8" && rest.textColour == DisplayPalette.rest.pixel)

        let withIcon = try clock(at: t0) { $0.icons = [.work: "13"] }.matrix(at: t0)
        #expect(withIcon.text(from: 9) == "0:20")
        #expect(withIcon[0, 0].isLit, "the icon's place")
    }

    @Test("lifetime: an app not updated for its lifetime goes by itself; one refreshed stays")
    func lifetime() throws {
        var emulator = try clock(at: t0)
        #expect(emulator.app("pacer") != nil)
        emulator.advance(to: t0 + 10_000)
        #expect(emulator.app("pacer") != nil, "not yet: exactly the lifetime")
        emulator.advance(to: t0 + 10_001)
        #expect(emulator.apps.isEmpty && !emulator.matrix(at: t0 + 10_001).pixels.contains { $0.isLit }, "a dead node leaves a dark clock")

        var kept = try clock(at: t0)
        let payload = Array(#"{"text":"0:20","lifetime":10}"#.utf8)
        kept.receive(topic: "awtrix_gym/custom/pacer", payload: payload, now: t0 + 8_000)
        kept.advance(to: t0 + 17_000)
        #expect(kept.app("pacer")?.plainText == "0:20")
    }

    @Test("an empty payload removes every app whose name begins with it; notify shows for its duration; switch")
    func api() {
        var emulator = AwtrixEmulator(prefix: "clock")
        for name in ["pacer_a", "pacer_b", "weather"] {
            emulator.receive(topic: "clock/custom/\(name)", payload: Array(#"{"text":"1"}"#.utf8), now: t0)
        }
        emulator.receive(topic: "clock/switch", payload: Array(#"{"name":"pacer_b"}"#.utf8), now: t0)
        #expect(emulator.shown?.name == "pacer_b")
        emulator.receive(topic: "clock/notify", payload: Array(#"{"text":"Time's up","duration":5,"rtttl":"x:d=4:c"}"#.utf8), now: t0)
        #expect(emulator.matrix(at: t0).text() == "TIME'S UP")
        #expect(emulator.notifications.first?.rtttl == "x:d=4:c")
        emulator.advance(to: t0 + 5_000)
        #expect(emulator.notification == nil && emulator.shown?.name == "pacer_b")
        emulator.receive(topic: "clock/custom/pacer", payload: [], now: t0 + 6_000)
        #expect(emulator.apps.map(\.name) == ["weather"])
        emulator.receive(topic: "clock/custom/x", payload: Array("not json".utf8), now: t0 + 6_000)
        #expect(emulator.rejected == 1 && emulator.apps.count == 1)
    }

    @Test("WLED: the JSON state sets colours and brightness; a fill freezes LEDs until the segment changes")
    func wled() throws {
        var display = WLEDDisplay(topic: "wled/rig", timer: "main")
        display.brightness = 255
        display.progressLEDs = 4
        var outputs = DisplayOutputs([.wled(display)])
        var strip = WLEDEmulator(topic: "wled/rig", ledCount: 4)
        var timer = try TimerFixture(["kind": "countdown", "duration": "10s"])
        timer.start(at: t0)
        func send(_ now: Millis) {
            timer.advance(to: now)
            for message in outputs.update(timer.snapshot(now), now: now) {
                strip.receive(topic: message.topic, payload: message.payload, now: now)
            }
        }
        send(t0)
        #expect(strip.on && strip.brightness == 255)
        #expect(strip.pixels == Array(repeating: DisplayPalette.work.scaled(0.1).pixel, count: 4))
        send(t0 + 5_000)
        #expect(strip.pixels == [DisplayPalette.work.pixel, DisplayPalette.work.pixel]
            + Array(repeating: DisplayPalette.work.scaled(0.1).pixel, count: 2))
        send(t0 + 7_500)
        #expect(strip.segments[0]?.brightness == 64 && strip.lastTransition == 4)
        #expect(strip.pixels[0] == DisplayPalette.work.pixel.scaled(64))
        send(t0 + 10_000)
        #expect(strip.pixels.allSatisfy { !$0.isLit }, "finished: off")

        strip.apply(["seg": ["i": [0, "FF0000"]]])
        #expect(strip.segments[0]?.frozen != nil)

        // A strip lit by a node that then dies: its nightlight, armed with every update, runs
        // out a minute later and the strip is off; one kept alive stays on.
        var lit = WLEDEmulator(topic: "wled/rig", ledCount: 4)
        var running = DisplayOutputs([.wled(display)])
        var long = try TimerFixture(["kind": "countdown", "duration": "10m"])
        long.start(at: t0)
        for message in running.update(long.snapshot(t0), now: t0) { lit.receive(topic: message.topic, payload: message.payload, now: t0) }
        #expect(lit.on && lit.nightlight?.minutes == 1)
        lit.advance(to: t0 + 59_000)
        #expect(lit.on, "kept until the minute is out")
        for message in running.update(long.snapshot(t0 + 30_000), now: t0 + 30_000) { lit.receive(topic: message.topic, payload: message.payload, now: t0 + 30_000) }
        lit.advance(to: t0 + 61_000)
        #expect(lit.on, "re-armed at 30 s")
        lit.advance(to: t0 + 90_000)
        #expect(!lit.on, "the node stopped re-arming it: dark by itself")
        strip.apply(["seg": [["id": 0, "on": true, "bri": 255, "col": [[0, 0, 255]]]]])
        #expect(strip.segments[0]?.frozen == nil && strip.pixels[3] == Pixel(0, 0, 255))
    }
}

@Suite("The emulators behind a real broker")
struct EmulatorLiveTests {
    @Test("AWTRIX: the node's messages reach the emulated clock, which shows the time")
    func awtrixLive() async throws {
        try await withTestBroker { broker in
            let clock = try await EmulatedDevice(AwtrixEmulator(prefix: "awtrix_live"), port: broker.port)
            let publisher = try await Publisher(port: broker.port)
            var outputs = DisplayOutputs([.awtrix(AwtrixDisplay(prefix: "awtrix_live", timers: ["main"]))])
            var timer = try TimerFixture.tabata()
            timer.start(at: t0)
            timer.advance(to: t0 + 5_500)
            try await publisher.send(outputs.update(timer.snapshot(t0 + 5_500), now: t0 + 5_500))
            let shown = await clock.wait { $0.app("pacer") != nil }
            #expect(shown)
            let now = Millis(Date().timeIntervalSince1970 * 1000)
            #expect(clock.device.matrix(at: now).text() == "0:15 1/8")
            await publisher.close()
            await clock.disconnect()
        }
    }

    @Test("WLED: the node's messages reach the emulated strip, which turns the phase colour")
    func wledLive() async throws {
        try await withTestBroker { broker in
            let strip = try await EmulatedDevice(WLEDEmulator(topic: "wled/live", ledCount: 8), port: broker.port)
            let publisher = try await Publisher(port: broker.port)
            var display = WLEDDisplay(topic: "wled/live", timer: "main")
            display.brightness = 255
            var outputs = DisplayOutputs([.wled(display)])
            var timer = try TimerFixture.tabata()
            timer.start(at: t0)
            timer.advance(to: t0 + 21_000)
            try await publisher.send(outputs.update(timer.snapshot(t0 + 21_000), now: t0 + 21_000))
            let red = await strip.wait { $0.pixels.allSatisfy { $0 == DisplayPalette.rest.pixel } }
            #expect(red, "\(strip.device.pixels)")
            await publisher.close()
            await strip.disconnect()
        }
    }
}

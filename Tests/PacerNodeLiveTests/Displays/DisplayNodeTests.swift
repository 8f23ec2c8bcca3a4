import Foundation
import PacerCore
import PacerTestSupport
import Testing

/// The LED displays a real `pacer run` drives (`displays:`, docs/displays.md), seen by the
/// AWTRIX 3 and WLED emulators on the broker: the clock shows the time in the phase's colour
/// and flips with the node's own `remaining`, the strip turns the phase's colour, and when the
/// node dies the clock goes blank by itself (the app's `lifetime`).
@Suite("Displays on a real node")
struct DisplayNodeTests {
    @Test("an interval on an AWTRIX clock and a WLED strip: in step with the node, red for rest, blank after the node dies")
    func awtrixAndWLED() async throws {
        let config = """
            displays:
              - {type: awtrix, prefix: awtrix_t, timer: tab, lifetime: 3s}
              - {type: wled, topic: wled/t, timer: tab, brightness: 100}
            """
        try await withNode(.init(config: config, probeFilters: ["awtrix_t/#", "wled/t/#"])) { node in
            let clock = try await EmulatedDevice(AwtrixEmulator(prefix: "awtrix_t"), port: node.brokerPort)
            let strip = try await EmulatedDevice(WLEDEmulator(topic: "wled/t", ledCount: 30), port: node.brokerPort)
            defer { Task { await clock.disconnect(); await strip.disconnect() } }
            let start = node.probe.count
            let reply = try await node.send(["action": "start", "spec": ["kind": "interval", "work": "4s", "rest": "4s", "rounds": 2]], timer: "tab")
            try #require(reply.ok, "\(reply)")

            // Work: the clock counts down in a colour, the round shown; the strip is lit.
            #expect(await clock.wait { $0.apps.first?.plainText.contains("0:0") == true }, "\(clock.device.apps)")
            let work = try #require(clock.device.apps.first)
            #expect(work.plainText.contains("1/2"), "\(work.plainText)")
            #expect(await strip.wait { $0.on && $0.segments[0]?.colours.first?.isLit == true }, "\(strip.device)")
            let workColour = strip.device.segments[0]?.colours.first
            // Rest: another colour on the strip.
            #expect(await strip.wait(timeout: .seconds(8)) { $0.segments[0]?.colours.first != workColour && $0.segments[0]?.colours.first?.isLit == true },
                    "\(strip.device)")
            #expect(strip.device.brightness <= 100)
            try await node.waitForEvent("tab", "phase", from: start, timeout: .seconds(10))

            // Each flip of the node's own `remaining` comes with the clock's update: the node sends
            // both in one step, the flip over its second connection, so the probe sees them within
            // a few ms. On a loaded test machine one pair can be tens of ms apart: the typical gap
            // is held to 20 ms, and no flip may go without an update within a quarter second.
            try await Task.sleep(for: .seconds(3))
            let seen = node.probe.all[start...]
            let flips = seen.filter { $0.topic == node.topic("tab", "remaining") }.map(\.wallMs)
            let updates = seen.filter { $0.topic.hasPrefix("awtrix_t/custom/") }.map(\.wallMs)
            #expect(flips.count >= 5, "\(flips)")
            let gaps = flips.map { flip in updates.map { abs($0 - flip) }.min() ?? .max }.sorted()
            #expect(gaps[gaps.count / 2] <= 20, "flips \(flips), clock updates \(updates), gaps \(gaps)")
            #expect(gaps.last.map { $0 <= 250 } == true, "a flip without a clock update within 250 ms: flips \(flips), updates \(updates)")

            // The node dies (no goodbye): the app is gone by itself after its lifetime.
            await node.kill()
            try await Task.sleep(for: .milliseconds(3_500))
            let now = Millis(Date().timeIntervalSince1970 * 1000)
            clock.update { $0.advance(to: now) }
            #expect(clock.device.apps.isEmpty, "\(clock.device.apps)")
        }
    }
}

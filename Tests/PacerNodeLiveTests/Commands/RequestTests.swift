import Foundation
import Mosquitto
import PacerCore
import PacerTestSupport
import Testing

/// Many commands in a burst through the broker, handled once each and in order.
@Suite("Idempotence, revisions and bursts")
struct RequestTests {
    // Request ids and if_revision are checked in-process (Engine/EngineRequestTests.swift);
    // a burst through the broker stays here.

    @Test("100 rapid toggles: each applied once, in order; the final state matches the parity")
    func rapidToggles() async throws {
        try await withNode { node in
            let created = try await node.send(["action": "create", "timer": "tg", "spec": ["kind": "countdown", "duration": "10m"]])
            let r0 = try #require(created.revision)
            let start = node.probe.count
            for k in 0..<100 {
                let command: JSONValue = ["action": "toggle", "id": .string("t-\(k)")]
                try await node.probe.publish(node.topic("tg", "cmd"), command.bytes,
                                             properties: MQTTProperties(responseTopic: node.probe.replyTopic, correlationData: Array("t-\(k)".utf8)))
            }
            try await node.probe.waitUntil(timeout: .seconds(60), "100 replies, got \(node.probe.messages(on: node.probe.replyTopic, from: start).count)") {
                node.probe.messages(on: node.probe.replyTopic, from: start).count >= 100
            }
            let replies = node.probe.messages(on: node.probe.replyTopic, from: start).compactMap(\.json)
            #expect(replies.count == 100)
            // Handled in arrival order: reply k carries revision r0 + k + 1 and the parity's status.
            for (k, reply) in replies.enumerated() {
                #expect(reply["id"]?.string == "t-\(k)")
                #expect(reply["ok"] == true, "\(reply)")
                #expect(reply["revision"]?.int == r0 + k + 1)
                #expect(reply["state"]?["status"]?.string == (k % 2 == 0 ? "running" : "paused"), "toggle \(k)")
            }
            try await node.barrier()
            let state = try #require(node.state("tg"))
            #expect(state["status"] == "paused")
            #expect(state["revision"]?.int == r0 + 100)
            #expect(node.plain("tg", "phase") == "paused")
            let remaining = try #require(state["remaining_ms"]?.int)
            let segmentElapsed = try #require(state["segment_elapsed_ms"]?.int)
            #expect(remaining + segmentElapsed == 600_000, "remaining \(remaining) + elapsed \(segmentElapsed) ≠ 10 min")
            #expect(remaining > 0 && remaining <= 600_000)

            try await node.probe.waitUntil("100 events, got \(node.events("tg", from: start).count)") {
                node.events("tg", from: start).count >= 100
            }
            let types = node.events("tg", from: start).compactMap { $0["type"]?.string }
            #expect(types.count == 100)
            #expect(types.filter { $0 == "started" }.count == 1)
            #expect(types.filter { $0 == "paused" }.count == 50)
            #expect(types.filter { $0 == "resumed" }.count == 49)
            #expect(node.events("tg", from: start).compactMap { $0["revision"]?.int } == Array((r0 + 1)...(r0 + 100)))
        }
    }
}

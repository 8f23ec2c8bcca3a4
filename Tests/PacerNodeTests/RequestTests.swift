import Foundation
import Mosquitto
import PacerCore
import Testing

/// SPEC §3: request ids (dedup), `if_revision`, and many commands in a burst.
@Suite("Idempotence, revisions and bursts")
struct RequestTests {
    @Test("a repeated request id is answered with the first reply and applied once")
    func duplicateRequestIDs() async throws {
        try await withNode { node in
            _ = try await node.send(["action": "start", "spec": ["kind": "countdown", "duration": "60s"]], timer: "d")
            let start = node.probe.count
            let pause: JSONValue = ["action": "pause", "id": "dup-1"]
            let first = try await node.send(pause, timer: "d")
            try #require(first.ok, "\(first)")
            let revision = try #require(first.revision)

            // The same command again (a QoS 1 redelivery, a double tap): the same reply, byte for byte.
            let second = try await node.send(pause, timer: "d")
            #expect(second.received.message.payload == first.received.message.payload)
            try await node.barrier()
            #expect(node.state("d")?["revision"]?.int == revision)
            #expect(node.events("d", from: start).filter { $0["type"] == "paused" }.count == 1)

            // Later, after the timer moved on, the repeat still gets the first answer and changes nothing.
            let resumed = try await node.send(["action": "resume", "id": "dup-2"], timer: "d")
            #expect(resumed.status == "running")
            let third = try await node.send(pause, timer: "d")
            #expect(third.json == first.json)
            try await node.barrier()
            #expect(node.state("d")?["status"] == "running", "the repeated pause was applied again")
            #expect(node.state("d")?["revision"]?.int == resumed.revision)
            #expect(node.events("d", from: start).filter { $0["type"] == "paused" }.count == 1)

            // A refused command is remembered too: the repeat gets the same error.
            let refused = try await node.send(["action": "ack", "id": "dup-3"], timer: "d")
            #expect(refused.code == "invalid_state")
            let refusedAgain = try await node.send(["action": "ack", "id": "dup-3"], timer: "d")
            #expect(refusedAgain.json == refused.json)

            // A create repeated does not fail with timer_exists: it is the same request.
            let create: JSONValue = ["action": "create", "id": "dup-4", "timer": "e", "spec": ["kind": "countdown", "duration": "5m"]]
            let created = try await node.send(create)
            let createdAgain = try await node.send(create)
            #expect(created.ok && createdAgain.json == created.json, "\(createdAgain)")
        }
    }

    @Test("if_revision rejects a command when the state has moved on")
    func ifRevision() async throws {
        try await withNode { node in
            let started = try await node.send(["action": "start", "spec": ["kind": "countdown", "duration": "10m"]], timer: "r")
            let r1 = try #require(started.revision)
            let start = node.probe.count

            let stale = try await node.send(["action": "pause", "if_revision": .int(r1 - 1)], timer: "r")
            #expect(stale.code == "revision_conflict", "\(stale)")
            #expect(stale.message?.contains("\(r1)") == true, "the message should name the current revision: \(stale.message ?? "")")
            try await node.barrier()
            #expect(node.state("r")?["status"] == "running")
            #expect(node.state("r")?["revision"]?.int == r1)
            #expect(node.events("r", from: start).isEmpty)

            // Two phones toggle at once, both from revision r1: exactly one wins.
            let correlationA: [UInt8] = Array("phone-a".utf8), correlationB: [UInt8] = Array("phone-b".utf8)
            let replies = node.probe.count
            for (id, correlation) in [("phone-a", correlationA), ("phone-b", correlationB)] {
                let command: JSONValue = ["action": "toggle", "id": .string(id), "if_revision": .int(r1)]
                try await node.probe.publish(node.topic("r", "cmd"), command.bytes,
                                             properties: MQTTProperties(responseTopic: node.probe.replyTopic, correlationData: correlation))
            }
            let a = try await node.probe.waitFor(node.probe.replyTopic, from: replies) { $0.message.properties.correlationData == correlationA }
            let b = try await node.probe.waitFor(node.probe.replyTopic, from: replies) { $0.message.properties.correlationData == correlationB }
            #expect(a.json?["ok"] == true, "the first in arrival order wins: \(a.text)")
            #expect(b.json?["error"]?["code"] == "revision_conflict", "\(b.text)")
            try await node.barrier()
            #expect(node.state("r")?["status"] == "paused")
            #expect(node.state("r")?["revision"]?.int == r1 + 1)

            let matching = try await node.send(["action": "resume", "if_revision": .int(r1 + 1)], timer: "r")
            #expect(matching.ok && matching.revision == r1 + 2, "\(matching)")
        }
    }

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

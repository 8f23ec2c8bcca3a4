import Foundation
import PacerCore
@testable import PacerNode
import PacerTestSupport
import Testing

/// In-process: request ids (dedup) and `if_revision`.
@Suite("Idempotence and revisions (in-process)")
struct EngineRequestTests {
    private func events(_ h: EngineHarness, _ timer: String, from start: Int) -> [JSONValue] {
        h.published(h.topic(timer, "event"), from: start).compactMap(\.json)
    }

    @Test("a repeated request id is answered with the first reply, byte for byte, and applied once")
    func duplicateRequestIDs() async throws {
        let h = try await EngineHarness.make()
        await h.connect()
        try await h.send(["action": "start", "spec": ["kind": "countdown", "duration": "60s"]], timer: "d")
        let start = h.journal.count
        let pause: JSONValue = ["action": "pause", "id": "dup-1"]
        let first = try await h.send(pause, timer: "d")
        try #require(first["ok"] == true, "\(first)")
        let revision = try #require(first["revision"]?.int)
        let firstBytes = h.published(EngineHarness.replyTopic).last
        let writes = h.journal.all.filter { if case .write = $0 { true } else { false } }.count

        // The same command again (a QoS 1 redelivery, a double tap): the same reply, no write.
        try await h.send(pause, timer: "d")
        #expect(h.published(EngineHarness.replyTopic).last == firstBytes)
        #expect(h.journal.all.filter { if case .write = $0 { true } else { false } }.count == writes)
        #expect(h.state("d")?["revision"]?.int == revision)

        // Later, after the timer moved on, the repeat still gets the first answer and changes nothing.
        let resumed = try await h.send(["action": "resume", "id": "dup-2"], timer: "d")
        #expect(resumed["state"]?["status"] == "running")
        let third = try await h.send(pause, timer: "d")
        #expect(third == first)
        #expect(h.state("d")?["status"] == "running", "the repeated pause was applied again")
        #expect(events(h, "d", from: start).filter { $0["type"] == "paused" }.count == 1)

        // A refused command is remembered too: the repeat gets the same error.
        let refused = try await h.send(["action": "ack", "id": "dup-3"], timer: "d")
        #expect(refused["error"]?["code"] == "invalid_state")
        #expect(try await h.send(["action": "ack", "id": "dup-3"], timer: "d") == refused)

        // A create repeated does not fail with timer_exists: it is the same request.
        let create: JSONValue = ["action": "create", "id": "dup-4", "timer": "e", "spec": ["kind": "countdown", "duration": "5m"]]
        let created = try await h.send(create)
        #expect(created["ok"] == true)
        #expect(try await h.send(create) == created)

        // And after a restart (the ids are stored), still the first answer.
        let again = try await h.restart()
        await again.connect()
        #expect(try await again.send(pause, timer: "d") == first)
    }

    @Test("if_revision rejects a command when the state has moved on; of two toggles from one revision, the first wins")
    func ifRevision() async throws {
        let h = try await EngineHarness.make()
        await h.connect()
        let started = try await h.send(["action": "start", "spec": ["kind": "countdown", "duration": "10m"]], timer: "r")
        let r1 = try #require(started["revision"]?.int)
        let start = h.journal.count

        let stale = try await h.send(["action": "pause", "if_revision": .int(Int64(r1 - 1))], timer: "r")
        #expect(stale["error"]?["code"] == "revision_conflict", "\(stale)")
        #expect(stale["error"]?["message"]?.string?.contains("\(r1)") == true, "the message should name the current revision: \(stale)")
        #expect(h.journal.since(start).allSatisfy { $0.topic == EngineHarness.replyTopic }, "\(h.journal.since(start))")

        let a = try await h.send(["action": "toggle", "id": "phone-a", "if_revision": .int(Int64(r1))], timer: "r")
        let b = try await h.send(["action": "toggle", "id": "phone-b", "if_revision": .int(Int64(r1))], timer: "r")
        #expect(a["ok"] == true, "\(a)")
        #expect(b["error"]?["code"] == "revision_conflict", "\(b)")
        #expect(h.state("r")?["status"] == "paused")
        #expect(h.state("r")?["revision"]?.int == r1 + 1)

        let matching = try await h.send(["action": "resume", "if_revision": .int(Int64(r1 + 1))], timer: "r")
        #expect(matching["ok"] == true && matching["revision"]?.int == r1 + 2, "\(matching)")
    }
}

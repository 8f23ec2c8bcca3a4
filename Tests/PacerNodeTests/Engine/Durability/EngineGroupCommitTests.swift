import Foundation
import Mosquitto
import PacerCore
@testable import PacerNode
import PacerTestSupport
import Testing

/// Commands queued behind one another: one write, then every reply.
@Suite("Engine group commit in-process")
struct EngineGroupCommitTests {
    /// A command as the client hands it over (QoS 1, replies to the harness's topic).
    private static func message(_ command: JSONValue, topic: String) -> MQTTMessage {
        MQTTMessage(topic: topic, payload: Array(command.description.utf8), qos: .atLeastOnce,
                    properties: MQTTProperties(responseTopic: EngineHarness.replyTopic))
    }

    /// Queues `commands` (each with its timer topic, or the node's `cmd` topic) without handling them.
    private func queue(_ h: EngineHarness, _ commands: [(JSONValue, String?)]) {
        for (command, timer) in commands {
            h.shell!.submit(.message(Self.message(command, topic: timer.map { h.topic($0, "cmd") } ?? "\(h.base)/cmd")))
        }
    }

    /// Runs the loop over what is queued.
    private func drain(_ h: EngineHarness) async {
        h.shell!.finish()
        await h.shell!.run()
    }

    private func writes(_ steps: [EngineStep]) -> [EngineStep] {
        steps.filter { if case .write = $0 { true } else if case .writeFailed = $0 { true } else { false } }
    }

    private func replies(_ h: EngineHarness, from start: Int) -> [JSONValue] {
        h.journal.since(start).filter { $0.topic == EngineHarness.replyTopic }.compactMap(\.json)
    }

    @Test("queued commands are written in one transaction, before any of them is answered; replies in order")
    func oneWrite() async throws {
        let h = try await EngineHarness.make(config: EngineTests.eggs, shell: true)
        await h.connect()
        let start = h.journal.count
        queue(h, [(["action": "start", "id": "g0"], "egg"),
                  (["action": "create", "timer": "w", "spec": ["kind": "stopwatch"], "id": "g1"], nil),
                  (["action": "start", "id": "g2"], "w"),
                  (["action": "pause", "id": "g3"], "egg")])
        await drain(h)
        let steps = h.journal.since(start)
        #expect(writes(steps).count == 1, "\(writes(steps))")
        let written = try #require(steps.firstIndex { if case .write = $0 { true } else { false } })
        let firstReply = try #require(steps.firstIndex { $0.topic == EngineHarness.replyTopic })
        #expect(written < firstReply)
        let got = replies(h, from: start)
        #expect(got.map { $0["id"] } == ["g0", "g1", "g2", "g3"], "\(got)")
        #expect(got.allSatisfy { $0["ok"] == true }, "\(got)")
        #expect(h.state("egg")?["status"] == "paused")
        #expect(h.state("w")?["status"] == "running")
        // All of it is on disk.
        let again = try await h.restart(config: EngineTests.eggs)
        let list = try await again.send(["action": "list"])
        let statuses = Dictionary(uniqueKeysWithValues: (list["timers"]?.array ?? []).compactMap { t in
            t["id"]?.string.map { ($0, t["status"]?.string ?? "") } })
        #expect(statuses == ["egg": "paused", "w": "running"], "\(list)")
    }

    @Test("when the group's write fails, every command is undone and answered storage_failure; a retry applies them")
    func failedGroup() async throws {
        let h = try await EngineHarness.make(config: EngineTests.eggs, shell: true)
        await h.connect()
        h.store.failingWrites.withLock { $0 = 1 }
        let start = h.journal.count
        let group: [(JSONValue, String?)] = [(["action": "start", "id": "f0"], "egg"),
                                             (["action": "create", "timer": "w", "spec": ["kind": "stopwatch"], "id": "f1"], nil),
                                             (["action": "start", "id": "f2"], "w"),
                                             (["action": "pause", "id": "f3"], "egg")]
        queue(h, group)
        await drain(h)
        let got = replies(h, from: start)
        #expect(got.map { $0["id"] } == ["f0", "f1", "f2", "f3"], "\(got)")
        #expect(got.allSatisfy { $0["error"]?["code"] == "storage_failure" }, "\(got)")
        #expect(h.published(h.topic("egg", "state"), from: start).isEmpty, "nothing it changed is published")
        #expect(h.published(h.topic("w", "state"), from: start).isEmpty)

        // A new engine loop on the same store (the retry): the ids were forgotten, so it is applied.
        let again = try await h.restart(config: EngineTests.eggs)
        await again.connect()
        let list = try await again.send(["action": "list"])
        #expect(list["timers"]?.array?.map { $0["id"] } == ["egg"], "the created timer was not kept: \(list)")
        #expect(list["timers"]?.array?.first?["status"] == "idle", "\(list)")
        let retry = again.journal.count
        queue(again, group)
        await drain(again)
        let retried = replies(again, from: retry)
        #expect(retried.allSatisfy { $0["ok"] == true }, "\(retried)")
        #expect(again.state("egg")?["status"] == "paused")
    }

    @Test("in memory too, a failed group is undone: the same engine applies the retry")
    func failedGroupSameEngine() async throws {
        let h = try await EngineHarness.make(config: EngineTests.eggs, shell: true)
        await h.connect()
        h.store.failingWrites.withLock { $0 = 1 }
        queue(h, [(["action": "start", "id": "m0"], "egg"), (["action": "pause", "id": "m1"], "egg")])
        // Handled by the loop's group path; then a single command on the same engine.
        await drain(h)
        let list = try await h.send(["action": "list"])
        #expect(list["timers"]?.array?.first?["status"] == "idle", "\(list)")
        let retry = try await h.send(["action": "start", "id": "m0"], timer: "egg")
        #expect(retry["ok"] == true, "the request id was forgotten with its command: \(retry)")
    }

    @Test("a deletion ends the group: a timer deleted and created again right after is kept")
    func deleteThenCreate() async throws {
        let h = try await EngineHarness.make(shell: true)
        await h.connect()
        try await h.send(["action": "create", "timer": "x", "spec": ["kind": "stopwatch"]])
        let start = h.journal.count
        queue(h, [(["action": "delete", "timer": "x"], nil),
                  (["action": "create", "timer": "x", "spec": ["kind": "countdown", "duration": "5m"]], nil),
                  (["action": "start"], "x")])
        await drain(h)
        #expect(replies(h, from: start).allSatisfy { $0["ok"] == true }, "\(replies(h, from: start))")
        #expect(writes(h.journal.since(start)).count == 2, "\(writes(h.journal.since(start)))")
        let again = try await h.restart()
        let list = try await again.send(["action": "list"])
        #expect(list["timers"]?.array?.first?["status"] == "running", "\(list)")
    }

    @Test("the broker's acknowledgements queued between commands join the group: one write, carrying their marks")
    func deliveriesBetweenCommands() async throws {
        let h = try await EngineHarness.make(config: EngineTests.eggs, shell: true)
        await h.connect()
        try await h.send(["action": "create", "timer": "w", "spec": ["kind": "stopwatch"]])
        let before = h.journal.count
        try await h.send(["action": "start", "id": "d0"], timer: "w")
        let tokens = h.journal.since(before).compactMap { step -> UInt64? in
            if case .tracked(_, _, let token, _) = step { return token } else { return nil }
        }
        let token = try #require(tokens.first, "the start published no event: \(h.journal.since(before))")
        let start = h.journal.count
        // As the client queues them in a burst of pauses and resumes: each command's event is
        // acknowledged by the broker while the next commands are already queued.
        queue(h, [(["action": "pause", "id": "d1"], "w")])
        h.shell!.submit(.delivered(MQTTDeliveryReport(token: MQTTDeliveryToken(rawValue: token), reasonCode: 0)))
        queue(h, [(["action": "resume", "id": "d2"], "w")])
        h.shell!.submit(.delivered(MQTTDeliveryReport(token: MQTTDeliveryToken(rawValue: 9_999), reasonCode: 0)))  // unknown: ignored
        queue(h, [(["action": "pause", "id": "d3"], "w")])
        await drain(h)
        let steps = h.journal.since(start)
        #expect(writes(steps).count == 1, "\(writes(steps))")
        guard case .write(_, let events, let marks)? = writes(steps).first else { return }
        #expect(events == ["paused", "resumed", "paused"], "\(events)")
        #expect(marks.count == 1, "the acknowledged start event is marked by the group's write: \(marks)")
        let got = replies(h, from: start)
        #expect(got.map { $0["id"] } == ["d1", "d2", "d3"], "\(got)")
        #expect(got.allSatisfy { $0["ok"] == true }, "\(got)")
        #expect(h.state("w")?["status"] == "paused")
    }

    @Test("commands arriving through the client's stream while the engine works are written in groups, not one by one")
    func streamedBurst() async throws {
        let h = try await EngineHarness.make(config: EngineTests.eggs, shell: true)
        await h.connect()
        try await h.send(["action": "create", "timer": "w", "spec": ["kind": "stopwatch"]])
        try await h.send(["action": "start"], timer: "w")
        let start = h.journal.count
        let total = 300
        let (stream, continuation) = AsyncStream.makeStream(of: MQTTMessage.self)
        let loop = Task { await h.shell!.run() }
        let reader = Task { await h.shell!.forward(stream, as: NodeInput.message) }
        // The network thread: messages one by one while the engine handles the earlier ones.
        let topic = h.topic("w", "cmd")
        let feeder = Thread {
            for i in 0..<total {
                continuation.yield(Self.message(["action": i % 2 == 0 ? "pause" : "resume", "id": .string("s\(i)")], topic: topic))
                if i % 10 == 9 { usleep(200) }
            }
            continuation.finish()
        }
        feeder.start()
        let deadline = ContinuousClock.now + .seconds(60)
        while replies(h, from: start).count < total, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        await reader.value
        h.shell!.finish()
        await loop.value
        let got = replies(h, from: start)
        #expect(got.count == total)
        #expect(got.map { $0["id"]?.string ?? "" } == (0..<total).map { "s\($0)" }, "replies in arrival order")
        #expect(got.allSatisfy { $0["ok"] == true })
        let count = writes(h.journal.since(start)).count
        // One write per command would be `total`; a group holds up to `maxGroupedCommands`.
        #expect(count >= total / NodeEngine.maxGroupedCommands, "\(count) writes")
        // (A group also ends when the feeder falls behind or a deadline falls due: on a slow
        // machine groups are smaller.)
        #expect(count <= total / 2, "\(count) writes for \(total) commands: commands queued behind one another were not grouped")
        #expect(h.state("w")?["status"] == (total % 2 == 0 ? "running" : "paused"))
    }
}

import Foundation
import PacerCore
@testable import PacerNode
import PacerStore
import PacerTestSupport
import Testing

/// The engine in-process: a real SQLite file, a recording transport, virtual time.
/// What only processes can show (crash, outage, TLS, signals) stays in the process tests.
@Suite("Engine in-process")
struct EngineTests {
    static let eggs = """
        timers:
          - {id: egg, name: Egg, spec: {kind: countdown, duration: 2s}}
        """

    @Test("a command is written before anything it changed is published, and its reply comes last")
    func writeBeforePublish() async throws {
        let h = try await EngineHarness.make(config: Self.eggs)
        await h.connect()
        let start = h.journal.count
        let reply = try await h.send(["action": "start", "id": "r1"], timer: "egg")
        #expect(reply["ok"] == true, "\(reply)")
        let steps = h.journal.since(start)
        let write = try #require(steps.firstIndex { if case .write(let timers, _, _) = $0 { timers == ["egg"] } else { false } }, "\(steps)")
        let firstPublish = try #require(steps.firstIndex { $0.topic != nil })
        #expect(write < firstPublish, "\(steps)")
        #expect(steps.last?.topic == EngineHarness.replyTopic, "\(steps)")
        #expect(h.state("egg")?["status"] == "running")
    }

    @Test("a transition's event is published (tracked) before the state that shows it, after its write")
    func eventsBeforeState() async throws {
        let h = try await EngineHarness.make(config: Self.eggs)
        await h.connect()
        try await h.send(["action": "start"], timer: "egg")
        let start = h.journal.count
        await h.pass(2_000)
        let steps = h.journal.since(start)
        let write = steps.firstIndex { if case .write(_, let events, _) = $0 { events.contains("finished") } else { false } }
        let event = steps.firstIndex { if case .tracked(_, _, _, _) = $0 { $0.json?["type"] == "finished" } else { false } }
        let state = steps.firstIndex { $0.topic == h.topic("egg", "state") && $0.json?["status"] == "finished" }
        #expect(write != nil && event != nil && state != nil, "\(steps)")
        if let write, let event, let state { #expect(write < event && event < state, "\(steps)") }
        // The finished event's due instant is exact in virtual time.
        #expect(steps[event ?? 0].json?["late_ms"] == nil || steps[event ?? 0].json?["late_ms"] == 0)
    }

    @Test("acknowledged events are marked published in the next write, or 2 s later at the latest")
    func marksRideOnWrites() async throws {
        let h = try await EngineHarness.make(config: Self.eggs)
        await h.connect()
        try await h.send(["action": "start"], timer: "egg")
        await h.pass(2_000)
        let tracked = h.journal.all.compactMap { step -> UInt64? in if case .tracked(_, _, let t, _) = step { t } else { nil } }
        #expect(!tracked.isEmpty)
        let start = h.journal.count
        for token in tracked { await h.deliver(token) }
        #expect(!h.journal.since(start).contains { if case .write = $0 { true } else { false } }, "no write of its own at once")
        await h.pass(2_000)
        let marks = h.journal.since(start).compactMap { step -> [Int64]? in if case .write(_, _, let m) = step, !m.isEmpty { m } else { nil } }
        #expect(marks.count == 1 && marks.first?.count == tracked.count, "\(h.journal.since(start))")
        #expect(try h.store.unpublishedEvents().isEmpty)
    }

    @Test("a wall-clock step moves ends_at with it; the remaining time does not change")
    func clockJump() async throws {
        let h = try await EngineHarness.make(config: Self.eggs.replacingOccurrences(of: "2s", with: "10m"))
        await h.connect()
        let started = try await h.send(["action": "start"], timer: "egg")
        let endsAt = try #require(started["state"]?["ends_at_ms"]?.int64)
        await h.pass(60_000)
        // The state goes out on changes only: 60 s after the start, 9 min remain.
        let before = try #require(started["state"]?["remaining_ms"]?.int64) - 60_000
        h.time.stepWall(3_600_000)
        await h.pass(1_000)
        let state = try #require(h.state("egg"))
        #expect(state["ends_at_ms"]?.int64 == endsAt + 3_600_000, "\(state)")
        // The remaining time now (61 s after the start) is 1 s less than before the step.
        let remaining = try #require(state["ends_at_ms"]?.int64) - h.time.wall
        #expect(before - remaining == 1_000, "\(before) → \(remaining): \(state)")
        // And it ends when its remaining time is up, not an hour early or late.
        await h.pass(remaining - 1)
        #expect(h.state("egg")?["status"] == "running")
        await h.pass(1)
        #expect(h.state("egg")?["status"] == "finished")
    }

    @Test("a command whose write fails changes nothing and gets storage_failure")
    func failedCommandWrite() async throws {
        let h = try await EngineHarness.make(config: Self.eggs)
        await h.connect()
        h.store.failingWrites.withLock { $0 = 1 }
        let start = h.journal.count
        let reply = try await h.send(["action": "start"], timer: "egg")
        #expect(reply["error"]?["code"] == "storage_failure", "\(reply)")
        #expect(h.published(h.topic("egg", "state"), from: start).isEmpty, "nothing it changed is published")
        let list = try await h.send(["action": "list"])
        #expect(list["timers"]?.array?.first?["status"] == "idle", "\(list)")
        let again = try await h.send(["action": "start"], timer: "egg")
        #expect(again["ok"] == true && again["revision"] == started(after: list), "\(again)")
    }

    @Test("a command whose write fails in the same input as a clock jump: the command is undone, the jump's shift is kept, published and written with the next write")
    func failedWriteAfterClockJump() async throws {
        let config = """
            timers:
              - {id: run, name: Run, spec: {kind: countdown, duration: 10m}}
              - {id: idle, name: Idle, spec: {kind: countdown, duration: 1m}}
            """
        let h = try await EngineHarness.make(config: config)
        await h.connect()
        let started = try await h.send(["action": "start"], timer: "run")
        let endsAt = try #require(started["state"]?["ends_at_ms"]?.int64)
        await h.pass(1_000)
        h.time.stepWall(3_600_000)
        h.store.failingWrites.withLock { $0 = 1 }
        let start = h.journal.count
        let refused = try await h.send(["action": "start"], timer: "idle")  // the jump is seen in this input
        #expect(refused["error"]?["code"] == "storage_failure", "\(refused)")
        #expect(h.published(h.topic("run", "state"), from: start).last?.json?["ends_at_ms"]?.int64 == endsAt + 3_600_000,
                "the shifted timer is published: \(h.journal.since(start))")
        #expect(h.published(h.topic("idle", "state"), from: start).isEmpty)
        // The next write, for anything, carries the shifted timer.
        let next = h.journal.count
        try await h.send(["action": "create", "timer": "other", "spec": ["kind": "stopwatch"]])
        #expect(h.journal.since(next).contains { if case .write(let timers, _, _) = $0 { timers.contains("run") } else { false } },
                "\(h.journal.since(next))")
        // A restart (a crash now) finds the shifted anchors, and idle never started.
        let again = try await h.restart(config: config)
        await again.connect()
        await again.pass(EventOutbox.checkWindowMs)  // its unacknowledged events hold it until then
        #expect(again.state("run")?["ends_at_ms"]?.int64 == endsAt + 3_600_000)
        #expect(again.state("idle")?["status"] == "idle")
    }

    private func started(after list: JSONValue) -> JSONValue {
        .number(Double((list["timers"]?.array?.first?["revision"]?.int ?? 0) + 1))
    }

    @Test("after a restart the outbox check publishes only the events the broker's retained states do not prove")
    func outboxDecisions() async throws {
        let config = """
            timers:
              - {id: a, name: A, spec: {kind: countdown, duration: 1s}}
              - {id: b, name: B, spec: {kind: countdown, duration: 1s}}
            """
        let first = try await EngineHarness.make(config: config)
        await first.connect()
        let a = try await first.send(["action": "start"], timer: "a")
        let b = try await first.send(["action": "start"], timer: "b")
        for case .tracked(_, _, let token, _) in first.journal.all { await first.deliver(token) }
        await first.disconnect()
        await first.pass(1_000)  // both finish while disconnected: written, not published
        #expect(try first.store.unpublishedEvents().map(\.type) == ["finished", "finished"])
        let h = try await first.restart(config: config)
        let start = h.journal.count
        await h.connect()
        // Two held timers: their own state topics, not the node's whole `timers/+/state`.
        #expect(Array(h.journal.since(start).prefix(2)) == [.subscribe("pacer/t/timers/a/state"), .subscribe("pacer/t/timers/b/state")],
                "\(h.journal.since(start))")
        #expect(h.published(h.topic("a", "state"), from: start).isEmpty, "held until the check is decided")
        // The broker kept a's finished state (it had reached it), and b's running one.
        let aRevision = (a["revision"]?.int ?? 0) + 1
        await h.retained(h.topic("a", "state"), ["revision": .number(Double(aRevision)), "status": "finished"])
        let decided = h.journal.count
        await h.retained(h.topic("b", "state"), ["revision": .number(Double(b["revision"]?.int ?? 0)), "status": "running"])
        let steps = h.journal.since(decided)
        let events = steps.filter { if case .tracked = $0 { true } else { false } }
        #expect(events.count == 1 && events.first?.topic == h.topic("b", "event"), "\(steps)")
        #expect(steps.contains { $0.topic == h.topic("a", "state") } && steps.contains { $0.topic == h.topic("b", "state") })
        #expect(Array(steps.suffix(2)) == [.unsubscribe("pacer/t/timers/a/state"), .unsubscribe("pacer/t/timers/b/state")], "\(steps)")
        #expect(try h.store.unpublishedEvents().map(\.timer) == ["b"], "a was proven and marked; b waits for its PUBACK")
    }
}

@Suite("Engine in-process: the outbox check and the link")
struct EngineOutboxLinkTests {
    @Test("a link lost during the outbox check unsubscribes from the state filter (else every reconnect resubscribes it and the node hears an echo of each state it publishes)")
    func linkDownDuringCheckUnsubscribes() async throws {
        let config = """
            timers:
              - {id: a, name: A, spec: {kind: countdown, duration: 1s}}
            """
        let first = try await EngineHarness.make(config: config)
        try await first.send(["action": "start"], timer: "a")
        await first.pass(1_000)  // finished while never connected: in the outbox
        let h = try await first.restart(config: config)
        await h.connect()
        #expect(h.journal.all.contains(.subscribe("pacer/t/timers/a/state")))
        let start = h.journal.count
        await h.disconnect()
        #expect(h.journal.since(start).contains(.unsubscribe("pacer/t/timers/a/state")), "\(h.journal.since(start))")
        // The next connection checks again from the store: it subscribes anew and settles.
        let again = h.journal.count
        await h.connect()
        #expect(h.journal.since(again).first == .subscribe("pacer/t/timers/a/state"))
        await h.pass(1_500)  // the window ends without a retained state: published
        #expect(h.published(h.topic("a", "event"), from: again).map { $0.json?["type"] } == ["started", "finished"])
        #expect(h.journal.since(again).last == .unsubscribe("pacer/t/timers/a/state"), "\(h.journal.since(again))")
    }

    @Test("more held timers than BrokerLink.maxStateTopics: the check reads them through timers/+/state, and settles on them")
    func manyHeldTimersUseTheFilter() async throws {
        let count = BrokerLink.maxStateTopics + 1
        let config = "timers:\n" + (0..<count).map { "  - {id: t\($0), name: T, spec: {kind: countdown, duration: 1s}}\n" }.joined()
        let first = try await EngineHarness.make(config: config)
        for index in 0..<count { try await first.send(["action": "start"], timer: "t\(index)") }
        await first.pass(1_000)  // finished while never connected: in the outbox
        let h = try await first.restart(config: config)
        let start = h.journal.count
        await h.connect()
        let subscribes = h.journal.since(start).filter { if case .subscribe = $0 { true } else { false } }
        #expect(subscribes == [.subscribe("pacer/t/timers/+/state")])
        // Every held timer's retained state comes back (past its events): settled, all proven.
        for index in 0..<count {
            await h.retained(h.topic("t\(index)", "state"), ["revision": 99, "status": "finished"])
        }
        #expect(h.journal.since(start).last == .unsubscribe("pacer/t/timers/+/state"), "\(h.journal.since(start).suffix(3))")
        #expect(try h.store.unpublishedEvents().isEmpty)
    }
}

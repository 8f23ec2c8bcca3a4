import PacerCore
import Testing

/// `extend`: more time on the current segment, more rounds for an interval run.
@Suite("extend")
struct ExtendTests {
    /// The events from `from` to `to`, the machine advanced a second at a time (as the node's
    /// deadlines would: nothing collapses as late).
    static func run(_ m: inout TimerMachine, from: Millis, to: Millis) -> [TimerEvent] {
        stride(from: from + 1_000, through: to, by: 1_000).flatMap { m.advance(to: $0) }
    }

    @Test("seconds lengthen the current segment, running or paused; the event says how many, the revision moves")
    func seconds() throws {
        var m = try makeMachine(["kind": "interval", "work": "20s", "rest": "10s", "rounds": 2])
        try m.send(startNow, now: t0)
        let revision = m.revision
        let events = try m.send(.extend(seconds: 60, rounds: nil), now: t0 + 5_000)
        #expect(events.types == [.extended] && events[0].seconds == 60 && events[0].rounds == nil && events[0].phase == .work)
        #expect(m.revision == revision + 1)
        let s = m.snapshot(at: t0 + 5_000)
        #expect(s.remainingMs == 75_000 && s.segmentDurationMs == 80_000 && s.endsAtMs == t0 + 80_000)
        try m.send(.pause, now: t0 + 6_000)
        let paused = try m.send(.extend(seconds: 30, rounds: nil), now: t0 + 7_000)
        #expect(paused[0].phase == .paused)
        let p = m.snapshot(at: t0 + 8_000)
        #expect(p.status == .paused && p.remainingMs == 104_000)
    }

    @Test("rounds add rounds to an interval run: the segments done and the current one stay, the run lasts longer")
    func rounds() throws {
        var m = try makeMachine(["kind": "interval", "work": "20s", "rest": "10s", "rounds": 2])
        try m.send(startNow, now: t0)
        let before = m.snapshot(at: t0 + 5_000)
        let events = try m.send(.extend(seconds: nil, rounds: 2), now: t0 + 5_000)
        #expect(events.types == [.extended] && events[0].rounds == 4 && events[0].seconds == nil)
        let after = m.snapshot(at: t0 + 5_000)
        #expect(after.rounds == 4 && after.round == 1 && after.segment == before.segment)
        #expect(after.remainingMs == before.remainingMs && after.endsAtMs == before.endsAtMs)
        #expect(after.totalRemainingMs == before.totalRemainingMs.map { $0 + 60_000 })
        // It runs four rounds, then finishes: 4 × 20 s of work, the 3 rests between them.
        let rest = Self.run(&m, from: t0 + 5_000, to: t0 + 120_000)
        #expect(rest.filter { $0.type == .phase && $0.phase == .work }.map(\.round) == [2, 3, 4])
        #expect(rest.last?.type == .finished && rest.last?.dueMs == t0 + 110_000)
    }

    @Test("the last work of a run without its last rest takes more rounds: a rest, then the new round")
    func lastWork() throws {
        var m = try makeMachine(["kind": "interval", "work": "20s", "rest": "10s", "rounds": 2, "skip_last_rest": true])
        try m.send(startNow, now: t0)
        _ = Self.run(&m, from: t0, to: t0 + 35_000)
        #expect(m.snapshot(at: t0 + 35_000).round == 2)
        try m.send(.extend(seconds: nil, rounds: 1), now: t0 + 35_000)
        let events = Self.run(&m, from: t0 + 35_000, to: t0 + 90_000)
        #expect(events.filter { $0.type == .phase }.map(\.phase) == [.rest, .work])
        #expect(events.last?.type == .finished && events.last?.dueMs == t0 + 80_000)
    }

    @Test("an extended run reads back from its persisted form as it was (a restart keeps the new rounds)")
    func persisted() throws {
        var m = try makeMachine(["kind": "interval", "work": "20s", "rest": "10s", "rounds": 2])
        try m.send(startNow, now: t0)
        try m.send(.extend(seconds: 15, rounds: 3), now: t0 + 1_000)
        let read = try TimerMachine(persisted: JSONValue.parse(m.persistedBytes), settings: m.settings)
        #expect(read == m)
        #expect(read.snapshot(at: t0 + 2_000).rounds == 5)
    }

    @Test("refused with a reason and nothing changed: not running, a stopwatch, no rounds to add, past the last round, bad numbers")
    func refusals() throws {
        var idle = try makeMachine(["kind": "countdown", "duration": "5m"], id: "k")
        #expect(idle.refusal(.extend(seconds: 60, rounds: nil), now: t0)?.message == "cannot extend timer 'k': it is idle; start it first")
        try idle.send(startNow, now: t0)
        #expect(idle.refusal(.extend(seconds: nil, rounds: nil), now: t0 + 1)?.code == .invalidArgument)
        #expect(idle.refusal(.extend(seconds: 0, rounds: nil), now: t0 + 1)?.message == "extend takes 1 to 86400 seconds, got 0")
        #expect(idle.refusal(.extend(seconds: nil, rounds: 2), now: t0 + 1)?.message
            == "cannot extend timer 'k': it is running; only an interval timer has rounds to add; extend it by seconds")
        var watch = try makeMachine(["kind": "stopwatch"], id: "w")
        try watch.send(startNow, now: t0)
        #expect(watch.refusal(.extend(seconds: 10, rounds: nil), now: t0 + 1)?.code == .invalidState)
        var expiring = try makeMachine(["kind": "countdown", "duration": "1s", "ack": true], id: "r")
        try expiring.send(startNow, now: t0)
        _ = expiring.advance(to: t0 + 1_000)
        #expect(expiring.refusal(.extend(seconds: 30, rounds: nil), now: t0 + 1_001)?.message
            == "cannot extend timer 'r': it has expired and is waiting for an ack; send snooze for more time, or ack")
        var cooling = try makeMachine(["kind": "interval", "work": "20s", "rest": "10s", "rounds": 2, "cooldown": "1m"], id: "c")
        try cooling.send(startNow, now: t0)
        _ = cooling.advance(to: t0 + 65_000)  // in the cool-down
        #expect(cooling.refusal(.extend(seconds: nil, rounds: 1), now: t0 + 65_000)?.message.contains("its rounds are over") == true)
        try cooling.send(.extend(seconds: 60, rounds: nil), now: t0 + 65_000)  // more cool-down is fine
        var many = try makeMachine(["kind": "interval", "work": "20s", "rounds": 999], id: "m")
        try many.send(startNow, now: t0)
        #expect(many.refusal(.extend(seconds: nil, rounds: 2), now: t0 + 1)?.message
            == "extend takes 1 to 1 rounds here (this timer has 999 of at most 1000), got 2")
    }
}

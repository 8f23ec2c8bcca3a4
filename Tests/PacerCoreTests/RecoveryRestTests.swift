import Foundation
import PacerCore
import Testing

/// `{"until_hr": {"below_bpm": 120, "who": "class_all", "min": "10s", "max": "1m"}}` and friends.
private func untilHR(_ members: [String: JSONValue]) -> JSONValue { ["until_hr": .object(members)] }

private let classRule: JSONValue = untilHR(["below_bpm": 120, "who": "class_all", "min": "10s", "max": "1m"])

/// 20 s work / a rest that ends on recovery (10 s … 60 s) × 2: work 0–20 s, rest 20–80 s at most, work.
private func intervalMachine() throws -> TimerMachine {
    try makeMachine(["kind": "interval", "work": "20s", "rest": classRule, "rounds": 2])
}

extension TimerMachine {
    /// A recovery that must be accepted; returns its events.
    @discardableResult
    mutating func recover(at: Millis? = nil, now: Millis) throws -> [TimerEvent] {
        try recovered(at: at ?? now, now: now).get()
    }

    /// A recovery that must be refused; checks it changed nothing and returns the message.
    mutating func recoveryRefusal(at: Millis? = nil, now: Millis, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        let before = self
        switch recovered(at: at ?? now, now: now) {
        case .success(let events):
            Issue.record("expected a refusal, got \(events.types)", sourceLocation: sourceLocation)
            return nil
        case .failure(let error):
            #expect(self == before, "a refused recovery changed the machine", sourceLocation: sourceLocation)
            #expect(error.code == .invalidState, sourceLocation: sourceLocation)
            return error.message
        }
    }
}

@Suite("Rests that end on recovery: the spec")
struct RecoverySpecTests {
    @Test("interval, rest and program specs read, compile (timed by max) and write back the same")
    func readCompileWrite() throws {
        let interval = try TimerSpec(json: ["kind": "interval", "work": "20s", "rest": classRule, "rounds": 3, "skip_last_rest": false])
        let rule = RecoveryRule(threshold: .bpm(120), who: .classAll, minMs: 10_000, maxMs: 60_000)
        #expect(interval.restUntilHR == rule && interval.restMs == nil)
        let program = try interval.compile()
        #expect(kinds(program) == [.work, .rest, .work, .rest, .work, .rest])
        #expect(program.segments.filter { $0.kind == .rest }.allSatisfy { $0.untilHR == rule && $0.durationMs == 60_000 })
        #expect(program.segments.filter { $0.kind == .work }.allSatisfy { $0.untilHR == nil })
        #expect(interval.json["rest"] == untilHR(["below_bpm": 120, "who": "class_all", "min": "10s", "max": "1m"]))

        // The defaults: who class_all, min 0 s; written out in full.
        let rest = try TimerSpec(json: ["kind": "rest", "exercise": "Bench", "duration": untilHR(["below_pct_max": 65, "max": "90s"])])
        #expect(rest.restUntilHR == RecoveryRule(threshold: .percentOfMax(65), who: .classAll, minMs: 0, maxMs: 90_000))
        #expect(rest.durationMs == nil && rest.ack)
        #expect(rest.json["duration"] == untilHR(["below_pct_max": 65, "who": "class_all", "min": "0s", "max": "1m30s"]))
        #expect(try rest.compile().segments == [Segment(kind: .rest, durationMs: 90_000, label: "Bench", untilHR: rest.restUntilHR)])

        let segments = try TimerSpec(json: ["kind": "program", "segments": [
            ["kind": "work", "duration": "30s"],
            ["kind": "rest", "duration": untilHR(["below_bpm": 110, "who": "alice", "min": "20s", "max": "2m"])],
            ["kind": "work", "duration": "30s"],
        ]])
        #expect(try segments.compile().segments[1].untilHR == RecoveryRule(threshold: .bpm(110), who: .athlete("alice"), minMs: 20_000, maxMs: 120_000))
        #expect(try segments.compile().totalMs == 180_000)

        for spec in [interval, rest, segments] {
            #expect(try TimerSpec(json: spec.json) == spec)
            #expect(spec.hasRecoveryRest)
        }
        #expect(!(try TimerSpec(json: ["kind": "interval", "work": "20s", "rest": "10s"])).hasRecoveryRest)
        for word in ["class_median", "class_all", "class_80pct", "bob-2"] {
            let spec = try TimerSpec(json: ["kind": "rest", "duration": untilHR(["below_bpm": 100, "who": .string(word), "max": "1m"])])
            #expect(spec.restUntilHR?.who.word == word)
            #expect(try TimerSpec(json: spec.json) == spec)
        }
    }

    @Test("bad rules are refused naming the member and saying what to write; the bounds are inclusive")
    func validation() throws {
        func rest(_ rule: JSONValue) throws { _ = try TimerSpec(json: ["kind": "interval", "work": "20s", "rest": rule]) }
        expectSpecError("rest.until_hr needs the heart rate to wait for: \"below_bpm\": 120, or \"below_pct_max\": 65 (percent of each athlete's max HR)") {
            try rest(untilHR(["max": "1m"]))
        }
        expectSpecError("rest.until_hr takes \"below_bpm\" or \"below_pct_max\", not both") {
            try rest(untilHR(["below_bpm": 120, "below_pct_max": 60, "max": "1m"]))
        }
        expectSpecError("rest.until_hr.max is required: the longest the rest may last, like \"2m\"") { try rest(untilHR(["below_bpm": 120])) }
        expectSpecError("rest.until_hr.min must be between 0 s and max (1 m), got 1 m 30 s") {
            try rest(untilHR(["below_bpm": 120, "min": "90s", "max": "1m"]))
        }
        expectSpecError("rest.until_hr.max must be between 1 s and 7 days, got 500 ms") { try rest(untilHR(["below_bpm": 120, "max": "500ms"])) }
        expectSpecError("rest.until_hr.max must be between 1 s and 7 days, got 8 days") { try rest(untilHR(["below_bpm": 120, "max": "8d"])) }
        expectSpecError("rest.until_hr.below_bpm must be between 40 and 200, got 201") { try rest(untilHR(["below_bpm": 201, "max": "1m"])) }
        expectSpecError("rest.until_hr.below_pct_max must be between 30 and 95, got 29") { try rest(untilHR(["below_pct_max": 29, "max": "1m"])) }
        expectSpecError("rest.until_hr.below_bpm must be a whole number, got 119.5") { try rest(untilHR(["below_bpm": 119.5, "max": "1m"])) }
        expectSpecError("rest.until_hr.who must be an athlete's id, \"class_median\", \"class_all\" or \"class_80pct\", got \"Bob Smith\"") {
            try rest(untilHR(["below_bpm": 120, "who": "Bob Smith", "max": "1m"]))
        }
        expectSpecError("unknown key 'below' in rest.until_hr; allowed keys: below_bpm, below_pct_max, max, min, who") {
            try rest(untilHR(["below": 120, "max": "1m"]))
        }
        expectSpecError("unknown key 'until' in rest: a rest that ends on recovery is written {\"until_hr\": {\"below_bpm\": 120, \"who\": \"class_all\", \"min\": \"20s\", \"max\": \"2m\"}}") {
            try rest(["until": [:]])
        }
        expectSpecError("rest.until_hr must be an object like {\"until_hr\": {\"below_bpm\": 120, \"who\": \"class_all\", \"min\": \"20s\", \"max\": \"2m\"}}, got 5") {
            try rest(["until_hr": 5])
        }
        expectSpecError("duration.until_hr.max is required: the longest the rest may last, like \"2m\"") {
            _ = try TimerSpec(json: ["kind": "rest", "duration": untilHR(["below_bpm": 120])])
        }
        expectSpecError("segments[0].duration.until_hr: only a rest segment can end on recovery; give this work segment a duration like \"30s\"") {
            _ = try TimerSpec(json: ["kind": "program", "segments": [["kind": "work", "duration": classRule]]])
        }
        expectSpecError("duration must be a duration like 90, \"90s\", \"1m30s\" or \"1:30\", got {\"until_hr\":{\"below_bpm\":120,\"max\":\"1m\",\"min\":\"10s\",\"who\":\"class_all\"}}") {
            _ = try TimerSpec(json: ["kind": "countdown", "duration": classRule])
        }
        // In code: a duration and a rule at once.
        var both = TimerSpec.interval(workMs: 20_000, restMs: 10_000)
        both.restUntilHR = RecoveryRule(threshold: .bpm(120), maxMs: 60_000)
        expectSpecError("rest takes a duration or {\"until_hr\": {...}}, not both") { try both.validate() }
        // The bounds, inclusive.
        try rest(untilHR(["below_bpm": 40, "min": "0s", "max": "1s"]))
        try rest(untilHR(["below_bpm": 200, "min": "7d", "max": "7d"]))
        try rest(untilHR(["below_pct_max": 30, "max": "1m"]))
        try rest(untilHR(["below_pct_max": 95, "min": "1m", "max": "1m"]))
    }
}

@Suite("Rests that end on recovery: the machine")
struct RecoveryMachineTests {
    @Test("without recovery the rest is timed by its max: ends_at is the max, and it ends there")
    func runsToMax() throws {
        var m = try intervalMachine()
        try m.send(startNow, now: t0)
        _ = m.advance(to: t0 + 20_000)
        let s = m.snapshot(at: t0 + 30_000)
        #expect(s.phase == .rest && s.endsAtMs == t0 + 80_000 && s.remainingMs == 50_000 && s.segmentDurationMs == 60_000)
        #expect(s.untilHR == RecoveryRule(threshold: .bpm(120), minMs: 10_000, maxMs: 60_000))
        #expect(s.restMaxMs == 60_000 && s.restMinMs == 10_000 && s.recoveredAtMs == nil)
        #expect(m.nextEventDue(after: t0 + 76_000) == t0 + 77_000)  // the countdown before the max
        #expect(m.advance(to: t0 + 79_000).types == [.countdown, .countdown, .countdown])
        let events = m.advance(to: t0 + 80_000)
        #expect(events.types == [.phase] && events.last?.dueMs == t0 + 80_000)
        let work = m.snapshot(at: t0 + 80_000)
        #expect(work.phase == .work && work.untilHR == nil && work.restMaxMs == nil && work.endsAtMs == t0 + 100_000)
    }

    @Test("recovery between min and max ends the rest at that instant: recovered, then the next phase")
    func endsOnRecovery() throws {
        var m = try intervalMachine()
        try m.send(startNow, now: t0)
        _ = m.advance(to: t0 + 30_000)
        let revision = m.revision
        let events = try m.recover(now: t0 + 45_000)
        #expect(events.types == [.recovered, .phase])
        #expect(events.dues == [t0 + 45_000, t0 + 45_000])
        #expect(events[0].phase == .rest && events[0].round == 1 && events[1].phase == .work && events[1].round == 2)
        #expect(events[0].revision == revision + 1 && events[1].revision == revision + 2 && m.revision == revision + 2)
        #expect(events[0].isOutcome && !events[0].isCue)  // written before it is published, never recomputed
        let s = m.snapshot(at: t0 + 45_000)
        #expect(s.phase == .work && s.segment == 3 && s.endsAtMs == t0 + 65_000 && s.untilHR == nil)
        #expect(s.elapsedMs == 45_000)
        // Exactly at min, and exactly at the max's last millisecond.
        var atMin = try intervalMachine()
        try atMin.send(startNow, now: t0)
        _ = atMin.advance(to: t0 + 29_000)
        #expect(try atMin.recover(now: t0 + 30_000).types == [.recovered, .phase])
        var atMax = try intervalMachine()
        try atMax.send(startNow, now: t0)
        _ = atMax.advance(to: t0 + 79_000)
        #expect(try atMax.recover(now: t0 + 79_999).types == [.recovered, .phase])
        #expect(atMax.snapshot(at: t0 + 79_999).endsAtMs == t0 + 99_999)
    }

    @Test("recovery before min is kept: the rest ends at its min, with its phase then")
    func beforeMin() throws {
        var m = try intervalMachine()
        try m.send(startNow, now: t0)
        _ = m.advance(to: t0 + 20_000)
        let events = try m.recover(now: t0 + 24_000)
        #expect(events.types == [.recovered] && events[0].dueMs == t0 + 24_000)
        let s = m.snapshot(at: t0 + 25_000)
        #expect(s.phase == .rest && s.endsAtMs == t0 + 30_000 && s.remainingMs == 5_000 && s.segmentDurationMs == 10_000)
        #expect(s.recoveredAtMs == t0 + 24_000 && s.untilHR != nil && s.restMaxMs == nil && s.restMinMs == nil)
        #expect(m.nextEventDue(after: t0 + 24_000) == t0 + 27_000)  // the countdown before the new end
        #expect(m.advance(to: t0 + 27_000).types == [.countdown])
        let later = m.advance(to: t0 + 30_000)
        #expect(later.types == [.countdown, .countdown, .phase] && later.last?.dueMs == t0 + 30_000)
        #expect(m.snapshot(at: t0 + 30_000).phase == .work)
        // A second recovery of the same rest is refused.
        var twice = try intervalMachine()
        try twice.send(startNow, now: t0)
        try twice.recover(now: t0 + 22_000)
        #expect(twice.recoveryRefusal(now: t0 + 23_000)
                == "cannot end the rest on recovery of timer 't1': it is running; it recovered at \(iso8601(ms: t0 + 22_000)) and the rest ends at \(iso8601(ms: t0 + 30_000))")
    }

    @Test("refused, changing nothing: in work, paused, idle, finished, and after the max")
    func refusals() throws {
        var m = try intervalMachine()
        #expect(m.recoveryRefusal(now: t0) == "cannot end the rest on recovery of timer 't1': it is idle; no rest is waiting for recovery")
        try m.send(startNow, now: t0)
        #expect(m.recoveryRefusal(now: t0 + 5_000)
                == "cannot end the rest on recovery of timer 't1': it is running; its current segment (work, round 1) does not end on recovery")
        try m.send(.pause, now: t0 + 30_000)
        #expect(m.recoveryRefusal(now: t0 + 31_000)
                == "cannot end the rest on recovery of timer 't1': it is paused; recovery ends a rest only while it runs; resume it first")
        try m.send(.resume, now: t0 + 32_000)
        // The max (82 s with the pause) has passed: the rest is over, the next work runs.
        #expect(m.recoveryRefusal(now: t0 + 82_000)?.hasSuffix("its current segment (work, round 2) does not end on recovery") == true)
        try m.send(.finish, now: t0 + 83_000)
        #expect(m.recoveryRefusal(now: t0 + 84_000)?.hasSuffix("it has finished; no rest is waiting for recovery") == true)
    }

    @Test("pause freezes both the min and the max clocks")
    func pauseFreezesBothClocks() throws {
        var m = try intervalMachine()
        try m.send(startNow, now: t0)
        try m.send(.pause, now: t0 + 25_000)  // 5 s into the rest
        let paused = m.snapshot(at: t0 + 100_000)
        #expect(paused.status == .paused && paused.remainingMs == 55_000 && paused.restMaxMs == 60_000 && paused.restMinMs == 10_000)
        try m.send(.resume, now: t0 + 125_000)  // 100 s later
        #expect(m.snapshot(at: t0 + 125_000).endsAtMs == t0 + 180_000)
        // 4 s more of rest: before its min (now at 130 s): kept until then.
        #expect(try m.recover(now: t0 + 129_000).types == [.recovered])
        #expect(m.snapshot(at: t0 + 129_000).endsAtMs == t0 + 130_000)
        #expect(m.advance(to: t0 + 130_000).types.last == .phase)
        // Without recovery, the max moved by the pause too.
        var n = try intervalMachine()
        try n.send(startNow, now: t0)
        try n.send(.pause, now: t0 + 25_000)
        try n.send(.resume, now: t0 + 125_000)
        #expect(n.advance(to: t0 + 179_999).types.last != .phase)
        #expect(n.advance(to: t0 + 180_000).types.last == .phase)
    }

    @Test("skip leaves the rest; back restarts it waiting again, even after recovery")
    func skipAndBack() throws {
        var m = try intervalMachine()
        try m.send(startNow, now: t0)
        try m.recover(now: t0 + 25_000)  // kept until 30 s
        let rewound = try m.send(.back, now: t0 + 26_000)
        #expect(rewound.types == [.rewound] && rewound[0].phase == .rest)
        let s = m.snapshot(at: t0 + 26_000)
        #expect(s.recoveredAtMs == nil && s.restMaxMs == 60_000 && s.endsAtMs == t0 + 86_000)
        #expect(try m.recover(now: t0 + 40_000).types == [.recovered, .phase])
        // Skip out of a waiting rest: the next segment, and nothing to recover.
        var n = try intervalMachine()
        try n.send(startNow, now: t0)
        _ = n.advance(to: t0 + 20_000)
        #expect(try n.send(.skip, now: t0 + 21_000).types == [.skipped])
        #expect(n.snapshot(at: t0 + 21_000).phase == .work && n.recoveryRefusal(now: t0 + 22_000) != nil)
        // Back within the first 3 s of the next work returns to the rest, waiting.
        var o = try intervalMachine()
        try o.send(startNow, now: t0)
        try o.recover(now: t0 + 40_000)
        #expect(try o.send(.back, now: t0 + 41_000).first?.phase == .rest)
        #expect(o.snapshot(at: t0 + 41_000).restMaxMs == 60_000)
        #expect(try o.recover(now: t0 + 51_000).types == [.recovered, .phase])
    }

    @Test("adjust and extend move the cap; the min never lies past the cap")
    func adjustAndExtend() throws {
        var m = try intervalMachine()
        try m.send(startNow, now: t0)
        try m.send(.adjust(seconds: 30), now: t0 + 21_000)
        var s = m.snapshot(at: t0 + 21_000)
        #expect(s.restMaxMs == 90_000 && s.endsAtMs == t0 + 110_000 && s.restMinMs == 10_000)
        try m.send(.extend(seconds: 15, rounds: nil), now: t0 + 22_000)
        #expect(m.snapshot(at: t0 + 22_000).restMaxMs == 105_000)
        try m.send(.adjust(seconds: -100), now: t0 + 23_000)  // the cap is now 5 s, under the min
        s = m.snapshot(at: t0 + 23_000)
        #expect(s.restMaxMs == 5_000 && s.restMinMs == 5_000 && s.endsAtMs == t0 + 25_000)
        #expect(try m.recover(now: t0 + 24_000).types == [.countdown, .recovered])  // the cue 1 s before the cap, then
        #expect(m.snapshot(at: t0 + 24_000).endsAtMs == t0 + 25_000)
        // After recovery an adjust moves the real end.
        try m.send(.adjust(seconds: 10), now: t0 + 24_500)
        #expect(m.snapshot(at: t0 + 24_500).endsAtMs == t0 + 35_000)
    }

    @Test("a rest timer that ends on recovery expires on it (ack), and a snooze does not wait for recovery")
    func restKind() throws {
        var m = try makeMachine(["kind": "rest", "exercise": "Bench", "next": "Row", "duration": untilHR(["below_pct_max": 60, "who": "alice", "max": "2m"])])
        let idle = m.snapshot(at: t0)
        #expect(idle.untilHR?.who == .athlete("alice") && idle.restMaxMs == 120_000 && idle.restMinMs == 0 && idle.display == "2:00")
        try m.send(startNow, now: t0)
        let events = try m.recover(now: t0 + 45_000)
        #expect(events.types == [.recovered, .expired] && events[0].label == "Bench" && events[0].nextLabel == "Row")
        #expect(m.status == .expired && m.snapshot(at: t0 + 45_000).untilHR == nil)
        try m.send(.snooze(seconds: 30), now: t0 + 50_000)
        #expect(m.snapshot(at: t0 + 50_000).untilHR == nil)
        #expect(m.recoveryRefusal(now: t0 + 51_000)?.hasSuffix("does not end on recovery") == true)
    }

    @Test("the instant is the reading's, within the lag window; older is clamped to it, future to now")
    func instants() throws {
        var m = try intervalMachine()
        try m.send(startNow, now: t0)
        _ = m.advance(to: t0 + 30_000)
        let events = try m.recover(at: t0 + 43_500, now: t0 + 45_000)
        #expect(events.dues == [t0 + 43_500, t0 + 43_500] && events.allSatisfy { $0.atMs == t0 + 45_000 })
        #expect(m.snapshot(at: t0 + 45_000).endsAtMs == t0 + 63_500)
        var old = try intervalMachine()
        try old.send(startNow, now: t0)
        _ = old.advance(to: t0 + 30_000)
        #expect(try old.recover(at: t0 + 30_000, now: t0 + 45_000).dues == [t0 + 43_000, t0 + 43_000])
        var future = try intervalMachine()
        try future.send(startNow, now: t0)
        _ = future.advance(to: t0 + 30_000)
        #expect(try future.recover(at: t0 + 50_000, now: t0 + 45_000).dues == [t0 + 45_000, t0 + 45_000])
        // Never before the last change: a reading from before the rest began counts from its start
        // (and ends it at its min).
        var early = try intervalMachine()
        try early.send(startNow, now: t0)
        _ = early.advance(to: t0 + 20_500)
        #expect(try early.recover(at: t0 + 19_000, now: t0 + 20_500).dues == [t0 + 20_000])
        #expect(early.snapshot(at: t0 + 20_500).endsAtMs == t0 + 30_000)
    }

    @Test("shifting the anchors (a wall-clock jump) moves the recovery instant too")
    func shift() throws {
        var m = try intervalMachine()
        try m.send(startNow, now: t0)
        try m.recover(now: t0 + 24_000)
        m.shiftAnchors(by: 5_000)
        let s = m.snapshot(at: t0 + 29_000)
        #expect(s.recoveredAtMs == t0 + 29_000 && s.endsAtMs == t0 + 35_000 && s.remainingMs == 6_000)
    }
}

@Suite("Rests that end on recovery: restore after a crash")
struct RecoveryPersistenceTests {
    /// The machine written and read back as the node does.
    func restored(_ m: TimerMachine) throws -> TimerMachine {
        try TimerMachine(persisted: JSONValue.parse(m.persistedBytes))
    }

    @Test("a crash while the rest waits: the restore is at the same segment and instant, and ends at the max")
    func crashWhileWaiting() throws {
        var m = try intervalMachine()
        try m.send(startNow, now: t0)
        _ = m.advance(to: t0 + 30_000)
        var back = try restored(m)
        #expect(back == m)
        try expectPersistedFormsAgree(m)
        #expect(back.snapshot(at: t0 + 40_000) == m.snapshot(at: t0 + 40_000))
        // Down for a minute: the rest ran to its max while the node was down.
        let events = back.advance(to: t0 + 95_000)
        #expect(events.types == [.phase] && events[0].dueMs == t0 + 80_000 && events[0].lateMs == 15_000)
        #expect(back.snapshot(at: t0 + 95_000).endsAtMs == t0 + 100_000)
        // Back quickly instead: still waiting; recovery is accepted as before the crash.
        var soon = try restored(m)
        #expect(try soon.recover(now: t0 + 31_000).types == [.recovered, .phase])
    }

    @Test("a crash after recovery: the restore keeps the instant, and the rest ends where it would have")
    func crashAfterRecovery() throws {
        var m = try intervalMachine()
        try m.send(startNow, now: t0)
        try m.recover(now: t0 + 24_000)  // ends at the min, 30 s
        var back = try restored(m)
        #expect(back == m)
        try expectPersistedFormsAgree(m)
        #expect(back.snapshot(at: t0 + 26_000).recoveredAtMs == t0 + 24_000)
        #expect(back.recoveryRefusal(now: t0 + 26_000) != nil)
        let last = back.advance(to: t0 + 30_000).last
        #expect(last?.type == .phase && last?.dueMs == t0 + 30_000)
        // Recovered at 45 s and persisted: a restart at 50 s is in the next work, anchored at 45 s.
        var n = try intervalMachine()
        try n.send(startNow, now: t0)
        try n.recover(now: t0 + 45_000)
        var later = try restored(n)
        #expect(later.advance(to: t0 + 50_000).isEmpty)
        #expect(later.snapshot(at: t0 + 50_000).endsAtMs == t0 + 65_000)
        #expect(later.advance(to: t0 + 65_000).last?.type == .finished)
    }

    @Test("every who rule and threshold round-trips, waiting and recovered, paused and finished", arguments: [
        untilHR(["below_bpm": 120, "who": "class_all", "max": "1m"]),
        untilHR(["below_pct_max": 65, "who": "class_median", "min": "20s", "max": "2m"]),
        untilHR(["below_bpm": 100, "who": "class_80pct", "min": "1.5s", "max": "90s"]),
        untilHR(["below_pct_max": 70, "who": "alice", "min": "0s", "max": "7d"]),
    ])
    func everyRule(rule: JSONValue) throws {
        let specs: [JSONValue] = [
            ["kind": "interval", "work": "20s", "rest": rule, "rounds": 3],
            ["kind": "rest", "duration": rule, "exercise": "Squat"],
            ["kind": "program", "segments": [["kind": "work", "duration": "20s"], ["kind": "rest", "duration": rule, "label": "Breathe"]]],
        ]
        for json in specs {
            var m = try makeMachine(json)
            try expectPersistedFormsAgree(m)
            #expect(m.persistedVersion == 2)
            #expect(try restored(m) == m)
            try m.send(startNow, now: t0)
            _ = m.advance(to: t0 + 20_500)
            try expectPersistedFormsAgree(m)
            try m.send(.pause, now: t0 + 21_000)
            try expectPersistedFormsAgree(m)
            try m.send(.resume, now: t0 + 22_000)
            _ = m.recovered(at: t0 + 23_000, now: t0 + 23_000)
            try expectPersistedFormsAgree(m)
            #expect(try restored(m) == m)
            _ = m.advance(to: t0 + 8 * 86_400_000)
            try expectPersistedFormsAgree(m)
        }
    }

    @Test("a timer without such rests is written as version 1, as before; version 2 is read; 3 is refused")
    func versions() throws {
        var m = try makeMachine(.interval(workMs: 20_000, restMs: 10_000))
        try m.send(startNow, now: t0)
        let text = String(decoding: m.persistedBytes, as: UTF8.self)
        #expect(m.persistedVersion == 1 && text.hasSuffix("\"version\":1}") && !text.contains("recovered") && !text.contains("until"))
        var r = try intervalMachine()
        try r.send(startNow, now: t0)
        try r.recover(now: t0 + 24_000)
        let recovering = String(decoding: r.persistedBytes, as: UTF8.self)
        #expect(recovering.hasSuffix("\"version\":2}") && recovering.contains("\"recoveredAtMs\":\(t0 + 24_000)"))
        #expect(recovering.contains("\"rest_until_hr\":{\"below_bpm\":120,\"max_ms\":60000,\"min_ms\":10000,\"who\":\"class_all\"}"))
        func readError(_ text: String) throws -> String? {
            do {
                _ = try TimerMachine(persisted: JSONValue.parse(Array(text.utf8)))
                return nil
            } catch let error as PersistedMachineError {
                return error.description
            }
        }
        let future = recovering.replacingOccurrences(of: "\"version\":2}", with: "\"version\":3}")
        #expect(try readError(future) == "version: unsupported timer format version 3")
        let damaged = recovering.replacingOccurrences(of: "\"who\":\"class_all\"", with: "\"who\":\"Class All\"")
        #expect(try readError(damaged) == "spec.rest_until_hr.who: unknown value \"Class All\"")
    }
}

@Suite("Rests that end on recovery: the rule against readings")
struct RecoveryRuleTests {
    func reading(_ athlete: String, _ bpm: Int?, max: Int? = 190, fresh: Bool = true) -> RecoveryReading {
        RecoveryReading(athlete: athlete, bpm: bpm, maxHR: max, fresh: fresh)
    }

    @Test("one athlete: below the threshold (strictly) and fresh; stale or absent never holds")
    func athlete() {
        let rule = RecoveryRule(threshold: .bpm(120), who: .athlete("alice"), maxMs: 60_000)
        #expect(rule.holds([reading("alice", 119), reading("bob", 180)]))
        #expect(!rule.holds([reading("alice", 120)]))
        #expect(!rule.holds([reading("alice", 100, fresh: false)]))
        #expect(!rule.holds([reading("alice", nil)]))
        #expect(!rule.holds([reading("bob", 90)]))
        #expect(rule.tally([reading("alice", 119), reading("bob", 90)]) == RecoveryTally(recovered: 1, counted: 1, uncounted: 0, holds: true))
    }

    @Test("class_all: every athlete who counts; stale straps do not count; nobody fresh runs to the max")
    func classAll() {
        let rule = RecoveryRule(threshold: .bpm(120), who: .classAll, maxMs: 60_000)
        #expect(rule.holds([reading("a", 100), reading("b", 119)]))
        #expect(!rule.holds([reading("a", 100), reading("b", 121)]))
        #expect(rule.tally([reading("a", 100), reading("b", 160, fresh: false), reading("c", nil)])
                == RecoveryTally(recovered: 1, counted: 1, uncounted: 2, holds: true))
        #expect(!rule.holds([reading("a", 100, fresh: false), reading("b", nil)]))
        #expect(!rule.holds([]))
    }

    @Test("class_80pct: at least 80 % of those who count (12 of 14 holds, 11 of 14 does not, 4 of 5 does)")
    func class80() {
        let rule = RecoveryRule(threshold: .bpm(120), who: .class80Percent, maxMs: 60_000)
        func readings(_ below: Int, of count: Int, stale: Int = 0) -> [RecoveryReading] {
            (0..<count).map { reading("a\($0)", $0 < below ? 100 : 150) } + (0..<stale).map { reading("s\($0)", 100, fresh: false) }
        }
        #expect(rule.tally(readings(12, of: 14)) == RecoveryTally(recovered: 12, counted: 14, uncounted: 0, holds: true))
        #expect(!rule.holds(readings(11, of: 14)))
        #expect(rule.holds(readings(4, of: 5)))
        #expect(!rule.holds(readings(3, of: 5, stale: 3)))  // stale straps neither help nor hinder
        #expect(!rule.holds(readings(0, of: 0, stale: 3)))
    }

    @Test("needed: the fewest recovered with which the rule holds, for every class size up to 30 (12 of 14, 12 of 15); none for the median")
    func needed() {
        for who in [RecoveryRule.Who.classAll, .class80Percent, .athlete("a0")] {
            let rule = RecoveryRule(threshold: .bpm(120), who: who, maxMs: 60_000)
            for count in 1...30 {
                let counted = who == .athlete("a0") ? 1 : count
                let fewest = (0...counted).first { below in
                    rule.holds((0..<counted).map { reading("a\($0)", $0 < below ? 100 : 150) })
                }
                #expect(rule.needed(counted: counted) == fewest, "\(who.word), \(counted) counted")
            }
        }
        #expect(RecoveryRule(threshold: .bpm(120), who: .class80Percent, maxMs: 60_000).needed(counted: 14) == 12)
        #expect(RecoveryRule(threshold: .bpm(120), who: .class80Percent, maxMs: 60_000).needed(counted: 15) == 12)
        #expect(RecoveryRule(threshold: .bpm(120), who: .classAll, maxMs: 60_000).needed(counted: 0) == 1)
        #expect(RecoveryRule(threshold: .bpm(120), who: .classMedian, maxMs: 60_000).needed(counted: 14) == nil)
    }

    @Test("class_median: the middle value, or the mean of the two middle ones, below the threshold")
    func classMedian() {
        let rule = RecoveryRule(threshold: .bpm(120), who: .classMedian, maxMs: 60_000)
        #expect(rule.holds([reading("a", 100), reading("b", 119), reading("c", 180)]))
        #expect(!rule.holds([reading("a", 100), reading("b", 120), reading("c", 180)]))
        #expect(rule.holds([reading("a", 110), reading("b", 129)]))   // mean 119.5
        #expect(!rule.holds([reading("a", 110), reading("b", 130)]))  // mean 120
        #expect(rule.holds([reading("a", 100), reading("b", 200, fresh: false)]))
        #expect(!rule.holds([reading("b", 100, fresh: false)]))
    }

    @Test("below_pct_max: of each athlete's own max HR; without a max HR the athlete does not count")
    func percentOfMax() {
        let rule = RecoveryRule(threshold: .percentOfMax(65), who: .classAll, maxMs: 60_000)
        // 65 % of 190 is 123.5 bpm; of 200, 130.
        #expect(rule.isRecovered(reading("a", 123, max: 190)) == true)
        #expect(rule.isRecovered(reading("a", 124, max: 190)) == false)
        #expect(rule.isRecovered(reading("a", 129, max: 200)) == true)
        #expect(rule.isRecovered(reading("a", 130, max: 200)) == false)
        #expect(rule.isRecovered(reading("a", 100, max: nil)) == nil)
        #expect(rule.tally([reading("a", 123, max: 190), reading("b", 100, max: nil)]) == RecoveryTally(recovered: 1, counted: 1, uncounted: 1, holds: true))
        // The median of percentages: 60 % and 69 % of max average 64.5 %.
        let median = RecoveryRule(threshold: .percentOfMax(65), who: .classMedian, maxMs: 60_000)
        #expect(median.holds([reading("a", 120, max: 200), reading("b", 138, max: 200)]))
        #expect(!median.holds([reading("a", 120, max: 200), reading("b", 140, max: 200)]))
        #expect(median.holds([reading("a", 114, max: 190), reading("b", 200, max: 200), reading("c", 60, max: 200)]))
    }
}

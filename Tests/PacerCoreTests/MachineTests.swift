import Foundation
import Synchronization
import PacerCore
import Testing

@Suite("Timer machine: kinds and timing")
struct MachineTimingTests {
    @Test func countdownRunsCuesAndFinishes() throws {
        var m = try makeMachine(.countdown(durationMs: 60_000, label: "Tea"))
        #expect(m.status == .idle)
        let idle = m.snapshot(at: t0)
        #expect(idle.status == .idle && idle.phase == .idle && idle.remainingMs == 60_000 && idle.display == "1:00")
        #expect(idle.endsAtMs == nil && idle.startedAtMs == nil)

        let started = try m.send(startNow, now: t0)
        #expect(started.types == [.started])
        #expect(started[0].phase == .countdown && started[0].label == "Tea" && started[0].revision == 1 && started[0].dueMs == t0)

        let s = m.snapshot(at: t0 + 400)
        #expect(s.status == .running && s.phase == .countdown)
        #expect(s.remainingMs == 59_600 && s.remainingSeconds == 60 && s.display == "1:00")
        #expect(s.endsAtMs == t0 + 60_000 && s.startedAtMs == t0 && s.elapsedMs == 400)

        var all: [TimerEvent] = []
        var now = t0
        while now < t0 + 61_000 {
            now += 250
            all += m.advance(to: now)
        }
        #expect(all.types == [.halfway, .countdown, .countdown, .countdown, .finished])
        #expect(all.dues == [t0 + 30_000, t0 + 57_000, t0 + 58_000, t0 + 59_000, t0 + 60_000])
        #expect(all.compactMap(\.cue) == [3, 2, 1])
        #expect(all.allSatisfy { $0.lateMs == nil })
        let finished = all.last!
        #expect(finished.reason == .completed && finished.finishedAtMs == t0 + 60_000 && finished.revision == 2)
        #expect(m.status == .finished)
        #expect(m.nextDeadline(after: now) == nil)
        let done = m.snapshot(at: now)
        #expect(done.remainingMs == 0 && done.display == "0:00" && done.progress == 1 && done.elapsedMs == 60_000)
    }

    @Test func intervalPhasesAreAnchoredNotCounted() throws {
        var m = try makeMachine(.interval(workMs: 20_000, restMs: 10_000, rounds: 2))
        try m.send(startNow, now: t0)
        // The node wakes up late (throttled): transitions still happen at the anchored instants.
        let events = m.advance(to: t0 + 21_234)
        #expect(events.filter { $0.type == .phase }.map(\.dueMs) == [t0 + 20_000])
        let s = m.snapshot(at: t0 + 21_234)
        #expect(s.phase == .rest && s.round == 1 && s.segment == 2 && s.segments == 3)
        #expect(s.endsAtMs == t0 + 30_000 && s.remainingMs == 8_766)
        #expect(s.totalRemainingMs == 28_766)
        let later = m.advance(to: t0 + 30_001)
        #expect(later.types.last == .phase && later.last?.phase == .work && later.last?.round == 2 && later.last?.dueMs == t0 + 30_000)
        let end = m.advance(to: t0 + 50_000)
        #expect(end.types.last == .finished && end.last?.dueMs == t0 + 50_000)
        #expect(m.revision == 4)   // start, rest, work, finished
    }

    @Test func restTimerExpiresAlertsAndIsAcknowledged() throws {
        var m = try makeMachine(.rest(durationMs: 30_000, exercise: "Bench", next: "Row"))
        try m.send(startNow, now: t0)
        let s = m.snapshot(at: t0)
        #expect(s.label == "Bench" && s.nextLabel == "Row" && s.phase == .rest)
        var events: [TimerEvent] = []
        for step in stride(from: t0 + 1000, through: t0 + 55_000, by: 1000) { events += m.advance(to: step) }
        #expect(events.types == [.countdown, .countdown, .countdown, .expired, .alert, .alert])
        #expect(events.filter { $0.type == .alert }.dues == [t0 + 40_000, t0 + 50_000])
        #expect(m.status == .expired)
        #expect(m.snapshot(at: t0 + 55_000).phase == .expired)
        #expect(m.nextDeadline(after: t0 + 55_000) == t0 + 60_000)
        let acked = try m.send(.ack, now: t0 + 55_500)
        #expect(acked.types == [.acknowledged, .finished])
        #expect(acked[1].reason == .acknowledged && acked[1].finishedAtMs == t0 + 55_500)
        #expect(m.status == .finished)
    }

    @Test func expiredTimerIsAutoDismissed() throws {
        var settings = TimerSettings()
        settings.autoDismissMs = 60_000
        settings.alertIntervalMs = 20_000
        var m = try makeMachine(.countdown(durationMs: 5_000, ack: true), settings: settings)
        try m.send(startNow, now: t0)
        var events: [TimerEvent] = []
        for step in stride(from: t0 + 500, through: t0 + 70_000, by: 500) { events += m.advance(to: step) }
        #expect(events.filter { !$0.isCue || $0.type == .alert }.types == [.expired, .alert, .alert, .finished])
        #expect(events.last?.reason == .autoDismissed && events.last?.dueMs == t0 + 65_000)
        #expect(m.status == .finished)
    }

    @Test("after_ack ready: the ack finishes the run and leaves the rest timer ready at its full duration, in one revision")
    func restTimerComesBackReadyAfterAck() throws {
        var spec = TimerSpec.rest(durationMs: 90_000, exercise: "Squat", next: "Rows")
        spec.afterAck = .ready
        var m = try makeMachine(spec)
        try m.send(startNow, now: t0)
        _ = m.advance(to: t0 + 95_000)
        #expect(m.status == .expired)
        let revision = m.revision
        let acked = try m.send(.ack, now: t0 + 95_000)
        #expect(acked.types == [.acknowledged, .finished, .reset])
        #expect(acked[1].reason == .acknowledged)
        #expect(Set(acked.map(\.revision)) == [revision + 1])
        #expect(m.status == .idle)
        let ready = m.snapshot(at: t0 + 100_000)
        #expect(ready.remainingMs == 90_000 && ready.display == "1:30" && ready.label == "Squat", "\(ready)")
        #expect(m.nextDeadline(after: t0 + 100_000) == nil)
        // And it starts again from the top.
        try m.send(startNow, now: t0 + 200_000)
        #expect(m.snapshot(at: t0 + 201_000).remainingMs == 89_000)
    }

    @Test("after_ack ready: an auto-dismiss leaves the timer ready too, and the projection agrees with the advance")
    func autoDismissComesBackReady() throws {
        var settings = TimerSettings()
        settings.autoDismissMs = 60_000
        var spec = TimerSpec.countdown(durationMs: 5_000, ack: true)
        spec.afterAck = .ready
        var m = try makeMachine(spec, settings: settings)
        try m.send(startNow, now: t0)
        var projected = m
        let events = m.advance(to: t0 + 70_000)
        #expect(events.filter { !$0.isCue }.types.suffix(2) == [.finished, .reset])
        #expect(events.last?.dueMs == t0 + 65_000)
        #expect(m.status == .idle && m.snapshot(at: t0 + 70_000).remainingMs == 5_000)
        // A snapshot taken without advancing sees the same state and revision.
        let seen = projected.snapshot(at: t0 + 70_000)
        #expect(seen.status == .idle && seen.revision == m.revision)
        _ = projected.advance(to: t0 + 70_000)
        #expect(projected == m)
    }

    @Test("after_ack: only finish or ready, and ready only with ack; written back as read")
    func afterAckSpec() throws {
        let ready = try TimerSpec(json: ["kind": "rest", "duration": "90s", "after_ack": "ready"])
        #expect(ready.afterAck == .ready)
        #expect(try TimerSpec(json: ready.json) == ready)
        #expect(throws: SpecError.self) { try TimerSpec(json: ["kind": "countdown", "duration": "1m", "after_ack": "ready"]) }
        #expect(try TimerSpec(json: ["kind": "countdown", "duration": "1m", "ack": true, "after_ack": "ready"]).afterAck == .ready)
        do {
            _ = try TimerSpec(json: ["kind": "rest", "after_ack": "again"])
            Issue.record("accepted after_ack: again")
        } catch {
            #expect(error.field == "after_ack" && error.message.contains("\"finish\" or \"ready\""), "\(error)")
        }
        #expect(throws: SpecError.self) { try TimerSpec(json: ["kind": "stopwatch", "after_ack": "ready"]) }
    }

    @Test func snoozeRunsAgainThenExpiresAgain() throws {
        var m = try makeMachine(.countdown(durationMs: 10_000, label: "Oven", ack: true))
        try m.send(startNow, now: t0)
        _ = m.advance(to: t0 + 10_000)
        #expect(m.status == .expired)
        let snoozed = try m.send(.snooze(seconds: 60), now: t0 + 12_000)
        #expect(snoozed.types == [.snoozed] && snoozed[0].seconds == 60 && snoozed[0].phase == .countdown)
        let s = m.snapshot(at: t0 + 12_000)
        #expect(s.status == .running && s.remainingMs == 60_000 && s.endsAtMs == t0 + 72_000 && s.label == "Oven")
        #expect(s.segmentDurationMs == 60_000 && s.totalRemainingMs == 60_000)
        let again = m.advance(to: t0 + 72_000)
        #expect(again.types.last == .expired && again.last?.dueMs == t0 + 72_000)
        #expect(m.status == .expired)
    }

    @Test func stopwatchCountsUpAndEntersOvertime() throws {
        var m = try makeMachine(.stopwatch(targetMs: 10_000))
        try m.send(startNow, now: t0)
        #expect(m.snapshot(at: t0 + 3_999).display == "0:03")
        #expect(m.snapshot(at: t0 + 3_999).remainingSeconds == 3)
        #expect(m.snapshot(at: t0 + 3_999).remainingMs == 6_001)
        #expect(m.nextDeadline(after: t0 + 3_500) == t0 + 4_000)
        var events: [TimerEvent] = []
        for step in stride(from: t0 + 500, through: t0 + 15_000, by: 500) { events += m.advance(to: step) }
        #expect(events.types == [.countdown, .countdown, .countdown, .phase])
        #expect(events.last?.phase == .overtime && events.last?.dueMs == t0 + 10_000)
        let s = m.snapshot(at: t0 + 15_000)
        #expect(s.status == .running && s.phase == .overtime && s.overtime && s.display == "0:15" && s.remainingMs == 0)
        #expect(s.endsAtMs == nil && s.segmentStartedAtMs == t0)
        #expect(m.nextDeadline(after: t0 + 15_000) == t0 + 16_000)
        let finished = try m.send(.finish, now: t0 + 15_500)
        #expect(finished.types == [.finished] && finished[0].reason == .finished)
        #expect(m.snapshot(at: t0 + 99_000).display == "0:15")
    }

    @Test("a segment 1 ms past a whole second flips its display 1 ms after the start")
    func flipOneMillisecondAfterStart() throws {
        var m = try makeMachine(["kind": "program", "segments": [["kind": "prepare", "duration": "1001ms"]]])
        try m.send(startNow, now: t0)
        #expect(m.snapshot(at: t0).display == "0:02")
        #expect(m.nextDeadline(after: t0) == t0 + 1)
        #expect(m.snapshot(at: t0 + 1).display == "0:01")
        #expect(m.nextDeadline(after: t0 + 1) == t0 + 1_001)
    }

    @Test func openEndedStopwatchTicksEverySecond() throws {
        var m = try makeMachine(.stopwatch())
        try m.send(startNow, now: t0 + 250)
        #expect(m.nextDeadline(after: t0 + 250) == t0 + 1_250)
        #expect(m.nextDeadline(after: t0 + 1_250) == t0 + 2_250)
        #expect(m.snapshot(at: t0 + 3_600_250).display == "1:00:00")
        #expect(m.snapshot(at: t0 + 3_600_250).totalRemainingMs == nil)
        #expect(m.advance(to: t0 + 9_000_000).isEmpty)
    }

    @Test func openEndedSegmentInAProgramWaitsForSkip() throws {
        var m = try makeMachine(["kind": "program", "segments": [
            ["kind": "work", "duration": "5s"], ["kind": "session", "label": "Stretch"], ["kind": "cooldown", "duration": "5s"],
        ]])
        try m.send(startNow, now: t0)
        _ = m.advance(to: t0 + 100_000)
        let s = m.snapshot(at: t0 + 100_000)
        #expect(s.phase == .session && s.label == "Stretch" && s.remainingMs == nil && s.countsUp && s.display == "1:35")
        #expect(s.totalRemainingMs == nil && s.endsAtMs == nil)
        let skipped = try m.send(.skip, now: t0 + 100_000)
        #expect(skipped.types == [.skipped] && skipped[0].phase == .cooldown)
        #expect(m.snapshot(at: t0 + 101_000).remainingMs == 4_000)
    }

    @Test func halfwayIsAlignedToADisplayFlip() throws {
        var m = try makeMachine(.countdown(durationMs: 15_000))
        try m.send(startNow, now: t0)
        var events: [TimerEvent] = []
        for step in stride(from: t0 + 100, through: t0 + 9_000, by: 100) { events += m.advance(to: step) }
        #expect(events.types == [.halfway])
        #expect(events[0].dueMs == t0 + 8_000)   // when 7 s remain
        // No halfway below 10 s
        var short = try makeMachine(.countdown(durationMs: 9_000))
        try short.send(startNow, now: t0)
        #expect(short.advance(to: t0 + 5_000).isEmpty)
    }

    @Test func oneSecondTimer() throws {
        var m = try makeMachine(.countdown(durationMs: 1_000))
        try m.send(startNow, now: t0)
        #expect(m.snapshot(at: t0).display == "0:01")
        #expect(m.nextDeadline(after: t0) == t0 + 1_000)
        #expect(m.advance(to: t0 + 999).isEmpty)   // no cue for 1 s: cues must be shorter than the segment
        #expect(m.snapshot(at: t0 + 999).display == "0:01")
        let end = m.advance(to: t0 + 1_000)
        #expect(end.types == [.finished] && end[0].dueMs == t0 + 1_000)
    }

    @Test func sevenDayTimer() throws {
        let week: Millis = 7 * 86_400_000
        var m = try makeMachine(["kind": "countdown", "duration": "7d"])
        try m.send(startNow, now: t0)
        #expect(m.snapshot(at: t0).display == "168:00:00")
        #expect(m.snapshot(at: t0 + week - 1).display == "0:01")
        #expect(m.nextDeadline(after: t0) == t0 + 1_000)
        let half = m.advance(to: t0 + week / 2)
        #expect(half.types == [.halfway] && half[0].dueMs == t0 + week / 2)
        _ = m.advance(to: t0 + week - 1)
        let end = m.advance(to: t0 + week)
        #expect(end.types == [.finished] && end[0].dueMs == t0 + week)
        #expect(m.snapshot(at: t0 + week).endsAtMs == nil)
    }

    @Test func twoTimersFinishingInTheSameMillisecond() throws {
        var a = try makeMachine(.countdown(durationMs: 10_000), id: "a")
        var b = try makeMachine(.interval(workMs: 4_000, restMs: 2_000, rounds: 2), id: "b")
        try a.send(startNow, now: t0)
        try b.send(startNow, now: t0)
        #expect(a.snapshot(at: t0).endsAtMs! + 0 == t0 + 10_000)
        var nowA = t0, nowB = t0
        while let d = a.nextDeadline(after: nowA), d <= t0 + 10_000 { _ = a.advance(to: d); nowA = d }
        while let d = b.nextDeadline(after: nowB), d <= t0 + 10_000 { _ = b.advance(to: d); nowB = d }
        #expect(a.status == .finished && b.status == .finished)
        #expect(nowA == t0 + 10_000 && nowB == t0 + 10_000)
        let fa = try JSONDecoder().decode(TimerMachine.self, from: JSONEncoder().encode(a))
        #expect(fa.snapshot(at: t0 + 10_000).status == .finished)
    }

    @Test func scheduledStartBeginsExactlyAtStartAt() throws {
        var m = try makeMachine(.countdown(durationMs: 30_000))
        let scheduled = try m.send(.start(spec: nil, startAt: t0 + 5_000, restart: false), now: t0)
        #expect(scheduled.types == [.scheduled] && scheduled[0].startAtMs == t0 + 5_000)
        #expect(m.status == .scheduled)
        let s = m.snapshot(at: t0 + 1_000)
        #expect(s.status == .scheduled && s.startAtMs == t0 + 5_000 && s.remainingMs == 30_000)
        #expect(m.nextDeadline(after: t0 + 1_000) == t0 + 5_000)
        let started = m.advance(to: t0 + 5_700)
        #expect(started.types == [.started] && started[0].dueMs == t0 + 5_000)
        #expect(m.snapshot(at: t0 + 5_700).endsAtMs == t0 + 35_000)
        // A start_at slightly in the past (a synchronised start arriving late) is honoured.
        var late = try makeMachine(.countdown(durationMs: 30_000))
        try late.send(.start(spec: nil, startAt: t0 - 1_500, restart: false), now: t0)
        #expect(late.snapshot(at: t0).endsAtMs == t0 + 28_500)
        // Too far ahead is refused.
        var far = try makeMachine(.countdown(durationMs: 30_000))
        #expect(far.refusal(.start(spec: nil, startAt: t0 + 8 * 86_400_000, restart: false), now: t0)?.code == .invalidArgument)
    }

    @Test func restoreAfterAGapCollapsesEventsAndReportsLateOnce() throws {
        var m = try makeMachine(.interval(workMs: 20_000, restMs: 10_000, rounds: 3, prepareMs: 10_000))
        try m.send(startNow, now: t0)
        // The node was down for an hour.
        let data = try JSONEncoder().encode(m)
        var restored = try JSONDecoder().decode(TimerMachine.self, from: data)
        #expect(restored == m)
        let now = t0 + 3_600_000
        let events = restored.advance(to: now)
        #expect(events.types == [.phase, .finished])
        // prepare 10 s, then work 20 s / rest 10 s × 3 without the last rest: the last phase (work, round 3)
        // began at 70 s and the timer finished at 90 s.
        #expect(events[0].phase == .work && events[0].round == 3 && events[0].dueMs == t0 + 70_000)
        #expect(events[0].lateMs == 3_530_000)
        #expect(events[1].dueMs == t0 + 90_000 && events[1].lateMs == 3_510_000 && events[1].finishedAtMs == t0 + 90_000)
        #expect(restored.revision == 1 + 6)   // start + 5 segment changes + finished: every transition counts once
        #expect(restored.advance(to: now + 1).isEmpty)   // never twice
    }

    @Test func restoreOfAnAckTimerPastAutoDismiss() throws {
        var m = try makeMachine(.rest(durationMs: 60_000))
        try m.send(startNow, now: t0)
        let now = t0 + 3_600_000
        let events = m.advance(to: now)
        #expect(events.types == [.expired, .finished])
        #expect(events[0].lateMs == now - (t0 + 60_000))
        #expect(events[1].reason == .autoDismissed && events[1].dueMs == t0 + 360_000)
    }

    @Test func gapWithinTheLagWindowKeepsCues() throws {
        var m = try makeMachine(.countdown(durationMs: 5_000))
        try m.send(startNow, now: t0)
        let events = m.advance(to: t0 + 4_000)
        #expect(events.types == [.countdown, .countdown, .countdown])   // cue 3 is exactly 2 s old: not late yet
        #expect(events.allSatisfy { $0.lateMs == nil && $0.atMs == t0 + 4_000 })
    }

    @Test func nextDeadlineFollowsTheDisplayFlips() throws {
        var m = try makeMachine(.countdown(durationMs: 10_500))
        try m.send(startNow, now: t0)
        #expect(m.snapshot(at: t0).display == "0:11")
        #expect(m.nextDeadline(after: t0) == t0 + 500)
        #expect(m.snapshot(at: t0 + 499).display == "0:11")
        #expect(m.snapshot(at: t0 + 500).display == "0:10")
        #expect(m.nextDeadline(after: t0 + 500) == t0 + 1_500)
        #expect(m.nextDeadline(after: t0 + 9_499) == t0 + 9_500)
        #expect(m.nextDeadline(after: t0 + 9_500) == t0 + 10_500)
    }
}

@Suite("Timer machine: operations")
struct MachineOperationTests {
    @Test func pauseAndResumeKeepRemaining() throws {
        var m = try makeMachine(.countdown(durationMs: 60_000))
        try m.send(startNow, now: t0)
        let paused = try m.send(.pause, now: t0 + 10_000)
        #expect(paused.types == [.paused] && paused[0].phase == .paused)
        let p = m.snapshot(at: t0 + 50_000)
        #expect(p.status == .paused && p.phase == .paused && p.remainingMs == 50_000 && p.endsAtMs == nil && p.elapsedMs == 10_000)
        #expect(m.nextDeadline(after: t0 + 50_000) == nil)
        #expect(m.advance(to: t0 + 500_000).isEmpty)
        let resumed = try m.send(.resume, now: t0 + 500_000)
        #expect(resumed.types == [.resumed] && resumed[0].phase == .countdown)
        let r = m.snapshot(at: t0 + 500_000)
        #expect(r.remainingMs == 50_000 && r.endsAtMs == t0 + 550_000 && r.elapsedMs == 10_000)
        #expect(m.snapshot(at: t0 + 510_000).elapsedMs == 20_000)
    }

    @Test func refusalsNameTheStateAndChangeNothing() throws {
        var m = try makeMachine(.countdown(durationMs: 60_000), id: "kitchen")
        #expect(m.refusal(.pause, now: t0)?.message == "cannot pause timer 'kitchen': it is idle; start it first")
        #expect(m.refusal(.pause, now: t0)?.code == .invalidState)
        #expect(m.refusal(.resume, now: t0)?.message == "cannot resume timer 'kitchen': it is idle; start it first")
        #expect(m.refusal(.cancel, now: t0)?.message == "cannot cancel timer 'kitchen': it is idle; there is nothing to cancel")
        #expect(m.refusal(.finish, now: t0)?.message == "cannot finish timer 'kitchen': it is idle; it has not started; start it first")
        #expect(m.refusal(.skip, now: t0)?.message == "cannot skip timer 'kitchen': it is idle; start it first")
        #expect(m.refusal(.back, now: t0)?.message == "cannot go back on timer 'kitchen': it is idle; start it first")
        #expect(m.refusal(.adjust(seconds: 30), now: t0)?.message == "cannot adjust timer 'kitchen': it is idle; start it first")
        #expect(m.refusal(.ack, now: t0)?.message == "cannot ack timer 'kitchen': it is idle; only an expired timer can be acknowledged")
        #expect(m.refusal(.snooze(seconds: 60), now: t0)?.message == "cannot snooze timer 'kitchen': it is idle; only an expired timer can be snoozed")

        try m.send(startNow, now: t0)
        #expect(m.refusal(startNow, now: t0 + 1)?.message == "cannot start timer 'kitchen': it is running; send reset first, or start with restart: true")
        #expect(m.refusal(.resume, now: t0 + 1)?.message == "cannot resume timer 'kitchen': it is running; there is nothing to resume")
        #expect(m.refusal(.ack, now: t0 + 1)?.message == "cannot ack timer 'kitchen': it is running; only an expired timer can be acknowledged")
        #expect(m.refusal(.adjust(seconds: 0), now: t0 + 1)?.message == "adjust needs a non-zero number of seconds, got 0")
        #expect(m.refusal(.adjust(seconds: 0), now: t0 + 1)?.code == .invalidArgument)
        #expect(m.refusal(.adjust(seconds: 86_401), now: t0 + 1)?.message == "adjust takes 1 to 86400 seconds either way, got 86401")
        #expect(m.refusal(.adjust(seconds: -86_401), now: t0 + 1)?.code == .invalidArgument)
        var week = try makeMachine(.countdown(durationMs: 7 * 86_400_000), id: "week")
        try week.send(startNow, now: t0)
        #expect(week.refusal(.adjust(seconds: 60), now: t0 + 1)?.message == "adjust would leave 7 days 59.999 s in the segment; at most 7 days are allowed")
        try m.send(.pause, now: t0 + 2)
        #expect(m.refusal(.pause, now: t0 + 3)?.message == "cannot pause timer 'kitchen': it is paused; send resume to continue")
        #expect(m.refusal(startNow, now: t0 + 3)?.message == "cannot start timer 'kitchen': it is paused; send resume to continue, reset first, or start with restart: true")
        try m.send(.finish, now: t0 + 4)
        #expect(m.refusal(.finish, now: t0 + 5)?.message == "cannot finish timer 'kitchen': it has finished; there is nothing to finish")
        #expect(m.refusal(.pause, now: t0 + 5)?.message == "cannot pause timer 'kitchen': it has finished; start it again")

        var watch = try makeMachine(.stopwatch(), id: "w")
        try watch.send(startNow, now: t0)
        #expect(watch.refusal(.adjust(seconds: 10), now: t0 + 1)?.message == "cannot adjust timer 'w': it is running; a stopwatch counts up and cannot be adjusted")

        var expired = try makeMachine(.rest(durationMs: 1_000), id: "r")
        try expired.send(startNow, now: t0)
        _ = expired.advance(to: t0 + 1_000)
        #expect(expired.refusal(.snooze(seconds: 0), now: t0 + 1_001)?.message == "snooze takes 1 to 86400 seconds, got 0")
        #expect(expired.refusal(.snooze(seconds: 86_401), now: t0 + 1_001)?.code == .invalidArgument)
        #expect(expired.refusal(.adjust(seconds: 30), now: t0 + 1_001)?.message == "cannot adjust timer 'r': it has expired and is waiting for an ack; send snooze for more time, or ack")
        #expect(expired.refusal(.pause, now: t0 + 1_001)?.message == "cannot pause timer 'r': it has expired and is waiting for an ack; send ack to stop the alert, or snooze for more time")
    }

    @Test func invalidSpecOnStartChangesNothing() throws {
        var m = try makeMachine(.countdown(durationMs: 60_000))
        var bad = TimerSpec.countdown(durationMs: 0)
        bad.label = "x"
        let error = m.refusal(.start(spec: bad, startAt: nil, restart: false), now: t0)
        #expect(error?.code == .invalidSpec && error?.message == "duration must be between 1 s and 7 days, got 0 s")
        try m.send(.start(spec: .countdown(durationMs: 5_000), startAt: nil, restart: false), now: t0)
        #expect(m.spec == .countdown(durationMs: 5_000) && m.program.count == 1)
        #expect(m.snapshot(at: t0).remainingMs == 5_000)
    }

    @Test func restartAndStartFromEveryEndState() throws {
        var m = try makeMachine(.countdown(durationMs: 10_000))
        try m.send(startNow, now: t0)
        let restarted = try m.send(.start(spec: nil, startAt: nil, restart: true), now: t0 + 4_000)
        #expect(restarted.types == [.started])
        #expect(m.snapshot(at: t0 + 4_000).remainingMs == 10_000)
        try m.send(.cancel, now: t0 + 5_000)
        try m.send(startNow, now: t0 + 6_000)
        _ = m.advance(to: t0 + 16_000)
        #expect(m.status == .finished)
        try m.send(startNow, now: t0 + 17_000)
        #expect(m.status == .running)
    }

    @Test func toggleCyclesThroughTheStates() throws {
        var m = try makeMachine(.countdown(durationMs: 10_000, ack: true))
        #expect(try m.send(.toggle, now: t0).types == [.started])
        #expect(try m.send(.toggle, now: t0 + 1_000).types == [.paused])
        #expect(try m.send(.toggle, now: t0 + 2_000).types == [.resumed])
        _ = m.advance(to: t0 + 11_000)
        #expect(m.status == .expired)
        #expect(try m.send(.toggle, now: t0 + 11_500).types == [.acknowledged, .finished])
        #expect(try m.send(.toggle, now: t0 + 12_000).types == [.started])
        try m.send(.cancel, now: t0 + 12_500)
        #expect(try m.send(.toggle, now: t0 + 13_000).types == [.started])
        try m.send(.start(spec: nil, startAt: t0 + 60_000, restart: true), now: t0 + 13_500)
        #expect(m.status == .scheduled)
        #expect(try m.send(.toggle, now: t0 + 14_000).types == [.reset])
        #expect(m.status == .idle)
    }

    @Test func resetCancelAndFinish() throws {
        var m = try makeMachine(.interval(workMs: 20_000, restMs: 10_000, rounds: 2))
        #expect(try m.send(.reset, now: t0).isEmpty)   // idle: nothing to do, no revision
        #expect(m.revision == 0)
        try m.send(startNow, now: t0)
        let cancelled = try m.send(.cancel, now: t0 + 5_000)
        #expect(cancelled.types == [.cancelled] && cancelled[0].phase == .cancelled)
        let c = m.snapshot(at: t0 + 9_000)
        #expect(c.status == .cancelled && c.remainingMs == 15_000 && c.elapsedMs == 5_000 && c.endsAtMs == nil)
        let reset = try m.send(.reset, now: t0 + 10_000)
        #expect(reset.types == [.reset] && m.status == .idle)
        #expect(m.spec == .interval(workMs: 20_000, restMs: 10_000, rounds: 2))
        try m.send(startNow, now: t0 + 10_000)
        let finished = try m.send(.finish, now: t0 + 12_000)
        #expect(finished.types == [.finished] && finished[0].reason == .finished && finished[0].finishedAtMs == t0 + 12_000)
    }

    @Test func skipMovesToTheNextSegmentAtTheEffectiveInstant() throws {
        var m = try makeMachine(.interval(workMs: 20_000, restMs: 10_000, rounds: 2))
        try m.send(startNow, now: t0)
        let skipped = try m.send(.skip, now: t0 + 5_000)
        #expect(skipped.types == [.skipped] && skipped[0].phase == .rest && skipped[0].round == 1)
        #expect(m.snapshot(at: t0 + 5_000).endsAtMs == t0 + 15_000)
        try m.send(.pause, now: t0 + 6_000)
        let whilePaused = try m.send(.skip, now: t0 + 7_000)
        #expect(whilePaused[0].phase == .work && whilePaused[0].round == 2)
        let p = m.snapshot(at: t0 + 9_000)
        #expect(p.status == .paused && p.remainingMs == 20_000 && p.round == 2)
        try m.send(.resume, now: t0 + 10_000)
        let last = try m.send(.skip, now: t0 + 11_000)
        #expect(last.types == [.skipped, .finished] && last[1].reason == .skipped)
        #expect(m.status == .finished)
    }

    @Test func backRestartsOrGoesToThePreviousSegment() throws {
        var m = try makeMachine(.interval(workMs: 20_000, restMs: 10_000, rounds: 2))
        try m.send(startNow, now: t0)
        let restart = try m.send(.back, now: t0 + 8_000)
        #expect(restart.types == [.rewound] && restart[0].phase == .work)
        #expect(m.snapshot(at: t0 + 8_000).remainingMs == 20_000)
        _ = m.advance(to: t0 + 29_000)   // rest started at t0 + 28 s
        let previous = try m.send(.back, now: t0 + 30_000)   // 2 s into the rest: back to the work
        #expect(previous[0].phase == .work && previous[0].round == 1)
        #expect(m.snapshot(at: t0 + 30_000).endsAtMs == t0 + 50_000)
        _ = m.advance(to: t0 + 54_000)   // rest since t0 + 50 s
        let same = try m.send(.back, now: t0 + 54_000)   // 4 s in: restart the rest
        #expect(same[0].phase == .rest)
        #expect(m.snapshot(at: t0 + 54_000).remainingMs == 10_000)
        // At the very first segment, back restarts it.
        var first = try makeMachine(.interval(workMs: 20_000, restMs: 10_000, rounds: 2))
        try first.send(startNow, now: t0)
        try first.send(.back, now: t0 + 1_000)
        #expect(first.snapshot(at: t0 + 1_000).segment == 1)
    }

    @Test func adjustAddsAndRemovesTime() throws {
        var m = try makeMachine(.interval(workMs: 20_000, restMs: 10_000, rounds: 2))
        try m.send(startNow, now: t0)
        let plus = try m.send(.adjust(seconds: 30), now: t0 + 5_000)
        #expect(plus.types == [.adjusted] && plus[0].seconds == 30)
        let s = m.snapshot(at: t0 + 5_000)
        #expect(s.remainingMs == 45_000 && s.segmentDurationMs == 50_000 && s.endsAtMs == t0 + 50_000)
        #expect(s.totalRemainingMs == 75_000)   // 45 s + the 30 s rest
        // Removing more than is left ends the segment now.
        let minus = try m.send(.adjust(seconds: -120), now: t0 + 6_000)
        #expect(minus.types == [.adjusted, .phase] && minus[1].phase == .rest && minus[1].dueMs == t0 + 6_000)
        #expect(m.snapshot(at: t0 + 6_000).endsAtMs == t0 + 16_000)
        // Paused: the segment ends, the next one waits, still paused.
        try m.send(.pause, now: t0 + 7_000)
        let pausedMinus = try m.send(.adjust(seconds: -60), now: t0 + 8_000)
        #expect(pausedMinus.types == [.adjusted, .phase] && pausedMinus[1].phase == .work && pausedMinus[1].round == 2)
        let p = m.snapshot(at: t0 + 9_000)
        #expect(p.status == .paused && p.remainingMs == 20_000 && p.round == 2)
        try m.send(.adjust(seconds: 5), now: t0 + 9_000)
        #expect(m.snapshot(at: t0 + 9_000).remainingMs == 25_000)
        // The last segment adjusted to nothing completes the timer.
        try m.send(.resume, now: t0 + 10_000)
        let end = try m.send(.adjust(seconds: -25), now: t0 + 10_000)
        #expect(end.types == [.adjusted, .finished])
    }

    @Test func adjustAfterTheCueRearmsTheCountdown() throws {
        var m = try makeMachine(.countdown(durationMs: 10_000))
        try m.send(startNow, now: t0)
        var events: [TimerEvent] = []
        for step in stride(from: t0 + 500, through: t0 + 7_500, by: 500) { events += m.advance(to: step) }
        #expect(events.compactMap(\.cue) == [3])
        try m.send(.adjust(seconds: 10), now: t0 + 7_500)
        events = []
        for step in stride(from: t0 + 8_000, through: t0 + 20_000, by: 500) { events += m.advance(to: step) }
        #expect(events.compactMap(\.cue) == [3, 2, 1])
        #expect(events.filter { $0.type == .halfway }.isEmpty)   // halfway fires once per segment
        #expect(events.last?.type == .finished && events.last?.dueMs == t0 + 20_000)
    }

    @Test func atIsClampedToTheLagWindow() throws {
        var m = try makeMachine(.countdown(durationMs: 60_000))
        try m.send(startNow, now: t0)
        try m.send(.pause, now: t0 + 10_000, at: t0 + 8_500)   // within the window: as of `at`
        #expect(m.snapshot(at: t0 + 10_000).remainingMs == 51_500)
        try m.send(.resume, now: t0 + 20_000, at: t0 + 10_000)   // too old: clamped to now - 2 s
        #expect(m.snapshot(at: t0 + 20_000).remainingMs == 49_500)
        try m.send(.pause, now: t0 + 30_000, at: t0 + 99_000)   // future: now
        #expect(m.snapshot(at: t0 + 30_000).remainingMs == 39_500)
        // Never before the last change: a resume backdated before the pause takes effect at the pause.
        try m.send(.resume, now: t0 + 30_500, at: t0 + 29_000)
        #expect(m.snapshot(at: t0 + 30_500).remainingMs == 39_000)
    }

    @Test func ifRevisionGuardsAgainstTwoPhones() throws {
        var m = try makeMachine(.countdown(durationMs: 60_000))
        try m.send(startNow, now: t0, ifRevision: 0)
        #expect(m.revision == 1)
        let conflict = m.refusal(.pause, now: t0 + 1_000, ifRevision: 0)
        #expect(conflict?.code == .revisionConflict)
        #expect(conflict?.message == "timer 't1' is at revision 1, not 0; refresh its state and retry")
        try m.send(.pause, now: t0 + 1_000, ifRevision: 1)
        #expect(m.revision == 2)
    }

    @Test func thousandRapidToggles() throws {
        var m = try makeMachine(.countdown(durationMs: 3_600_000))
        var now = t0
        var running: Millis = 0
        var lastStart = t0
        for index in 1...1000 {
            now += 7
            let events = try m.send(.toggle, now: now)
            #expect(events.count == 1)
            if index % 2 == 1 { lastStart = now } else { running += now - lastStart }
        }
        #expect(m.revision == 1000)
        #expect(m.status == .paused)
        let s = m.snapshot(at: now + 60_000)
        #expect(s.elapsedMs == running)
        #expect(s.remainingMs == 3_600_000 - running)
    }

    @Test func shiftAnchorsKeepsRemainingUnchanged() throws {
        var m = try makeMachine(.interval(workMs: 20_000, restMs: 10_000, rounds: 3))
        try m.send(startNow, now: t0)
        _ = m.advance(to: t0 + 25_000)
        let before = m.snapshot(at: t0 + 25_000)
        let revision = m.revision
        m.shiftAnchors(by: 3_600_000)   // NTP moved the clock forward one hour
        let after = m.snapshot(at: t0 + 25_000 + 3_600_000)
        #expect(after.remainingMs == before.remainingMs && after.elapsedMs == before.elapsedMs && after.segment == before.segment)
        #expect(after.endsAtMs == before.endsAtMs! + 3_600_000)
        #expect(m.revision == revision + 1)
        #expect(m.advance(to: t0 + 25_000 + 3_600_000).isEmpty)
        m.shiftAnchors(by: -7_200_000)
        #expect(m.snapshot(at: t0 + 25_000 - 3_600_000).remainingMs == before.remainingMs)
    }

    @Test func renameBumpsTheRevision() throws {
        var m = try makeMachine(.countdown(durationMs: 10_000))
        m.rename("Kitchen")
        #expect(m.name == "Kitchen" && m.revision == 1)
        #expect(m.snapshot(at: t0).name == "Kitchen")
        #expect(throws: SpecError.self) { try TimerMachine.validateName("") }
        #expect(throws: SpecError.self) { try TimerMachine.validateName("a\tb") }
    }

    @Test func idValidation() throws {
        for good in ["a", "kitchen", "t1", "0", "a-b_c", String(repeating: "x", count: 64)] {
            #expect(throws: Never.self) { try TimerMachine.validateID(good) }
        }
        for bad in ["", "A", "-a", "_a", "a/b", "a+b", "a#", "a b", "é", String(repeating: "x", count: 65)] {
            #expect(throws: SpecError.self) { try TimerMachine.validateID(bad) }
        }
    }
}

@Suite("Snapshots, events and persistence")
struct SnapshotAndPersistenceTests {
    @Test("next_phase and ack say what the end of a running segment brings, before it comes")
    func snapshotForeseesTheEndOfEachSegment() throws {
        let specs: [(TimerSpec, Int)] = [
            (.interval(workMs: 20_000, restMs: 10_000, rounds: 2, prepareMs: 5_000, sets: 2, setRestMs: 30_000, cooldownMs: 60_000), 9),
            (.interval(workMs: 20_000, restMs: 10_000, rounds: 3, skipLastRest: false, ack: true), 6),
            (.rest(durationMs: 90_000), 1),
            (.countdown(durationMs: 5_000), 1),
            (.program([.init(kind: .work, durationMs: 4_000), .init(kind: .cooldown, durationMs: 3_000),
                       .init(kind: .session, durationMs: 2_000), .init(kind: .prepare, durationMs: 1_000)], ack: true), 4),
        ]
        for (spec, segments) in specs {
            var m = try makeMachine(spec)
            #expect(m.snapshot(at: t0).nextPhase == (segments > 1 ? m.program.segments[1].kind.phase : nil))
            try m.send(startNow, now: t0)
            var now = t0 + 1
            var ends = 0
            while case let snap = m.snapshot(at: now), snap.status == .running, let end = snap.endsAtMs {
                #expect(snap.ack == spec.ack)
                let transition = m.advance(to: end).last { $0.type != .countdown && $0.type != .halfway }
                if let next = snap.nextPhase {
                    #expect(transition?.type == .phase && transition?.phase == next, "\(spec.kind) segment \(snap.segment)")
                } else {
                    #expect(snap.segment == segments, "next_phase is absent only on the last segment")
                    #expect(transition?.type == (spec.ack ? .expired : .finished), "\(spec.kind) end")
                }
                now = end + 1
                ends += 1
            }
            #expect(ends == segments, "\(spec.kind): \(ends) segment ends seen")
            let over = m.snapshot(at: now)
            #expect(over.nextPhase == nil && over.status == (spec.ack ? .expired : .finished))
        }

        // A snooze runs the last segment again, then expires again: no next phase.
        var oven = try makeMachine(.countdown(durationMs: 10_000, ack: true))
        try oven.send(startNow, now: t0)
        _ = oven.advance(to: t0 + 10_000)
        try oven.send(.snooze(seconds: 30), now: t0 + 11_000)
        let snoozed = oven.snapshot(at: t0 + 12_000)
        #expect(snoozed.status == .running && snoozed.nextPhase == nil && snoozed.ack)
        #expect(oven.advance(to: t0 + 41_000).last?.type == .expired)

        // Paused keeps the next phase; a stopwatch never expires, and in overtime nothing follows.
        var circuit = try makeMachine(.interval(workMs: 20_000, restMs: 10_000, rounds: 2))
        try circuit.send(startNow, now: t0)
        try circuit.send(.pause, now: t0 + 5_000)
        #expect(circuit.snapshot(at: t0 + 6_000).nextPhase == .rest)
        var stopwatch = try makeMachine(.stopwatch(targetMs: 10_000))
        try stopwatch.send(startNow, now: t0)
        #expect(stopwatch.snapshot(at: t0 + 1_000).ack == false && stopwatch.snapshot(at: t0 + 1_000).nextPhase == nil)
        #expect(stopwatch.snapshot(at: t0 + 11_000).overtime && stopwatch.snapshot(at: t0 + 11_000).nextPhase == nil)
    }

    @Test func machineCodableRoundTripsInEveryState() throws {
        var m = try makeMachine(.interval(workMs: 20_000, restMs: 10_000, rounds: 3, prepareMs: 5_000, ack: true))
        let steps: [(TimerOperation?, Millis)] = [
            (nil, t0), (startNow, t0), (nil, t0 + 7_000), (.pause, t0 + 8_000), (.resume, t0 + 9_000), (.adjust(seconds: 5), t0 + 9_500),
            (nil, t0 + 200_000), (.snooze(seconds: 30), t0 + 201_000), (nil, t0 + 232_000), (.ack, t0 + 233_000), (.reset, t0 + 234_000),
            (.start(spec: nil, startAt: t0 + 300_000, restart: false), t0 + 235_000), (.cancel, t0 + 236_000),
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        for (operation, now) in steps {
            if let operation { try m.send(operation, now: now) } else { _ = m.advance(to: now) }
            let data = try encoder.encode(m)
            var back = try JSONDecoder().decode(TimerMachine.self, from: data)
            #expect(back == m, "\(m.status)")
            #expect(try encoder.encode(back) == data)
            var copy = m
            #expect(back.advance(to: now + 50_000) == copy.advance(to: now + 50_000))
        }
    }

    @Test func corruptPersistedStateIsRejected() throws {
        var m = try makeMachine(.countdown(durationMs: 10_000))
        try m.send(startNow, now: t0)
        var json = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(m))
        if case .object(var members) = json {
            members["spec"] = ["kind": "countdown", "duration_ms": 0, "skip_last_rest": true, "ack": false]
            json = .object(members)
        }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(TimerMachine.self, from: JSONEncoder().encode(json)) }
    }
}

@Suite("Commands and dedup")
struct CommandAndLedgerTests {
    @Test func ledgerRemembersTheFirstReplyWithinTheWindow() throws {
        var ledger = RequestLedger(windowMs: 10_000, capacity: 3)
        #expect(ledger.reply(for: "a", now: 0) == nil)
        ledger.record(id: "a", reply: ["ok": true], now: 0)
        ledger.record(id: "a", reply: ["ok": false], now: 1)
        #expect(ledger.reply(for: "a", now: 9_999) == ["ok": true])
        #expect(ledger.reply(for: "a", now: 10_000) == nil)
        for (index, id) in ["b", "c", "d", "e"].enumerated() { ledger.record(id: id, reply: .int(index), now: 20_000 + Millis(index)) }
        #expect(ledger.count == 3)
        #expect(ledger.reply(for: "b", now: 20_010) == nil)   // evicted, oldest first
        #expect(ledger.reply(for: "e", now: 20_010) == 3)
    }

    @Test("after a wall-clock step, shifted entries keep their age: a retry is still a duplicate, the window still ends")
    func ledgerShiftsWithTheClock() {
        var ledger = RequestLedger(windowMs: 10_000, capacity: 10)
        ledger.record(id: "a", reply: ["ok": true], now: 1_000)
        ledger.shiftTimes(by: 3_600_000)
        #expect(ledger.reply(for: "a", now: 3_605_000) == ["ok": true])   // 4 s old on the moved timeline
        #expect(ledger.reply(for: "a", now: 3_611_000) == nil)            // 10 s old: the window ended
        var back = RequestLedger(windowMs: 10_000, capacity: 10)
        back.record(id: "b", reply: .int(1), now: 700_000)
        back.shiftTimes(by: -600_000)
        #expect(back.reply(for: "b", now: 109_999) == .int(1))
        #expect(back.reply(for: "b", now: 110_000) == nil)                // not 10 min longer
    }

    @Test func ledgerStaysBoundedUnderLoad() {
        var ledger = RequestLedger(windowMs: 600_000, capacity: 100)
        for index in 0..<10_000 { ledger.record(id: "r\(index)", reply: .int(index), now: Millis(index)) }
        #expect(ledger.count == 100)
        #expect(ledger.reply(for: "r9999", now: 10_000) == 9999)
        #expect(ledger.reply(for: "r9899", now: 10_000) == nil)
    }

    @Test("with a decoder, replies are kept as JSON bytes and decoded only when a repeat asks")
    func ledgerKeepsRepliesEncoded() throws {
        let decodes = Counter()
        var ledger = RequestLedger(windowMs: 10_000, capacity: 10)
        ledger.decoder = { bytes in
            decodes.add()
            return try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
        }
        let reply: JSONValue = ["id": "a", "ok": true, "timer": ["remaining_ms": 90_000, "name": "Sprint \"1\""]]
        ledger.record(id: "a", reply: reply, now: 0)
        ledger.record(id: "stored", encodedReply: Array(#"{"ok":false,"error":{"code":"not_found"}}"#.utf8), now: 0)
        ledger.record(id: "corrupt", encodedReply: Array("{not json".utf8), now: 0)
        #expect(decodes.value == 0)  // nothing decoded until a repeat asks
        #expect(ledger.reply(for: "a", now: 1) == reply)
        #expect(ledger.reply(for: "stored", now: 1) == ["ok": false, "error": ["code": "not_found"]])
        #expect(ledger.reply(for: "corrupt", now: 1) == nil)  // unreadable: counts as unknown
        #expect(decodes.value == 3)
        #expect(ledger.count == 3)
        #expect(ledger.reply(for: "a", now: 10_000) == nil)  // the window still ends
    }
}

/// A thread-safe count (the ledger's decoder is a `@Sendable` closure).
private final class Counter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}

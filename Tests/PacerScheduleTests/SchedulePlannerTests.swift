import PacerCore
import Testing
@testable import PacerSchedule

let hiit: JSONValue = [
    "id": "hiit", "name": "HIIT 45", "timer": "main", "workout": "hiit45",
    "weekly": [["days": "weekdays", "at": ["06:30", "18:00"]]],
]

@Suite struct SchedulePlannerTests {
    @Test func aClassStartsAtItsInstantExactlyOnce() {
        var node = PlannerHarness([schedule(hiit)])
        let first = node.step(ms("2026-01-12T00:00:00Z"))  // a Monday, before any class
        #expect(first.decisions.isEmpty)
        #expect(first.records.map(\.outcome) == [.baseline])
        #expect(first.nextDeadline == ms("2026-01-12T06:30:00Z"))
        let due = node.step(ms("2026-01-12T06:30:00.001Z"))
        #expect(due.decisions.count == 1)
        #expect(due.decisions.first?.lateMs == 1)
        #expect(due.decisions.first?.occurrence.key == "hiit@\(ms("2026-01-12T06:30:00Z"))")
        #expect(due.decisions.first?.workout == .workout("hiit45"))
        #expect(due.nextDeadline == ms("2026-01-12T18:00:00Z"))
        // Asked again (a second wake-up, a timer change): nothing more.
        #expect(node.step(ms("2026-01-12T06:30:00.002Z")).decisions.isEmpty)
        #expect(node.step(ms("2026-01-12T06:31:00Z")).decisions.isEmpty)
    }

    @Test func theSamePlanUntilItIsCommitted() {
        var planner = SchedulePlanner(schedules: [schedule(hiit)], records: [], defaultZone: london)
        planner.commit(planner.plan(now: ms("2026-01-12T00:00:00Z"), busyTimers: []).records)
        let a = planner.plan(now: ms("2026-01-12T06:31:00Z"), busyTimers: [])
        let b = planner.plan(now: ms("2026-01-12T06:31:00Z"), busyTimers: [])
        #expect(a == b)
        #expect(a.decisions.count == 1)
    }

    @Test func aRestartWithinGraceStartsLateAndBeyondSkips() {
        var node = PlannerHarness([schedule(hiit)])
        _ = node.step(ms("2026-01-12T00:00:00Z"))
        _ = node.step(ms("2026-01-12T06:30:00Z"))
        node.restart()
        let late = node.step(ms("2026-01-12T18:03:00Z"))
        #expect(late.decisions.map(\.lateMs) == [3 * 60_000])
        node.restart()
        #expect(node.step(ms("2026-01-12T18:04:00Z")).decisions.isEmpty)  // never twice
        node.restart()
        let skipped = node.step(ms("2026-01-13T06:45:00Z"))
        #expect(skipped.decisions.map(\.skipReason) == [.late(ms: 15 * 60_000)])
        #expect(skipped.nextDeadline == ms("2026-01-13T18:00:00Z"))
    }

    @Test func anHourOffPassesOverTheMissedClassesAndStartsTheLatestInGrace() {
        let loop = schedule(["id": "circuit", "timer": "c", "preset": "tabata", "loops": [["every": "15m"]]])
        var node = PlannerHarness([loop])
        _ = node.step(ms("2026-01-12T05:59:00Z"))
        #expect(node.step(ms("2026-01-12T06:00:00Z")).decisions.count == 1)
        node.restart()
        let back = node.step(ms("2026-01-12T07:03:00Z"))
        #expect(back.decisions.count == 1)
        #expect(back.decisions[0].occurrence.instant == ms("2026-01-12T07:00:00Z"))
        #expect(back.decisions[0].lateMs == Millis(180_000))
        #expect(back.decisions[0].alsoSkipped == 3)  // 06:15, 06:30, 06:45
        #expect(back.nextDeadline == ms("2026-01-12T07:15:00Z"))
    }

    @Test func aBusyTimerHoldsTheClassUntilItsGraceEnds() {
        var node = PlannerHarness([schedule(hiit)])
        _ = node.step(ms("2026-01-12T17:00:00Z"))
        let held = node.step(ms("2026-01-12T18:00:00Z"), busy: ["main"])
        #expect(held.decisions.isEmpty)
        #expect(held.nextDeadline == ms("2026-01-12T18:05:00.001Z"))
        let freed = node.step(ms("2026-01-12T18:02:00Z"))
        #expect(freed.decisions.map(\.lateMs) == [120_000])

        var other = PlannerHarness([schedule(hiit)])
        _ = other.step(ms("2026-01-12T17:00:00Z"))
        let skipped = other.step(ms("2026-01-12T18:05:00.001Z"), busy: ["main"])
        #expect(skipped.decisions.map(\.skipReason) == [.timerBusy(lateMs: 300_001)])
    }

    @Test func twoClassesOnOneTimerAtOnceStartOneAndHoldTheOther() {
        var b = hiit.object!
        b["id"] = "boxing"
        b["workout"] = "boxing"
        var node = PlannerHarness([schedule(hiit), schedule(.object(b))])
        _ = node.step(ms("2026-01-12T17:00:00Z"))
        let plan = node.step(ms("2026-01-12T18:00:00Z"))
        #expect(plan.decisions.map(\.occurrence.schedule) == ["boxing"])  // first come (by id at one instant)
        let later = node.step(ms("2026-01-12T18:05:00.001Z"), busy: ["main"])
        #expect(later.decisions.map(\.skipReason) == [.timerBusy(lateMs: 300_001)])
    }

    @Test func exceptionsCancelDaysAndSingleClasses() {
        var json = hiit.object!
        json["except"] = ["2026-01-14", ["date": "2026-01-13", "at": "18:00"], ["from": "2026-01-19", "to": "2026-01-20"]]
        var node = PlannerHarness([schedule(.object(json))])
        _ = node.step(ms("2026-01-13T07:00:00Z"))
        #expect(node.planner.nextClass(timer: "main", now: ms("2026-01-13T07:00:00Z"))?.occurrence.instant
                == ms("2026-01-15T06:30:00Z"))
        let cancelled = node.step(ms("2026-01-13T18:00:00Z"))
        #expect(cancelled.decisions.map(\.skipReason) == [.cancelled])
        #expect(node.step(ms("2026-01-14T06:30:00Z")).decisions.map(\.skipReason) == [.cancelled])
        let day = node.planner.day(date("2026-01-19"), now: ms("2026-01-14T07:00:00Z"))
        #expect(day.map(\.status) == [.cancelled, .cancelled])
    }

    @Test func skipNextSkipsTheComingClassOnly() throws {
        var node = PlannerHarness([schedule(hiit)])
        _ = node.step(ms("2026-01-12T10:00:00Z"))
        let skip = try node.planner.skipNext(schedule: "hiit", now: ms("2026-01-12T10:00:00Z")).get()
        #expect(skip.occurrence.instant == ms("2026-01-12T18:00:00Z"))
        node.write([skip.record])
        #expect(node.planner.nextClass(timer: "main", now: ms("2026-01-12T10:00:00Z"))?.occurrence.instant
                == ms("2026-01-13T06:30:00Z"))
        let at18 = node.planner.plan(now: ms("2026-01-12T18:00:00Z"), busyTimers: [])
        #expect(at18.decisions.isEmpty)
        #expect(at18.nextDeadline == ms("2026-01-13T06:30:00Z"))
        #expect(node.planner.skipNext(schedule: "nope", now: 0) == .failure(.unknownSchedule))
    }

    @Test func aClockSteppedBackNeverStartsADecidedClassAgain() {
        var node = PlannerHarness([schedule(hiit)])
        _ = node.step(ms("2026-01-12T17:00:00Z"))
        #expect(node.step(ms("2026-01-12T18:00:00Z")).decisions.count == 1)
        let back = node.step(ms("2026-01-12T17:00:00Z"))  // NTP stepped the clock back an hour
        #expect(back.decisions.isEmpty)
        #expect(back.nextDeadline == ms("2026-01-13T06:30:00Z"))
        #expect(node.step(ms("2026-01-12T18:00:00Z")).decisions.isEmpty)
    }

    @Test func aClockSteppedForwardDecidesTheJumpedClassesOnce() {
        var node = PlannerHarness([schedule(hiit)])
        _ = node.step(ms("2026-01-12T10:00:00Z"))
        let jumped = node.step(ms("2026-01-13T06:32:00Z"))
        #expect(jumped.decisions.count == 1)
        #expect(jumped.decisions[0].lateMs == 120_000)
        #expect(jumped.decisions[0].alsoSkipped == 1)  // the 18:00 of the 12th
    }

    @Test func aChangedZoneDoesNotRepeatTheDaysDecidedClass() {
        var node = PlannerHarness([schedule(hiit)])
        _ = node.step(ms("2026-01-12T06:00:00Z"))
        #expect(node.step(ms("2026-01-12T06:30:00Z")).decisions.count == 1)
        // The gym's node moves to New York: 06:30 there is 11:30 UTC, the same class of the day.
        node.planner.setDefaultZone(newYork)
        let moved = node.step(ms("2026-01-12T07:00:00Z"))
        #expect(moved.decisions.isEmpty)
        #expect(moved.nextDeadline == ms("2026-01-12T18:00:00-05:00"))
        #expect(node.step(ms("2026-01-12T11:30:00Z")).decisions.isEmpty)
        #expect(node.step(ms("2026-01-12T23:00:00Z")).decisions.count == 1)
    }

    @Test func dstGapAndRepeatStartEachClassOnce() {
        let night = schedule(["id": "night", "timer": "n", "preset": "tabata", "time_zone": "America/New_York",
                              "weekly": [["days": "daily", "at": ["01:30", "02:30", "03:00"]]]])
        var node = PlannerHarness([night])
        var starts: [Millis] = []
        var now = ms("2026-03-07T12:00:00Z")
        _ = node.step(now)
        while now < ms("2026-03-09T12:00:00Z") {
            let plan = node.step(now)
            starts += plan.decisions.compactMap { $0.lateMs == nil ? nil : $0.occurrence.instant }
            now = plan.nextDeadline!
        }
        #expect(starts == [ms("2026-03-08T01:30:00-05:00"), ms("2026-03-08T03:00:00-04:00"),
                           ms("2026-03-09T01:30:00-04:00"), ms("2026-03-09T02:30:00-04:00"), ms("2026-03-09T03:00:00-04:00")])
        starts = []
        now = ms("2026-10-31T12:00:00Z")
        while now < ms("2026-11-01T12:00:00Z") {
            let plan = node.step(now)
            starts += plan.decisions.compactMap { $0.lateMs == nil ? nil : $0.occurrence.instant }
            now = plan.nextDeadline!
        }
        #expect(starts == [ms("2026-11-01T01:30:00-04:00"), ms("2026-11-01T02:30:00-05:00"), ms("2026-11-01T03:00:00-05:00")])
    }

    @Test func aLoopKeepsItsPaceThroughBothChanges() {
        let loop = schedule(["id": "circuit", "timer": "c", "preset": "tabata", "loops": [["every": "15m"]]])
        var planner = SchedulePlanner(schedules: [loop], records: [], defaultZone: london)
        let now = ms("2026-01-01T00:00:00Z")
        #expect(planner.day(date("2026-03-29"), now: now).count == 92)
        #expect(planner.day(date("2026-10-25"), now: now).count == 100)
        #expect(planner.day(date("2026-06-01"), now: now).count == 96)
        let spring = planner.day(date("2026-03-29"), now: now).map(\.occurrence.instant)
        #expect(zip(spring, spring.dropFirst()).allSatisfy { $1 - $0 == 15 * 60_000 })
    }

    @Test func aLoopAfterEachEndWaitsForTheRun() {
        let chain = schedule(["id": "bike", "timer": "bike", "preset": "tabata",
                              "loops": [["after": "1m", "from": "06:00", "to": "08:00"]]])
        var node = PlannerHarness([chain])
        #expect(node.step(ms("2026-01-12T05:00:00Z")).nextDeadline == ms("2026-01-12T06:00:00Z"))
        let first = node.step(ms("2026-01-12T06:00:00Z"))
        #expect(first.decisions.map(\.lateMs) == [0])
        #expect(first.nextDeadline == nil)  // waits for the run's end
        node.write(node.planner.runEnded(timer: "bike", at: ms("2026-01-12T06:20:00Z")))
        let plan = node.step(ms("2026-01-12T06:20:00Z"))
        #expect(plan.nextDeadline == ms("2026-01-12T06:21:00Z"))
        #expect(node.planner.nextClass(timer: "bike", now: ms("2026-01-12T06:20:00Z"))?.occurrence.instant == ms("2026-01-12T06:21:00Z"))
        #expect(node.step(ms("2026-01-12T06:21:00Z")).decisions.count == 1)
        // Ends past the window: tomorrow's first class.
        node.write(node.planner.runEnded(timer: "bike", at: ms("2026-01-12T07:59:30Z")))
        #expect(node.step(ms("2026-01-12T07:59:30Z")).nextDeadline == ms("2026-01-13T06:00:00Z"))
        // A restart while a run goes on: still waiting; the run's end after the restart goes on.
        _ = node.step(ms("2026-01-13T06:00:00Z"))
        node.restart()
        #expect(node.step(ms("2026-01-13T06:05:00Z")).decisions.isEmpty)
        #expect(node.planner.skipNext(schedule: "bike", now: ms("2026-01-13T06:05:00Z")) == .failure(.loopRunning))
        node.write(node.planner.runEnded(timer: "bike", at: ms("2026-01-13T06:10:00Z")))
        node.restart()
        #expect(node.step(ms("2026-01-13T06:11:00Z")).decisions.map(\.lateMs) == [0])
    }

    @Test func theNextClassDocument() throws {
        var json = hiit.object!
        json["time_zone"] = "America/New_York"
        var planner = SchedulePlanner(schedules: [schedule(.object(json))], records: [], defaultZone: london)
        let found = planner.nextClass(timer: "main", now: ms("2026-01-12T10:00:00Z"))
        let next = try #require(found)
        #expect(next.json == [
            "timer": "main", "schedule": "hiit", "name": "HIIT 45", "starts_at": "2026-01-12T11:30:00.000Z",
            "starts_at_ms": .int(ms("2026-01-12T06:30:00-05:00")), "local_date": "2026-01-12", "local_time": "06:30",
            "time_zone": "America/New_York", "grace_ms": 300_000, "workout": "hiit45",
        ])
        #expect(planner.nextClass(timer: "other", now: 0) == nil)
        // Past its grace, the next is the evening's.
        #expect(planner.nextClass(timer: "main", now: ms("2026-01-12T11:36:00Z"))?.occurrence.instant == ms("2026-01-12T23:00:00Z"))
        let list = planner.day(date("2026-01-12"), timer: "main", now: ms("2026-01-12T11:33:00Z"))
        let document = SchedulePlanner.DayEntry.document(date: date("2026-01-12"), zone: "Europe/London", entries: list)
        #expect(document["classes"]?.array?.map { $0["status"] } == ["waiting", "upcoming"])
        #expect(document["classes"]?[1]?["local_time"] == "18:00")
    }

    @Test func recordsReadBackAsWritten() {
        let records = [
            ScheduleRecord(schedule: "a", instant: 1, local: LocalDateTime.parse("2026-01-12T06:30")!, zone: "Europe/London",
                           outcome: .started(lateMs: 5), decidedAt: 6),
            ScheduleRecord(schedule: "b", instant: 2, local: LocalDateTime.parse("2026-01-12T06:30")!, zone: "UTC",
                           outcome: .skipped(.timerBusy(lateMs: 9)), decidedAt: 3, chain: .ended(at: 4)),
            ScheduleRecord(schedule: "c", instant: 2, local: LocalDateTime.parse("2026-01-12T06:30")!, zone: "UTC",
                           outcome: .baseline, decidedAt: 3, chain: .running),
        ]
        for record in records {
            #expect(ScheduleRecord(json: record.json) == record)
            #expect(record.json.jsonBytes.count < 240)
        }
        #expect(ScheduleRecord(json: ["schedule": "a"]) == nil)
    }
}

import Foundation
import PacerCore
import Testing
@testable import PacerSchedule

/// A seeded generator (SplitMix64): the same year on every machine.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// One year of a gym's timetable through the planner as the node drives it: deadlines, timers
/// that are busy while a class runs, runs that end, and 20 restarts (crashes and power cuts at
/// random instants, some exactly at a class's deadline before its decision is written) after
/// which the planner is rebuilt from the written records alone. The expected classes come from
/// Foundation's Calendar (`nextDate` with the next existing time and the first of a repeated
/// one), not from the planner's own arithmetic.
@Suite struct SimulatedYearTests {
    static let start = ms("2026-01-01T00:00:00Z")
    static let end = ms("2027-01-01T00:00:00Z")
    static let minute: Millis = 60_000

    static let schedules: [Schedule] = [
        schedule(["id": "weekday", "name": "HIIT 45", "timer": "main", "preset": "tabata",
                  "weekly": [["days": "weekdays", "at": ["06:30", "07:30", "12:15", "18:00", "19:15"]]],
                  "except": ["2026-04-03", "2026-05-04", "2026-12-25"]]),
        schedule(["id": "weekend", "name": "Tabata", "timer": "main", "preset": "tabata",
                  "weekly": [["days": "weekends", "at": ["09:00", "10:30"]]]]),
        // London's changes fall on Sunday mornings at 01:00: 01:30 is missing, then doubled.
        schedule(["id": "early", "name": "Night owls", "timer": "studio", "preset": "tabata",
                  "weekly": [["days": ["sun"], "at": "01:30"]]]),
        // New York's at 02:00: 02:30 is missing on the spring day, 01:30 doubled in the autumn.
        schedule(["id": "ny", "name": "Late shift", "timer": "ny", "preset": "tabata", "time_zone": "America/New_York",
                  "weekly": [["days": "daily", "at": ["01:30", "02:30"]]]]),
        schedule(["id": "circuit", "name": "Circuit", "timer": "circuit", "preset": "tabata", "loops": [["every": "15m"]]]),
        schedule(["id": "bike", "name": "Spin", "timer": "bike", "preset": "tabata",
                  "loops": [["after": "1m", "from": "06:00", "to": "22:00"]]]),
    ]

    /// How long a run lasts on each timer.
    static let runMs: [String: Millis] = ["main": 45 * minute, "studio": 20 * minute, "ny": 20 * minute,
                                          "circuit": 12 * minute, "bike": 20 * minute]

    /// The classes Calendar expects in the year (schedules other than the chained loop), by schedule.
    static func expected() -> [String: [Millis]] {
        var out: [String: [Millis]] = [:]
        for schedule in schedules where schedule.chain == nil {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: schedule.timeZone ?? "Europe/London")!
            var instants: [Millis] = []
            var day = calendar.startOfDay(for: Date(timeIntervalSince1970: Double(start) / 1000 - 86_400))
            while Millis(day.timeIntervalSince1970 * 1000) < end + 86_400_000 {
                let next = calendar.date(byAdding: .day, value: 1, to: day)!
                let weekday = (calendar.component(.weekday, from: day) + 5) % 7 + 1  // Monday 1
                for rule in schedule.weekly where rule.days.contains(Weekday(rawValue: weekday)!) {
                    for time in rule.times {
                        let found = calendar.nextDate(after: day.addingTimeInterval(-1),
                                                      matching: DateComponents(hour: time.hour, minute: time.minute),
                                                      matchingPolicy: .nextTime, repeatedTimePolicy: .first, direction: .forward)!
                        instants.append(Millis((found.timeIntervalSince1970 * 1000).rounded()))
                    }
                }
                for loop in schedule.loops {
                    guard case .every(let step) = loop.pace else { continue }
                    var t = Millis(day.timeIntervalSince1970 * 1000)
                    while t < Millis(next.timeIntervalSince1970 * 1000) { instants.append(t); t += step }
                }
                day = next
            }
            out[schedule.id] = instants.filter { $0 > start && $0 < end }.sorted()
        }
        return out
    }

    struct Tally {
        var onTime = 0, late = 0, skippedLate = 0, skippedBusy = 0, cancelled = 0, passedOver = 0
    }

    @Test func aYearOfClassesEachDecidedOnce() throws {
        var random = SeededGenerator(state: 1)
        let london = ZoneRules(identifier: "Europe/London")!
        // 20 restarts: when, how long the node is off (10 s to 4 h), and whether the crash hits a
        // deadline before its decision was written.
        var restarts: [(at: Millis, off: Millis, atDeadline: Bool)] = (0..<20).map { _ in
            (Millis.random(in: Self.start + 86_400_000...Self.end - 86_400_000, using: &random),
             [10_000, 90_000, 4 * Self.minute, 20 * Self.minute, 61 * Self.minute, 4 * 60 * Self.minute].randomElement(using: &random)!,
             Bool.random(using: &random))
        }
        restarts.sort { $0.at < $1.at }
        // Two of them on the DST weekends, to restart across a change.
        restarts[5] = (ms("2026-03-29T00:58:00Z"), 4 * Self.minute, false)
        restarts[16] = (ms("2026-10-25T00:40:00Z"), 61 * Self.minute, false)
        restarts.sort { $0.at < $1.at }

        var node = PlannerHarness(Self.schedules, zone: london)
        var runs: [String: (start: Millis, end: Millis)] = [:]  // timer → its current or last run
        var ended: Set<String> = []  // timers whose last run's end the planner was told about
        var started: [String: Millis] = [:]  // occurrence key → when it started
        var skipped: [String: SkipReason] = [:]
        var tally: [String: Tally] = [:]
        var bikeRuns: [(start: Millis, end: Millis)] = []
        var latestRestartAt: Millis = .min
        var maxRecordBytes = 0
        var plans = 0
        var now = Self.start
        var nextRestart = 0
        let clock = ContinuousClock.now

        while now < Self.end {
            // Runs that ended by now: the engine's `finished`, handed to the planner.
            for (timer, run) in runs.sorted(by: { $0.key < $1.key }) where run.end <= now && !ended.contains(timer) {
                ended.insert(timer)
                node.write(node.planner.runEnded(timer: timer, at: run.end))
            }
            let busy = Set(runs.filter { $0.value.end > now }.map(\.key))
            let plan = node.step(now, busy: busy)
            plans += 1
            for decision in plan.decisions {
                let key = decision.occurrence.key
                if started[key] != nil || skipped[key] != nil { Issue.record("decided twice: \(key)") }
                tally[decision.occurrence.schedule, default: Tally()].passedOver += decision.alsoSkipped
                switch decision.action {
                case .start(let late):
                    if late < 0 || late != now - decision.occurrence.instant || late > 5 * Self.minute || busy.contains(decision.timer) {
                        Issue.record("a start out of its rules: \(decision)")
                    }
                    started[key] = now
                    if late <= 5 {
                        tally[decision.occurrence.schedule, default: Tally()].onTime += 1
                    } else {
                        tally[decision.occurrence.schedule, default: Tally()].late += 1
                        // Late only after a restart (or behind a run a restart made late).
                        #expect(now - latestRestartAt < 90 * Self.minute, "late without a restart: \(decision.occurrence)")
                    }
                    runs[decision.timer] = (now, now + Self.runMs[decision.timer]!)
                    ended.remove(decision.timer)
                    if decision.timer == "bike" { bikeRuns.append((now, now + Self.runMs["bike"]!)) }
                case .skip(let reason):
                    skipped[key] = reason
                    switch reason {
                    case .late: tally[decision.occurrence.schedule, default: Tally()].skippedLate += 1
                    case .timerBusy: tally[decision.occurrence.schedule, default: Tally()].skippedBusy += 1
                    case .cancelled: tally[decision.occurrence.schedule, default: Tally()].cancelled += 1
                    case .requested: Issue.record("nobody asked to skip \(key)")
                    }
                    if case .late = reason {
                        #expect(now - latestRestartAt < 5 * Self.minute, "skipped without a restart: \(decision.occurrence)")
                    }
                }
            }
            if node.store.count != Self.schedules.count { Issue.record("\(node.store.count) records") }
            let runEnds = runs.filter { $0.value.end > now }.map(\.value.end)
            var wake = ([plan.nextDeadline].compactMap { $0 } + runEnds).min() ?? Self.end
            wake += Millis.random(in: 0...3, using: &random)  // the scheduler's wake-up latency
            if nextRestart < restarts.count, restarts[nextRestart].at <= wake {
                let restart = restarts[nextRestart]
                nextRestart += 1
                // The crash: at the restart instant, or exactly at the deadline with nothing written.
                let crashAt = restart.atDeadline ? wake : max(now, restart.at)
                now = crashAt + restart.off
                latestRestartAt = now
                node.restart()
                // The restore: runs that ended while the node was off report their end; the rest go on.
                ended = ended.filter { runs[$0] != nil }
                continue
            }
            now = wake
        }
        let elapsed = ContinuousClock.now - clock

        // Every expected class is decided exactly once: started, skipped, or passed over in an outage.
        let expected = Self.expected()
        var lines: [String] = []
        for schedule in Self.schedules {
            let t = tally[schedule.id] ?? Tally()
            let decided = started.keys.filter { $0.hasPrefix(schedule.id + "@") }.count
                + skipped.keys.filter { $0.hasPrefix(schedule.id + "@") }.count
            if let instants = expected[schedule.id] {
                let keys = Set(instants.map { "\(schedule.id)@\($0)" })
                let offTimetable = (started.keys.filter { $0.hasPrefix(schedule.id + "@") } + skipped.keys.filter { $0.hasPrefix(schedule.id + "@") })
                    .filter { !keys.contains($0) }
                #expect(offTimetable.isEmpty, "decided off the timetable: \(offTimetable.prefix(5))")
                #expect(decided + t.passedOver == instants.count, "\(schedule.id): \(decided) decided + \(t.passedOver) passed over, \(instants.count) planned")
            }
            lines.append("\(schedule.id): \(expected[schedule.id]?.count.description ?? "chained") planned, \(t.onTime) on time, \(t.late) late, "
                + "\(t.skippedLate) skipped late, \(t.skippedBusy) skipped busy, \(t.cancelled) cancelled, \(t.passedOver) passed over in outages")
        }
        // The DST classes: the missing time started once at the gap's end, the doubled one once.
        let dst = [("early", "2026-03-29T02:00:00+01:00"), ("early", "2026-10-25T01:30:00+01:00"),
                   ("ny", "2026-03-08T03:00:00-04:00"), ("ny", "2026-11-01T01:30:00-04:00"), ("ny", "2026-11-01T02:30:00-05:00")]
        for (id, text) in dst { #expect(started["\(id)@\(ms(text))"] != nil || skipped["\(id)@\(ms(text))"] != nil, "\(id) at \(text)") }
        #expect(started["ny@\(ms("2026-11-01T01:30:00-05:00"))"] == nil)
        // The holidays.
        #expect(skipped["weekday@\(ms("2026-12-25T06:30:00Z"))"] == .cancelled)
        // The chained loop: runs never overlap, each starts at least its minute after the last ended.
        let tooSoon = zip(bikeRuns, bikeRuns.dropFirst()).filter { a, b in b.start < a.end + Self.minute }
        #expect(tooSoon.isEmpty, "bike runs too close: \(tooSoon.prefix(3))")
        #expect(bikeRuns.count > 300 * 40)
        // Bounded: one record per schedule, small; a few days of classes remembered per schedule.
        #expect(maxRecordBytes < 260)
        maxRecordBytes = node.store.values.map(\.count).max() ?? 0
        for calendar in node.planner.calendars.values { #expect(calendar.cache.count <= 16) }
        lines.append("bike: \(bikeRuns.count) runs; \(plans) plans, \(restarts.count) restarts, records up to \(maxRecordBytes) bytes, \(elapsed)")
        print("The simulated year:\n  " + lines.joined(separator: "\n  "))
    }
}

import Foundation
import PacerCore
@testable import PacerNode
import PacerProtocol
import PacerStore
import PacerTestSupport
import Testing

/// A year of a gym's timetable through the engine: the machine driven alone (`EngineHarness`'s
/// `MachineDriver`) with a real SQLite file and an injected clock stepped from deadline to
/// deadline, from 2026-01-01 to 2027-01-01 in Europe/London (both DST changes), with power cuts.
///
/// The timetable: 5 weekday classes on `main` (3 holidays), a weekend class at 01:30 and 09:00
/// on `main` (01:30 falls in the spring gap and in the autumn repeat), and a loop every 15 min
/// on `circuit` over a window that spans the change (00:30 to 02:30 on Sundays: 8 classes, 4 on
/// the spring day, 12 on the autumn day). Each class is a 10 s countdown.
///
/// Power cuts: 20 at seeded instants (seed 1), some exactly at a class's deadline before its
/// input was handled (that input is lost), plus three pinned ones: across the spring change,
/// across the autumn change, and 5 s into a class. A power cut drops the machine with no
/// graceful stop and restores from the SQLite file, the way the restart tests do.
///
/// What it checks, against Foundation's calendar (not the planner's arithmetic): every class
/// starts exactly once at its planned instant (`late_ms` 0) unless a power cut covered it; of the
/// classes a cut covered, per schedule, the latest one within its grace starts late with
/// `late_ms` = the restore's instant − its planned instant exactly, and the others never start
/// (docs/schedules.md, "Exactly once, across restarts"); holidays never start; nothing starts
/// twice or off the timetable; `current_class` names every class started (its late_ms) and after
/// each restart still names a run that goes on, or nothing; the store keeps 2 timers, no request
/// ids, a history within `history:` and one small records document. It prints the year's tally.
///
/// Scope, measured (debug build, 2 shared cores): a day of a 1-minute class every 15 minutes took
/// 2-2.6 s with the SQLite file on disk (its synchronous writes, about 14 ms a class) and 0.6 s
/// on /dev/shm (about 1.7 ms a class, and 0.08 ms a deadline for the per-second flips), so a
/// full year of that loop alone would take minutes. Chosen: all 12 months and both changes,
/// 10 s classes, the loop on Sundays only (416 classes; every day would add 2,920), and the data
/// directory on /dev/shm when the machine has one (the same SQLite file and writes, without a
/// disk's fsyncs): 1,929 classes and 22,299 deadlines in 10.8 s with another test run sharing
/// the cores (with 20 s classes: 40,846 deadlines in 10.5 s; 27 s beside the planner's year).
/// The writes and restarts, not the flips, cost most.
@Suite("Engine machine: a year of the timetable")
struct EngineScheduleYearTests {
    static let minute: Millis = 60_000
    /// 2026-01-01T00:00:00Z and 2027-01-01T00:00:00Z.
    static let start: Millis = 1_767_225_600_000
    static let end: Millis = 1_798_761_600_000
    static let classMs: Millis = 10_000
    static let graceMs: Millis = 5 * minute
    static let holidays: Set<String> = ["2026-04-03", "2026-05-04", "2026-12-25"]
    static let maxEvents = 100

    static let config = """
        time_zone: Europe/London
        history: {max_age: 30d, max_events: \(maxEvents)}
        schedules:
          - {id: weekday, name: HIIT 45, timer: main, spec: {kind: countdown, duration: 10s},
             weekly: [{days: weekdays, at: ["06:30", "07:30", "12:15", "18:00", "19:15"]}],
             except: ["2026-04-03", "2026-05-04", "2026-12-25"]}
          - {id: weekend, name: Night owls, timer: main, spec: {kind: countdown, duration: 10s},
             weekly: [{days: weekends, at: ["01:30", "09:00"]}]}
          - {id: circuit, name: Circuit, timer: circuit, spec: {kind: countdown, duration: 10s},
             loops: [{every: 15m, from: "00:30", to: "02:30", days: [sun]}]}
        """

    /// The classes Foundation's calendar expects in the year, by schedule: a time the day does
    /// not have is the next existing one, a time it has twice the first (docs/schedules.md).
    /// `cancelled`: the holidays' classes.
    static func expected() -> (classes: [String: [Millis]], cancelled: Set<Millis>) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Europe/London")!
        func at(_ day: Date, _ hour: Int, _ minute: Int) -> Millis {
            let found = calendar.nextDate(after: day.addingTimeInterval(-1), matching: DateComponents(hour: hour, minute: minute),
                                          matchingPolicy: .nextTime, repeatedTimePolicy: .first, direction: .forward)!
            return Millis((found.timeIntervalSince1970 * 1000).rounded())
        }
        var classes: [String: [Millis]] = ["weekday": [], "weekend": [], "circuit": []]
        var cancelled: Set<Millis> = []
        var day = calendar.startOfDay(for: Date(timeIntervalSince1970: Double(start) / 1000))
        while Millis(day.timeIntervalSince1970 * 1000) < end {
            let weekday = calendar.component(.weekday, from: day)  // 1 Sunday ... 7 Saturday
            let parts = calendar.dateComponents([.year, .month, .day], from: day)
            let date = String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
            if (2...6).contains(weekday) {
                for (hour, minute) in [(6, 30), (7, 30), (12, 15), (18, 0), (19, 15)] {
                    let instant = at(day, hour, minute)
                    classes["weekday"]!.append(instant)
                    if holidays.contains(date) { cancelled.insert(instant) }
                }
            } else {
                for (hour, minute) in [(1, 30), (9, 0)] { classes["weekend"]!.append(at(day, hour, minute)) }
            }
            if weekday == 1 {
                let close = at(day, 2, 30)
                var instant = at(day, 0, 30)
                while instant < close {
                    classes["circuit"]!.append(instant)
                    instant += 15 * Self.minute
                }
            }
            day = calendar.date(byAdding: .day, value: 1, to: day)!
        }
        return (classes.mapValues { $0.filter { $0 > start && $0 < end }.sorted() }, cancelled)
    }

    /// A power cut: at `at` (or, `atDeadline`, exactly at the first class due from then on, its
    /// input lost), off for `off`.
    struct Cut {
        var at: Millis
        var off: Millis
        var atDeadline: Bool
    }

    /// A class the node started, as the wire showed it.
    struct Start {
        var timer: String
        var plannedMs: Millis
        var lateMs: Millis
        var startedAtMs: Millis
    }

    /// A directory for the year's SQLite file: on /dev/shm (a RAM disk) when there is one.
    static func dataDirectory() throws -> URL {
        let shm = URL(fileURLWithPath: "/dev/shm", isDirectory: true)
        guard FileManager.default.isWritableFile(atPath: shm.path) else { return try makeTemporaryDirectory("pacer-year") }
        let url = shm.appendingPathComponent("pacer-year-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("a year of a real timetable through the engine, with power cuts: each class once, on time or late/skipped by the rule")
    func aYearThroughTheEngine() async throws {
        let (expected, cancelled) = Self.expected()
        // A class is known by its timer and planned instant: the two schedules on `main` never
        // share an instant (the weekend's 01:30 and the loop's share one, on two timers).
        let allInstants = expected.values.flatMap { $0 }.sorted()

        var random = SeededGenerator(seed: 1)
        let offs: [Millis] = [10_000, 90_000, 4 * Self.minute, 6 * Self.minute, 20 * Self.minute, 120 * Self.minute]
        var cuts: [Cut] = (0..<20).map { _ in
            Cut(at: Millis.random(in: Self.start + 2 * 86_400_000...Self.end - 2 * 86_400_000, using: &random),
                off: offs.randomElement(using: &random)!, atDeadline: Bool.random(using: &random))
        }
        cuts.append(Cut(at: ms("2026-03-29T00:58:00Z"), off: 4 * Self.minute, atDeadline: false))  // across the spring change
        cuts.append(Cut(at: ms("2026-10-25T00:40:00Z"), off: 61 * Self.minute, atDeadline: false))  // across the autumn change
        cuts.append(Cut(at: ms("2026-06-10T17:00:05Z"), off: 2_000, atDeadline: false))  // 5 s into the 18:00 class
        cuts.sort { $0.at < $1.at }
        // Where each cut falls (a deadline cut: at the first class due from its instant on).
        for index in cuts.indices where cuts[index].atDeadline {
            let from = cuts[index].at
            cuts[index].at = try #require(allInstants.first { $0 >= from })
        }
        for (a, b) in zip(cuts, cuts.dropFirst()) { try #require(a.at + a.off + 3_600_000 < b.at, "cuts overlap: \(a) \(b)") }

        let time = VirtualTime(wall: Self.start)
        var h = try await EngineHarness.make(config: Self.config, directory: try Self.dataDirectory(), time: time)
        defer { try? FileManager.default.removeItem(at: h.directory) }
        await h.connect()

        var starts: [String: [Start]] = [:]  // by "<timer>@<planned>"
        var seenStarted: Set<String> = []  // "<timer>#<revision>": a repeat of an event is not a start
        var lastStart: [String: Start] = [:]  // by timer
        var shown: [String: JSONValue?] = [:]  // each timer's last current_class (nil: empty)
        var problems: [String] = []
        var outages: [(from: Millis, to: Millis)] = []
        var steps = 0, currentPublishes = 0, maxRecordsBytes = 0, maxEvents = 0
        let clock = ContinuousClock.now

        /// Reads what one input published: each new `started` event with the `current_class`
        /// shown for its timer (published beside it, or before it when the event waited for a
        /// connect's outbox check); acknowledges every tracked publish (the broker's PUBACK).
        /// Returns the `current_class` payloads it published.
        func absorb() async -> [String: JSONValue?] {
            var current: [String: JSONValue?] = [:]
            var started: [(timer: String, dueMs: Millis)] = []
            var tokens: [UInt64] = []
            for step in h.journal.take() {
                let topic: String, payload: [UInt8]
                switch step {
                case .publish(let t, let p, _): (topic, payload) = (t, p)
                case .tracked(let t, let p, let token, _): (topic, payload) = (t, p); tokens.append(token)
                default: continue
                }
                let levels = topic.split(separator: "/", omittingEmptySubsequences: false)
                guard levels.count == 5, levels[2] == "timers" else { continue }
                let timer = String(levels[3])
                if levels[4] == "current_class" {
                    let value: JSONValue? = payload.isEmpty ? nil : JSONCoding.decode(payload)
                    current[timer] = .some(value)
                    shown[timer] = .some(value)
                    currentPublishes += 1
                } else if levels[4] == "event", let event = JSONCoding.decode(payload), event["type"] == "started",
                          let revision = event["revision"]?.int64, let due = event["due_ms"]?.int64,
                          seenStarted.insert("\(timer)#\(revision)").inserted {
                    started.append((timer, due))
                }
            }
            for (timer, due) in started {
                guard case .some(.some(let doc)) = shown[timer], let planned = doc["starts_at_ms"]?.int64,
                      let late = doc["late_ms"]?.int64, let startedAt = doc["started_at_ms"]?.int64 else {
                    problems.append("a start on \(timer) at \(due) with no class on current_class: \(String(describing: shown[timer]))")
                    continue
                }
                if startedAt != due || planned + late != due { problems.append("current_class does not match its start at \(due): \(doc)") }
                let start = Start(timer: timer, plannedMs: planned, lateMs: late, startedAtMs: due)
                starts["\(timer)@\(planned)", default: []].append(start)
                lastStart[timer] = start
            }
            for token in tokens { await h.deliver(token) }
            if !tokens.isEmpty { _ = h.journal.take() }
            return current
        }

        /// The store within its bounds: the two timers at most, no request ids, the history within
        /// `history:` (pruned hourly after a write), one small records document.
        func checkStore(now: Millis) throws {
            let database = h.store.database
            let timers = try database.loadTimers().map(\.id).sorted()
            if !Set(timers).isSubset(of: ["circuit", "main"]) { problems.append("timers stored: \(timers)") }  // made by their first class
            if try !database.loadRequests(sinceMs: 0).isEmpty { problems.append("request ids stored") }
            let events = try database.history(HistoryQuery(limit: 1_000_000))
            maxEvents = max(maxEvents, events.count)
            if events.count > Self.maxEvents + 20 { problems.append("\(events.count) events stored at \(now)") }
            if let oldest = events.map(\.atMs).min(), oldest < now - 31 * 86_400_000 {  // 30 d, pruned at a write
                problems.append("an event from \(oldest) still stored at \(now)")
            }
            let records = try database.meta(SchedulePart.metaKey) ?? ""
            maxRecordsBytes = max(maxRecordsBytes, records.utf8.count)
        }

        var nextCut = 0, sameInstant = 0
        while let next = await h.engine.nextDeadline(), next < Self.end {
            if nextCut < cuts.count, cuts[nextCut].at <= next {
                // The power cut: the deadlines at its instant are never handled; nothing is shut down.
                let cut = cuts[nextCut]
                nextCut += 1
                time.pass(max(0, cut.at - time.wall))
                try checkStore(now: time.wall)
                time.pass(cut.off)
                outages.append((cut.at, time.wall))
                h = try await h.restart(config: Self.config)
                await h.connect()  // the restore's deadline first (the classes missed), then the republish
                let current = await absorb()
                // `current_class` after the restart: the class whose run goes on (or one this
                // restore started late, whose `started` follows the connect's outbox check), or nothing.
                for timer in ["main", "circuit"] {
                    let running = lastStart[timer].map { $0.startedAtMs + Self.classMs > time.wall } ?? false
                    switch current[timer] {
                    case .some(.some(let doc)):
                        let startedAt = doc["started_at_ms"]?.int64
                        if startedAt != time.wall && !(running && startedAt == lastStart[timer]?.startedAtMs) {
                            problems.append("after the restart at \(time.wall), \(timer)'s current_class is \(doc); its last class: \(String(describing: lastStart[timer]))")
                        }
                    case .some(.none):
                        if running { problems.append("after the restart at \(time.wall), \(timer)'s class under way is not shown") }
                    case .none:
                        problems.append("after the restart at \(time.wall), \(timer)'s current_class was not republished")
                    }
                }
                continue
            }
            sameInstant = next == time.wall ? sameInstant + 1 : 0
            if sameInstant > 1_000 {
                problems.append("a deadline at \(next) that never passes")
                break
            }
            time.pass(next - time.wall)
            await h.engine.handle(.deadline)
            steps += 1
            _ = await absorb()
        }
        try checkStore(now: time.wall)
        #expect(try h.store.database.loadTimers().count == 2)
        let elapsed = ContinuousClock.now - clock

        // Each class by the rule.
        func outage(covering instant: Millis) -> (from: Millis, to: Millis)? {
            outages.first { $0.from <= instant && instant <= $0.to }
        }
        var lines: [String] = []
        for id in ["weekday", "weekend", "circuit"] {
            let timer = id == "circuit" ? "circuit" : "main"
            var onTime = 0, late = 0, notStarted = 0, holidays = 0
            for instant in expected[id]! {
                let got = starts["\(timer)@\(instant)"] ?? []
                if got.count > 1 { problems.append("\(id)@\(instant) started \(got.count) times") }
                let expectedLate: Millis?
                if cancelled.contains(instant) {
                    expectedLate = nil
                    holidays += 1
                } else if let cut = outage(covering: instant) {
                    // The latest class of this schedule the cut covered starts, within its grace.
                    let covered = expected[id]!.filter { $0 >= cut.from && $0 <= cut.to && !cancelled.contains($0) }
                    expectedLate = instant == covered.last && cut.to - instant <= Self.graceMs ? cut.to - instant : nil
                } else {
                    expectedLate = 0
                }
                switch (expectedLate, got.first) {
                case (nil, nil): if !cancelled.contains(instant) { notStarted += 1 }
                case (let want?, let start?) where start.lateMs == want: if want == 0 { onTime += 1 } else { late += 1 }
                default: problems.append("\(id)@\(instant) (\(iso8601(ms: instant))): expected late \(String(describing: expectedLate)), got \(got)")
                }
            }
            lines.append("\(id): \(expected[id]!.count) planned, \(onTime) on time, \(late) late, \(notStarted) not started (power cuts), \(holidays) holidays")
        }
        // Nothing started off the timetable.
        let planned = Set(expected.flatMap { id, instants in instants.map { "\(id == "circuit" ? "circuit" : "main")@\($0)" } })
        let off = starts.keys.filter { !planned.contains($0) }
        #expect(off.isEmpty, "started off the timetable: \(off.sorted().prefix(5))")
        #expect(problems.count == 0, "\(problems.count) problems, the first 20:\n\(problems.prefix(20).joined(separator: "\n"))")

        // The DST days: the spring 01:30 starts at 02:00 BST (a cut covered it: 2 min late), the
        // autumn 01:30 once, at 01:30 BST; the loop has 4 classes in spring and 12 in autumn.
        #expect(starts["main@\(ms("2026-03-29T01:00:00Z"))"]?.first?.lateMs == 2 * Self.minute)
        #expect(starts["main@\(ms("2026-10-25T00:30:00Z"))"]?.first?.lateMs == 0)
        #expect(starts["main@\(ms("2026-10-25T01:30:00Z"))"] == nil)
        #expect(expected["circuit"]!.filter { (ms("2026-03-29T00:00:00Z")..<ms("2026-03-30T00:00:00Z")).contains($0) }.count == 4)
        #expect(expected["circuit"]!.filter { (ms("2026-10-24T23:00:00Z")..<ms("2026-10-26T00:00:00Z")).contains($0) }.count == 12)
        // The holidays never started.
        #expect(cancelled.count == 15 && cancelled.allSatisfy { starts["main@\($0)"] == nil })
        #expect(maxRecordsBytes < 2_000, "the records document grew to \(maxRecordsBytes) bytes")
        lines.append("\(cuts.count) power cuts (\(cuts.filter(\.atDeadline).count) at a class's deadline), \(steps) deadlines, "
            + "\(currentPublishes) current_class publishes, history up to \(maxEvents) events, records up to \(maxRecordsBytes) bytes, \(elapsed)")
        print("The simulated year through the engine:\n  " + lines.joined(separator: "\n  "))
    }
}

/// Epoch ms of an ISO 8601 instant.
private func ms(_ text: String) -> Millis {
    Millis((ISO8601DateFormatter().date(from: text)!.timeIntervalSince1970 * 1000).rounded())
}

public import PacerCore

/// What the planner answers at an instant: the decisions due, what to write, and when to ask again.
public struct SchedulePlan: Sendable, Equatable {
    /// The classes decided now, in order. Write `records` first, then act on each `.start`.
    public var decisions: [ScheduleDecision]
    /// The records to write before acting (one per schedule that changed: a decision's, or the
    /// first record of a schedule new to the node). After the write, `SchedulePlanner.commit`.
    public var records: [ScheduleRecord]
    /// The next instant the planner has something to decide (a class's start, or the end of a
    /// waiting class's grace); nil when nothing is planned. The node makes it a deadline of its
    /// one scheduler; it also asks again whenever a target timer becomes free or a run ends.
    public var nextDeadline: Millis?
}

/// The timetable's planner: given the schedules, the records the node wrote (the last decided
/// class of each) and the instant, it decides which classes start or are skipped, exactly once.
///
/// A value with no I/O and no clock. The node's loop:
/// 1. `plan(now:busyTimers:)` at start-up, at each `nextDeadline`, when a target timer becomes
///    free and after a schedule changes;
/// 2. write `plan.records` (with the timers' starts, in one transaction);
/// 3. `commit(plan.records)`, then start each `.start` decision's workout on its timer.
///
/// Restart rule: the planner is rebuilt from the schedules and the written records alone. A
/// class at or before its schedule's record is never decided again; the classes after it that
/// passed while the node was off are decided at once: the latest within its grace starts (late),
/// the others are skipped (`alsoSkipped`). A wall-clock step is the same: forward, the classes
/// it jumped over are decided like an outage; backward, the decided ones stay decided.
public struct SchedulePlanner: Sendable {
    /// The schedules by id.
    public private(set) var schedules: [String: Schedule]
    /// The records as written, by schedule id.
    public private(set) var records: [String: ScheduleRecord]
    /// The zone of schedules without one of their own (the node's).
    public private(set) var defaultZone: ZoneRules
    private(set) var calendars: [String: ScheduleCalendar] = [:]
    /// Each schedule's next instant to decide, as worked out for its record: valid while the
    /// record is the same and the instant is still ahead (no class lies between), so a plan
    /// costs nothing for the schedules with nothing due.
    private var nextKnown: [String: (record: ScheduleRecord, instant: Millis?)] = [:]

    /// - Parameters:
    ///   - schedules: every schedule (the configuration's and the saved ones).
    ///   - records: the records the node wrote (records of schedules not given are ignored).
    ///   - defaultZone: the node's zone.
    public init(schedules: [Schedule], records: [ScheduleRecord], defaultZone: ZoneRules) {
        let byID = Dictionary(schedules.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        self.schedules = byID
        self.records = Dictionary(records.filter { byID[$0.schedule] != nil }.map { ($0.schedule, $0) },
                                  uniquingKeysWith: { _, last in last })
        self.defaultZone = defaultZone
    }

    // MARK: Changes

    /// Adds or replaces a schedule. Its record stays: classes already decided stay decided.
    public mutating func save(_ schedule: Schedule) {
        schedules[schedule.id] = schedule
        calendars[schedule.id] = nil
        nextKnown[schedule.id] = nil
    }

    /// Removes a schedule and its record (the node deletes the written record too). False when unknown.
    @discardableResult
    public mutating func remove(_ id: String) -> Bool {
        calendars[id] = nil
        nextKnown[id] = nil
        records[id] = nil
        return schedules.removeValue(forKey: id) != nil
    }

    /// Changes the node's zone; the next plan re-plans every schedule without one of its own.
    public mutating func setDefaultZone(_ zone: ZoneRules) {
        defaultZone = zone
        calendars = [:]
        nextKnown = [:]
    }

    /// Takes records the node has written (a plan's, `runEnded`'s, `skipNext`'s).
    public mutating func commit(_ written: [ScheduleRecord]) {
        for record in written where schedules[record.schedule] != nil {
            records[record.schedule] = record
        }
    }

    // MARK: Planning

    /// The decisions due at `now`, the records to write and the next deadline.
    ///
    /// - Parameters:
    ///   - now: the node's instant (epoch ms).
    ///   - busyTimers: the timers that cannot take a class now (running, paused, scheduled or
    ///     expired). A class whose timer is busy waits for it until its grace ends, then is
    ///     skipped (`timerBusy`).
    /// Calling it again before `commit` gives the same decisions.
    public mutating func plan(now: Millis, busyTimers: Set<String>) -> SchedulePlan {
        var plan = SchedulePlan(decisions: [], records: [], nextDeadline: nil)
        var busy = busyTimers
        // The first due class of each schedule decides the order (then the id): two classes due
        // on one timer go first come, first served.
        var work: [(first: Millis, id: String, due: [Occurrence], record: ScheduleRecord)] = []
        for id in schedules.keys.sorted() {
            guard let schedule = schedules[id], schedule.enabled else { continue }
            let zone = self.zone(of: schedule)
            let record: ScheduleRecord
            if let written = records[id] {
                record = written
            } else {
                record = ScheduleRecord(schedule: id, instant: now, local: zone.local(now), zone: zone.identifier,
                                        outcome: .baseline, decidedAt: now)
                plan.records.append(record)
            }
            if let known = nextKnown[id], known.record == record, known.instant.map({ $0 > now }) ?? true {
                plan.nextDeadline = earliest(plan.nextDeadline, known.instant)
                continue
            }
            let due = dueClasses(of: schedule, record: record, now: now)
            if due.isEmpty {
                let next = nextInstant(of: schedule, record: record, after: now)
                nextKnown[id] = (record, next)
                plan.nextDeadline = earliest(plan.nextDeadline, next)
            } else {
                work.append((due[0].instant, id, due, record))
            }
        }
        work.sort { ($0.first, $0.id) < ($1.first, $1.id) }
        for item in work {
            guard let schedule = schedules[item.id] else { continue }
            let zone = self.zone(of: schedule)
            let due = item.due
            func decision(_ index: Int, _ action: ScheduleDecision.Action, also: Int, chain: ScheduleRecord.Chain?) -> ScheduleDecision {
                let occurrence = due[index]
                var outcome: ScheduleRecord.Outcome
                switch action {
                case .start(let late): outcome = .started(lateMs: late)
                case .skip(let reason): outcome = .skipped(reason)
                }
                let record = ScheduleRecord(schedule: schedule.id, instant: occurrence.instant, local: occurrence.local,
                                            zone: zone.identifier, outcome: outcome, decidedAt: now, chain: chain)
                return ScheduleDecision(occurrence: occurrence, name: schedule.name, timer: schedule.timer,
                                        workout: schedule.workout, action: action, alsoSkipped: also, decidedAt: now,
                                        record: record)
            }
            let isChain = schedule.chain != nil
            func skipReason(_ occurrence: Occurrence) -> SkipReason {
                if occurrence.cancelled { return .cancelled }
                let late = now - occurrence.instant
                return busy.contains(schedule.timer) ? .timerBusy(lateMs: late) : .late(ms: late)
            }
            let candidate = due.lastIndex { !$0.cancelled }
            var made: [ScheduleDecision] = []
            if let index = candidate, now - due[index].instant <= schedule.graceMs {
                if busy.contains(schedule.timer) {
                    // Waits for its timer (undecided) until its grace ends.
                    plan.nextDeadline = earliest(plan.nextDeadline, due[index].instant + schedule.graceMs + 1)
                    continue
                }
                made.append(decision(index, .start(lateMs: now - due[index].instant), also: index,
                                     chain: isChain ? .running : nil))
                busy.insert(schedule.timer)
                if index < due.count - 1 {
                    let last = due.count - 1
                    made.append(decision(last, .skip(skipReason(due[last])), also: last - index - 1,
                                         chain: isChain ? .running : nil))
                }
            } else {
                let last = due.count - 1
                made.append(decision(last, .skip(skipReason(due[last])), also: last,
                                     chain: isChain ? .ended(at: now) : nil))
            }
            plan.decisions += made
            if let final = made.last?.record {
                plan.records.removeAll { $0.schedule == final.schedule }
                plan.records.append(final)
                let next = nextInstant(of: schedule, record: final, after: now)
                nextKnown[schedule.id] = (final, next)
                plan.nextDeadline = earliest(plan.nextDeadline, next)
            }
        }
        return plan
    }

    /// A run on `timer` ended at `at` (finished, cancelled, reset or deleted; after a restore,
    /// every target timer found free, `at` = now): the records of loops waiting for it
    /// (`after`), to write and `commit`. Their next class is `after` that end.
    public mutating func runEnded(timer: String, at: Millis) -> [ScheduleRecord] {
        var out: [ScheduleRecord] = []
        for id in schedules.keys.sorted() {
            guard let schedule = schedules[id], schedule.timer == timer, schedule.chain != nil,
                  var record = records[id], record.chain == .running else { continue }
            record.chain = .ended(at: max(at, record.instant))
            out.append(record)
        }
        return out
    }

    /// Why `skipNext` did nothing.
    public enum SkipRefusal: Error, Sendable, Equatable {
        case unknownSchedule
        /// The schedule is off, or has no class ahead.
        case noNextClass
        /// A loop that runs after each end is running: its next class is not planned yet.
        case loopRunning
    }

    /// Skips the schedule's next class (one still to start: ahead, or waiting for its timer).
    /// Write the decision's `record`, then `commit` it.
    public mutating func skipNext(schedule id: String, now: Millis) -> Result<ScheduleDecision, SkipRefusal> {
        guard let schedule = schedules[id] else { return .failure(.unknownSchedule) }
        guard schedule.enabled else { return .failure(.noNextClass) }
        let zone = self.zone(of: schedule)
        let record = records[id] ?? ScheduleRecord(schedule: id, instant: now, local: zone.local(now), zone: zone.identifier,
                                                    outcome: .baseline, decidedAt: now)
        if record.chain == .running { return .failure(.loopRunning) }
        guard let next = nextClass(of: schedule, record: record, now: now) else { return .failure(.noNextClass) }
        let passed = dueClasses(of: schedule, record: record, now: next.instant).count - 1
        let record2 = ScheduleRecord(schedule: id, instant: next.instant, local: next.local, zone: zone.identifier,
                                     outcome: .skipped(.requested), decidedAt: now,
                                     chain: schedule.chain != nil ? .ended(at: next.instant) : nil)
        return .success(ScheduleDecision(occurrence: next, name: schedule.name, timer: schedule.timer, workout: schedule.workout,
                                         action: .skip(.requested), alsoSkipped: max(0, passed), decidedAt: now, record: record2))
    }

    // MARK: Next class and the day

    /// A class to come, with what the documents show of it.
    public struct UpcomingClass: Sendable, Equatable {
        public var occurrence: Occurrence
        public var name: String
        public var timer: String
        public var workout: ScheduleWorkout
        public var zone: String
        public var graceMs: Millis
    }

    /// The timer's next class: the soonest class of its schedules not decided yet and not
    /// cancelled, still able to start (ahead, or within its grace); nil when none is planned.
    public mutating func nextClass(timer: String, now: Millis) -> UpcomingClass? {
        var best: UpcomingClass?
        for id in schedules.keys.sorted() {
            guard let schedule = schedules[id], schedule.enabled, schedule.timer == timer else { continue }
            let zone = self.zone(of: schedule)
            let record = records[id] ?? ScheduleRecord(schedule: id, instant: now, local: zone.local(now), zone: zone.identifier,
                                                        outcome: .baseline, decidedAt: now)
            guard let next = nextClass(of: schedule, record: record, now: now) else { continue }
            if best == nil || next.instant < best!.occurrence.instant {
                best = UpcomingClass(occurrence: next, name: schedule.name, timer: schedule.timer, workout: schedule.workout,
                                     zone: zone.identifier, graceMs: schedule.graceMs)
            }
        }
        return best
    }

    /// A class of a day's list.
    public struct DayEntry: Sendable, Equatable {
        public enum Status: Sendable, Equatable {
            case upcoming
            /// Its start passed and it waits for its timer (within its grace).
            case waiting
            case started(lateMs: Millis)
            case skipped(SkipReason)
            /// Decided before the last decision of its schedule (its outcome is not kept).
            case past
            case cancelled
        }

        public var occurrence: Occurrence
        public var name: String
        public var timer: String
        public var workout: ScheduleWorkout
        public var status: Status
    }

    /// The classes of the local day `date` in the node's zone (midnight to midnight), of every
    /// schedule or of one timer's, sorted by instant, at most `limit`.
    public mutating func day(_ date: LocalDate, timer: String? = nil, now: Millis, limit: Int = 500) -> [DayEntry] {
        let start = defaultZone.resolve(date, LocalTime(minutes: 0)).instant
        let end = defaultZone.resolve(date.adding(days: 1), LocalTime(minutes: 0)).instant
        var entries: [DayEntry] = []
        for id in schedules.keys.sorted() {
            guard let schedule = schedules[id], schedule.enabled, timer == nil || schedule.timer == timer else { continue }
            let zone = self.zone(of: schedule)
            var classes = withCalendar(schedule) { $0.classes(after: start - 1, through: end - 1) }
            let record = records[id]
            if let record, schedule.chain != nil, record.instant >= start, record.instant < end,
               !classes.contains(where: { $0.instant == record.instant }) {
                // A chained run: not a class of the rules, but the record names it.
                classes.append(Occurrence(schedule: id, instant: record.instant, local: record.local))
                classes.sort()
            }
            for occurrence in classes {
                let status: DayEntry.Status
                if let record, record.covers(occurrence, zone: zone.identifier) {
                    switch record.outcome {
                    case .started(let late) where record.instant == occurrence.instant: status = .started(lateMs: late)
                    case .skipped(let reason) where record.instant == occurrence.instant: status = .skipped(reason)
                    case .baseline, .started, .skipped: status = occurrence.cancelled ? .cancelled : .past
                    }
                } else if occurrence.cancelled {
                    status = .cancelled
                } else if occurrence.instant <= now {
                    status = now - occurrence.instant <= schedule.graceMs ? .waiting : .past
                } else {
                    status = .upcoming
                }
                entries.append(DayEntry(occurrence: occurrence, name: schedule.name, timer: schedule.timer,
                                        workout: schedule.workout, status: status))
            }
        }
        entries.sort { $0.occurrence < $1.occurrence }
        return Array(entries.prefix(max(0, limit)))
    }

    // MARK: Internals

    /// The zone a schedule's rules are in: its own, else the node's.
    public func zone(of schedule: Schedule) -> ZoneRules {
        schedule.timeZone.flatMap { ZoneRules(identifier: $0) } ?? defaultZone
    }

    private mutating func calendar(for schedule: Schedule) -> ScheduleCalendar {
        if let known = calendars[schedule.id] { return known }
        let made = ScheduleCalendar(schedule: schedule, zone: zone(of: schedule))
        calendars[schedule.id] = made
        return made
    }

    /// Runs `body` on the schedule's calendar and keeps what it learnt.
    private mutating func withCalendar<T>(_ schedule: Schedule, _ body: (inout ScheduleCalendar) -> T) -> T {
        var calendar = self.calendar(for: schedule)
        let result = body(&calendar)
        calendars[schedule.id] = calendar
        return result
    }

    /// The undecided classes of a schedule planned at or before `now`, sorted.
    private mutating func dueClasses(of schedule: Schedule, record: ScheduleRecord, now: Millis) -> [Occurrence] {
        let zoneID = zone(of: schedule).identifier
        if record.chain == .running { return [] }
        var due = withCalendar(schedule) { $0.classes(after: record.instant, through: now) }
        if let chained = chainedClass(of: schedule, record: record), chained.instant <= now {
            due = ScheduleCalendar.merged(due + [chained])
        }
        return due.filter { !record.covers($0, zone: zoneID) }
    }

    /// The class a loop that runs after each end plans after its last end; nil when none (not
    /// such a loop, running, or the end + `after` falls outside its windows or on a cancelled day).
    private mutating func chainedClass(of schedule: Schedule, record: ScheduleRecord) -> Occurrence? {
        guard let loop = schedule.chain, case .afterEnd(let gap) = loop.pace,
              case .ended(let end)? = record.chain else { return nil }
        let instant = end + gap
        guard instant > record.instant,
              let found = withCalendar(schedule, { $0.chainClass(at: instant, loop: loop) }), !found.cancelled
        else { return nil }
        return found
    }

    /// The first instant after `after` at which the schedule has a class to decide.
    private mutating func nextInstant(of schedule: Schedule, record: ScheduleRecord, after: Millis) -> Millis? {
        if record.chain == .running { return nil }
        let zoneID = zone(of: schedule).identifier
        let from = max(after, record.instant)
        var next = withCalendar(schedule) { $0.firstClass(after: from) { !record.covers($0, zone: zoneID) } }?.instant
        if let chained = chainedClass(of: schedule, record: record), chained.instant > from {
            next = earliest(next, chained.instant)
        }
        return next
    }

    /// The schedule's next class to show: undecided, not cancelled, ahead or within its grace.
    private mutating func nextClass(of schedule: Schedule, record: ScheduleRecord, now: Millis) -> Occurrence? {
        if record.chain == .running { return nil }
        let zoneID = zone(of: schedule).identifier
        let from = max(record.instant, now - schedule.graceMs - 1)
        var next = withCalendar(schedule) {
            $0.firstClass(after: from, horizonDays: 400) { !$0.cancelled && !record.covers($0, zone: zoneID) }
        }
        if let chained = chainedClass(of: schedule, record: record), chained.instant > from,
           next == nil || chained.instant < next!.instant {
            next = chained
        }
        return next
    }
}

func earliest(_ a: Millis?, _ b: Millis?) -> Millis? {
    switch (a, b) {
    case (nil, nil): nil
    case (let x?, nil): x
    case (nil, let y?): y
    case (let x?, let y?): min(x, y)
    }
}

public import PacerCore

extension SchedulePlanner.UpcomingClass {
    /// The retained `<base>/timers/<id>/next` document:
    /// `{"timer","schedule","name","starts_at","starts_at_ms","local_date","local_time","time_zone",
    /// "grace_ms", and the workout: "workout" | "preset" | "spec"}`. With no class ahead the node
    /// publishes an empty retained payload instead.
    public var json: JSONValue {
        var o = Occurrence.classMembers(occurrence, name: name, timer: timer, workout: workout)
        o[.timeZone] = .string(zone)
        o[.graceMs] = .int(graceMs)
        return .object(o)
    }
}

extension SchedulePlanner.DayEntry {
    /// One class of the day's list: the `next` document's members of the class, and its
    /// `status` (`upcoming`, `waiting`, `started` with `late_ms`, `skipped` with `reason`,
    /// `past`, `cancelled`), `shifted` when DST moved it.
    public var json: JSONValue {
        var o = Occurrence.classMembers(occurrence, name: name, timer: timer, workout: workout)
        if occurrence.shifted { o[.shifted] = true }
        switch status {
        case .upcoming: o[.status] = "upcoming"
        case .waiting: o[.status] = "waiting"
        case .past: o[.status] = "past"
        case .cancelled: o[.status] = "cancelled"
        case .started(let late):
            o[.status] = "started"
            o[.lateMs] = .int(late)
        case .skipped(let reason):
            o[.status] = "skipped"
            reason.write(into: &o)
        }
        return .object(o)
    }

    /// The day's list for the phone page: `{"date": "2026-12-24", "time_zone", "classes": [...]}`.
    public static func document(date: LocalDate, zone: String, entries: [SchedulePlanner.DayEntry]) -> JSONValue {
        var o: [String: JSONValue] = [:]
        o[.date] = .string(date.description)
        o[.timeZone] = .string(zone)
        o[.classes] = .array(entries.map(\.json))
        return .object(o)
    }
}

extension Occurrence {
    /// A class's members in the `next` document and the day's list: its timer, schedule, name,
    /// planned instant (UTC and as written locally) and workout.
    static func classMembers(_ occurrence: Occurrence, name: String, timer: String, workout: ScheduleWorkout) -> [String: JSONValue] {
        var o: [String: JSONValue] = [:]
        o[.timer] = .string(timer)
        o[.schedule] = .string(occurrence.schedule)
        o[.name] = .string(name)
        o[.startsAt] = .string(iso8601(ms: occurrence.instant))
        o[.startsAtMs] = .int(occurrence.instant)
        o[.localDate] = .string(occurrence.local.date.description)
        o[.localTime] = .string(occurrence.local.time.description)
        workout.write(into: &o)
        return o
    }
}

extension ScheduleWorkout {
    /// `workout`, `preset` or `spec`, as in a schedule.
    func write(into o: inout [String: JSONValue]) {
        switch self {
        case .workout(let id): o[.workout] = .string(id)
        case .preset(let name): o[.preset] = .string(name)
        case .spec(let spec): o[.spec] = spec
        }
    }
}

extension SkipReason {
    func write(into o: inout [String: JSONValue]) {
        o[.reason] = .string(word)
        switch self {
        case .late(let ms), .timerBusy(let ms): o[.lateMs] = .int(ms)
        case .cancelled, .requested: break
        }
    }

    init?(word: String, lateMs: Millis?) {
        switch word {
        case "late": self = .late(ms: lateMs ?? 0)
        case "timer_busy": self = .timerBusy(lateMs: lateMs ?? 0)
        case "cancelled": self = .cancelled
        case "requested": self = .requested
        default: return nil
        }
    }
}

extension ScheduleRecord {
    /// The record as the node stores it (one small document per schedule):
    /// `{"schedule","at_ms","local","zone","outcome","late_ms"?,"reason"?,"decided_at_ms","chain"?,"ended_at_ms"?}`.
    public var json: JSONValue {
        var o: [String: JSONValue] = [:]
        o[.schedule] = .string(schedule)
        o[.atMs] = .int(instant)
        o[.local] = .string(local.description)
        o[.zone] = .string(zone)
        o[.decidedAtMs] = .int(decidedAt)
        switch outcome {
        case .baseline: o[.outcome] = "baseline"
        case .started(let late):
            o[.outcome] = "started"
            o[.lateMs] = .int(late)
        case .skipped(let reason):
            o[.outcome] = "skipped"
            reason.write(into: &o)
        }
        switch chain {
        case nil: break
        case .running: o[.chain] = "running"
        case .ended(let at):
            o[.chain] = "ended"
            o[.endedAtMs] = .int(at)
        }
        return .object(o)
    }

    /// Reads a stored record; nil when it is not one (the node then plans the schedule afresh:
    /// a new baseline, nothing before it starts).
    public init?(json: JSONValue) {
        guard let schedule = json[ScheduleField.schedule.rawValue]?.string,
              let instant = json[ScheduleField.atMs.rawValue]?.int64,
              let localText = json[ScheduleField.local.rawValue]?.string, let local = LocalDateTime.parse(localText),
              let zone = json[ScheduleField.zone.rawValue]?.string,
              let decidedAt = json[ScheduleField.decidedAtMs.rawValue]?.int64,
              let outcomeWord = json[ScheduleField.outcome.rawValue]?.string
        else { return nil }
        let late = json[ScheduleField.lateMs.rawValue]?.int64
        let outcome: Outcome
        switch outcomeWord {
        case "baseline": outcome = .baseline
        case "started": outcome = .started(lateMs: late ?? 0)
        case "skipped":
            guard let word = json[ScheduleField.reason.rawValue]?.string, let reason = SkipReason(word: word, lateMs: late) else { return nil }
            outcome = .skipped(reason)
        default: return nil
        }
        var chain: Chain?
        switch json[ScheduleField.chain.rawValue]?.string {
        case nil: chain = nil
        case "running": chain = .running
        case "ended":
            guard let at = json[ScheduleField.endedAtMs.rawValue]?.int64 else { return nil }
            chain = .ended(at: at)
        default: return nil
        }
        self.init(schedule: schedule, instant: instant, local: local, zone: zone, outcome: outcome, decidedAt: decidedAt, chain: chain)
    }
}

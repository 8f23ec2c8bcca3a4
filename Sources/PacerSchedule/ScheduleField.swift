import PacerCore

/// Every member name of the timetable's documents, in one place: a schedule as configured or
/// saved, the written record, the retained `next` and `current_class` documents and the day's list.
public enum ScheduleField: String, Sendable, CaseIterable {
    // A schedule.
    case id, name, timer, workout, preset, spec, grace, enabled, weekly, dates, loops
    case timeZone = "time_zone"
    case except, days, at, date, from, to, every, after
    // The record.
    case schedule
    case atMs = "at_ms"
    case local, zone, outcome, reason
    case lateMs = "late_ms"
    case decidedAtMs = "decided_at_ms"
    case chain
    case endedAtMs = "ended_at_ms"
    // The next class and the day's list.
    case startsAt = "starts_at"
    case startsAtMs = "starts_at_ms"
    case localDate = "local_date"
    case localTime = "local_time"
    case graceMs = "grace_ms"
    case shifted, cancelled, status, classes
    // The class a schedule started (`current_class`).
    case startedAtMs = "started_at_ms"

    /// The members a schedule document takes.
    public static let ofSchedule: [ScheduleField] = [
        .id, .name, .timer, .workout, .preset, .spec, .timeZone, .grace, .enabled, .weekly, .dates, .loops, .except,
    ]
}

extension Dictionary where Key == String, Value == JSONValue {
    subscript(field: ScheduleField) -> JSONValue? {
        get { self[field.rawValue] }
        set { self[field.rawValue] = newValue }
    }
}

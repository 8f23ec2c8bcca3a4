public import PacerCore

/// A class a schedule started, while its run goes on (docs/schedules.md, "What the node shows").
///
/// The node publishes it, retained, on `<base>/timers/<id>/current_class`, so a display can say
/// "HIIT 45 · started 3 min late", and keeps it beside the schedules' records, written with the
/// class's start, so a restart during the class shows it again. It belongs to one run, the one
/// whose `started_at_ms` it holds: a run that ended, or a timer started again by hand, has no class.
public struct StartedClass: Sendable, Equatable {
    /// The class as planned: its schedule, planned instant and local date and time.
    public var occurrence: Occurrence
    public var name: String
    public var timer: String
    public var workout: ScheduleWorkout
    /// The zone it was planned in.
    public var zone: String
    /// How long after its planned instant it started: 0 on time; more when the node started it
    /// after a restart within its grace, or once its busy timer was free.
    public var lateMs: Millis
    /// When its run started (the timer's `started_at_ms`).
    public var startedAtMs: Millis

    public init(occurrence: Occurrence, name: String, timer: String, workout: ScheduleWorkout, zone: String,
                lateMs: Millis, startedAtMs: Millis) {
        self.occurrence = occurrence
        self.name = name
        self.timer = timer
        self.workout = workout
        self.zone = zone
        self.lateMs = lateMs
        self.startedAtMs = startedAtMs
    }

    /// The class of a decision to start, whose run started at `startedAtMs`; nil for a skip.
    public init?(_ decision: ScheduleDecision, startedAtMs: Millis) {
        guard case .start(let late) = decision.action else { return nil }
        self.init(occurrence: decision.occurrence, name: decision.name, timer: decision.timer, workout: decision.workout,
                  zone: decision.record.zone, lateMs: late, startedAtMs: startedAtMs)
    }

    /// The retained `current_class` document, also its stored form: the `next` document's
    /// members of the class (`timer`, `schedule`, `name`, `starts_at` and `starts_at_ms`, its
    /// planned instant, `local_date`, `local_time`, the workout), `time_zone`, `late_ms` and
    /// `started_at_ms` (`starts_at_ms` + `late_ms`).
    public var json: JSONValue {
        var o = Occurrence.classMembers(occurrence, name: name, timer: timer, workout: workout)
        o[.timeZone] = .string(zone)
        o[.lateMs] = .int(lateMs)
        o[.startedAtMs] = .int(startedAtMs)
        return .object(o)
    }

    /// Reads the stored form back for `schedule` (its workout is the schedule's); nil when it
    /// is not one, or is another schedule's or another timer's.
    public init?(json: JSONValue, schedule: Schedule) {
        guard json[ScheduleField.schedule.rawValue]?.string == schedule.id,
              json[ScheduleField.timer.rawValue]?.string == schedule.timer,
              let instant = json[ScheduleField.startsAtMs.rawValue]?.int64,
              let dateText = json[ScheduleField.localDate.rawValue]?.string, let date = LocalDate.parse(dateText),
              let timeText = json[ScheduleField.localTime.rawValue]?.string, let time = LocalTime.parse(timeText),
              let zone = json[ScheduleField.timeZone.rawValue]?.string,
              let late = json[ScheduleField.lateMs.rawValue]?.int64,
              let started = json[ScheduleField.startedAtMs.rawValue]?.int64
        else { return nil }
        self.init(occurrence: Occurrence(schedule: schedule.id, instant: instant, local: LocalDateTime(date: date, time: time)),
                  name: json[ScheduleField.name.rawValue]?.string ?? schedule.name, timer: schedule.timer,
                  workout: schedule.workout, zone: zone, lateMs: late, startedAtMs: started)
    }
}

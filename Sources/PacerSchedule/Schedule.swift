public import PacerCore

/// A timetable entry: what starts on which timer, and when (docs/schedules.md).
///
/// A schedule's classes come from its rules (weekly times, dated additions, loops), minus its
/// exceptions, in its time zone. Each class is an `Occurrence`; the `SchedulePlanner` decides
/// each one exactly once.
public struct Schedule: Sendable, Equatable {
    /// The schedule's id: a timer id's rules (`[a-z0-9][a-z0-9_-]{0,63}`).
    public var id: String
    /// What people see ("HIIT 45"): 1 to 100 characters.
    public var name: String
    /// The timer the classes start on.
    public var timer: String
    /// What starts.
    public var workout: ScheduleWorkout
    /// The IANA zone the rules' times are in; nil: the node's zone.
    public var timeZone: String?
    /// How late a class may still start (after a restart, or behind a busy timer).
    public var graceMs: Millis
    /// A schedule that is off decides nothing and shows no next class.
    public var enabled: Bool
    public var weekly: [WeeklyRule]
    public var dates: [DatedRule]
    public var loops: [LoopRule]
    public var exceptions: [ScheduleException]

    public init(id: String, name: String, timer: String, workout: ScheduleWorkout, timeZone: String? = nil,
                graceMs: Millis = ScheduleLimits.defaultGraceMs, enabled: Bool = true, weekly: [WeeklyRule] = [],
                dates: [DatedRule] = [], loops: [LoopRule] = [], exceptions: [ScheduleException] = []) {
        self.id = id
        self.name = name
        self.timer = timer
        self.workout = workout
        self.timeZone = timeZone
        self.graceMs = graceMs
        self.enabled = enabled
        self.weekly = weekly
        self.dates = dates
        self.loops = loops
        self.exceptions = exceptions
    }

    /// The loop that restarts after each run ends (`after`), when the schedule has one: then it
    /// is the schedule's only rule.
    public var chain: LoopRule? {
        loops.first { if case .afterEnd = $0.pace { return true } else { return false } }
    }

    /// Whether `occurrence`'s local date and time are cancelled by an exception.
    func isCancelled(_ nominal: LocalDateTime) -> Bool {
        exceptions.contains { $0.cancels(nominal) }
    }
}

/// What a schedule starts on its timer.
public enum ScheduleWorkout: Sendable, Equatable {
    /// A workout saved on the node (`save_workout`), by id.
    case workout(String)
    /// A preset: built in (`tabata`) or the configuration's.
    case preset(String)
    /// A spec, as a timer's `spec` (docs/timer-core.md).
    case spec(JSONValue)

    /// The `spec` of the start command: saved workouts and presets are both named by
    /// `{"preset": id}` (the node looks saved workouts up as presets).
    public var startSpec: JSONValue {
        switch self {
        case .workout(let id), .preset(let id): .object(["preset": .string(id)])
        case .spec(let spec): spec
        }
    }
}

/// Classes on days of the week at local times: `{days: [mon, wed, fri], at: ["06:30", "18:00"]}`.
public struct WeeklyRule: Sendable, Equatable {
    public var days: Set<Weekday>
    public var times: [LocalTime]

    public init(days: Set<Weekday>, times: [LocalTime]) {
        self.days = days
        self.times = times
    }
}

/// Classes on one date, beside the weekly ones: `{date: 2026-12-24, at: ["10:00"]}`.
public struct DatedRule: Sendable, Equatable {
    public var date: LocalDate
    public var times: [LocalTime]

    public init(date: LocalDate, times: [LocalTime]) {
        self.date = date
        self.times = times
    }
}

/// A loop: classes one after another in a daily window, `from` (inclusive) to `to`
/// (exclusive; `to` at or before `from` ends on the next day, `24:00` at the next midnight),
/// on `days` (the day the window opens).
public struct LoopRule: Sendable, Equatable {
    /// How the loop goes on.
    public enum Pace: Sendable, Equatable {
        /// A class every `Millis` of elapsed time from `from`: `{every: 15m}`.
        case every(Millis)
        /// The next class `Millis` after the last one ends: `{after: 1m}`. The first of each
        /// window starts at `from`.
        case afterEnd(Millis)
    }

    public var pace: Pace
    public var from: LocalTime
    public var to: LocalTime
    public var days: Set<Weekday>

    public init(pace: Pace, from: LocalTime = .midnight, to: LocalTime = .endOfDay,
                days: Set<Weekday> = Set(Weekday.allCases)) {
        self.pace = pace
        self.from = from
        self.to = to
        self.days = days
    }

    /// Whether the window ends on the day after it opens.
    var endsNextDay: Bool { to <= from || to == .endOfDay }
}

/// Classes that do not happen: a date (a holiday), a range of dates, or one class (a date and
/// a time, as the rule wrote it: `{date: 2026-12-24, at: "18:00"}`).
public enum ScheduleException: Sendable, Equatable {
    case date(LocalDate)
    /// `from` through `to`, both included.
    case dates(from: LocalDate, to: LocalDate)
    case instance(LocalDateTime)

    func cancels(_ nominal: LocalDateTime) -> Bool {
        switch self {
        case .date(let date): nominal.date == date
        case .dates(let from, let to): nominal.date >= from && nominal.date <= to
        case .instance(let at): nominal == at
        }
    }
}

/// The bounds of the timetable (docs/schedules.md, "Limits").
public enum ScheduleLimits {
    /// Schedules on one node.
    public static let maxSchedules = 100
    /// Rules of one schedule: weekly, dated and loops together.
    public static let maxRules = 64
    /// Times of one weekly or dated rule.
    public static let maxTimesPerRule = 48
    /// Exceptions of one schedule (a year of holidays, and more).
    public static let maxExceptions = 400
    /// The shortest `every` of a loop.
    public static let minEveryMs: Millis = Durations.minuteMs
    /// The shortest and longest `after` of a loop.
    public static let afterRange: ClosedRange<Millis> = 10 * Durations.secondMs...Durations.dayMs
    /// The longest `every` of a loop.
    public static let maxEveryMs: Millis = Durations.dayMs
    /// The grace for late starts: the default and the bounds.
    public static let defaultGraceMs: Millis = 5 * Durations.minuteMs
    public static let graceRange: ClosedRange<Millis> = 2 * Durations.secondMs...12 * Durations.hourMs
}

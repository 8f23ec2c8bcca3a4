public import PacerCore

/// Why a class was not started.
public enum SkipReason: Sendable, Equatable {
    /// Its start was more than the grace ago when the node could decide (after a restart, an
    /// outage, a clock step): how late it was.
    case late(ms: Millis)
    /// Its timer was busy (running, paused, scheduled or expired) until its grace ended.
    case timerBusy(lateMs: Millis)
    /// An exception cancels it (a holiday, a cancelled class).
    case cancelled
    /// Someone skipped it (`skip_next`).
    case requested

    /// The word written for it: `late`, `timer_busy`, `cancelled`, `requested`.
    public var word: String {
        switch self {
        case .late: "late"
        case .timerBusy: "timer_busy"
        case .cancelled: "cancelled"
        case .requested: "requested"
        }
    }
}

/// What the node writes for a schedule, before it acts on a decision: the last class decided
/// (its planned instant, the watermark), how, and a loop's run in progress. One per schedule:
/// every class at or before the watermark is decided, so nothing more is kept.
public struct ScheduleRecord: Sendable, Equatable {
    /// How the last class was decided.
    public enum Outcome: Sendable, Equatable {
        /// No class yet: the instant the node first planned the schedule (nothing before it starts).
        case baseline
        case started(lateMs: Millis)
        case skipped(SkipReason)
    }

    /// A loop that runs again after each end (`after`): its run in progress or its last end.
    public enum Chain: Sendable, Equatable {
        case running
        case ended(at: Millis)
    }

    /// The schedule's id.
    public var schedule: String
    /// The planned instant of the last class decided: every class at or before it is decided.
    public var instant: Millis
    /// That class's local date and time as planned, in `zone`.
    public var local: LocalDateTime
    /// The zone it was planned in: after a change of zone, a class of the new zone whose local
    /// date and time are at or before `local` counts as decided too (the same class, not a new one).
    public var zone: String
    public var outcome: Outcome
    /// When the node decided it.
    public var decidedAt: Millis
    public var chain: Chain?

    public init(schedule: String, instant: Millis, local: LocalDateTime, zone: String, outcome: Outcome,
                decidedAt: Millis, chain: Chain? = nil) {
        self.schedule = schedule
        self.instant = instant
        self.local = local
        self.zone = zone
        self.outcome = outcome
        self.decidedAt = decidedAt
        self.chain = chain
    }

    /// Whether `occurrence` (of this schedule, planned in `zone`) is decided already.
    public func covers(_ occurrence: Occurrence, zone: String) -> Bool {
        occurrence.instant <= instant || (zone != self.zone && occurrence.local <= local)
    }
}

/// A decision about one class: start it now, or skip it. The node writes `record` before it
/// acts (in the same write as the timer's start), so a crash never starts a class twice.
public struct ScheduleDecision: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        /// Start `workout` on the timer now; `lateMs` after the planned instant (0 on time).
        case start(lateMs: Millis)
        case skip(SkipReason)
    }

    public var occurrence: Occurrence
    /// The schedule's name, timer and workout when it was decided.
    public var name: String
    public var timer: String
    public var workout: ScheduleWorkout
    public var action: Action
    /// Earlier classes of the schedule, undecided until now, that this decision passes over
    /// (skipped, late beyond their grace or cancelled, while the node was off or the clock stepped).
    public var alsoSkipped: Int
    public var decidedAt: Millis
    /// What to write before acting.
    public var record: ScheduleRecord
}

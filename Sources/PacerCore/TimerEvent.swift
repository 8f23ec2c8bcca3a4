/// Types of timer events (docs/API.md, "Events"; with `scheduled`, `reset`, `rewound`, `snoozed`,
/// `extended`, `recovered`).
public enum EventType: String, Sendable, CaseIterable {
    /// A run started (`start`, or a scheduled start falling due). Carries the first segment.
    case started
    /// The running timer entered the next segment by itself (or a stopwatch its overtime).
    case phase
    /// `cue` seconds before a timed segment ends.
    case countdown
    /// Half of a work or countdown segment is done.
    case halfway
    case paused
    case resumed
    /// `adjust`: `seconds` added (negative: removed).
    case adjusted
    /// `skip`: carries the segment now current.
    case skipped
    /// The last segment ended on a timer with `ack`.
    case expired
    /// Repeats every alert interval while expired.
    case alert
    /// `ack` of an expired timer (followed by `finished`).
    case acknowledged
    /// The run is over; `reason` says why, `finished_at` when.
    case finished
    case cancelled
    /// `start` with a future `start_at`.
    case scheduled
    /// `reset` (or `toggle` on a scheduled timer): back to idle.
    case reset
    /// `back`: carries the segment now current, restarted.
    case rewound
    /// `snooze`: `seconds` of extra time after expiry.
    case snoozed
    /// `extend`: `seconds` added to the current segment and/or the run's `rounds` now.
    case extended
    /// A rest that ends on recovery recovered (`TimerMachine.recovered(at:now:)`): carries the
    /// rest's segment. From its `min` on, the `phase` of the next segment follows at the same
    /// instant; before it, at the rest's `min`.
    case recovered
}

/// Something that happened to a timer, with the instant it was due. Its document (the `event`
/// topic's payload) is written and read by PacerProtocol (`TimerEvent.json`, `TimerEvent(event:)`).
public struct TimerEvent: Sendable, Equatable {
    public var type: EventType
    /// The timer id.
    public var timer: String
    /// The timer's revision after the event.
    public var revision: Int
    /// When it was due (displays schedule beeps on this).
    public var dueMs: Millis
    /// When the node emitted it.
    public var atMs: Millis
    public var phase: Phase?
    public var label: String?
    /// The exercise that comes next (`next_label`): on the events a person acts on (`started`,
    /// `phase`, `expired`, `finished`, ...), not on cues.
    public var nextLabel: String?
    public var round: Int?
    public var set: Int?
    /// Seconds left, for `countdown`.
    public var cue: Int?
    /// How late the event is, when more than the lag window (a restore after downtime).
    public var lateMs: Millis?
    /// For `finished`: when the run finished.
    public var finishedAtMs: Millis?
    /// For `adjusted`, `snoozed` and `extended`.
    public var seconds: Int?
    /// For `extended`: the run's rounds after more were added.
    public var rounds: Int?
    /// For `finished`.
    public var reason: FinishReason?
    /// For `scheduled`: when the timer will start.
    public var startAtMs: Millis?

    public init(
        type: EventType, timer: String, revision: Int, dueMs: Millis, atMs: Millis,
        phase: Phase? = nil, label: String? = nil, round: Int? = nil, set: Int? = nil, cue: Int? = nil,
        lateMs: Millis? = nil, finishedAtMs: Millis? = nil, seconds: Int? = nil, reason: FinishReason? = nil,
        startAtMs: Millis? = nil, nextLabel: String? = nil, rounds: Int? = nil
    ) {
        self.type = type
        self.timer = timer
        self.revision = revision
        self.dueMs = dueMs
        self.atMs = atMs
        self.phase = phase
        self.label = label
        self.round = round
        self.set = set
        self.cue = cue
        self.lateMs = lateMs
        self.finishedAtMs = finishedAtMs
        self.seconds = seconds
        self.reason = reason
        self.startAtMs = startAtMs
        self.nextLabel = nextLabel
        self.rounds = rounds
    }

    /// Whether this event type is a cue (a beep that is worthless when late):
    /// `countdown`, `halfway`, `alert`.
    public var isCue: Bool {
        switch type {
        case .countdown, .halfway, .alert: true
        case .started, .phase, .paused, .resumed, .adjusted, .skipped, .expired, .acknowledged, .finished,
             .cancelled, .scheduled, .reset, .rewound, .snoozed, .extended, .recovered: false
        }
    }

    /// Whether this event is an outcome that must never be published twice, even across a crash:
    /// `expired` and `finished` (docs/architecture.md, "Durability and restore"), and `recovered`,
    /// whose instant came from heart rate and cannot be recomputed. The node writes it before
    /// publishing it; other events that time brings (`phase`, a scheduled `started`) follow from
    /// the timing model and are recomputed after a restart instead.
    public var isOutcome: Bool {
        switch type {
        case .expired, .finished, .recovered: true
        case .started, .phase, .countdown, .halfway, .paused, .resumed, .adjusted, .skipped, .alert, .acknowledged,
             .cancelled, .scheduled, .reset, .rewound, .snoozed, .extended: false
        }
    }

    /// The late-event rule applied to everything `advance(to:)` and `handle` return.
    ///
    /// An event is stale when `now - dueMs > lagWindowMs`. Stale cues (`countdown`,
    /// `halfway`, `alert`) are dropped; stale `phase` events are collapsed into the
    /// latest stale one; every other stale event (`started`, `expired`, `finished`, ...)
    /// is kept. Kept stale events get `lateMs = now - dueMs`. Every event gets `atMs = now`.
    public static func collapsingStale(_ events: [TimerEvent], now: Millis, lagWindowMs: Millis) -> [TimerEvent] {
        func isStale(_ event: TimerEvent) -> Bool { now.saturatingAdd(-event.dueMs) > lagWindowMs }
        let lastStalePhase = events.lastIndex { $0.type == .phase && isStale($0) }
        var out: [TimerEvent] = []
        out.reserveCapacity(events.count)
        for (index, var event) in events.enumerated() {
            event.atMs = now
            if isStale(event) {
                if event.isCue { continue }
                if event.type == .phase && index != lastStalePhase { continue }
                event.lateMs = now - event.dueMs
            } else {
                event.lateMs = nil
            }
            out.append(event)
        }
        return out
    }
}

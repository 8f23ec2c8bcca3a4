/// The state of a timer at one instant: every field of the state snapshot (docs/API.md), plus the
/// plain values of the `remaining` and `display` topics. Its document (the retained `state`) is
/// written by PacerProtocol (`TimerSnapshot.jsonBytes`), which spells the wire's member names.
///
/// `segment` is 1-based (`segment` of `segments`). Idle and scheduled timers show their
/// first segment at full length.
public struct TimerSnapshot: Sendable, Equatable {
    public var id: String
    public var name: String
    public var kind: TimerKind
    public var status: TimerStatus
    public var phase: Phase
    /// The current segment's label (exercise).
    public var label: String?
    /// The next labelled segment's label (next exercise).
    public var nextLabel: String?
    public var round: Int
    public var rounds: Int
    public var set: Int
    public var sets: Int
    /// 1-based index of the current segment.
    public var segment: Int
    public var segments: Int
    /// Duration of the current segment including adjustments; nil when open-ended.
    public var segmentDurationMs: Millis?
    /// Time left in the current segment; nil when open-ended. 0 when expired or finished.
    public var remainingMs: Millis?
    /// Running time since the start, pauses excluded.
    public var elapsedMs: Millis
    /// Time spent in the current segment (pauses excluded).
    public var segmentElapsedMs: Millis
    /// Time left in the whole program; nil when any remaining segment is open-ended.
    public var totalRemainingMs: Millis?
    /// Progress through the current segment, 0...1 (0 when open-ended).
    public var progress: Double
    /// Progress through the whole program, 0...1 (nil when open-ended).
    public var totalProgress: Double?
    /// When the current segment ends; only while running a timed segment.
    public var endsAtMs: Millis?
    /// When the current segment (virtually) started, pauses excluded; only while running.
    /// A display counting up (a stopwatch) counts from here.
    public var segmentStartedAtMs: Millis?
    /// When the run started; nil when idle or scheduled.
    public var startedAtMs: Millis?
    /// When a scheduled timer will start.
    public var startAtMs: Millis?
    public var revision: Int
    /// The instant the snapshot describes.
    public var asOfMs: Millis
    /// Whole seconds left in the segment, rounded up; a stopwatch (or an open-ended
    /// segment): whole seconds elapsed, rounded down. The `remaining` topic.
    public var remainingSeconds: Int64
    /// `remainingSeconds` as clock text: `0:42`, `12:05`, `1:02:03`. The `display` topic.
    public var display: String
    /// A stopwatch past its target.
    public var overtime: Bool
    /// The display counts up (stopwatch or open-ended segment).
    public var countsUp: Bool
    /// The preset the timer's spec came from.
    public var preset: String?
    /// Heart rate (bpm), filled by the node; nil when unknown or stale.
    public var hr: Int?
    public var hrAgeMs: Millis?
    /// Heart-rate zone 1...5, filled by the node.
    public var hrZone: Int?
    /// Whether the end of the last segment expires and waits for an acknowledgement
    /// (its spec's `ack`; never for a stopwatch), rather than finishing.
    public var ack: Bool = false
    /// The phase of the segment that follows the current one when it ends by itself; nil
    /// on the last segment (then the end expires or finishes, see `ack`), in overtime, in a
    /// snooze, and once the run is over (expired, finished, cancelled).
    public var nextPhase: Phase?
    /// The rule of the current segment when it is a rest that ends on recovery (`until_hr`):
    /// while it runs or is paused, and for an idle or scheduled timer whose first segment is one.
    public var untilHR: RecoveryRule?
    /// While such a rest waits for recovery: the longest it lasts (its max with adjustments; the
    /// segment is timed by it, so `ends_at` is its end), and the shortest, from the segment's
    /// start, pauses excluded.
    public var restMaxMs: Millis?
    public var restMinMs: Millis?
    /// When such a rest recovered; its `ends_at` is then its real end (that instant, or the
    /// rest's min when it recovered before).
    public var recoveredAtMs: Millis?
}

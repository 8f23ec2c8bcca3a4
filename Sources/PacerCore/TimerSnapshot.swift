/// The state of a timer at one instant: every field of the state snapshot (docs/API.md), plus the
/// plain values of the `remaining` and `display` topics.
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

    /// The retained state as a value, read back from ``jsonBytes`` (the one writer): for
    /// tests and cold paths; the node publishes the bytes.
    public var json: JSONValue { (try? JSONValue.parse(jsonBytes)) ?? .null }
}

extension TimerSnapshot {
    /// The retained state payload (the one writer of a snapshot): snake_case keys of docs/API.md
    /// in sorted order, compact. `ends_at` (ISO 8601 UTC with ms) and `ends_at_ms` are absent
    /// when not running; nullable fields are present as null. Written member by member
    /// without building an object (a restart republishes every state).
    public var jsonBytes: [UInt8] {
        var w = JSONObjectWriter(capacity: 768)
        w.object { w in
            w.bool("ack", ack)
            w.number("as_of_ms", asOfMs)
            w.bool("counts_up", countsUp)
            w.string("display", display)
            w.number("elapsed_ms", elapsedMs)
            if let endsAtMs {
                w.string("ends_at", iso8601(ms: endsAtMs))
                w.number("ends_at_ms", endsAtMs)
            }
            w.number("hr", hr.map(Int64.init))
            w.number("hr_age_ms", hrAgeMs)
            w.number("hr_zone", hrZone.map(Int64.init))
            w.string("id", id)
            w.string("kind", kind.rawValue)
            w.nullable("label", label)
            w.string("name", name)
            w.nullable("next_label", nextLabel)
            if let nextPhase { w.string("next_phase", nextPhase.rawValue) }
            w.bool("overtime", overtime)
            w.string("phase", phase.rawValue)
            w.nullable("preset", preset)
            w.number("progress", progress)
            w.number("remaining", remainingSeconds)
            w.number("remaining_ms", remainingMs)
            w.number("revision", Int64(revision))
            w.number("round", Int64(round))
            w.number("rounds", Int64(rounds))
            w.number("segment", Int64(segment))
            w.number("segment_duration_ms", segmentDurationMs)
            w.number("segment_elapsed_ms", segmentElapsedMs)
            if let segmentStartedAtMs { w.number("segment_started_at_ms", segmentStartedAtMs) }
            w.number("segments", Int64(segments))
            w.number("set", Int64(set))
            w.number("sets", Int64(sets))
            if let startAtMs {
                w.string("start_at", iso8601(ms: startAtMs))
                w.number("start_at_ms", startAtMs)
            }
            w.number("started_at_ms", startedAtMs)
            w.string("status", status.rawValue)
            w.number("total_progress", totalProgress)
            w.number("total_remaining_ms", totalRemainingMs)
        }
        return w.out
    }
}

public import PacerCore

/// A timer's retained `state` as a client reads it: the fields a clock needs, and the one
/// counting rule every client follows (`pacer watch`, the web page's `clock.js`, checked
/// against the same examples in Tests/Fixtures/protocol/states.json).
///
/// A running timer is counted locally from `ends_at_ms` (or, counting up, from
/// `segment_started_at_ms`) at the offset-corrected now, exactly as the node counts: the
/// shown second is rounded up when counting down and down when counting up, so it flips
/// on the same millisecond as the node's `remaining` topic. Both fields are instants that
/// the node republishes after a wall-clock jump.
public struct TimerState: Sendable, Equatable {
    public var id: String
    public var name: String
    /// Nil when the node names a kind this client does not know.
    public var kind: TimerKind?
    public var status: TimerStatus
    public var phase: Phase
    public var label: String?
    public var nextLabel: String?
    public var round: Int
    public var rounds: Int
    public var set: Int
    public var sets: Int
    public var endsAtMs: Millis?
    public var segmentStartedAtMs: Millis?
    public var segmentDurationMs: Millis?
    /// When a scheduled timer starts (`start_at_ms`).
    public var startAtMs: Millis?
    /// Left in the current segment when the snapshot was taken (`remaining_ms`; nil when
    /// open-ended).
    public var remainingMs: Millis?
    /// The node's `remaining` (whole seconds) when the snapshot was taken.
    public var remainingSeconds: Int64
    /// The node's `display` (`0:42`) when the snapshot was taken.
    public var display: String
    public var countsUp: Bool
    public var progress: Double
    public var hr: Int?
    public var hrZone: Int?
    public var revision: Int
    /// In a rest that ends on recovery (`until_hr`): its rule; nil in any other segment, or when
    /// this client cannot read it.
    public var untilHR: RecoveryRule?
    /// While that rest waits for recovery: the longest and shortest it lasts (`rest_max_ms`,
    /// `rest_min_ms`); `ends_at_ms` is then the end of its longest.
    public var restMaxMs: Millis?
    public var restMinMs: Millis?
    /// When that rest recovered (`recovered_at_ms`); `ends_at_ms` is then its real end.
    public var recoveredAtMs: Millis?

    /// Reads a `state` snapshot (or a `list` reply's entry, which is a summary of one); nil
    /// when it is not one (an empty payload of a deleted timer, or a status this client does
    /// not know).
    public init?(state: JSONValue) {
        guard let id = state[.id]?.string, let status = state[.status]?.string.flatMap(TimerStatus.init(rawValue:)) else { return nil }
        self.id = id
        name = state[.name]?.string ?? id
        kind = state[.kind]?.string.flatMap(TimerKind.init(rawValue:))
        self.status = status
        phase = state[.phase]?.string.flatMap(Phase.init(rawValue:)) ?? Phase(rawValue: status.rawValue) ?? .idle
        label = state[.label]?.string
        nextLabel = state[.nextLabel]?.string
        round = state[.round]?.int ?? 1
        rounds = state[.rounds]?.int ?? 1
        set = state[.set]?.int ?? 1
        sets = state[.sets]?.int ?? 1
        endsAtMs = state[.endsAtMs]?.int64
        segmentStartedAtMs = state[.segmentStartedAtMs]?.int64
        segmentDurationMs = state[.segmentDurationMs]?.int64
        startAtMs = state[.startAtMs]?.int64
        remainingMs = state[.remainingMs]?.int64
        remainingSeconds = state[.remaining]?.int64 ?? 0
        display = state[.display]?.string ?? Durations.display(seconds: remainingSeconds)
        countsUp = state[.countsUp]?.bool ?? false
        progress = state[.progress]?.double ?? 0
        hr = state[.hr]?.int
        hrZone = state[.hrZone]?.int
        revision = state[.revision]?.int ?? 0
        untilHR = state[.untilHR].flatMap { try? RecoveryRule(json: .object([RecoveryRule.key: $0]), field: WireField.untilHR.rawValue) }
        restMaxMs = state[.restMaxMs]?.int64
        restMinMs = state[.restMinMs]?.int64
        recoveredAtMs = state[.recoveredAtMs]?.int64
    }

    /// Whether the current rest waits for recovery: a display says "until recovered" and shows
    /// the time to its longest (`≤ 1:30`) rather than a plain countdown.
    public var waitsForRecovery: Bool {
        untilHR != nil && recoveredAtMs == nil && (status == .running || status == .paused)
    }

    /// Whether the clock counts at this moment (else it shows the snapshot's value).
    public var isCounting: Bool {
        status == .running && (countsUp ? segmentStartedAtMs != nil : endsAtMs != nil)
    }

    /// The whole seconds to show at node time `nowMs`: left (rounded up) or elapsed
    /// (rounded down, counting up).
    public func shownSeconds(at nowMs: Millis) -> Int64 {
        if status == .scheduled, let start = startAtMs { return Durations.ceilSeconds(start - nowMs) }
        guard status == .running else { return remainingSeconds }
        if countsUp {
            // Counting up needs the segment's start; without it the snapshot's value stands
            // (never a countdown to a stopwatch's target).
            guard let start = segmentStartedAtMs else { return remainingSeconds }
            return Durations.floorSeconds(max(0, nowMs - start))
        }
        if let ends = endsAtMs {
            return Durations.ceilSeconds(ends - nowMs)
        }
        return remainingSeconds
    }

    /// The clock text at node time `nowMs`: `0:42`, `12:05`, `1:02:03`.
    public func display(at nowMs: Millis) -> String {
        Durations.display(seconds: shownSeconds(at: nowMs))
    }

    /// Progress through the current segment (0…1) at node time `nowMs`.
    public func progress(at nowMs: Millis) -> Double {
        guard status == .running, let duration = segmentDurationMs, duration > 0 else { return progress }
        if let ends = endsAtMs, !countsUp {
            return min(1, max(0, 1 - Double(ends - nowMs) / Double(duration)))
        }
        if let start = segmentStartedAtMs {
            return min(1, max(0, Double(nowMs - start) / Double(duration)))
        }
        return progress
    }

    /// The node time at which the shown value next changes (after `nowMs`); nil when it
    /// will not change by itself (not counting, or a countdown at zero waiting for the
    /// node's next state).
    public func nextFlip(after nowMs: Millis) -> Millis? {
        if status == .scheduled, let start = startAtMs { return Self.countdownFlip(ends: start, now: nowMs) }
        guard status == .running else { return nil }
        if countsUp {
            guard let start = segmentStartedAtMs else { return nil }
            // Before its start (a clock offset's error) it shows 0 until a second after it.
            let elapsed = max(0, nowMs - start)
            return start + (elapsed / 1000 + 1) * 1000
        }
        guard let ends = endsAtMs else { return nil }
        return Self.countdownFlip(ends: ends, now: nowMs)
    }

    /// When a countdown to `ends` next changes its shown second after `now` (nil at zero).
    static func countdownFlip(ends: Millis, now: Millis) -> Millis? {
        let left = ends - now
        guard left > 0 else { return nil }
        // Shown: ceil(left / 1000); it drops when `left` reaches the next lower multiple of 1000.
        return ends - ((left - 1) / 1000) * 1000
    }
}

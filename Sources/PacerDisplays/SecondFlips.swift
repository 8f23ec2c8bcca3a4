public import PacerCore

/// When the second a timer shows changes: the instants the node flips its `display` topic
/// (aligned to the segment's end when counting down, to its start when counting up, to the
/// start instant while scheduled), computed from a snapshot so a display flips with the
/// node's own clock rather than a timer of its own.
public enum SecondFlips {
    /// The first instant after `now` at which the shown second changes; nil when it will not
    /// change by itself (idle, paused, expired, over, or a countdown at zero).
    public static func next(_ snapshot: TimerSnapshot, after now: Millis) -> Millis? {
        switch snapshot.status {
        case .scheduled:
            guard let start = snapshot.startAtMs else { return nil }
            return countdownFlip(ends: start, now: now)
        case .running:
            if snapshot.countsUp {
                guard let start = snapshot.segmentStartedAtMs else { return nil }
                let elapsed = max(0, now - start)
                return start + (elapsed / 1000 + 1) * 1000
            }
            guard let ends = snapshot.endsAtMs else { return nil }
            return countdownFlip(ends: ends, now: now)
        case .idle, .paused, .expired, .finished, .cancelled:
            return nil
        }
    }

    /// When a countdown to `ends` next changes its shown (rounded-up) second after `now`.
    public static func countdownFlip(ends: Millis, now: Millis) -> Millis? {
        let left = ends - now
        guard left > 0 else { return nil }
        return ends - ((left - 1) / 1000) * 1000
    }

    /// The seconds a scheduled timer shows before its start: rounded up, like a countdown.
    static func secondsUntilStart(_ snapshot: TimerSnapshot, now: Millis) -> Int64 {
        guard let start = snapshot.startAtMs else { return 0 }
        return Durations.ceilSeconds(max(0, start - now))
    }
}

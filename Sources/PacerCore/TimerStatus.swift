/// Where a timer is in its life.
public enum TimerStatus: String, Sendable, CaseIterable {
    /// Created (or reset); not started.
    case idle
    /// Will start at a future instant (`start_at`).
    case scheduled
    /// Counting (including a stopwatch in overtime and a snooze).
    case running
    case paused
    /// Reached zero and waits for an acknowledgement (`ack`), raising `alert`s.
    case expired
    case finished
    case cancelled
}

/// What the displays show: the running segment's kind, or the status when not running.
public enum Phase: String, Sendable, CaseIterable {
    case idle, scheduled, prepare, work, rest, setRest = "set_rest", cooldown, countdown, session, overtime, paused, expired, finished, cancelled
}

/// Why a run finished (the `reason` of a `finished` event).
public enum FinishReason: String, Sendable, CaseIterable {
    /// The last segment ended (a timer without `ack`).
    case completed
    /// An expired timer was acknowledged.
    case acknowledged
    /// An expired timer was not acknowledged within `auto_dismiss`.
    case autoDismissed = "auto_dismissed"
    /// The `finish` command.
    case finished
    /// `skip` on the last segment.
    case skipped
}

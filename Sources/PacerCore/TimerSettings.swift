/// Node-wide timer defaults; a spec may override `cues`, `alert_interval` and `auto_dismiss`.
public struct TimerSettings: Sendable, Equatable {
    /// How far in the past a command's `at` may take effect, and how old an event may be
    /// and still be emitted as a cue (default 2 s).
    public var lagWindowMs: Millis
    /// Seconds before the end of each timed segment at which `countdown` cues are raised.
    public var cues: [Int]
    /// Interval of `alert` events while expired (default 10 s).
    public var alertIntervalMs: Millis
    /// An expired timer finishes by itself after this long (default 5 min).
    public var autoDismissMs: Millis
    /// `back` within this long after a segment started goes to the previous segment (3 s).
    public var backWindowMs: Millis
    /// Work and countdown segments at least this long raise `halfway` (default 10 s).
    public var halfwayMinimumMs: Millis

    public init(
        lagWindowMs: Millis = 2_000,
        cues: [Int] = [3, 2, 1],
        alertIntervalMs: Millis = 10_000,
        autoDismissMs: Millis = 300_000,
        backWindowMs: Millis = 3_000,
        halfwayMinimumMs: Millis = 10_000
    ) {
        self.lagWindowMs = lagWindowMs
        self.cues = cues
        self.alertIntervalMs = alertIntervalMs
        self.autoDismissMs = autoDismissMs
        self.backWindowMs = backWindowMs
        self.halfwayMinimumMs = halfwayMinimumMs
    }

    /// Checks the limits (the node calls this on its configuration).
    /// - Throws: `SpecError` naming the setting.
    public func validate() throws(SpecError) {
        if lagWindowMs < 0 || lagWindowMs > 60_000 { throw .durationRange("lag_window", lagWindowMs, 0...60_000) }
        try TimerSettings.validateCues(cues, field: "cues")
        try TimerSettings.validateAlertInterval(alertIntervalMs, field: "alert_interval")
        try TimerSettings.validateAutoDismiss(autoDismissMs, field: "auto_dismiss")
        if backWindowMs < 0 || backWindowMs > 60_000 { throw .durationRange("back_window", backWindowMs, 0...60_000) }
        if halfwayMinimumMs < 1000 || halfwayMinimumMs > Durations.maxMs {
            throw .durationRange("halfway_minimum", halfwayMinimumMs, 1000...Durations.maxMs)
        }
    }

    static func validateCues(_ cues: [Int], field: String) throws(SpecError) {
        if cues.count > 10 {
            throw SpecError(field: field, message: "\(field) must have at most 10 entries, got \(cues.count)")
        }
        for (index, cue) in cues.enumerated() where cue < 1 || cue > 3600 {
            throw .countRange("\(field)[\(index)]", cue, 1...3600)
        }
        if Set(cues).count != cues.count {
            throw SpecError(field: field, message: "\(field) must not repeat a value, got \(cues)")
        }
    }

    static func validateAlertInterval(_ value: Millis, field: String) throws(SpecError) {
        if value < 1000 || value > Durations.hourMs { throw .durationRange(field, value, 1000...Durations.hourMs) }
    }

    static func validateAutoDismiss(_ value: Millis, field: String) throws(SpecError) {
        if value < 1000 || value > Durations.maxMs { throw .durationRange(field, value, 1000...Durations.maxMs) }
    }
}

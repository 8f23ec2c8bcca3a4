public import PacerCore

/// The bounds of the wire that more than one side checks: the node refuses a command beyond
/// them, the control commands check them before sending, and docs/API.md states them.
public enum ProtocolLimits {
    /// The longest request `id`, in characters.
    public static let maxRequestIDLength = 128
    /// The longest timer `name`, in characters (the core's own rule).
    public static let maxNameLength = 100
    /// The default of `limits.max_payload_bytes`: the largest command the node reads.
    public static let defaultMaxPayloadBytes = 65_536
    /// The latest instant a command may name (`at`, `start_at`, `since`): 2100-01-01T00:00:00Z.
    public static let latestInstantMs: Millis = 4_102_444_800_000
    /// The largest `if_revision`.
    public static let maxIfRevision: Int64 = Int64(Int32.max)
    /// How many runs `history` returns at most, and by default.
    public static let historyLimit: ClosedRange<Int64> = 1...1000
    public static let defaultHistoryLimit = 100
    /// `adjust` takes ±1 s to ±this many seconds (a day).
    public static let maxAdjustSeconds = TimerOperation.maxAdjustSeconds
    /// `snooze` takes 1 s to this many seconds (a day); without `seconds` it is `defaultSnoozeSeconds`.
    public static let maxSnoozeSeconds = TimerOperation.maxSnoozeSeconds
    public static let defaultSnoozeSeconds = TimerOperation.defaultSnoozeSeconds
    /// How many saved workouts a node keeps.
    public static let maxWorkouts = 200
    /// How many displays a node keeps saved by command (`save_display`; the configuration's besides).
    public static let maxSavedDisplays = 50
    /// How many athletes a class holds at once (a reading from one more is ignored and logged).
    public static let maxAthletes = 100
    /// How many athlete profiles (name, colour, max HR) a node keeps.
    public static let maxAthleteProfiles = 500
    /// A class summary breaks down at most this many segments of a run (later ones count in
    /// the athlete's totals and chart only).
    public static let maxClassSegments = 100
    /// The most points of each athlete's heart-rate series in a class summary.
    public static let maxClassSeriesPoints = 360
}

/// The kinds of timer (docs/timer-core.md, "Specs").
public enum TimerKind: String, Sendable, CaseIterable {
    case interval, rest, countdown, stopwatch, program
}

/// What a timer does, before compilation into a `Program`.
///
/// Built from command/config JSON with `init(json:presets:)` (validated there), or in code
/// with the static factories (validated by `compile()`). Fields that do not apply to
/// `kind` are nil. Durations are in ms.
public struct TimerSpec: Sendable, Equatable {
    public var kind: TimerKind

    // interval
    public var workMs: Millis?
    /// Rest after each work (default 0 s).
    public var restMs: Millis?
    /// Default 1.
    public var rounds: Int?
    /// interval: its rests end on recovery (`"rest": {"until_hr": {...}}`), `restMs` nil.
    /// rest: its rest ends on recovery (`"duration": {"until_hr": {...}}`), `durationMs` nil.
    public var restUntilHR: RecoveryRule?
    public var prepareMs: Millis?
    /// Default 1.
    public var sets: Int?
    /// Rest between sets; replaces the rest after the last work of each set but the last.
    public var setRestMs: Millis?
    /// Stations per round; each runs work then rest.
    public var exercises: [String]?
    public var cooldownMs: Millis?
    /// No rest after the very last work (default true: "unless asked").
    public var skipLastRest: Bool

    // rest and countdown
    /// rest: default 90 s; countdown: required.
    public var durationMs: Millis?
    /// rest: the exercise rested from (the label).
    public var exercise: String?
    /// rest: the exercise that comes next (`next_label`).
    public var next: String?
    /// countdown and stopwatch: a label.
    public var label: String?

    // stopwatch
    /// Optional target: past it the stopwatch is in overtime.
    public var targetMs: Millis?

    // program
    public var segments: [Segment]?

    // every kind
    /// Wait for an acknowledgement at zero (`expired`, alerts) instead of finishing.
    /// Default true for rest, false otherwise; never for a stopwatch.
    public var ack: Bool
    /// What an acknowledgement (or an auto-dismiss) leaves: the run finished (nil, the
    /// default), or the timer back to ready at its full duration (`.ready`: a gym rest timer's
    /// Dismiss). Only with `ack`.
    public var afterAck: AfterAck?
    /// Heart-rate source the timer is bound to (the node's default when nil).
    public var hrSource: String?
    /// Record the class's heart rate per phase while it runs (`class_hr`); nil: off.
    /// Only `true` is kept (`false` reads as nil), so a spec's JSON round-trips.
    public var classHR: Bool?
    /// Per-timer override of `TimerSettings.alertIntervalMs`.
    public var alertIntervalMs: Millis?
    /// Per-timer override of `TimerSettings.autoDismissMs`.
    public var autoDismissMs: Millis?
    /// Per-timer override of `TimerSettings.cues` (seconds before a segment ends).
    public var cues: [Int]?
    /// Name of the preset this spec was expanded from.
    public var preset: String?

    /// An empty spec of `kind` with that kind's defaults.
    public init(kind: TimerKind) {
        self.kind = kind
        self.skipLastRest = true
        self.ack = kind == .rest
        if kind == .rest { durationMs = 90_000 }
    }

    /// Interval (circuit) timer: work/rest × rounds, with optional prepare, sets, set
    /// rest, stations and cooldown.
    public static func interval(
        workMs: Millis, restMs: Millis = 0, rounds: Int = 1, prepareMs: Millis? = nil, sets: Int? = nil,
        setRestMs: Millis? = nil, exercises: [String]? = nil, cooldownMs: Millis? = nil, skipLastRest: Bool = true,
        ack: Bool = false, restUntilHR: RecoveryRule? = nil
    ) -> TimerSpec {
        var spec = TimerSpec(kind: .interval)
        spec.workMs = workMs
        spec.restMs = restUntilHR == nil ? restMs : nil
        spec.restUntilHR = restUntilHR
        spec.rounds = rounds
        spec.prepareMs = prepareMs
        spec.sets = sets
        spec.setRestMs = setRestMs
        spec.exercises = exercises
        spec.cooldownMs = cooldownMs
        spec.skipLastRest = skipLastRest
        spec.ack = ack
        return spec
    }

    /// Gym rest timer (acknowledged by default); with `untilHR`, it ends on recovery.
    public static func rest(
        durationMs: Millis = 90_000, exercise: String? = nil, next: String? = nil, ack: Bool = true, untilHR: RecoveryRule? = nil
    ) -> TimerSpec {
        var spec = TimerSpec(kind: .rest)
        spec.durationMs = untilHR == nil ? durationMs : nil
        spec.restUntilHR = untilHR
        spec.exercise = exercise
        spec.next = next
        spec.ack = ack
        return spec
    }

    /// Kitchen-style countdown.
    public static func countdown(durationMs: Millis, label: String? = nil, ack: Bool = false) -> TimerSpec {
        var spec = TimerSpec(kind: .countdown)
        spec.durationMs = durationMs
        spec.label = label
        spec.ack = ack
        return spec
    }

    /// Stopwatch, with an optional target after which it is in overtime.
    public static func stopwatch(targetMs: Millis? = nil, label: String? = nil) -> TimerSpec {
        var spec = TimerSpec(kind: .stopwatch)
        spec.targetMs = targetMs
        spec.label = label
        return spec
    }

    /// Explicit segments.
    public static func program(_ segments: [Segment], ack: Bool = false) -> TimerSpec {
        var spec = TimerSpec(kind: .program)
        spec.segments = segments
        spec.ack = ack
        return spec
    }
}

extension TimerSpec {
    /// Whether any rest of this spec ends on recovery (`until_hr`).
    public var hasRecoveryRest: Bool {
        restUntilHR != nil || (segments?.contains { $0.untilHR != nil } ?? false)
    }
}

/// What an acknowledged timer does (`after_ack`).
public enum AfterAck: String, Sendable, CaseIterable {
    /// The run is over: `finished`.
    case finish
    /// Back to `idle`, ready to start again at its full duration.
    case ready
}

/// The built-in presets (docs/timer-core.md, "Presets"). Each is a spec in JSON;
/// `{"preset": name, ...}` merges the other keys over it.
///
/// - `tabata`: interval, 10 s prepare, 8 × 20 s work / 10 s rest.
/// - `emom`: interval, 10 s prepare, 10 × 60 s work (`rounds` = minutes).
/// - `amrap`: interval, 10 s prepare, one 20 min work block (`duration` is an alias of `work`).
/// - `for_time`: stopwatch with a 20 min cap as its target (`cap` and `duration` are
///   aliases of `target`).
///
/// User presets (config) are JSON specs by name and take precedence over built-ins of the
/// same name; a preset may not itself refer to a preset.
public enum Presets {
    public static let builtInNames: [String] = ["tabata", "emom", "amrap", "for_time"]

    /// The built-in preset specs.
    public static let builtIn: [String: JSONValue] = [
        "tabata": ["kind": "interval", "prepare": "10s", "work": "20s", "rest": "10s", "rounds": 8],
        "emom": ["kind": "interval", "prepare": "10s", "work": "60s", "rest": "0s", "rounds": 10],
        "amrap": ["kind": "interval", "prepare": "10s", "work": "20m", "rounds": 1],
        "for_time": ["kind": "stopwatch", "target": "20m"],
    ]

    /// Keys accepted by a built-in preset as another name of a spec key.
    static let aliases: [String: [String: String]] = [
        "amrap": ["duration": "work"],
        "for_time": ["cap": "target", "duration": "target"],
    ]
}

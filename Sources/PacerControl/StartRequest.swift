public import PacerCore
import PacerProtocol

/// What `pacer start TIMER` was asked for, as given on the command line (durations as text).
///
/// The kind follows from the flags:
/// - `--preset NAME`: a preset (built-in or from the node's configuration); interval flags
///   given with it override the preset's values (`--preset emom --rounds 12`);
/// - `--work` (with `--rest`, `--rounds`, `--sets`, `--set-rest`, `--prepare`, `--cooldown`,
///   `--exercise`…): an interval timer;
/// - `--countdown DURATION`: a countdown;
/// - `--stopwatch` (with an optional `--target`): a stopwatch;
/// - `--rest DURATION` alone (with an optional `--exercise` and `--next`): a rest timer;
/// - nothing: start the timer's current spec again.
public struct StartRequest: Sendable, Equatable {
    public var preset: String?
    public var work: String?
    public var rest: String?
    public var rounds: Int?
    public var sets: Int?
    public var setRest: String?
    public var prepare: String?
    public var cooldown: String?
    public var exercises: [String] = []
    /// The exercise after a rest timer (`next`).
    public var next: String?
    public var countdown: String?
    public var stopwatch = false
    public var target: String?
    /// A label for a countdown or stopwatch.
    public var label: String?
    /// The timer's name (when it is created).
    public var name: String?
    /// Restart a running or paused timer.
    public var restart = false
    /// Start later: epoch milliseconds or ISO 8601, passed to the node as `start_at`.
    public var startAt: String?

    public init() {}

    /// The `start` command for `timer`, checked with PacerCore's parsers and spec rules so
    /// that bad input fails here with a message naming the flag, and nothing is sent.
    ///
    /// - Parameter presets: the presets of the local configuration (the same file the node
    ///   reads, if shared); a preset found neither there nor among the built-ins is left to
    ///   the node to check.
    /// - Throws: ``ControlError`` of kind `.usage`.
    public func command(timer: String, presets: [String: JSONValue] = [:]) throws(ControlError) -> ControlCommand {
        try ControlCommand.checkTimerID(timer)
        let startAtMs = try startAt.map { text throws(ControlError) in try Self.instant(text, flag: "--start-at") }
        func start(_ spec: JSONValue?) -> ControlCommand {
            ControlCommand(NodeCommand(request: .timer(
                id: timer, operation: .start(spec: nil, startAt: startAtMs, restart: restart), spec: spec, name: name)))
        }

        let intervalFlags = intervalFlagNames
        var kinds: [String] = []
        if preset != nil { kinds.append("--preset") }
        if countdown != nil { kinds.append("--countdown") }
        if stopwatch { kinds.append("--stopwatch") }
        if work != nil && preset == nil { kinds.append("--work") }
        guard kinds.count <= 1 else {
            throw ControlError(.usage, "give only one of --preset, --work (interval), --countdown, --stopwatch or --rest (rest timer); got \(kinds.joined(separator: " and "))")
        }

        var spec: [String: JSONValue]
        var validate = true
        if let preset {
            spec = ["preset": .string(preset)]
            try putInterval(into: &spec)
            validate = presets[preset] != nil || Presets.builtIn[preset] != nil
        } else if let countdown {
            try reject(intervalFlags + (target != nil ? ["--target"] : []), for: "--countdown")
            spec = ["kind": "countdown", "duration": .string(try Self.compact(countdown, flag: "--countdown"))]
            if let label { spec["label"] = .string(label) }
        } else if stopwatch {
            try reject(intervalFlags, for: "--stopwatch")
            spec = ["kind": "stopwatch"]
            if let target { spec["target"] = .string(try Self.compact(target, flag: "--target")) }
            if let label { spec["label"] = .string(label) }
        } else if work != nil {
            spec = ["kind": "interval"]
            try putInterval(into: &spec)
        } else if let rest {
            let others = intervalFlags.filter { $0 != "--rest" && $0 != "--exercise" }
            guard others.isEmpty else {
                throw ControlError(.usage, "\(others.joined(separator: ", ")) need --work (an interval timer); --rest alone starts a rest timer")
            }
            guard exercises.count <= 1 else {
                throw ControlError(.usage, "a rest timer takes one --exercise (the one just done) and --next for the next one")
            }
            spec = ["kind": "rest", "duration": .string(try Self.compact(rest, flag: "--rest"))]
            if let exercise = exercises.first { spec["exercise"] = .string(exercise) }
            if let next { spec["next"] = .string(next) }
        } else {
            guard intervalFlags.isEmpty, target == nil, label == nil, next == nil else {
                let given = intervalFlags + (target != nil ? ["--target"] : []) + (label != nil ? ["--label"] : []) + (next != nil ? ["--next"] : [])
                throw ControlError(.usage, "\(given.joined(separator: ", ")) need a kind of timer: --work (interval), --countdown, --stopwatch, --rest or --preset")
            }
            return start(nil)
        }
        if next != nil && spec["kind"] != "rest" {
            throw ControlError(.usage, "--next is for a rest timer (--rest DURATION alone)")
        }
        if label != nil && spec["kind"] != "countdown" && spec["kind"] != "stopwatch" {
            throw ControlError(.usage, "--label is for a countdown or a stopwatch; an interval timer names its stations with --exercise")
        }
        if target != nil && spec["kind"] != "stopwatch" && preset == nil {
            throw ControlError(.usage, "--target is for a stopwatch (--stopwatch --target 20m)")
        }
        if validate {
            do {
                _ = try TimerSpec(json: .object(spec), presets: presets)
            } catch {
                throw ControlError(.usage, Self.flagNames(error.message, duration: spec["kind"] == "rest" ? "--rest" : "--countdown"))
            }
        }
        return start(.object(spec))
    }

    /// The interval flags given, by their command-line names.
    private var intervalFlagNames: [String] {
        var names: [String] = []
        if work != nil { names.append("--work") }
        if rest != nil { names.append("--rest") }
        if rounds != nil { names.append("--rounds") }
        if sets != nil { names.append("--sets") }
        if setRest != nil { names.append("--set-rest") }
        if prepare != nil { names.append("--prepare") }
        if cooldown != nil { names.append("--cooldown") }
        if !exercises.isEmpty { names.append("--exercise") }
        return names
    }

    private func reject(_ flags: [String], for kind: String) throws(ControlError) {
        if !flags.isEmpty {
            throw ControlError(.usage, "\(flags.joined(separator: ", ")) cannot be used with \(kind)")
        }
    }

    /// Puts the interval flags into `spec` (durations in their canonical spelling).
    private func putInterval(into spec: inout [String: JSONValue]) throws(ControlError) {
        if let work { spec["work"] = .string(try Self.compact(work, flag: "--work")) }
        if let rest { spec["rest"] = .string(try Self.compact(rest, flag: "--rest")) }
        if let rounds { spec["rounds"] = .int(rounds) }
        if let sets { spec["sets"] = .int(sets) }
        if let setRest { spec["set_rest"] = .string(try Self.compact(setRest, flag: "--set-rest")) }
        if let prepare { spec["prepare"] = .string(try Self.compact(prepare, flag: "--prepare")) }
        if let cooldown { spec["cooldown"] = .string(try Self.compact(cooldown, flag: "--cooldown")) }
        if !exercises.isEmpty { spec["exercises"] = .array(exercises.map { .string($0) }) }
        if let target, preset != nil { spec["target"] = .string(try Self.compact(target, flag: "--target")) }
    }

    /// An instant flag: epoch milliseconds or ISO 8601 (`2026-11-22T18:00:00Z`), read by
    /// PacerCore's parser within the bounds a command may name (1970 to 2100).
    static func instant(_ text: String, flag: String) throws(ControlError) -> Millis {
        let ms: Millis
        if let epoch = Millis(text) {
            ms = epoch
        } else {
            switch ISO8601.parse(text) {
            case .success(let parsed): ms = parsed
            case .failure(let error):
                throw ControlError(.usage, "\(flag) must be epoch milliseconds or ISO 8601 like 2026-11-22T18:00:00Z; it \(error)")
            }
        }
        guard (0...ProtocolLimits.latestInstantMs).contains(ms) else {
            throw ControlError(.usage, "\(flag) must be between 1970-01-01T00:00:00Z and 2100-01-01T00:00:00Z, got '\(printable(text, limit: 40))'")
        }
        return ms
    }

    /// A duration flag parsed by PacerCore and spelled canonically (`1m30s`).
    static func compact(_ text: String, flag: String) throws(ControlError) -> String {
        let ms = try ControlCommand.duration(text, flag: flag)
        guard ms >= 0 else { throw ControlError(.usage, "\(flag) must not be negative, got '\(text)'") }
        return Durations.compact(ms)
    }

    /// A spec error message with its field names turned into the flags that set them
    /// (`work must be between 1 s and …` → `--work must be between 1 s and …`).
    static func flagNames(_ message: String, duration: String) -> String {
        let fields = ["set_rest": "--set-rest", "work": "--work", "rest": "--rest", "rounds": "--rounds", "sets": "--sets",
                      "prepare": "--prepare", "cooldown": "--cooldown", "target": "--target", "exercises": "--exercise",
                      "duration": duration, "label": "--label", "exercise": "--exercise", "next": "--next"]
        for (field, flag) in fields where message.hasPrefix(field + " ") || message.hasPrefix(field + "[") {
            return flag + message.dropFirst(field.count)
        }
        return message
    }
}

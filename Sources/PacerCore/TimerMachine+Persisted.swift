/// The persisted form of a machine: written by `persistedBytes` (below) and read back by
/// `init(persisted:)` from a `JSONValue`, without `Codable`: the node's one format of a timer.
///
/// One implementation, no `Codable` (docs/benchmarks/history.md has what `JSONDecoder` cost a restore).
/// No type in Sources is `Codable`; the tests keep a `Codable` oracle of the format
/// (Tests/PacerCoreTests/PersistedFormat+Codable.swift): this reader and writer must give what
/// it gives, on random machines in every state (PersistedMachineTests, PropertyTests).
/// `JSONValue` holds numbers as `Double`: an integer beyond ±2^53 that is not a power of two
/// reads as an error here; nothing but `Int64.min` (exact in a Double) is ever written.
extension TimerMachine {
    /// The newest format version of the persisted JSON this reader reads. Version 2 adds the
    /// members of rests that end on recovery (`rest_until_hr`, a segment's `until_hr`, a run's
    /// `recoveredAtMs`); a machine whose spec has none is written as version 1, byte for byte as
    /// before, and one that has some as version 2, which an older node refuses to read rather than
    /// reading its rests as 0 s.
    public static let codingVersion = 2

    /// The version this machine is written with: 2 when its spec has a rest that ends on
    /// recovery, else 1.
    public var persistedVersion: Int { spec.hasRecoveryRest ? 2 : 1 }

    /// Reads a machine as the oracle's `init(from:)` does, with `settings` (when given) in place of
    /// the persisted ones. The program is compiled from the persisted spec.
    /// - Throws: `PersistedMachineError` naming the member that is missing or of the wrong type.
    public init(persisted json: JSONValue, settings override: TimerSettings? = nil) throws(PersistedMachineError) {
        let o = try PersistedReader(json, path: "")
        let version = try o.optionalInt("version") ?? 1
        guard version <= TimerMachine.codingVersion else {
            throw PersistedMachineError(path: "version", problem: "unsupported timer format version \(version)")
        }
        let spec = try TimerSpec(persisted: o.required("spec"), path: "spec")
        var settings = TimerSettings()
        if let override {
            settings = override
        } else if let persisted = o.optional("settings") {
            settings = try TimerSettings(persisted: persisted, path: "settings")
        }
        let state = try State(persisted: o.required("state"), path: "state")
        try self.init(restoring: o.string("id"), name: o.string("name"), spec: spec, settings: settings, state: state,
                      revision: o.int("revision"), advancedToMs: o.int64("advanced_to_ms"), lastChangeMs: o.int64("last_change_ms"))
    }

    /// A persisted machine's parts, checked as `init(from:)` checks them: its spec still
    /// compiles and the run's segment is inside the program.
    init(restoring id: String, name: String, spec: TimerSpec, settings: TimerSettings, state: State,
         revision: Int, advancedToMs: Millis, lastChangeMs: Millis) throws(PersistedMachineError) {
        let program: Program
        do throws(SpecError) {
            program = try spec.compile()
        } catch {
            throw PersistedMachineError(path: "spec", problem: "persisted spec no longer valid: \(error.message)")
        }
        let runIndex: Int? = switch state {
        case .idle, .scheduled: nil
        case .running(let run), .paused(let run, _), .expired(let run, _): run.index
        case .finished(let ended), .cancelled(let ended): ended.run?.index
        }
        if let runIndex, !program.segments.indices.contains(runIndex) {
            throw PersistedMachineError(path: "state", problem: "segment \(runIndex) is outside the program (\(program.count) segments)")
        }
        self.id = id
        self.name = name
        self.spec = spec
        self.program = program
        self.settings = settings
        self.state = state
        self.revision = revision
        self.advancedToMs = advancedToMs
        self.lastChangeMs = lastChangeMs
    }
}

/// A persisted machine that cannot be read: where, and what is wrong.
public struct PersistedMachineError: Error, CustomStringConvertible, Equatable {
    /// The member, e.g. `state.running.run.index`.
    public var path: String
    public var problem: String
    public var description: String { path.isEmpty ? problem : "\(path): \(problem)" }
}

/// The members of one persisted object, with errors naming their path.
struct PersistedReader {
    let members: [String: JSONValue]
    let path: String

    init(_ value: JSONValue, path: String) throws(PersistedMachineError) {
        guard case .object(let members) = value else {
            throw PersistedMachineError(path: path, problem: "expected an object")
        }
        self.members = members
        self.path = path
    }

    func at(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The member, nil when absent or null (what `decodeIfPresent` treats as absent).
    func optional(_ key: String) -> JSONValue? {
        guard let value = members[key], !value.isNull else { return nil }
        return value
    }

    func required(_ key: String) throws(PersistedMachineError) -> JSONValue {
        guard let value = members[key] else { throw PersistedMachineError(path: at(key), problem: "missing") }
        return value
    }

    func object(_ key: String) throws(PersistedMachineError) -> PersistedReader {
        try PersistedReader(required(key), path: at(key))
    }

    func optionalInt64(_ key: String) throws(PersistedMachineError) -> Int64? {
        guard let value = optional(key) else { return nil }
        guard let int = value.int64 else { throw PersistedMachineError(path: at(key), problem: "expected a whole number") }
        return int
    }

    func optionalInt(_ key: String) throws(PersistedMachineError) -> Int? {
        try optionalInt64(key).map { v throws(PersistedMachineError) in
            guard let int = Int(exactly: v) else { throw PersistedMachineError(path: at(key), problem: "out of range") }
            return int
        }
    }

    func int64(_ key: String) throws(PersistedMachineError) -> Int64 { try present(key, optionalInt64) }

    func int(_ key: String) throws(PersistedMachineError) -> Int { try present(key, optionalInt) }

    func optionalString(_ key: String) throws(PersistedMachineError) -> String? {
        guard let value = optional(key) else { return nil }
        guard case .string(let text) = value else { throw PersistedMachineError(path: at(key), problem: "expected a string") }
        return text
    }

    func string(_ key: String) throws(PersistedMachineError) -> String { try present(key, optionalString) }

    func optionalBool(_ key: String) throws(PersistedMachineError) -> Bool? {
        guard let value = optional(key) else { return nil }
        guard case .bool(let flag) = value else { throw PersistedMachineError(path: at(key), problem: "expected true or false") }
        return flag
    }

    func bool(_ key: String) throws(PersistedMachineError) -> Bool { try present(key, optionalBool) }

    /// What `read` gives for `key`, which must be there.
    private func present<T>(_ key: String, _ read: (String) throws(PersistedMachineError) -> T?) throws(PersistedMachineError) -> T {
        guard let value = try read(key) else { throw PersistedMachineError(path: at(key), problem: "missing") }
        return value
    }

    func optionalArray(_ key: String) throws(PersistedMachineError) -> [JSONValue]? {
        guard let value = optional(key) else { return nil }
        guard case .array(let elements) = value else { throw PersistedMachineError(path: at(key), problem: "expected a list") }
        return elements
    }

    func optionalInts(_ key: String) throws(PersistedMachineError) -> [Int]? {
        try optionalArray(key).map { elements throws(PersistedMachineError) in
            var out: [Int] = []
            for (index, element) in elements.enumerated() {
                guard let int = element.int else { throw PersistedMachineError(path: "\(at(key))[\(index)]", problem: "expected a whole number") }
                out.append(int)
            }
            return out
        }
    }

    func optionalStrings(_ key: String) throws(PersistedMachineError) -> [String]? {
        try optionalArray(key).map { elements throws(PersistedMachineError) in
            var out: [String] = []
            for (index, element) in elements.enumerated() {
                guard case .string(let text) = element else { throw PersistedMachineError(path: "\(at(key))[\(index)]", problem: "expected a string") }
                out.append(text)
            }
            return out
        }
    }

    func rawValue<T: RawRepresentable>(_ key: String, as type: T.Type) throws(PersistedMachineError) -> T? where T.RawValue == String {
        guard let text = try optionalString(key) else { return nil }
        guard let value = T(rawValue: text) else { throw PersistedMachineError(path: at(key), problem: "unknown value \"\(text)\"") }
        return value
    }
}

extension TimerSpec {
    init(persisted json: JSONValue, path: String) throws(PersistedMachineError) {
        let o = try PersistedReader(json, path: path)
        guard let kind = try o.rawValue("kind", as: TimerKind.self) else { throw PersistedMachineError(path: o.at("kind"), problem: "missing") }
        self.init(kind: kind)
        workMs = try o.optionalInt64("work_ms")
        restMs = try o.optionalInt64("rest_ms")
        rounds = try o.optionalInt("rounds")
        restUntilHR = try o.optional("rest_until_hr").map { v throws(PersistedMachineError) in try RecoveryRule(persisted: v, path: o.at("rest_until_hr")) }
        prepareMs = try o.optionalInt64("prepare_ms")
        sets = try o.optionalInt("sets")
        setRestMs = try o.optionalInt64("set_rest_ms")
        exercises = try o.optionalStrings("exercises")
        cooldownMs = try o.optionalInt64("cooldown_ms")
        skipLastRest = try o.bool("skip_last_rest")
        durationMs = try o.optionalInt64("duration_ms")
        exercise = try o.optionalString("exercise")
        next = try o.optionalString("next")
        label = try o.optionalString("label")
        targetMs = try o.optionalInt64("target_ms")
        segments = try o.optionalArray("segments").map { elements throws(PersistedMachineError) in
            var out: [Segment] = []
            for (index, element) in elements.enumerated() {
                out.append(try Segment(persisted: element, path: "\(o.at("segments"))[\(index)]"))
            }
            return out
        }
        ack = try o.bool("ack")
        afterAck = try o.rawValue("after_ack", as: AfterAck.self)
        hrSource = try o.optionalString("hr_source")
        classHR = try o.optionalBool("class_hr") == true ? true : nil
        alertIntervalMs = try o.optionalInt64("alert_interval_ms")
        autoDismissMs = try o.optionalInt64("auto_dismiss_ms")
        cues = try o.optionalInts("cues")
        preset = try o.optionalString("preset")
    }
}

extension Segment {
    init(persisted json: JSONValue, path: String) throws(PersistedMachineError) {
        let o = try PersistedReader(json, path: path)
        guard let kind = try o.rawValue("kind", as: SegmentKind.self) else { throw PersistedMachineError(path: o.at("kind"), problem: "missing") }
        self.init(kind: kind, durationMs: try o.optionalInt64("duration_ms"), label: try o.optionalString("label"),
                  round: try o.int("round"), set: try o.int("set"),
                  untilHR: try o.optional("until_hr").map { v throws(PersistedMachineError) in try RecoveryRule(persisted: v, path: o.at("until_hr")) })
    }
}

extension RecoveryRule {
    /// `{"below_bpm" | "below_pct_max", "max_ms", "min_ms", "who"}`.
    init(persisted json: JSONValue, path: String) throws(PersistedMachineError) {
        let o = try PersistedReader(json, path: path)
        switch (try o.optionalInt("below_pct_max"), try o.optionalInt("below_bpm")) {
        case (let percent?, nil): threshold = .percentOfMax(percent)
        case (nil, let bpm?): threshold = .bpm(bpm)
        case (nil, nil), (_?, _?): throw PersistedMachineError(path: path, problem: "expected one of below_pct_max and below_bpm")
        }
        let word = try o.string("who")
        guard let who = Who(word: word) else { throw PersistedMachineError(path: o.at("who"), problem: "unknown value \"\(printable(word))\"") }
        self.who = who
        minMs = try o.int64("min_ms")
        maxMs = try o.int64("max_ms")
    }

    func writePersisted(into w: inout JSONObjectWriter) {
        w.object {
            if case .bpm(let bpm) = threshold { $0.int("below_bpm", bpm) }
            if case .percentOfMax(let percent) = threshold { $0.int("below_pct_max", percent) }
            $0.int("max_ms", maxMs)
            $0.int("min_ms", minMs)
            $0.string("who", who.word)
        }
    }
}

extension TimerSettings {
    /// Missing members take their defaults, as in `init(from:)`.
    init(persisted json: JSONValue, path: String) throws(PersistedMachineError) {
        let o = try PersistedReader(json, path: path)
        let defaults = TimerSettings()
        self.init(lagWindowMs: try o.optionalInt64("lag_window_ms") ?? defaults.lagWindowMs,
                  cues: try o.optionalInts("cues") ?? defaults.cues,
                  alertIntervalMs: try o.optionalInt64("alert_interval_ms") ?? defaults.alertIntervalMs,
                  autoDismissMs: try o.optionalInt64("auto_dismiss_ms") ?? defaults.autoDismissMs,
                  backWindowMs: try o.optionalInt64("back_window_ms") ?? defaults.backWindowMs,
                  halfwayMinimumMs: try o.optionalInt64("halfway_minimum_ms") ?? defaults.halfwayMinimumMs)
    }
}

extension TimerMachine.State {
    /// The synthesized enum form: `{"case": {labels...}}`, an unlabelled value under `_0`.
    init(persisted json: JSONValue, path: String) throws(PersistedMachineError) {
        let outer = try PersistedReader(json, path: path)
        guard outer.members.count == 1, let name = outer.members.keys.first else {
            throw PersistedMachineError(path: path, problem: "expected one state, got \(outer.members.count) members")
        }
        let o = try outer.object(name)
        switch name {
        case "idle": self = .idle
        case "scheduled": self = .scheduled(startAtMs: try o.int64("startAtMs"))
        case "running": self = .running(run: try TimerMachine.Run(persisted: o.required("run"), path: o.at("run")))
        case "paused":
            self = .paused(run: try TimerMachine.Run(persisted: o.required("run"), path: o.at("run")), pausedAtMs: try o.int64("pausedAtMs"))
        case "expired":
            self = .expired(run: try TimerMachine.Run(persisted: o.required("run"), path: o.at("run")), sinceMs: try o.int64("sinceMs"))
        case "finished": self = .finished(try TimerMachine.Ended(persisted: o.required("_0"), path: o.at("_0")))
        case "cancelled": self = .cancelled(try TimerMachine.Ended(persisted: o.required("_0"), path: o.at("_0")))
        default: throw PersistedMachineError(path: path, problem: "unknown state \"\(name)\"")
        }
    }
}

extension TimerMachine.Run {
    init(persisted json: JSONValue, path: String) throws(PersistedMachineError) {
        let o = try PersistedReader(json, path: path)
        self.init(index: try o.int("index"), segmentStartMs: try o.int64("segmentStartMs"), durationMs: try o.optionalInt64("durationMs"),
                  startedAtMs: try o.int64("startedAtMs"), activeMs: try o.int64("activeMs"), activeSinceMs: try o.int64("activeSinceMs"),
                  halfwayDone: try o.bool("halfwayDone"), overtime: try o.bool("overtime"), snoozed: try o.bool("snoozed"),
                  recoveredAtMs: try o.optionalInt64("recoveredAtMs"))
    }
}

extension TimerMachine.Ended {
    init(persisted json: JSONValue, path: String) throws(PersistedMachineError) {
        let o = try PersistedReader(json, path: path)
        self.init(atMs: try o.int64("atMs"),
                  run: try o.optional("run").map { v throws(PersistedMachineError) in try TimerMachine.Run(persisted: v, path: o.at("run")) },
                  segmentElapsedMs: try o.int64("segmentElapsedMs"), remainingMs: try o.optionalInt64("remainingMs"),
                  reason: try o.rawValue("reason", as: FinishReason.self))
    }
}

// MARK: - Writing

extension TimerMachine {
    /// The machine as `encode(to:)` writes it (compact, keys sorted), written directly: every
    /// accepted command writes its timer, and `JSONEncoder` was a tenth of a command's cost.
    /// Integers are written exactly (not through `JSONValue`'s Double). `JSONDecoder` reads
    /// these bytes back to the same machine (PersistedMachineTests, PropertyTests).
    public var persistedBytes: [UInt8] {
        var w = JSONObjectWriter(capacity: 640)
        w.object {
            $0.int("advanced_to_ms", advancedToMs)
            $0.string("id", id)
            $0.int("last_change_ms", lastChangeMs)
            $0.string("name", name)
            $0.int("revision", Int64(revision))
            $0.member("settings") { settings.write(into: &$0) }
            $0.member("spec") { spec.writePersisted(into: &$0) }
            $0.member("state") { state.write(into: &$0) }
            $0.int("version", Int64(persistedVersion))
        }
        return w.out
    }
}

extension TimerSettings {
    func write(into w: inout JSONObjectWriter) {
        w.object {
            $0.int("alert_interval_ms", alertIntervalMs)
            $0.int("auto_dismiss_ms", autoDismissMs)
            $0.int("back_window_ms", backWindowMs)
            $0.ints("cues", cues)
            $0.int("halfway_minimum_ms", halfwayMinimumMs)
            $0.int("lag_window_ms", lagWindowMs)
        }
    }
}

extension TimerSpec {
    func writePersisted(into w: inout JSONObjectWriter) {
        w.object {
            $0.bool("ack", ack)
            $0.string("after_ack", afterAck?.rawValue)
            $0.int("alert_interval_ms", alertIntervalMs)
            $0.int("auto_dismiss_ms", autoDismissMs)
            if classHR == true { $0.bool("class_hr", true) }
            $0.int("cooldown_ms", cooldownMs)
            $0.ints("cues", cues)
            $0.int("duration_ms", durationMs)
            $0.string("exercise", exercise)
            $0.strings("exercises", exercises)
            $0.string("hr_source", hrSource)
            $0.string("kind", kind.rawValue)
            $0.string("label", label)
            $0.string("next", next)
            $0.int("prepare_ms", prepareMs)
            $0.string("preset", preset)
            $0.int("rest_ms", restMs)
            if let restUntilHR { $0.member("rest_until_hr") { restUntilHR.writePersisted(into: &$0) } }
            $0.int("rounds", rounds)
            if let segments { $0.member("segments") { w in w.array(segments) { $1.write(into: &$0) } } }
            $0.int("set_rest_ms", setRestMs)
            $0.int("sets", sets)
            $0.bool("skip_last_rest", skipLastRest)
            $0.int("target_ms", targetMs)
            $0.int("work_ms", workMs)
        }
    }
}

extension Segment {
    func write(into w: inout JSONObjectWriter) {
        w.object {
            $0.int("duration_ms", durationMs)
            $0.string("kind", kind.rawValue)
            $0.string("label", label)
            $0.int("round", round)
            $0.int("set", set)
            if let untilHR { $0.member("until_hr") { untilHR.writePersisted(into: &$0) } }
        }
    }
}

extension TimerMachine.State {
    func write(into w: inout JSONObjectWriter) {
        w.object {
            switch self {
            case .idle: $0.member("idle") { $0.object { _ in } }
            case .scheduled(let startAtMs): $0.member("scheduled") { $0.object { $0.int("startAtMs", startAtMs) } }
            case .running(let run): $0.member("running") { $0.object { w in w.member("run") { run.write(into: &$0) } } }
            case .paused(let run, let pausedAtMs):
                $0.member("paused") { $0.object { w in w.int("pausedAtMs", pausedAtMs); w.member("run") { run.write(into: &$0) } } }
            case .expired(let run, let sinceMs):
                $0.member("expired") { $0.object { w in w.member("run") { run.write(into: &$0) }; w.int("sinceMs", sinceMs) } }
            case .finished(let ended): $0.member("finished") { $0.object { w in w.member("_0") { ended.write(into: &$0) } } }
            case .cancelled(let ended): $0.member("cancelled") { $0.object { w in w.member("_0") { ended.write(into: &$0) } } }
            }
        }
    }
}

extension TimerMachine.Run {
    func write(into w: inout JSONObjectWriter) {
        w.object {
            $0.int("activeMs", activeMs)
            $0.int("activeSinceMs", activeSinceMs)
            $0.int("durationMs", durationMs)
            $0.bool("halfwayDone", halfwayDone)
            $0.int("index", index)
            $0.bool("overtime", overtime)
            $0.int("recoveredAtMs", recoveredAtMs)
            $0.int("segmentStartMs", segmentStartMs)
            $0.bool("snoozed", snoozed)
            $0.int("startedAtMs", startedAtMs)
        }
    }
}

extension TimerMachine.Ended {
    func write(into w: inout JSONObjectWriter) {
        w.object {
            $0.int("atMs", atMs)
            $0.string("reason", reason?.rawValue)
            $0.int("remainingMs", remainingMs)
            if let run { $0.member("run") { run.write(into: &$0) } }
            $0.int("segmentElapsedMs", segmentElapsedMs)
        }
    }
}

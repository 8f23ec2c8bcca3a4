// Reading and writing specs as JSON (snake_case keys, durations as in `Durations`).

extension TimerSpec {
    static let commonKeys = ["kind", "preset", "ack", "after_ack", "hr_source", "class_hr", "alert_interval", "auto_dismiss", "cues"]

    /// The keys a spec of `kind` accepts.
    public static func allowedKeys(for kind: TimerKind) -> [String] {
        switch kind {
        case .interval:
            commonKeys + ["work", "rest", "rounds", "prepare", "sets", "set_rest", "exercises", "cooldown", "skip_last_rest"]
        case .rest: commonKeys + ["duration", "exercise", "next"]
        case .countdown: commonKeys + ["duration", "label"]
        case .stopwatch: ["kind", "preset", "hr_source", "class_hr", "cues", "target", "label"]
        case .program: commonKeys + ["segments"]
        }
    }

    /// Reads and validates a spec from command or config JSON.
    ///
    /// `{"preset": "tabata"}` or `{"preset": "emom", "rounds": 12}` expands a preset: a
    /// user preset from `presets` first, else a built-in; the other keys override the
    /// preset's. Durations are numbers of seconds or duration strings.
    /// - Throws: `SpecError` naming the field: unknown keys, wrong types, limits.
    public init(json: JSONValue, presets: [String: JSONValue] = [:]) throws(SpecError) {
        var aliasUsed: [String: String] = [:]
        do {
            try self.init(reading: json, presets: presets, aliasUsed: &aliasUsed)
        } catch {
            // A value given under a preset's alias (for_time's `cap` for `target`) is refused
            // under the name the sender used.
            guard let alias = aliasUsed[error.field] else { throw error }
            let message = error.message.hasPrefix(error.field) ? alias + error.message.dropFirst(error.field.count) : error.message
            throw SpecError(field: alias, message: message)
        }
    }

    private init(reading json: JSONValue, presets: [String: JSONValue], aliasUsed: inout [String: String]) throws(SpecError) {
        guard case .object(var members) = json else {
            throw SpecError(field: "spec", message: "spec must be a JSON object, got \(json)")
        }
        var presetName: String?
        if let presetValue = members["preset"], !presetValue.isNull {
            guard case .string(let name) = presetValue else {
                throw SpecError(field: "preset", message: "preset must be a preset name, got \(presetValue)")
            }
            let base: JSONValue
            var aliases: [String: String] = [:]
            if let user = presets[name] {
                base = user
            } else if let builtIn = Presets.builtIn[name] {
                base = builtIn
                aliases = Presets.aliases[name] ?? [:]
            } else {
                let known = Set(Presets.builtInNames).union(presets.keys).sorted().joined(separator: ", ")
                throw SpecError(field: "preset", message: "unknown preset '\(name)'; known presets: \(known)")
            }
            guard case .object(let baseMembers) = base else {
                throw SpecError(field: "preset", message: "preset '\(name)' must be a JSON object spec, got \(base)")
            }
            if let nested = baseMembers["preset"], !nested.isNull {
                throw SpecError(field: "preset", message: "preset '\(name)' must not itself use a preset (it refers to \(nested))")
            }
            var merged = baseMembers
            // Sorted, so an alias and its key given together resolve the same way every time
            // (for amrap, `work` wins over `duration`).
            for key in members.keys.sorted() where key != "preset" {
                merged[aliases[key] ?? key] = members[key]
                if let target = aliases[key] { aliasUsed[target] = key }
            }
            members = merged
            presetName = name
        }
        members["preset"] = nil

        guard let kindValue = members["kind"] else {
            throw SpecError(field: "kind", message: "kind is required (one of \(TimerKind.allCases.map(\.rawValue).joined(separator: ", "))), or give a preset")
        }
        guard case .string(let kindText) = kindValue, let kind = TimerKind(rawValue: kindText) else {
            throw SpecError(field: "kind", message: "kind must be one of \(TimerKind.allCases.map(\.rawValue).joined(separator: ", ")), got \(kindValue)")
        }
        let allowed = TimerSpec.allowedKeys(for: kind)
        for key in members.keys.sorted() where !allowed.contains(key) {
            throw SpecError(field: key, message: "unknown key '\(key)' in \(kind == .interval ? "an" : "a") \(kind.rawValue) spec; allowed keys: \(allowed.sorted().joined(separator: ", "))")
        }

        var spec = TimerSpec(kind: kind)
        spec.preset = presetName
        let reader = Reader(members: members)
        if let ack = try reader.bool("ack") { spec.ack = ack }
        if let afterAck = try reader.string("after_ack") {
            guard let value = AfterAck(rawValue: afterAck) else {
                throw SpecError(field: "after_ack", message: "after_ack must be \"finish\" or \"ready\", got '\(afterAck.prefix(40))'")
            }
            guard spec.ack || value == .finish else {
                throw SpecError(field: "after_ack", message: "after_ack \"ready\" applies to a timer that waits for an ack at zero; add \"ack\": true")
            }
            spec.afterAck = value
        }
        spec.hrSource = try reader.string("hr_source")
        spec.classHR = try reader.bool("class_hr") == true ? true : nil
        spec.alertIntervalMs = try reader.duration("alert_interval")
        spec.autoDismissMs = try reader.duration("auto_dismiss")
        spec.cues = try reader.intArray("cues")
        switch kind {
        case .interval:
            spec.workMs = try reader.duration("work")
            (spec.restMs, spec.restUntilHR) = try reader.restLength("rest")
            spec.rounds = try reader.int("rounds")
            spec.prepareMs = try reader.duration("prepare")
            spec.sets = try reader.int("sets")
            spec.setRestMs = try reader.duration("set_rest")
            spec.exercises = try reader.stringArray("exercises")
            spec.cooldownMs = try reader.duration("cooldown")
            if let skip = try reader.bool("skip_last_rest") { spec.skipLastRest = skip }
        case .rest:
            let (duration, rule) = try reader.restLength("duration")
            if let duration { spec.durationMs = duration }
            if let rule { (spec.durationMs, spec.restUntilHR) = (nil, rule) }
            spec.exercise = try reader.string("exercise")
            spec.next = try reader.string("next")
        case .countdown:
            spec.durationMs = try reader.duration("duration")
            spec.label = try reader.string("label")
        case .stopwatch:
            spec.targetMs = try reader.duration("target")
            spec.label = try reader.string("label")
        case .program:
            spec.segments = try reader.segments("segments")
        }
        _ = try spec.compile()
        self = spec
    }

    /// The canonical JSON of this spec: snake_case keys, only the keys of its kind,
    /// durations as compact strings (`"20s"`, `"1m30s"`, `"500ms"`), `ack` and (interval)
    /// `skip_last_rest` always present, `preset` when it came from one.
    /// `TimerSpec(json: spec.json) == spec` for every spec read from JSON.
    public var json: JSONValue {
        var object: [String: JSONValue] = ["kind": .string(kind.rawValue)]
        func put(_ key: String, duration: Millis?) {
            if let duration { object[key] = .string(Durations.compact(duration)) }
        }
        func put(_ key: String, text: String?) {
            if let text { object[key] = .string(text) }
        }
        func put(_ key: String, int: Int?) {
            if let int { object[key] = .int(int) }
        }
        put("preset", text: preset)
        put("hr_source", text: hrSource)
        if classHR == true { object["class_hr"] = .bool(true) }
        if let cues { object["cues"] = .array(cues.map { .int($0) }) }
        if kind != .stopwatch {
            object["ack"] = .bool(ack)
            put("after_ack", text: afterAck?.rawValue)
            put("alert_interval", duration: alertIntervalMs)
            put("auto_dismiss", duration: autoDismissMs)
        }
        switch kind {
        case .interval:
            put("work", duration: workMs)
            put("rest", duration: restMs)
            if let restUntilHR { object["rest"] = restUntilHR.json }
            put("rounds", int: rounds)
            put("prepare", duration: prepareMs)
            put("sets", int: sets)
            put("set_rest", duration: setRestMs)
            if let exercises { object["exercises"] = .array(exercises.map { .string($0) }) }
            put("cooldown", duration: cooldownMs)
            object["skip_last_rest"] = .bool(skipLastRest)
        case .rest:
            put("duration", duration: durationMs)
            if let restUntilHR { object["duration"] = restUntilHR.json }
            put("exercise", text: exercise)
            put("next", text: next)
        case .countdown:
            put("duration", duration: durationMs)
            put("label", text: label)
        case .stopwatch:
            put("target", duration: targetMs)
            put("label", text: label)
        case .program:
            object["segments"] = .array((segments ?? []).map(\.json))
        }
        return .object(object)
    }
}

extension Segment {
    /// `{"kind","duration","label","round","set"}`; `duration` absent when open-ended, and
    /// `{"until_hr": {...}}` for a rest that ends on recovery.
    public var json: JSONValue {
        var object: [String: JSONValue] = ["kind": .string(kind.rawValue), "round": .int(round), "set": .int(set)]
        if let untilHR {
            object["duration"] = untilHR.json
        } else if let durationMs {
            object["duration"] = .string(Durations.compact(durationMs))
        }
        if let label { object["label"] = .string(label) }
        return .object(object)
    }

    static let allowedKeys = ["kind", "duration", "label", "round", "set"]

    /// Reads a program segment (types only; limits are checked by `compile`).
    init(json: JSONValue, field: String) throws(SpecError) {
        guard case .object(let members) = json else {
            throw SpecError(field: field, message: "\(field) must be an object like {\"kind\":\"work\",\"duration\":\"40s\"}, got \(json)")
        }
        for key in members.keys.sorted() where !Segment.allowedKeys.contains(key) {
            throw SpecError(field: "\(field).\(key)", message: "unknown key '\(key)' in \(field); allowed keys: \(Segment.allowedKeys.sorted().joined(separator: ", "))")
        }
        let kindField = "\(field).kind"
        guard let kindValue = members["kind"] else {
            throw SpecError(field: kindField, message: "\(kindField) is required (one of \(SegmentKind.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        guard case .string(let text) = kindValue, let kind = SegmentKind(rawValue: text) else {
            throw SpecError(field: kindField, message: "\(kindField) must be one of \(SegmentKind.allCases.map(\.rawValue).joined(separator: ", ")), got \(kindValue)")
        }
        let reader = TimerSpec.Reader(members: members, prefix: field + ".")
        let (duration, rule) = try reader.restLength("duration")
        self.init(
            kind: kind,
            durationMs: duration,
            label: try reader.string("label"),
            round: try reader.int("round") ?? 1,
            set: try reader.int("set") ?? 1,
            untilHR: rule
        )
    }
}

extension TimerSpec {
    /// Typed access to the members of a JSON object, with errors naming the field.
    struct Reader {
        var members: [String: JSONValue]
        var prefix = ""

        private func value(_ key: String) -> JSONValue? {
            guard let value = members[key], !value.isNull else { return nil }
            return value
        }

        func duration(_ key: String) throws(SpecError) -> Millis? {
            guard let value = value(key) else { return nil }
            return try Durations.parse(value, field: prefix + key)
        }

        /// A rest's length: a duration, or `{"until_hr": {...}}` (a rest that ends on recovery).
        func restLength(_ key: String) throws(SpecError) -> (Millis?, RecoveryRule?) {
            guard let value = value(key) else { return (nil, nil) }
            if case .object = value { return (nil, try RecoveryRule(json: value, field: prefix + key)) }
            return (try Durations.parse(value, field: prefix + key), nil)
        }

        func int(_ key: String) throws(SpecError) -> Int? {
            guard let value = value(key) else { return nil }
            if let int = value.int { return int }
            if case .string(let text) = value, let int = Int(text) { return int }
            throw SpecError(field: prefix + key, message: "\(prefix + key) must be a whole number, got \(value)")
        }

        func bool(_ key: String) throws(SpecError) -> Bool? {
            guard let value = value(key) else { return nil }
            if let bool = value.bool { return bool }
            throw SpecError(field: prefix + key, message: "\(prefix + key) must be true or false, got \(value)")
        }

        func string(_ key: String) throws(SpecError) -> String? {
            guard let value = value(key) else { return nil }
            if let string = value.string { return string }
            throw SpecError(field: prefix + key, message: "\(prefix + key) must be a string, got \(value)")
        }

        func stringArray(_ key: String) throws(SpecError) -> [String]? {
            guard let value = value(key) else { return nil }
            guard case .array(let elements) = value else {
                throw SpecError(field: prefix + key, message: "\(prefix + key) must be a list of names, got \(value)")
            }
            var out: [String] = []
            for (index, element) in elements.enumerated() {
                guard let text = element.string else {
                    throw SpecError(field: "\(prefix + key)[\(index)]", message: "\(prefix + key)[\(index)] must be a string, got \(element)")
                }
                out.append(text)
            }
            return out
        }

        func intArray(_ key: String) throws(SpecError) -> [Int]? {
            guard let value = value(key) else { return nil }
            guard case .array(let elements) = value else {
                throw SpecError(field: prefix + key, message: "\(prefix + key) must be a list of whole numbers of seconds, got \(value)")
            }
            var out: [Int] = []
            for (index, element) in elements.enumerated() {
                guard let int = element.int else {
                    throw SpecError(field: "\(prefix + key)[\(index)]", message: "\(prefix + key)[\(index)] must be a whole number, got \(element)")
                }
                out.append(int)
            }
            return out
        }

        func segments(_ key: String) throws(SpecError) -> [Segment]? {
            guard let value = value(key) else { return nil }
            guard case .array(let elements) = value else {
                throw SpecError(field: prefix + key, message: "\(prefix + key) must be a list of segments, got \(value)")
            }
            if elements.count > TimerSpec.maxSegments {
                throw SpecError(field: prefix + key, message: "\(prefix + key) must have at most \(grouped(TimerSpec.maxSegments)) entries, got \(grouped(elements.count))")
            }
            var out: [Segment] = []
            out.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                out.append(try Segment(json: element, field: "\(prefix + key)[\(index)]"))
            }
            return out
        }
    }
}

// Reading timer commands from JSON (SPEC §3).

extension TimerCommand {
    /// The timer actions `init(json:)` understands.
    public static let actions = ["start", "pause", "resume", "toggle", "cancel", "reset", "finish", "skip", "back", "ack", "adjust", "snooze"]

    /// Command keys that are not spec keys (everything else on a `preset` start overrides
    /// the preset: `{"action":"start","preset":"emom","rounds":12}`).
    public static let envelopeKeys: Set<String> = ["action", "id", "at", "if_revision", "timer", "name", "spec", "preset", "start_at", "restart", "seconds"]

    /// Reads a timer command: `{"action": ..., "id": ..., "at": <epoch ms>, "if_revision": n, ...}`.
    ///
    /// - `start`: optional `spec` (an object) or `preset` (+ overriding spec keys),
    ///   `start_at` (epoch ms), `restart` (bool).
    /// - `adjust`: `seconds` (required, ±). `snooze`: `seconds` (default 60).
    /// - the other actions take no argument. `timer` and `name` are left to the node.
    /// - Throws: `CommandError` `.malformed` for a bad shape or unknown action,
    ///   `.invalidSpec` for a bad spec.
    public init(json: JSONValue, presets: [String: JSONValue] = [:]) throws(CommandError) {
        guard case .object(let members) = json else {
            throw CommandError(code: .malformed, message: "a command must be a JSON object like {\"action\":\"pause\"}, got \(json)")
        }
        guard let actionValue = members["action"] else {
            throw CommandError(code: .malformed, message: "action is required (one of \(TimerCommand.actions.joined(separator: ", ")))")
        }
        guard let action = actionValue.string else {
            throw CommandError(code: .malformed, message: "action must be a string, got \(actionValue)")
        }

        func integer(_ key: String, what: String) throws(CommandError) -> Int64? {
            guard let value = members[key], !value.isNull else { return nil }
            guard let number = value.int64 else {
                throw CommandError(code: .malformed, message: "\(key) must be \(what), got \(value)")
            }
            return number
        }

        var requestID: String?
        if let id = members["id"], !id.isNull {
            switch id {
            case .string(let text): requestID = text
            case .number: requestID = id.description
            case .null, .bool, .array, .object:
                throw CommandError(code: .malformed, message: "id must be a string, got \(id)")
            }
            if let requestID, requestID.isEmpty || requestID.count > 256 {
                throw CommandError(code: .malformed, message: "id must be 1 to 256 characters, got \(requestID.count)")
            }
        }
        let at = try integer("at", what: "epoch milliseconds (an integer)")
        let ifRevision = try integer("if_revision", what: "a revision number").map { Int(clamping: $0) }
        let seconds = try integer("seconds", what: "a whole number of seconds").map { Int(clamping: $0) }

        let operation: TimerOperation
        switch action {
        case "start":
            var spec: TimerSpec?
            if let specValue = members["spec"], !specValue.isNull {
                do throws(SpecError) {
                    spec = try TimerSpec(json: specValue, presets: presets)
                } catch {
                    throw CommandError(code: .invalidSpec, message: error.message)
                }
            } else if let preset = members["preset"], !preset.isNull {
                var specMembers: [String: JSONValue] = ["preset": preset]
                for (key, value) in members where !TimerCommand.envelopeKeys.contains(key) { specMembers[key] = value }
                do throws(SpecError) {
                    spec = try TimerSpec(json: .object(specMembers), presets: presets)
                } catch {
                    throw CommandError(code: .invalidSpec, message: error.message)
                }
            }
            var restart = false
            if let value = members["restart"], !value.isNull {
                guard let flag = value.bool else {
                    throw CommandError(code: .malformed, message: "restart must be true or false, got \(value)")
                }
                restart = flag
            }
            operation = .start(spec: spec, startAt: try integer("start_at", what: "epoch milliseconds (an integer)"), restart: restart)
        case "adjust":
            guard let seconds else {
                throw CommandError(code: .malformed, message: "adjust needs seconds, like {\"action\":\"adjust\",\"seconds\":30}")
            }
            operation = .adjust(seconds: seconds)
        case "snooze":
            operation = .snooze(seconds: seconds ?? TimerOperation.defaultSnoozeSeconds)
        case "pause": operation = .pause
        case "resume": operation = .resume
        case "toggle": operation = .toggle
        case "cancel": operation = .cancel
        case "reset": operation = .reset
        case "finish": operation = .finish
        case "skip": operation = .skip
        case "back": operation = .back
        case "ack": operation = .ack
        default:
            throw CommandError(code: .malformed, message: "unknown action '\(action)'; expected one of \(TimerCommand.actions.joined(separator: ", "))")
        }
        self.init(operation: operation, at: at, ifRevision: ifRevision, requestID: requestID)
    }
}

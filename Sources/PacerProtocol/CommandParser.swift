import PacerCore

/// Turns `cmd` payloads into `NodeCommand`s: JSON objects, or plain words on a timer topic.
public struct CommandParser: Sendable {
    public var maxPayloadBytes: Int

    public init(maxPayloadBytes: Int = ProtocolLimits.defaultMaxPayloadBytes) {
        self.maxPayloadBytes = maxPayloadBytes
    }

    static let timerActions = TimerAction.allCases.map(\.rawValue)
    static let nodeActions = NodeAction.allCases.map(\.rawValue)
    /// Every plain word a timer's `cmd` topic takes: the timer actions' (`TimerAction.words`)
    /// and `delete`, for the help texts and the vocabulary.
    public static let plainWords: [String] = Array(TimerAction.words.dropLast(2)) + [NodeAction.delete.rawValue] + TimerAction.words.suffix(2)
    /// Keys every command may carry besides its own arguments.
    static let commonKeys: Set<String> = Set([WireField.action, .id, .at, .ifRevision, .timer].map(\.rawValue))

    /// The request id of a payload that fails to parse, so the error reply can still echo it.
    public func requestID(in payload: [UInt8]) -> String? {
        guard payload.count <= maxPayloadBytes else { return nil }
        // Read as far as the payload goes (an id before the error is still found).
        // Only an id the command would accept (`optionalString`'s rules) is echoed.
        guard let o = JSONValue.leadingMembers(payload) else { return nil }
        return (try? Self.optionalString(o, .id, maxLength: ProtocolLimits.maxRequestIDLength)) ?? nil
    }

    /// Parses a payload from a timer's `cmd` topic (`timerID` from the topic) or the node `cmd` topic (nil).
    public func parse(_ payload: [UInt8], timerID topicTimer: String?) -> Result<NodeCommand, ReplyError> {
        guard payload.count <= maxPayloadBytes else {
            return .failure(.init(.payloadTooLarge, "the command is \(payload.count) bytes; the limit is \(maxPayloadBytes) bytes"))
        }
        let json: JSONValue
        switch Self.content(of: payload, wordsFor: topicTimer) {
        case .empty:
            return .failure(.init(.badJSON, "the command is empty; send JSON like {\"action\":\"start\"}" + (topicTimer != nil ? " or a word like start" : "")))
        case .word(let text, let timer):
            return parseWord(text, timer: timer)
        case .json(.success(let value)):
            json = value
        case .json(.failure(let error)):
            if case .duplicateKey = error.reason {
                return .failure(.init(.badJSON, "the command is ambiguous: \(error); send each key once"))
            }
            return .failure(.init(.badJSON, "the command is not valid JSON (\(error)); send an object like {\"action\":\"pause\",\"id\":\"r1\"}"))
        }
        guard case .object(let object) = json else {
            return .failure(.init(.badJSON, "the command must be a JSON object like {\"action\":\"pause\"}"))
        }
        do {
            return .success(try parseObject(object, topicTimer: topicTimer))
        } catch {
            return .failure(error)
        }
    }

    /// Parses a clock request from the `time` topic: an empty payload, or a JSON object with
    /// an optional `id` (and optionally `"action":"time"`). Returns the request id.
    public func parseTimeRequest(_ payload: [UInt8], topic: String) -> Result<String?, ReplyError> {
        guard payload.count <= maxPayloadBytes else {
            return .failure(.init(.payloadTooLarge, "the request is \(payload.count) bytes; the limit is \(maxPayloadBytes) bytes"))
        }
        let example = "send an empty message or {\"id\":\"sync-1\"} on \(topic)"
        let o: [String: JSONValue]
        switch Self.content(of: payload, wordsFor: nil) {
        case .empty: return .success(nil)
        case .json(.success(.object(let object))): o = object
        case .json(.failure(let error)):
            return .failure(.init(.badJSON, "a clock request must be empty or a JSON object (\(error)); \(example)"))
        case .word, .json: return .failure(.init(.badJSON, "a clock request must be empty or a JSON object; \(example)"))
        }
        do {
            let id = try Self.optionalString(o, .id, maxLength: ProtocolLimits.maxRequestIDLength)
            if let action = o[.action], action != .string(NodeAction.time.rawValue) {
                return .failure(.init(.unknownAction, "\(topic) only answers the time; send commands on the cmd topics, or \(example)"))
            }
            if let key = Set(o.keys).subtracting([WireField.id.rawValue, WireField.action.rawValue]).sorted().first {
                return .failure(.init(.invalidArgument, "a clock request takes only \"id\", not \"\(key)\"; \(example)"))
            }
            return .success(id)
        } catch {
            return .failure(error)
        }
    }

    /// A plain word (`pause`, `+30`, `snooze 120`, ...), read by `TimerOperation(word:)` (TimerAction.swift);
    /// `delete` is the node's own.
    private func parseWord(_ text: String, timer: String) -> Result<NodeCommand, ReplyError> {
        // The id comes from the topic level; JSON commands check it in requireTimer().
        do { try TimerMachine.validateID(timer) } catch {
            return .failure(.init(.invalidTimerID, "the topic's timer level is not a timer id: \(error.message)"))
        }
        if text.lowercased() == NodeAction.delete.rawValue {
            return .success(NodeCommand(request: .delete(id: timer)))
        }
        guard let operation = TimerOperation(word: text) else {
            let words = Self.plainWords.joined(separator: ", ")
            return .failure(.init(.unknownAction, "unknown command '\(printable(text))'; send one of \(words), or JSON"))
        }
        switch operation {
        case .adjust(let seconds) where seconds == 0 || seconds.magnitude > TimerOperation.maxAdjustSeconds:
            return .failure(.init(.invalidArgument, "adjust takes 1 to \(TimerOperation.maxAdjustSeconds) seconds, got \(seconds)"))
        case .snooze(let seconds) where !(1...TimerOperation.maxSnoozeSeconds).contains(seconds):
            return .failure(.init(.invalidArgument, "snooze takes 1 to \(TimerOperation.maxSnoozeSeconds) seconds, got \(seconds)"))
        default:
            return .success(NodeCommand(request: .timer(id: timer, operation: operation, spec: nil, name: nil)))
        }
    }

    private func parseObject(_ o: [String: JSONValue], topicTimer: String?) throws(ReplyError) -> NodeCommand {
        let requestID = try Self.optionalString(o, .id, maxLength: ProtocolLimits.maxRequestIDLength)
        guard case .string(let action)? = o[.action] else {
            throw ReplyError(.unknownAction, o[.action] == nil
                ? "the command has no \"action\"; add one of \((Self.timerActions + Self.nodeActions).joined(separator: ", "))"
                : "\"action\" must be a text value like \"pause\"")
        }
        let at = try Self.optionalInt(o, .at, range: 0...ProtocolLimits.latestInstantMs)
        let ifRevision = try Self.optionalInt(o, .ifRevision, range: 0...ProtocolLimits.maxIfRevision).map(Int.init)

        // The timer: from the topic, else from the "timer" field.
        var timer = topicTimer
        if let field = try Self.optionalString(o, .timer, maxLength: 200) {
            if let topicTimer, field != topicTimer {
                throw ReplyError(.invalidArgument, "\"timer\" is '\(field)' but the command came on the topic of timer '\(topicTimer)'; leave \"timer\" out")
            }
            timer = field
        }
        func requireTimer() throws(ReplyError) -> String {
            guard let timer else {
                throw ReplyError(.invalidArgument, "\"\(action)\" needs \"timer\": the id of the timer, e.g. {\"action\":\"\(action)\",\"timer\":\"kitchen\"}")
            }
            do { try TimerMachine.validateID(timer) } catch {
                throw ReplyError(.invalidTimerID, topicTimer == nil
                    ? "\"timer\" is not a timer id: \(error.message)"
                    : "the topic's timer level is not a timer id: \(error.message)")
            }
            return timer
        }
        func command(_ request: NodeCommand.Request, allowed fields: [WireField]) throws(ReplyError) -> NodeCommand {
            let allowed = Set(fields.map(\.rawValue))
            let unknown = Set(o.keys).subtracting(Self.commonKeys).subtracting(allowed)
            if let key = unknown.sorted().first {
                let extra = allowed.isEmpty ? "" : "; it takes \(allowed.sorted().map { "\"\($0)\"" }.joined(separator: ", "))"
                throw ReplyError(.invalidArgument, "\"\(action)\" does not take \"\(key)\"\(extra)")
            }
            return NodeCommand(requestID: requestID, at: at, ifRevision: ifRevision, request: request)
        }

        let nodeAction = NodeAction(rawValue: action)
        if topicTimer != nil, nodeAction?.isNodeTopicOnly == true {
            throw ReplyError(.unknownAction, "\"action\" \"\(action)\" is a node command: send it on the node's cmd topic (<base>/cmd), not a timer's")
        }
        if nodeAction?.isNodeWide == true, o[.timer] != nil {
            let why = nodeAction == .saveWorkout || nodeAction == .deleteWorkout ? "a workout is named by \"workout\""
                : nodeAction == .saveDisplay || nodeAction == .deleteDisplay ? "a display is named by \"display\" and shows \"timers\": [\"main\"]"
                : nodeAction == .setAthlete || nodeAction == .clearAthlete ? "an athlete is named by \"athlete\"" : "it is about the whole node"
            throw ReplyError(.invalidArgument, "\"\(action)\" does not take \"timer\"; \(why)")
        }
        if let plain = TimerAction(rawValue: action)?.plainOperation {
            return try command(.timer(id: try requireTimer(), operation: plain, spec: nil, name: nil), allowed: [])
        }
        let maxAdjust = Int64(ProtocolLimits.maxAdjustSeconds)
        switch (TimerAction(rawValue: action), nodeAction) {
        case (.start?, _):
            let id = try requireTimer()
            let name = try Self.optionalName(o)
            let restart = try Self.optionalBool(o, .restart) ?? false
            let startAt = try Self.optionalInstant(o, .startAt)
            var spec: JSONValue?
            if let s = o[.spec] {
                guard case .object = s else { throw ReplyError(.invalidSpec, "\"spec\" must be an object like {\"kind\":\"countdown\",\"duration\":\"5m\"}") }
                if o[.preset] != nil { throw ReplyError(.invalidArgument, "give either \"spec\" or \"preset\", not both") }
                spec = s
            } else if let preset = o[.preset] {
                guard case .string = preset else { throw ReplyError(.invalidSpec, "\"preset\" must be a preset name like \"tabata\"") }
                // Every other key is a parameter of the preset (e.g. "rounds" for emom).
                var merged = o.filter { !Self.commonKeys.contains($0.key) && ![WireField.name, .restart, .startAt].map(\.rawValue).contains($0.key) }
                merged[.preset] = preset
                spec = .object(merged)
                return NodeCommand(requestID: requestID, at: at, ifRevision: ifRevision,
                                   request: .timer(id: id, operation: .start(spec: nil, startAt: startAt, restart: restart), spec: spec, name: name))
            }
            return try command(.timer(id: id, operation: .start(spec: nil, startAt: startAt, restart: restart), spec: spec, name: name),
                               allowed: [.spec, .name, .restart, .startAt])
        case (.adjust?, _):
            guard let seconds = try Self.optionalInt(o, .seconds, range: -maxAdjust...maxAdjust), seconds != 0 else {
                throw ReplyError(.invalidArgument, "\"adjust\" needs \"seconds\": a whole number from -\(maxAdjust) to \(maxAdjust) other than 0, e.g. {\"action\":\"adjust\",\"seconds\":30}")
            }
            return try command(.timer(id: try requireTimer(), operation: .adjust(seconds: Int(seconds)), spec: nil, name: nil), allowed: [.seconds])
        case (.snooze?, _):
            let seconds = try Self.optionalInt(o, .seconds, range: 1...Int64(ProtocolLimits.maxSnoozeSeconds)).map(Int.init)
                ?? ProtocolLimits.defaultSnoozeSeconds
            return try command(.timer(id: try requireTimer(), operation: .snooze(seconds: seconds), spec: nil, name: nil), allowed: [.seconds])
        case (.extend?, _):
            let seconds = try Self.optionalInt(o, .seconds, range: 1...maxAdjust).map(Int.init)
            let rounds = try Self.optionalInt(o, .rounds, range: 1...Int64(TimerSpec.maxRounds)).map(Int.init)
            guard seconds != nil || rounds != nil else {
                throw ReplyError(.invalidArgument, "\"extend\" needs \"seconds\" (1 to \(maxAdjust)) or \"rounds\" (1 to \(TimerSpec.maxRounds)), e.g. {\"action\":\"extend\",\"seconds\":60} or {\"action\":\"extend\",\"rounds\":2}")
            }
            return try command(.timer(id: try requireTimer(), operation: .extend(seconds: seconds, rounds: rounds), spec: nil, name: nil),
                               allowed: [.seconds, .rounds])
        case (let other?, _):
            // Every other timer action takes no argument and was read above (`plainOperation`).
            throw ReplyError(.unknownAction, "\"\(other.rawValue)\" takes no arguments; send {\"action\":\"\(other.rawValue)\"}")
        case (nil, .create?):
            let id = try requireTimer()
            guard let spec = o[.spec] else {
                throw ReplyError(.invalidSpec, "\"create\" needs \"spec\", e.g. {\"action\":\"create\",\"timer\":\"kitchen\",\"spec\":{\"kind\":\"countdown\",\"duration\":\"10m\"}}")
            }
            guard case .object = spec else { throw ReplyError(.invalidSpec, "\"spec\" must be an object like {\"kind\":\"countdown\",\"duration\":\"5m\"}") }
            return try command(.create(id: id, name: try Self.optionalName(o), spec: spec), allowed: [.name, .spec])
        case (nil, .delete?):
            return try command(.delete(id: try requireTimer()), allowed: [])
        case (nil, .list?):
            return try command(.list, allowed: [])
        case (nil, .time?):
            return try command(.time, allowed: [])
        case (nil, .history?):
            if timer != nil { _ = try requireTimer() }
            let since = try Self.optionalInstant(o, .since)
            let limit = try Self.optionalInt(o, .limit, range: ProtocolLimits.historyLimit).map(Int.init) ?? ProtocolLimits.defaultHistoryLimit
            return try command(.history(timer: timer, sinceMs: since, limit: limit), allowed: [.since, .limit])
        case (nil, .saveWorkout?):
            let id = try Self.requireWorkout(o, action: action)
            guard let spec = o[.spec] else {
                throw ReplyError(.invalidSpec, "\"save_workout\" needs \"spec\", e.g. {\"action\":\"save_workout\",\"workout\":\"hiit\",\"name\":\"HIIT 45/15\",\"spec\":{\"kind\":\"interval\",\"work\":\"45s\",\"rest\":\"15s\",\"rounds\":10}}")
            }
            guard case .object = spec else { throw ReplyError(.invalidSpec, "\"spec\" must be an object like {\"kind\":\"countdown\",\"duration\":\"5m\"}") }
            return try command(.saveWorkout(id: id, name: try Self.optionalName(o, allowingSlash: true), spec: spec), allowed: [.workout, .name, .spec])
        case (nil, .saveDisplay?):
            let id = try Self.requireDisplay(o, action: action)
            // Every other member is the display's configuration, checked by the node.
            let settings = o.filter { !Self.commonKeys.contains($0.key) && $0.key != WireField.display.rawValue }
            guard settings[.type] != nil else {
                throw ReplyError(.invalidArgument, "\"save_display\" needs \"type\" (awtrix or wled) and its settings, e.g. {\"action\":\"save_display\",\"display\":\"wall\",\"type\":\"awtrix\",\"prefix\":\"awtrix_gym\",\"timers\":[\"main\"]}")
            }
            return NodeCommand(requestID: requestID, at: at, ifRevision: ifRevision, request: .saveDisplay(id: id, settings: .object(settings)))
        case (nil, .saveSchedule?):
            guard case .object = o[.schedule] else {
                throw ReplyError(.invalidArgument, "\"save_schedule\" needs \"schedule\": an object like {\"id\":\"hiit\",\"timer\":\"main\",\"preset\":\"tabata\",\"weekly\":[{\"days\":\"weekdays\",\"at\":[\"06:30\"]}]} (docs/schedules.md)")
            }
            return try command(.saveSchedule(schedule: o[.schedule]!), allowed: [.schedule])
        case (nil, .deleteSchedule?):
            return try command(.deleteSchedule(id: try Self.requireSchedule(o, action: action)), allowed: [.schedule])
        case (nil, .skipNext?):
            // A schedule's next class, or the next class on a timer (its own `cmd` topic, or `timer`).
            if o[.schedule] == nil, let timer {
                return try command(.skipNext(schedule: nil, timer: timer), allowed: [])
            }
            return try command(.skipNext(schedule: try Self.requireSchedule(o, action: action), timer: nil), allowed: [.schedule])
        case (nil, .listSchedules?):
            return try command(.listSchedules, allowed: [])
        case (nil, .deleteDisplay?):
            return try command(.deleteDisplay(id: try Self.requireDisplay(o, action: action)), allowed: [.display])
        case (nil, .deleteWorkout?):
            return try command(.deleteWorkout(id: try Self.requireWorkout(o, action: action)), allowed: [.workout])
        case (nil, .setAthlete?):
            let id = try Self.requireAthlete(o, action: action)
            var colour: String?
            if let text = try Self.optionalString(o, .colour, maxLength: 40) {
                if let problem = AthleteColour.problem(text) { throw ReplyError(.invalidArgument, "\"colour\": \(problem)") }
                colour = text.lowercased()
            }
            let maxHR = try Self.optionalInt(o, .maxHR, range: Int64(AthleteColour.maxHRRange.lowerBound)...Int64(AthleteColour.maxHRRange.upperBound)).map(Int.init)
            let leaderboard = try Self.optionalBool(o, .leaderboard)
            return try command(.setAthlete(id: id, name: try Self.optionalName(o, allowingSlash: true), colour: colour, maxHR: maxHR,
                                           leaderboard: leaderboard),
                               allowed: [.athlete, .name, .colour, .maxHR, .leaderboard])
        case (nil, .clearAthlete?):
            return try command(.clearAthlete(id: try Self.requireAthlete(o, action: action)), allowed: [.athlete])
        case (nil, .sound?):
            let muted = try Self.optionalBool(o, .muted)
            let volume = try Self.optionalInt(o, .volume, range: 0...100).map(Int.init)
            return try command(.sound(muted: muted, volume: volume), allowed: [.muted, .volume])
        case (nil, nil):
            let known = topicTimer == nil ? Self.timerActions + Self.nodeActions : Self.timerActions + [NodeAction.delete.rawValue]
            throw ReplyError(.unknownAction, "unknown action '\(printable(action))'; use one of \(known.joined(separator: ", "))")
        }
    }

    // MARK: - Typed fields

    /// A saved workout's id (`"workout"`): a timer id's rules, so it can name a topic level.
    static func requireWorkout(_ o: [String: JSONValue], action: String) throws(ReplyError) -> String {
        guard let id = try optionalString(o, .workout, maxLength: 200) else {
            throw ReplyError(.invalidArgument, "\"\(action)\" needs \"workout\": the saved workout's id, e.g. {\"action\":\"\(action)\",\"workout\":\"hiit\"}")
        }
        do { try TimerMachine.validateID(id) } catch {
            throw ReplyError(.invalidArgument, "\"workout\" must be 1 to 64 characters of a-z, 0-9, '_' and '-', starting with a letter or digit; got \"\(printable(id, limit: 70, escapingQuotes: true))\"")
        }
        return id
    }

    /// A schedule's id (`"schedule"`): a timer id's rules.
    static func requireSchedule(_ o: [String: JSONValue], action: String) throws(ReplyError) -> String {
        guard let id = try optionalString(o, .schedule, maxLength: 200) else {
            throw ReplyError(.invalidArgument, "\"\(action)\" needs \"schedule\": the schedule's id, e.g. {\"action\":\"\(action)\",\"schedule\":\"hiit\"}")
        }
        do { try TimerMachine.validateID(id) } catch {
            throw ReplyError(.invalidArgument, "\"schedule\" must be 1 to 64 characters of a-z, 0-9, '_' and '-', starting with a letter or digit; got \"\(printable(id, limit: 70, escapingQuotes: true))\"")
        }
        return id
    }

    /// A saved display's id (`"display"`): a timer id's rules.
    static func requireDisplay(_ o: [String: JSONValue], action: String) throws(ReplyError) -> String {
        guard let id = try optionalString(o, .display, maxLength: 200) else {
            throw ReplyError(.invalidArgument, "\"\(action)\" needs \"display\": the display's id, e.g. {\"action\":\"\(action)\",\"display\":\"wall\"}")
        }
        do { try TimerMachine.validateID(id) } catch {
            throw ReplyError(.invalidArgument, "\"display\" must be 1 to 64 characters of a-z, 0-9, '_' and '-', starting with a letter or digit; got \"\(printable(id, limit: 70, escapingQuotes: true))\"")
        }
        return id
    }

    /// An athlete's id (`"athlete"`): the `+` level of its heart-rate topic, with a timer id's rules.
    static func requireAthlete(_ o: [String: JSONValue], action: String) throws(ReplyError) -> String {
        guard let id = try optionalString(o, .athlete, maxLength: 200) else {
            throw ReplyError(.invalidArgument, "\"\(action)\" needs \"athlete\": the athlete's id (its heart-rate topic's last level), e.g. {\"action\":\"\(action)\",\"athlete\":\"alice\"}")
        }
        do { try TimerMachine.validateID(id) } catch {
            throw ReplyError(.invalidArgument, "\"athlete\" must be 1 to 64 characters of a-z, 0-9, '_' and '-', starting with a letter or digit; got \"\(printable(id, limit: 70, escapingQuotes: true))\"")
        }
        return id
    }

    static func optionalString(_ o: [String: JSONValue], _ field: WireField, maxLength: Int) throws(ReplyError) -> String? {
        let key = field.rawValue
        guard let value = o[key], value != .null else { return nil }
        guard case .string(let s) = value else { throw ReplyError(.invalidArgument, "\"\(key)\" must be text") }
        guard s.count <= maxLength else { throw ReplyError(.invalidArgument, "\"\(key)\" is \(s.count) characters; the limit is \(maxLength)") }
        guard !s.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw ReplyError(.invalidArgument, "\"\(key)\" contains control characters")
        }
        return s
    }

    /// A timer name: the core's rules (1-100 characters, no control characters) and no MQTT
    /// topic characters (`/`, `+`, `#`), so a name can never be mistaken for a topic level.
    /// A saved workout's name (`allowingSlash`) may hold them ("HIIT 45/15"): it never names a topic.
    static func optionalName(_ o: [String: JSONValue], allowingSlash: Bool = false) throws(ReplyError) -> String? {
        guard let name = try optionalString(o, .name, maxLength: ProtocolLimits.maxNameLength) else { return nil }
        do { try TimerMachine.validateName(name) } catch { throw ReplyError(.invalidArgument, error.message) }
        if !allowingSlash, let bad = name.first(where: { "/+#".contains($0) }) {
            throw ReplyError(.invalidArgument, "name cannot contain '\(bad)' (MQTT topic characters / + # are not allowed), got \"\(name)\"")
        }
        return name
    }

    static func optionalInt(_ o: [String: JSONValue], _ field: WireField, range: ClosedRange<Int64>) throws(ReplyError) -> Int64? {
        let key = field.rawValue
        guard let value = o[key], value != .null else { return nil }
        guard case .number(let d) = value, d.rounded() == d, d.magnitude < 9e15 else {
            throw ReplyError(.invalidArgument, "\"\(key)\" must be a whole number")
        }
        let i = Int64(d)
        guard range.contains(i) else {
            throw ReplyError(.invalidArgument, "\"\(key)\" must be between \(range.lowerBound) and \(range.upperBound), got \(i)")
        }
        return i
    }

    static func optionalBool(_ o: [String: JSONValue], _ field: WireField) throws(ReplyError) -> Bool? {
        let key = field.rawValue
        guard let value = o[key], value != .null else { return nil }
        guard case .bool(let b) = value else { throw ReplyError(.invalidArgument, "\"\(key)\" must be true or false") }
        return b
    }

    /// An instant as epoch ms or an ISO 8601 text (`2026-11-22T18:00:00Z`), read by PacerCore's
    /// own strict parser (`ISO8601.parse`: bounded, no Foundation or ICU), between 1970 and 2100.
    static func optionalInstant(_ o: [String: JSONValue], _ field: WireField) throws(ReplyError) -> Millis? {
        let key = field.rawValue
        guard let value = o[key], value != .null else { return nil }
        if case .string(let text) = value {
            switch ISO8601.parse(text) {
            case .success(let ms):
                guard (0...ProtocolLimits.latestInstantMs).contains(ms) else {
                    throw ReplyError(.invalidArgument, "\"\(key)\" must be between 1970-01-01T00:00:00Z and 2100-01-01T00:00:00Z, got \(iso8601(ms: ms))")
                }
                return ms
            case .failure(let error):
                throw ReplyError(.invalidArgument, "\"\(key)\" must be epoch milliseconds or ISO 8601 like 2026-11-22T18:00:00Z; it \(error)")
            }
        }
        return try optionalInt(o, field, range: 0...ProtocolLimits.latestInstantMs)
    }

    /// What a payload holds, Unicode white space around it left out.
    enum Content {
        case empty
        /// Text that does not start with `{`, `[` or `"` on the topic of `timer`: a plain word.
        case word(String, timer: String)
        case json(Result<JSONValue, JSONParseError>)
    }

    /// Reads a payload: a plain word (on a timer's topic, `wordsFor`), or JSON read from the
    /// bytes as they came.
    static func content(of payload: [UInt8], wordsFor timer: String?) -> Content {
        // The usual case, JSON with at most JSON's own white space around it: parsed as it is,
        // with no String made first (error offsets are then the payload's own).
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }
        func opens(_ byte: UInt8) -> Bool { byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") || byte == UInt8(ascii: "\"") }
        func closes(_ byte: UInt8) -> Bool { byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") || byte == UInt8(ascii: "\"") }
        if let first = payload.firstIndex(where: { !isSpace($0) }), let last = payload.lastIndex(where: { !isSpace($0) }),
           opens(payload[first]), closes(payload[last]) {
            return .json(Result { () throws(JSONParseError) in try JSONValue.parse(payload) })
        }
        let text: String
        if payload.allSatisfy({ $0 < 0x80 }) {
            // ASCII (a word like `toggle`): Unicode's white space is here only ASCII's, trimmed
            // from the bytes, without Foundation's NSString bridge (a tenth of a command's work).
            func isASCIISpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }
            let start = payload.firstIndex { !isASCIISpace($0) } ?? payload.endIndex
            let end = payload.lastIndex { !isASCIISpace($0) }.map { $0 + 1 } ?? start
            text = String(decoding: payload[start..<max(start, end)], as: UTF8.self)
        } else {
            text = String(String(decoding: payload, as: UTF8.self).trimmingWhitespace())
        }
        guard let first = text.first else { return .empty }
        if let timer, !"{[\"".contains(first) { return .word(text, timer: timer) }
        // Invalid UTF-8 reaches the parser as it came, so it is refused ("invalid UTF-8 at byte
        // 12"), not read with U+FFFD in place of the bytes.
        let bytes = String(validating: payload, as: UTF8.self) == nil ? payload : Array(text.utf8)
        return .json(Result { () throws(JSONParseError) in try JSONValue.parse(bytes) })
    }
}

public import PacerCore

/// A command's reply as a client reads it (docs/API.md, "Replies"): `{"id", "ok": true, "timer",
/// "revision", "state", ...}` or `{"id", "ok": false, "error": {"code", "message"}}`.
public struct Reply: Sendable, Equatable {
    /// Why the node refused a command. `code` is kept as text: a newer node may send a code
    /// this client does not know (``knownCode`` is then nil).
    public struct Refusal: Sendable, Equatable, Error {
        public var code: String
        public var message: String
        public var knownCode: ReplyErrorCode? { ReplyErrorCode(rawValue: code) }

        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    /// The request id the reply answers (the command's `id`), if any.
    public var id: String?
    /// The whole reply on success; the node's code and message on refusal.
    public var outcome: Result<JSONValue, Refusal>

    /// Reads a reply; nil when `json` is not one (no boolean `ok`).
    public init?(_ json: JSONValue) {
        guard let ok = json[.ok]?.bool else { return nil }
        id = json[.id]?.string
        if ok {
            outcome = .success(json)
        } else {
            let error = json[.error]
            outcome = .failure(Refusal(code: error?[.code]?.string ?? "error",
                                       message: error?[.message]?.string ?? "the node refused the command: \(json)"))
        }
    }

    /// A member of a successful reply, as it came (nil on a refusal): for a client that prints
    /// the node's JSON (`pacer list --json` prints ``WireField/timers``).
    public subscript(_ field: WireField) -> JSONValue? {
        guard case .success(let json) = outcome else { return nil }
        return json[field]
    }

    /// The timer's state in a successful reply (`state`), if it carries one.
    public var state: JSONValue? {
        guard let state = self[.state], state != .null else { return nil }
        return state
    }

    /// ``state`` read as a client reads a retained state.
    public var timerState: TimerState? { state.flatMap(TimerState.init(state:)) }

    /// The timer the reply is about (`timer`).
    public var timer: String? { self[.timer]?.string }

    /// Whether it answers a `delete` (`deleted`).
    public var isDeleted: Bool { self[.deleted]?.bool == true }

    /// The timers of a `list` reply (each a summary of its state), nil for another reply.
    public var timers: [TimerState]? { self[.timers]?.array.map { $0.compactMap(TimerState.init(state:)) } }

    /// The athlete of a `set_athlete` or `clear_athlete` reply.
    public var athlete: String? { self[.athlete]?.string }

    /// Whether it answers a `clear_athlete` (`cleared`).
    public var isCleared: Bool { self[.cleared]?.bool == true }

    /// The athlete's profile as the node keeps it now (`profile`).
    public var profile: AthleteEntry? { self[.profile].flatMap(AthleteEntry.init(json:)) }
}

extension ReplyError {
    /// The refusal's reply: `{"id", "ok": false, "error": {"code", "message"}}`, `id` as the
    /// command gave it (null without one).
    public func reply(id: JSONValue) -> JSONValue {
        var error: [String: JSONValue] = [:]
        error[.code] = .string(code.rawValue)
        error[.message] = .string(message)
        var reply: [String: JSONValue] = [:]
        reply[.id] = id
        reply[.ok] = .bool(false)
        reply[.error] = .object(error)
        return .object(reply)
    }
}

extension Reply {
    /// The members of a `time` reply besides `id` and `ok`: the node's clock at `now`.
    public static func timeMembers(now: Millis) -> [String: JSONValue] {
        var members: [String: JSONValue] = [:]
        members[.nowMs] = .int(now)
        members[.now] = .string(iso8601(ms: now))
        return members
    }

    /// The node's clock of a `time` reply (`now_ms`).
    public var nowMs: Millis? { self[.nowMs]?.int64 }

    /// The node's clock of a `time` reply as text (`now`, ISO 8601).
    public var now: String? { self[.now]?.string }
}

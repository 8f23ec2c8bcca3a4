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
        guard let ok = json["ok"]?.bool else { return nil }
        id = json["id"]?.string
        if ok {
            outcome = .success(json)
        } else {
            let error = json["error"]
            outcome = .failure(Refusal(code: error?["code"]?.string ?? "error",
                                       message: error?["message"]?.string ?? "the node refused the command: \(json)"))
        }
    }

    /// The timer's state in a successful reply (`state`), if it carries one.
    public var state: JSONValue? {
        guard case .success(let json) = outcome, let state = json["state"], state != .null else { return nil }
        return state
    }
}

extension ReplyError {
    /// The refusal's reply: `{"id", "ok": false, "error": {"code", "message"}}`, `id` as the
    /// command gave it (null without one).
    public func reply(id: JSONValue) -> JSONValue {
        .object(["id": id, "ok": .bool(false), "error": .object(["code": .string(code.rawValue), "message": .string(message)])])
    }
}

extension Reply {
    /// The members of a `time` reply besides `id` and `ok`: the node's clock at `now`.
    public static func timeMembers(now: Millis) -> [String: JSONValue] {
        ["now_ms": .int(now), "now": .string(iso8601(ms: now))]
    }

    /// The node's clock of a `time` reply (`now_ms`).
    public var nowMs: Millis? {
        guard case .success(let json) = outcome else { return nil }
        return json["now_ms"]?.int64
    }
}

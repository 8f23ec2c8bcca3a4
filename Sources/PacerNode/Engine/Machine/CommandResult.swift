import PacerCore
import PacerProtocol

/// What a command that succeeded answers: its reply's members besides `id` and `ok`, and a timer's
/// `state`, written straight from its snapshot (`TimerSnapshot.jsonBytes`) instead of built as a
/// 36-member object and sorted again (what that cost: docs/benchmarks/history.md, 2026-11-27, "a command's reply
/// written before the fsync").
struct CommandResult {
    var members: [String: JSONValue]
    /// The reply's `state` member, JSON already written.
    var state: [UInt8]?

    init(members: [String: JSONValue], state: [UInt8]? = nil) {
        self.members = members
        self.state = state
    }

    /// The reply's JSON: the members with `id` and `"ok": true`, and `state` when there is one.
    func replyBytes(id: JSONValue) -> [UInt8] {
        var all = members
        all[.id] = id
        all[.ok] = .bool(true)
        guard let state else { return JSONCoding.encode(.object(all)) }
        return JSONValue.objectBytes(all, adding: WireField.state.rawValue, json: state)
    }
}

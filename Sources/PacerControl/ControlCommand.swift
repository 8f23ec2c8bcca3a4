public import PacerCore

/// A command for a node, built from command-line arguments and checked before anything is
/// sent: the JSON of the command and the timer it is about (nil: a node command).
public struct ControlCommand: Sendable, Equatable {
    /// The command's JSON, without request `id` (the client adds it).
    public var json: JSONValue
    /// The timer the command goes to (its `cmd` topic); nil for `<base>/cmd`.
    public var timer: String?

    public init(json: JSONValue, timer: String?) {
        self.json = json
        self.timer = timer
    }

    /// The timer actions that take no argument.
    public static let simpleActions = ["pause", "resume", "toggle", "cancel", "reset", "finish", "skip", "back", "ack", "delete"]

    /// `pause`, `resume`, `toggle`, `cancel`, `reset`, `finish`, `skip`, `back`, `ack` or `delete`.
    public static func simple(_ action: String, timer: String) throws(ControlError) -> ControlCommand {
        precondition(simpleActions.contains(action), "not a simple action: \(action)")
        try checkTimerID(timer)
        return ControlCommand(json: ["action": .string(action)], timer: timer)
    }

    /// `adjust` by a signed duration in whole seconds: `+30s`, `-10`, `1m`.
    public static func adjust(timer: String, by amount: String) throws(ControlError) -> ControlCommand {
        try checkTimerID(timer)
        let ms = try duration(amount, flag: "the amount")
        guard ms % 1000 == 0, ms != 0, abs(ms) <= 86_400_000 else {
            throw ControlError(.usage, "adjust takes whole seconds from -24h to +24h other than 0, like +30s, -10 or 1m; got '\(amount)'")
        }
        return ControlCommand(json: ["action": "adjust", "seconds": .int(ms / 1000)], timer: timer)
    }

    /// `snooze` for a duration in whole seconds (nil: the node's default, 60 s).
    public static func snooze(timer: String, for amount: String?) throws(ControlError) -> ControlCommand {
        try checkTimerID(timer)
        var json: JSONValue = ["action": "snooze"]
        if let amount {
            let ms = try duration(amount, flag: "the snooze time")
            guard ms % 1000 == 0, (1000...86_400_000).contains(ms) else {
                throw ControlError(.usage, "snooze takes whole seconds from 1s to 24h, like 60, 2m or 90s; got '\(amount)'")
            }
            json = ["action": "snooze", "seconds": .int(ms / 1000)]
        }
        return ControlCommand(json: json, timer: timer)
    }

    /// `list`: every timer with status, phase and remaining time.
    public static let list = ControlCommand(json: ["action": "list"], timer: nil)

    /// `time`: the node's clock (for the clock offset).
    public static let time = ControlCommand(json: ["action": "time"], timer: nil)

    /// Checks a timer id as the node would (`[a-z0-9][a-z0-9_-]{0,63}`).
    public static func checkTimerID(_ id: String) throws(ControlError) {
        do {
            try TimerMachine.validateID(id)
        } catch {
            let message = error.message.hasPrefix("id ") ? "the timer " + error.message : error.message
            throw ControlError(.usage, message)
        }
    }

    /// Parses a duration with PacerCore's parser, naming `flag` in the error.
    static func duration(_ text: String, flag: String) throws(ControlError) -> Millis {
        do {
            return try Durations.parse(text, field: flag)
        } catch {
            throw ControlError(.usage, error.message)
        }
    }
}

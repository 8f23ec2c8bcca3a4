public import PacerCore
public import PacerProtocol

/// A command for a node, built from command-line arguments and checked before anything is
/// sent: a ``NodeCommand`` of the wire module, encoded by it (`NodeCommand.json`) and sent on
/// its topic (`NodeCommand.topic(in:)`), so the node's parser reads back exactly this command.
public struct ControlCommand: Sendable, Equatable {
    /// The command, without request `id` or `at` (the client adds them).
    public var command: NodeCommand

    public init(_ command: NodeCommand) {
        self.command = command
    }

    /// The command's JSON as sent, without request `id`.
    public var json: JSONValue { command.json }
    /// The timer whose `cmd` topic the command goes to; nil for `<base>/cmd`.
    public var timer: String? { command.topicTimer }

    /// A command on `timer` that takes no argument (``SimpleTimerCommand``): a timer action
    /// without one, or `delete`.
    public static func simple(_ simple: SimpleTimerCommand, timer: String) throws(ControlError) -> ControlCommand {
        try checkTimerID(timer)
        switch simple {
        case .delete:
            return ControlCommand(NodeCommand(request: .delete(id: timer)))
        case .action(let action):
            guard let operation = action.plainOperation else { preconditionFailure("\(action) takes an argument") }
            return ControlCommand(NodeCommand(request: .timer(id: timer, operation: operation, spec: nil, name: nil)))
        }
    }

    /// `adjust` by a signed duration in whole seconds: `+30s`, `-10`, `1m`.
    public static func adjust(timer: String, by amount: String) throws(ControlError) -> ControlCommand {
        try checkTimerID(timer)
        let ms = try duration(amount, flag: "the amount")
        let limit = Millis(ProtocolLimits.maxAdjustSeconds) * 1000
        guard ms % 1000 == 0, ms != 0, abs(ms) <= limit else {
            throw ControlError(.usage, "adjust takes whole seconds from -\(limit / 3_600_000)h to +\(limit / 3_600_000)h other than 0, like +30s, -10 or 1m; got '\(amount)'")
        }
        return ControlCommand(NodeCommand(request: .timer(id: timer, operation: .adjust(seconds: Int(ms / 1000)), spec: nil, name: nil)))
    }

    /// `snooze` for a duration in whole seconds (nil: the protocol's default, 60 s).
    public static func snooze(timer: String, for amount: String?) throws(ControlError) -> ControlCommand {
        try checkTimerID(timer)
        var seconds = ProtocolLimits.defaultSnoozeSeconds
        if let amount {
            let ms = try duration(amount, flag: "the snooze time")
            let limit = Millis(ProtocolLimits.maxSnoozeSeconds) * 1000
            guard ms % 1000 == 0, (1000...limit).contains(ms) else {
                throw ControlError(.usage, "snooze takes whole seconds from 1s to \(limit / 3_600_000)h, like 60, 2m or 90s; got '\(amount)'")
            }
            seconds = Int(ms / 1000)
        }
        return ControlCommand(NodeCommand(request: .timer(id: timer, operation: .snooze(seconds: seconds), spec: nil, name: nil)))
    }

    /// `list`: every timer with status, phase and remaining time.
    public static let list = ControlCommand(NodeCommand(request: .list))

    /// `time`: the node's clock (for the clock offset).
    public static let time = ControlCommand(NodeCommand(request: .time))

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

/// A command on one timer that takes no argument: `pacer pause main`, `pacer delete kitchen`,
/// the keys of `pacer watch`.
public enum SimpleTimerCommand: Sendable, Hashable {
    /// A timer action that takes no argument (its `plainOperation` is not nil).
    case action(TimerAction)
    /// `delete` (a node action that a timer's topic takes too).
    case delete

    /// Every one: the timer actions without an argument, in the protocol's order, then `delete`.
    public static var all: [SimpleTimerCommand] { TimerAction.plain.map(action) + [.delete] }

    /// Its word on the wire (and its subcommand's name): `pause`, …, `ack`, `delete`.
    public var word: String {
        switch self {
        case .action(let action): action.rawValue
        case .delete: NodeAction.delete.rawValue
        }
    }
}

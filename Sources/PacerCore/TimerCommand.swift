/// What a command asks a timer to do.
public enum TimerOperation: Sendable, Equatable {
    /// Start from the beginning. `spec` (when given) replaces the timer's spec; `startAt`
    /// in the future schedules the start; `restart` allows starting over a running or
    /// paused timer.
    case start(spec: TimerSpec?, startAt: Millis?, restart: Bool)
    case pause, resume, toggle, cancel, reset, finish, skip, back, ack
    /// ±N seconds on the current segment.
    case adjust(seconds: Int)
    /// An expired timer runs again for N seconds, then expires again.
    case snooze(seconds: Int)
    /// More of a running or paused run: `seconds` added to the current segment, `rounds` added
    /// to an interval timer's rounds (at least one of the two).
    case extend(seconds: Int?, rounds: Int?)

    /// Snooze length when none is given (`snooze` as a plain word): 60 s.
    public static let defaultSnoozeSeconds = 60
    /// The limit of `adjust` (either sign) and `snooze`: one day, in seconds. The core refuses
    /// more, and the node's parser refuses it before the core sees it, with the same bound.
    public static let maxAdjustSeconds = 86_400
    public static let maxSnoozeSeconds = 86_400
}

/// A command to one timer, with the instant the person acted and an optional revision guard.
public struct TimerCommand: Sendable, Equatable {
    public var operation: TimerOperation
    /// When the person pressed the button (node timeline); clamped to the lag window.
    public var at: Millis?
    /// Reject with `revision_conflict` unless the timer is at this revision.
    public var ifRevision: Int?
    /// The request id (`id`) that makes the command idempotent; the node dedups it with a
    /// `RequestLedger`. The machine itself does not use it.
    public var requestID: String?

    public init(operation: TimerOperation, at: Millis? = nil, ifRevision: Int? = nil, requestID: String? = nil) {
        self.operation = operation
        self.at = at
        self.ifRevision = ifRevision
        self.requestID = requestID
    }

    public init(_ operation: TimerOperation, at: Millis? = nil, ifRevision: Int? = nil, requestID: String? = nil) {
        self.init(operation: operation, at: at, ifRevision: ifRevision, requestID: requestID)
    }
}

/// Why a command was refused. A refused command changed nothing.
public struct CommandError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why, as a type: the wire's error code of each is PacerProtocol's (`ReplyErrorCode`,
    /// `ReplyError(_:)`), the one place that spells them.
    public enum Code: Sendable, CaseIterable {
        /// The command does not apply to the timer's status (pause an idle timer).
        case invalidState
        /// `if_revision` did not match.
        case revisionConflict
        /// A bad argument (adjust by 0 s, snooze for 8 days).
        case invalidArgument
        /// The timer's spec does not validate.
        case invalidSpec
    }

    public var code: Code
    /// A sentence a person can act on: `cannot pause timer 'kitchen': it is idle; start it first`.
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

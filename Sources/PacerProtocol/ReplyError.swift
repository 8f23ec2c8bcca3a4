public import PacerCore

/// Error codes of command replies (docs/API.md lists them with examples): the one place each
/// code is spelled. The core's refusals (`CommandError.Code`) are typed; ``init(_:)`` gives
/// their codes.
public enum ReplyErrorCode: String, Sendable, CaseIterable {
    case badJSON = "bad_json"
    case payloadTooLarge = "payload_too_large"
    case unknownAction = "unknown_action"
    case invalidArgument = "invalid_argument"
    case invalidTimerID = "invalid_timer_id"
    case unknownTimer = "unknown_timer"
    case timerExists = "timer_exists"
    case tooManyTimers = "too_many_timers"
    case invalidSpec = "invalid_spec"
    case invalidState = "invalid_state"
    case revisionConflict = "revision_conflict"
    case storageFailure = "storage_failure"
    case rateLimited = "rate_limited"
    case unknownWorkout = "unknown_workout"
    case unknownAthlete = "unknown_athlete"
    case unknownDisplay = "unknown_display"
    case unknownSchedule = "unknown_schedule"

    /// The code of a refusal of the core.
    public init(_ code: CommandError.Code) {
        switch code {
        case .invalidState: self = .invalidState
        case .revisionConflict: self = .revisionConflict
        case .invalidArgument: self = .invalidArgument
        case .invalidSpec: self = .invalidSpec
        }
    }
}

/// A command that cannot be carried out, with a message a person can act on.
public struct ReplyError: Error, Sendable, Equatable {
    public var code: ReplyErrorCode
    public var message: String
    /// The longest message, in characters: a message quotes what the sender wrote (a key, a
    /// preset name, a duration), which may be 64 KB long.
    public static let maxMessageLength = 400

    /// - Parameter message: cut to ``maxMessageLength`` characters, with control, format and
    ///   line-separating characters escaped (`\u{A}`), so no sender can forge a log line.
    public init(_ code: ReplyErrorCode, _ message: String) {
        self.code = code
        self.message = printable(message, limit: Self.maxMessageLength)
    }

    /// The reply to a command the core refused (its code and message).
    public init(_ error: CommandError) {
        self.init(ReplyErrorCode(error.code), error.message)
    }
}

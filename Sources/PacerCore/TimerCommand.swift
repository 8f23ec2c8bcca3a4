/// The actions a timer takes, by their word on the wire (docs/API.md, "Commands"): the one list the
/// core, the node's command parser and its help texts are built from.
public enum TimerAction: String, Sendable, CaseIterable {
    case start, pause, resume, toggle, cancel, reset, finish, skip, back, adjust, ack, snooze

    /// The operation of an action that takes no argument (`pause`, `ack`, ...); nil for
    /// `start`, `adjust` and `snooze`, which take some.
    public var plainOperation: TimerOperation? {
        switch self {
        case .pause: .pause
        case .resume: .resume
        case .toggle: .toggle
        case .cancel: .cancel
        case .reset: .reset
        case .finish: .finish
        case .skip: .skip
        case .back: .back
        case .ack: .ack
        case .start, .adjust, .snooze: nil
        }
    }

    /// The plain words a timer's `cmd` topic takes, for help texts:
    /// `start, restart, pause, …, ack, snooze, snooze N, +N, -N`.
    public static var words: [String] {
        allCases.flatMap { action -> [String] in
            switch action {
            case .start: ["start", "restart"]
            case .adjust: []  // written +N / -N (or "adjust N"), listed last
            case .snooze: ["snooze", "snooze N"]
            default: [action.rawValue]
            }
        } + ["+N", "-N"]
    }
}

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

    /// Snooze length when none is given (`snooze` as a plain word): 60 s.
    public static let defaultSnoozeSeconds = 60
    /// The limit of `adjust` (either sign) and `snooze`: one day, in seconds. The core refuses
    /// more, and the node's parser refuses it before the core sees it, with the same bound.
    public static let maxAdjustSeconds = 86_400
    public static let maxSnoozeSeconds = 86_400

    /// The action this operation is.
    public var kind: TimerAction {
        switch self {
        case .start: .start
        case .pause: .pause
        case .resume: .resume
        case .toggle: .toggle
        case .cancel: .cancel
        case .reset: .reset
        case .finish: .finish
        case .skip: .skip
        case .back: .back
        case .ack: .ack
        case .adjust: .adjust
        case .snooze: .snooze
        }
    }

    /// The action's word on the wire (`start`, `pause`, ..., `adjust`, `snooze`).
    public var action: String { kind.rawValue }

    /// Parses a plain-word command of a timer's `cmd` topic: `start`, `pause`, `resume`,
    /// `toggle`, `cancel`, `reset`, `finish`, `skip`, `back`, `ack`, `snooze` (60 s),
    /// `snooze 120`, `+30`, `-10`. Nil for anything else.
    public init?(word: String) {
        let text: String
        if word.utf8.allSatisfy({ $0 < 0x80 }) {
            // ASCII (the usual word): the same filter and lowercasing over bytes, without a
            // Unicode property lookup per character.
            var bytes: [UInt8] = []
            bytes.reserveCapacity(word.utf8.count)
            for byte in word.utf8 where !(0x09...0x0D).contains(byte) {
                bytes.append((0x41...0x5A).contains(byte) ? byte + 0x20 : byte)
            }
            text = String(decoding: bytes, as: UTF8.self)
        } else {
            text = word.filter { !$0.isWhitespace || $0 == " " }.lowercased()
        }
        // `split` leaves out empty parts: spaces around and between the words need no trimming.
        // (A trim building a String from reversed Characters was a tenth of a toggle's work.)
        let parts = text.split(separator: " ")
        if parts.count == 2, parts[0] == "snooze", let seconds = Int(parts[1]) {
            self = .snooze(seconds: seconds)
            return
        }
        if parts.count == 2, parts[0] == "adjust", let seconds = Int(parts[1]) {
            self = .adjust(seconds: seconds)
            return
        }
        guard parts.count == 1 else { return nil }
        let single = parts[0]
        // A sign and ASCII digits only: `Int` would also take a second sign, and `--9223372036854775808`
        // (Int.min after the first "-") then trapped on its negation.
        if single.first == "+" || single.first == "-", single.count > 1, single.count <= 19,
           single.utf8.dropFirst().allSatisfy({ (0x30...0x39).contains($0) }), let seconds = Int(single.dropFirst()) {
            self = .adjust(seconds: single.first == "-" ? -seconds : seconds)
            return
        }
        if single == "restart" {
            self = .start(spec: nil, startAt: nil, restart: true)
            return
        }
        guard let action = TimerAction(rawValue: String(single)) else { return nil }
        switch action {
        case .start: self = .start(spec: nil, startAt: nil, restart: false)
        case .snooze: self = .snooze(seconds: TimerOperation.defaultSnoozeSeconds)
        case .adjust: return nil  // needs its seconds
        default:
            guard let operation = action.plainOperation else { return nil }
            self = operation
        }
    }
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
    public enum Code: String, Sendable, CaseIterable {
        /// The command does not apply to the timer's status (pause an idle timer).
        case invalidState = "invalid_state"
        /// `if_revision` did not match.
        case revisionConflict = "revision_conflict"
        /// A bad argument (adjust by 0 s, snooze for 8 days).
        case invalidArgument = "invalid_argument"
        /// The timer's spec does not validate.
        case invalidSpec = "invalid_spec"
    }

    public var code: Code
    /// A sentence a person can act on: `cannot pause timer 'kitchen': it is idle; start it first`.
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// `{"code": ..., "message": ...}` as in a reply (docs/API.md, "Replies").
    public var json: JSONValue { ["code": .string(code.rawValue), "message": .string(message)] }
}

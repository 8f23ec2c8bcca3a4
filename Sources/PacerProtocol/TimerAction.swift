public import PacerCore

/// The actions a timer takes, by their word on the wire (docs/API.md, "Commands"): the one list
/// the node's command parser, the control commands, Home Assistant's buttons and the help
/// texts are built from. The core knows the operations (`TimerOperation`), not their words.
public enum TimerAction: String, Sendable, CaseIterable {
    case start, pause, resume, toggle, cancel, reset, finish, skip, back, adjust, ack, snooze, extend

    /// The plain word that starts a timer over when it runs or is paused (`start` with
    /// `"restart": true`).
    public static let restartWord = "restart"

    /// The operation of an action that takes no argument (`pause`, `ack`, ...); nil for
    /// `start`, `adjust`, `snooze` and `extend`, which take some.
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
        case .start, .adjust, .snooze, .extend: nil
        }
    }

    /// The actions that take no argument, in order: `pause`, `resume`, ..., `ack`.
    public static var plain: [TimerAction] { allCases.filter { $0.plainOperation != nil } }

    /// The plain words a timer's `cmd` topic takes for its actions, for help texts:
    /// `start, restart, pause, …, ack, snooze, snooze N, extend N, +N, -N`.
    public static var words: [String] {
        allCases.flatMap { action -> [String] in
            switch action {
            case .start: [action.rawValue, restartWord]
            case .adjust: []  // written +N / -N (or "adjust N"), listed last
            case .snooze: [action.rawValue, "\(action.rawValue) N"]
            case .extend: ["\(action.rawValue) N"]
            case .pause, .resume, .toggle, .cancel, .reset, .finish, .skip, .back, .ack: [action.rawValue]
            }
        } + ["+N", "-N"]
    }
}

extension TimerOperation {
    /// The action this operation is.
    public var action: TimerAction {
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
        case .extend: .extend
        }
    }

    /// Parses a plain-word command of a timer's `cmd` topic: `start`, `restart`, `pause`,
    /// `resume`, `toggle`, `cancel`, `reset`, `finish`, `skip`, `back`, `ack`, `snooze` (60 s),
    /// `snooze 120`, `adjust 30`, `extend 60` (seconds), `+30`, `-10`. Nil for anything else.
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
        if parts.count == 2, let seconds = Int(parts[1]) {
            switch TimerAction(rawValue: String(parts[0])) {
            case .snooze?: self = .snooze(seconds: seconds); return
            case .adjust?: self = .adjust(seconds: seconds); return
            case .extend?: self = .extend(seconds: seconds, rounds: nil); return
            default: return nil
            }
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
        if single == TimerAction.restartWord {
            self = .start(spec: nil, startAt: nil, restart: true)
            return
        }
        guard let action = TimerAction(rawValue: String(single)) else { return nil }
        switch action {
        case .start: self = .start(spec: nil, startAt: nil, restart: false)
        case .snooze: self = .snooze(seconds: TimerOperation.defaultSnoozeSeconds)
        case .adjust, .extend: return nil  // needs its seconds
        case .pause, .resume, .toggle, .cancel, .reset, .finish, .skip, .back, .ack:
            guard let operation = action.plainOperation else { return nil }
            self = operation
        }
    }
}

public import PacerCore

/// The actions of the node's `cmd` topic besides the timer actions (``TimerAction``).
public enum NodeAction: String, Sendable, CaseIterable {
    case create, delete, list, time, history
    /// Saved workouts: a named spec kept on the node, started like a preset.
    case saveWorkout = "save_workout", deleteWorkout = "delete_workout"
    /// A class's athlete: name, colour and max heart rate kept on the node.
    case setAthlete = "set_athlete", clearAthlete = "clear_athlete"
    /// The node's speaker: mute, unmute, volume (the page's own sound is the page's).
    case sound
    /// An AWTRIX clock or WLED light the node drives, kept on the node (beside the configuration's).
    case saveDisplay = "save_display", deleteDisplay = "delete_display"
    /// The timetable: a schedule kept on the node (beside the configuration's), its next class
    /// skipped, the schedules and the day's classes listed.
    case saveSchedule = "save_schedule", deleteSchedule = "delete_schedule", skipNext = "skip_next", listSchedules = "list_schedules"

    /// Whether only the node's topic takes it: every one but `delete`, which a timer's topic
    /// takes too (as a word or as JSON).
    public var isNodeTopicOnly: Bool { self != .delete && self != .skipNext }
    /// Whether it is about no timer, so it takes no `"timer"`.
    public var isNodeWide: Bool {
        switch self {
        case .list, .time, .saveWorkout, .deleteWorkout, .setAthlete, .clearAthlete, .sound, .saveDisplay, .deleteDisplay,
             .saveSchedule, .deleteSchedule, .listSchedules: true
        case .create, .delete, .history, .skipNext: false
        }
    }
}

/// A command as parsed from a `cmd` topic, before it is applied.
public struct NodeCommand: Sendable, Equatable {
    /// What the command asks for.
    public enum Request: Sendable, Equatable {
        /// A timer operation. `spec` (with `start`) creates or replaces the timer's spec; `name` names a new timer.
        case timer(id: String, operation: TimerOperation, spec: JSONValue?, name: String?)
        case create(id: String, name: String?, spec: JSONValue)
        case delete(id: String)
        case list
        case time
        case history(timer: String?, sinceMs: Millis?, limit: Int)
        /// Keeps `spec` on the node as workout `id` (replacing one of that id); it starts like a
        /// preset: `{"action":"start","preset":"<id>"}`.
        case saveWorkout(id: String, name: String?, spec: JSONValue)
        case deleteWorkout(id: String)
        /// Keeps display `id` on the node: `settings` are its configuration's members
        /// (`type`, `prefix`, `timers`, ...; docs/displays.md), checked by the node.
        case saveDisplay(id: String, settings: JSONValue)
        case deleteDisplay(id: String)
        /// Keeps `schedule` (its members as docs/schedules.md; checked by the node).
        case saveSchedule(schedule: JSONValue)
        case deleteSchedule(id: String)
        /// Skips the next class of schedule `schedule`, or the next class on timer `timer`.
        case skipNext(schedule: String?, timer: String?)
        case listSchedules
        /// Sets athlete `id`'s profile (the members left out are unset): name, `#rrggbb` colour, max HR.
        case setAthlete(id: String, name: String?, colour: String?, maxHR: Int?, leaderboard: Bool? = nil)
        /// Forgets athlete `id`'s profile (the configuration's, if any, applies again).
        case clearAthlete(id: String)
        /// The node's speaker: `muted` and `volume` (0…100 %) as given; neither: what it is now.
        case sound(muted: Bool?, volume: Int?)
    }

    /// The request id (`id`): makes the command idempotent within the dedup window.
    public var requestID: String?
    /// When the person pressed the button (`at`, epoch ms).
    public var at: Millis?
    /// Reject when the timer's revision is not this one (`if_revision`).
    public var ifRevision: Int?
    public var request: Request

    public init(requestID: String? = nil, at: Millis? = nil, ifRevision: Int? = nil, request: Request) {
        self.requestID = requestID
        self.at = at
        self.ifRevision = ifRevision
        self.request = request
    }

    /// The timer the command is about, if any.
    public var timerID: String? {
        switch request {
        case .timer(let id, _, _, _), .create(let id, _, _), .delete(let id): id
        case .history(let timer, _, _): timer
        case .list, .time, .saveWorkout, .deleteWorkout, .setAthlete, .clearAthlete, .sound, .saveDisplay, .deleteDisplay,
             .saveSchedule, .deleteSchedule, .skipNext, .listSchedules: nil
        }
    }
}

extension NodeCommand {
    /// The action word: `pause`, `start`, `create`, `history`, ...
    public var action: String {
        switch request {
        case .timer(_, let operation, _, _): operation.action.rawValue
        case .create: NodeAction.create.rawValue
        case .delete: NodeAction.delete.rawValue
        case .list: NodeAction.list.rawValue
        case .time: NodeAction.time.rawValue
        case .history: NodeAction.history.rawValue
        case .saveWorkout: NodeAction.saveWorkout.rawValue
        case .deleteWorkout: NodeAction.deleteWorkout.rawValue
        case .saveDisplay: NodeAction.saveDisplay.rawValue
        case .deleteDisplay: NodeAction.deleteDisplay.rawValue
        case .saveSchedule: NodeAction.saveSchedule.rawValue
        case .deleteSchedule: NodeAction.deleteSchedule.rawValue
        case .skipNext: NodeAction.skipNext.rawValue
        case .listSchedules: NodeAction.listSchedules.rawValue
        case .setAthlete: NodeAction.setAthlete.rawValue
        case .clearAthlete: NodeAction.clearAthlete.rawValue
        case .sound: NodeAction.sound.rawValue
        }
    }

    /// The timer whose own `cmd` topic the command is sent on (a timer operation or `delete`);
    /// nil: the node's `cmd` topic, with the timer (if any) in `"timer"`.
    public var topicTimer: String? {
        switch request {
        case .timer(let id, _, _, _), .delete(let id): id
        case .create, .list, .time, .history, .saveWorkout, .deleteWorkout, .setAthlete, .clearAthlete, .sound, .saveDisplay, .deleteDisplay,
             .saveSchedule, .deleteSchedule, .skipNext, .listSchedules: nil
        }
    }

    /// The topic the command is sent on.
    public func topic(in topics: Topics) -> String {
        topicTimer.map { topics.timer($0).command } ?? topics.command
    }

    /// The command as JSON, as sent on ``topic(in:)``: what `CommandParser.parse` reads back
    /// into this command (docs/API.md describes each member). A `start` with a preset carries
    /// the preset's parameters beside `"preset"`, as a person writes them.
    public var json: JSONValue {
        var o: [String: JSONValue] = [:]
        o[.action] = .string(action)
        if let requestID { o[.id] = .string(requestID) }
        if let at { o[.at] = .int(at) }
        if let ifRevision { o[.ifRevision] = .int(ifRevision) }
        switch request {
        case .timer(_, let operation, let spec, let name):
            if let name { o[.name] = .string(name) }
            switch operation {
            case .start(_, let startAt, let restart):
                if restart { o[.restart] = .bool(true) }
                if let startAt { o[.startAt] = .int(startAt) }
                if case .object(let members)? = spec, members[.preset] != nil {
                    o.merge(members) { ours, _ in ours }
                } else if let spec {
                    o[.spec] = spec
                }
            case .adjust(let seconds), .snooze(let seconds):
                o[.seconds] = .int(seconds)
            case .extend(let seconds, let rounds):
                if let seconds { o[.seconds] = .int(seconds) }
                if let rounds { o[.rounds] = .int(rounds) }
            case .pause, .resume, .toggle, .cancel, .reset, .finish, .skip, .back, .ack:
                break
            }
        case .create(let id, let name, let spec):
            o[.timer] = .string(id)
            if let name { o[.name] = .string(name) }
            o[.spec] = spec
        case .delete, .list, .time:
            break
        case .history(let timer, let sinceMs, let limit):
            if let timer { o[.timer] = .string(timer) }
            if let sinceMs { o[.since] = .int(sinceMs) }
            o[.limit] = .int(limit)
        case .saveWorkout(let id, let name, let spec):
            o[.workout] = .string(id)
            if let name { o[.name] = .string(name) }
            o[.spec] = spec
        case .deleteWorkout(let id):
            o[.workout] = .string(id)
        case .saveDisplay(let id, let settings):
            if case .object(let members) = settings { o.merge(members) { ours, _ in ours } }
            o[.display] = .string(id)
        case .deleteDisplay(let id):
            o[.display] = .string(id)
        case .saveSchedule(let schedule):
            o[.schedule] = schedule
        case .deleteSchedule(let id):
            o[.schedule] = .string(id)
        case .skipNext(let schedule, let timer):
            if let schedule { o[.schedule] = .string(schedule) }
            if let timer { o[.timer] = .string(timer) }
        case .listSchedules:
            break
        case .setAthlete(let id, let name, let colour, let maxHR, let leaderboard):
            o[.athlete] = .string(id)
            if let name { o[.name] = .string(name) }
            if let colour { o[.colour] = .string(colour) }
            if let maxHR { o[.maxHR] = .int(maxHR) }
            if let leaderboard { o[.leaderboard] = .bool(leaderboard) }
        case .clearAthlete(let id):
            o[.athlete] = .string(id)
        case .sound(let muted, let volume):
            if let muted { o[.muted] = .bool(muted) }
            if let volume { o[.volume] = .int(volume) }
        }
        return .object(o)
    }
}

/// The levels of the topic tree under a node's base (docs/API.md, "Node topics" and "Timer
/// topics"), each spelled once; a timer's plain retained topics end in a ``PlainLeaf``.
public enum TopicLevel: String, Sendable, CaseIterable {
    case status, info, workouts, athletes, sound, displays, cueAhead = "cue_ahead", command = "cmd", reply, time, timers
    case state, event, classSummary = "class", say, next, currentClass = "current_class"
    case recovery
}

/// The topic names of docs/API.md under one base (`pacer/<node>`).
public struct Topics: Sendable, Equatable {
    public let base: String

    public init(base: String) { self.base = base }

    private func path(_ level: TopicLevel) -> String { "\(base)/\(level.rawValue)" }

    /// Retained `online` / `offline` (the last will).
    public var status: String { path(.status) }
    /// Retained JSON: version, node, timers, capabilities.
    public var info: String { path(.info) }
    /// Retained JSON: the saved workouts (`{"workouts":[{"id","name","spec"}, …]}`).
    public var workouts: String { path(.workouts) }
    /// Retained JSON: the class's athletes (present ones and kept profiles).
    public var athletes: String { path(.athletes) }
    /// Retained JSON: one athlete's heart rate, zone and profile (cleared when it leaves).
    public func athleteState(_ id: String) -> String { "\(path(.athletes))/\(id)/\(TopicLevel.state.rawValue)" }
    /// Retained JSON: the node's speaker (`{"available","muted","volume"}`; the `sound` command).
    public var sound: String { path(.sound) }
    /// QoS 1 JSON, not retained: a cue announced `publish.cue_ahead` before it sounds
    /// (`{"timer","cue","due_ms","duration_ms","lead_ms"}`), for other players to duck.
    public var cueAhead: String { path(.cueAhead) }
    /// Retained: the displays saved by command (`save_display`) and how many the configuration has.
    public var displays: String { path(.displays) }
    /// Node commands (in).
    public var command: String { path(.command) }
    /// Replies to commands without an MQTT 5 response topic (out).
    public var reply: String { path(.reply) }
    /// Clock requests (in): answered like the `time` command; the one topic a read-only
    /// display may publish to (deploy/mosquitto/acl.example).
    public var time: String { path(.time) }

    /// Whether a reply may go to `topic` when a read-only client asks for it: `<base>/reply`
    /// or a topic under it.
    public func isReplyTopic(_ topic: String) -> Bool {
        topic == reply || topic.hasPrefix(reply + "/")
    }
    /// The private reply topic of a client that asks with an MQTT 5 response topic
    /// (`<base>/reply/<client id>`: under ``reply``, so the ACL example lets a coach read it).
    public func reply(clientID: String) -> String { "\(reply)/\(clientID)" }

    /// The filter that matches every timer's command topic.
    public var timerCommandFilter: String { timer("+").command }

    /// The topics of timer `id`; `timer("+")` gives the filters that match every timer's.
    public func timer(_ id: String) -> TimerTopics { TimerTopics(prefix: "\(path(.timers))/\(id)") }

    /// The timer id of a timer command topic (`<base>/timers/<id>/cmd`), or nil.
    public func timerID(ofCommandTopic topic: String) -> String? {
        timerID(of: topic, leaf: .command)
    }

    /// The timer id of a timer state topic (`<base>/timers/<id>/state`), or nil.
    public func timerID(ofStateTopic topic: String) -> String? {
        timerID(of: topic, leaf: .state)
    }

    /// Every timer's `next` topic: the node reads the retained ones back to clear a class that
    /// no schedule plans any more.
    public var timerNextFilter: String { timer("+").next }

    /// The timer id of a timer's next-class topic (`<base>/timers/<id>/next`), or nil.
    public func timerID(ofNextTopic topic: String) -> String? {
        timerID(of: topic, leaf: .next)
    }

    /// The timer id of a timer event topic (`<base>/timers/<id>/event`), or nil.
    public func timerID(ofEventTopic topic: String) -> String? {
        timerID(of: topic, leaf: .event)
    }

    private func timerID(of topic: String, leaf level: TopicLevel) -> String? {
        let prefix = path(.timers) + "/"
        let leaf = level.rawValue
        guard topic.hasPrefix(prefix), topic.hasSuffix("/" + leaf) else { return nil }
        // An empty level (`timers//cmd`) is "": the wildcard subscription delivers it, and the
        // sender gets an invalid_timer_id reply rather than silence.
        guard topic.utf8.count >= prefix.utf8.count + leaf.utf8.count + 1 else { return nil }
        let middle = topic.dropFirst(prefix.count).dropLast(leaf.count + 1)
        guard !middle.contains("/") else { return nil }
        return String(middle)
    }

    /// Every topic of the API by name, with `id` in a timer's or an athlete's level and `client`
    /// in a private reply topic's: what the vocabulary fixture lists (`<base>`, `<id>`,
    /// `<client>`). A new topic is added here too.
    public func catalogue(id: String, client: String) -> [String: String] {
        let t = timer(id)
        var all: [String: String] = [
            "status": status, "info": info, "workouts": workouts, "athletes": athletes, "athleteState": athleteState(id),
            "sound": sound, "displays": displays, "cueAhead": cueAhead, "command": command, "reply": reply, "privateReply": reply(clientID: client),
            "time": time,
            "timer.state": t.state, "timer.event": t.event, "timer.classSummary": t.classSummary, "timer.command": t.command,
            "timer.say": t.say, "timer.next": t.next, "timer.currentClass": t.currentClass,
        ]
        for leaf in PlainLeaf.allCases { all["timer.\(leaf)"] = t.plain(leaf) }
        all["timer.recovery"] = t.recovery
        return all
    }
}

/// The last level of a timer's plain retained topics.
public enum PlainLeaf: String, Sendable, CaseIterable {
    case remaining, display, phase, round, rounds, hr
}

/// The topics of one timer.
public struct TimerTopics: Sendable, Equatable {
    let prefix: String
    private func leaf(_ level: TopicLevel) -> String { "\(prefix)/\(level.rawValue)" }
    /// The plain topic ending in `leaf`.
    public func plain(_ leaf: PlainLeaf) -> String { "\(prefix)/\(leaf.rawValue)" }
    public var state: String { leaf(.state) }
    public var remaining: String { plain(.remaining) }
    public var display: String { plain(.display) }
    public var phase: String { plain(.phase) }
    public var round: String { plain(.round) }
    public var rounds: String { plain(.rounds) }
    public var hr: String { plain(.hr) }
    public var event: String { leaf(.event) }
    /// Retained JSON: the class heart-rate summary of the timer's last recorded run (`class_hr`).
    public var classSummary: String { leaf(.classSummary) }
    public var command: String { leaf(.command) }
    /// Not retained: the text of each spoken cue, at its due instant (`sound.speech`).
    public var say: String { leaf(.say) }
    /// Retained: the timer's next scheduled class (`schedules:`); empty when none is ahead.
    public var next: String { leaf(.next) }
    /// Retained: the class a schedule started, while its run goes on (its name, its planned
    /// instant and `late_ms`); empty when the run is not a class's.
    public var currentClass: String { leaf(.currentClass) }

    /// Retained JSON while a rest waits for recovery (`RecoveryProgress`); empty otherwise.
    public var recovery: String { leaf(.recovery) }

    /// Every retained topic of the timer (cleared when it is deleted).
    public var retained: [String] { [state] + plain }
    /// The plain retained topics, for displays that show a value as it comes (they have a
    /// connection of their own with `publish.plain_connection: separate`).
    public var plain: [String] { PlainLeaf.allCases.map(plain) }
}

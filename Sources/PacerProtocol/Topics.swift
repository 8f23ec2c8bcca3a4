/// The topic names of docs/API.md under one base (`pacer/<node>`).
public struct Topics: Sendable, Equatable {
    public let base: String

    public init(base: String) { self.base = base }

    /// Retained `online` / `offline` (the last will).
    public var status: String { "\(base)/status" }
    /// Retained JSON: version, node, timers, capabilities.
    public var info: String { "\(base)/info" }
    /// Retained JSON: the saved workouts (`{"workouts":[{"id","name","spec"}, …]}`).
    public var workouts: String { "\(base)/workouts" }
    /// Retained JSON: the class's athletes (present ones and kept profiles).
    public var athletes: String { "\(base)/athletes" }
    /// Retained JSON: one athlete's heart rate, zone and profile (cleared when it leaves).
    public func athleteState(_ id: String) -> String { "\(base)/athletes/\(id)/state" }
    /// Retained JSON: the node's speaker (`{"available","muted","volume"}`; the `sound` command).
    public var sound: String { "\(base)/sound" }
    /// QoS 1 JSON, not retained: a cue announced `publish.cue_ahead` before it sounds
    /// (`{"timer","cue","due_ms","duration_ms","lead_ms"}`), for other players to duck.
    public var cueAhead: String { "\(base)/cue_ahead" }
    /// Node commands (in).
    public var command: String { "\(base)/cmd" }
    /// Replies to commands without an MQTT 5 response topic (out).
    public var reply: String { "\(base)/reply" }
    /// Clock requests (in): answered like the `time` command; the one topic a read-only
    /// display may publish to (deploy/mosquitto/acl.example).
    public var time: String { "\(base)/time" }

    /// Whether a reply may go to `topic` when a read-only client asks for it: `<base>/reply`
    /// or a topic under it.
    public func isReplyTopic(_ topic: String) -> Bool {
        topic == reply || topic.hasPrefix(reply + "/")
    }
    /// The private reply topic of a client that asks with an MQTT 5 response topic
    /// (`<base>/reply/<client id>`: under ``reply``, so the ACL example lets a coach read it).
    public func reply(clientID: String) -> String { "\(reply)/\(clientID)" }

    /// The filter that matches every timer's command topic.
    public var timerCommandFilter: String { "\(base)/timers/+/cmd" }

    /// The topics of timer `id`; `timer("+")` gives the filters that match every timer's.
    public func timer(_ id: String) -> TimerTopics { TimerTopics(prefix: "\(base)/timers/\(id)") }

    /// The timer id of a timer command topic (`<base>/timers/<id>/cmd`), or nil.
    public func timerID(ofCommandTopic topic: String) -> String? {
        timerID(of: topic, leaf: "cmd")
    }

    /// The timer id of a timer state topic (`<base>/timers/<id>/state`), or nil.
    public func timerID(ofStateTopic topic: String) -> String? {
        timerID(of: topic, leaf: "state")
    }

    /// The timer id of a timer event topic (`<base>/timers/<id>/event`), or nil.
    public func timerID(ofEventTopic topic: String) -> String? {
        timerID(of: topic, leaf: "event")
    }

    private func timerID(of topic: String, leaf: String) -> String? {
        let prefix = "\(base)/timers/"
        guard topic.hasPrefix(prefix), topic.hasSuffix("/" + leaf) else { return nil }
        // An empty level (`timers//cmd`) is "": the wildcard subscription delivers it, and the
        // sender gets an invalid_timer_id reply rather than silence.
        guard topic.utf8.count >= prefix.utf8.count + leaf.utf8.count + 1 else { return nil }
        let middle = topic.dropFirst(prefix.count).dropLast(leaf.count + 1)
        guard !middle.contains("/") else { return nil }
        return String(middle)
    }
}

/// The last level of a timer's plain retained topics.
public enum PlainLeaf: String, Sendable, CaseIterable {
    case remaining, display, phase, round, rounds, hr
}

/// The topics of one timer.
public struct TimerTopics: Sendable, Equatable {
    let prefix: String
    /// The plain topic ending in `leaf`.
    public func plain(_ leaf: PlainLeaf) -> String { "\(prefix)/\(leaf.rawValue)" }
    public var state: String { "\(prefix)/state" }
    public var remaining: String { "\(prefix)/remaining" }
    public var display: String { "\(prefix)/display" }
    public var phase: String { "\(prefix)/phase" }
    public var round: String { "\(prefix)/round" }
    public var rounds: String { "\(prefix)/rounds" }
    public var hr: String { "\(prefix)/hr" }
    public var event: String { "\(prefix)/event" }
    /// Retained JSON: the class heart-rate summary of the timer's last recorded run (`class_hr`).
    public var classSummary: String { "\(prefix)/class" }
    public var command: String { "\(prefix)/cmd" }

    /// Every retained topic of the timer (cleared when it is deleted).
    public var retained: [String] { [state] + plain }
    /// The plain retained topics, for displays that show a value as it comes (they have a
    /// connection of their own with `publish.plain_connection: separate`).
    public var plain: [String] { PlainLeaf.allCases.map(plain) }
}

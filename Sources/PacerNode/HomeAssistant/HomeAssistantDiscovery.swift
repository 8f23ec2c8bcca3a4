import PacerCore
import PacerProtocol

/// Home Assistant MQTT discovery, as configured (`home_assistant:` in the YAML file).
public struct HomeAssistantSettings: Sendable, Equatable {
    /// On by default: a node on a broker Home Assistant watches shows up there by itself.
    public var enabled = true
    /// Home Assistant's discovery prefix (its MQTT integration's setting; default `homeassistant`).
    public var prefix = "homeassistant"

    public init(enabled: Bool = true, prefix: String = "homeassistant") {
        self.enabled = enabled
        self.prefix = prefix
    }
}

/// Builds the device-based discovery payloads of Home Assistant's MQTT integration: one device
/// per timer, at `<prefix>/device/<node>_<timer>/config` (docs/home-assistant.md). Pure: it
/// only turns a timer's id, name and kind and the node's topics into JSON.
struct HomeAssistantDiscovery: Sendable, Equatable {
    /// What a timer's discovery payload depends on: a change of any of them republishes it.
    struct Subject: Sendable, Equatable {
        var id: String
        var name: String
        var kind: TimerKind
    }

    let prefix: String
    let nodeID: String
    let topics: Topics
    let version: String
    /// Whether the node has heart-rate sources: without, the heart-rate sensor starts disabled.
    let hasHeartRate: Bool
    /// The options of each timer's Workout select: the presets (built in and configured) and
    /// the saved workouts, by id (`setWorkouts`).
    private(set) var workouts: [String]

    /// Per kind, the payload with holes for the timer's id and name (`configBytes(for:)`).
    private var templates: [TimerKind: ConfigTemplate] = [:]

    init(settings: HomeAssistantSettings, nodeID: String, topics: Topics, version: String, hasHeartRate: Bool) {
        self.prefix = settings.prefix
        self.nodeID = nodeID
        self.topics = topics
        self.version = version
        self.hasHeartRate = hasHeartRate
        self.workouts = Presets.builtInNames.sorted()
        makeTemplates()
    }

    private mutating func makeTemplates() {
        templates = [:]
        for kind in TimerKind.allCases {
            guard let template = ConfigTemplate(self, kind: kind) else { continue }
            templates[kind] = template
        }
    }

    /// The Workout select's options (presets and saved workouts). False when they are the same
    /// as before; true when they changed, and every timer's config must be published again.
    mutating func setWorkouts(_ ids: [String]) -> Bool {
        let sorted = Array(Set(ids)).sorted()
        guard sorted != workouts, !sorted.isEmpty else { return false }
        workouts = sorted
        makeTemplates()
        return true
    }

    /// The discovery payload of one timer as JSON bytes: exactly `config(for:).jsonBytes`,
    /// filled into a template made once per kind (a connect publishes every timer's config:
    /// 10,000 of them cost milliseconds this way, not a JSON tree each).
    func configBytes(for timer: Subject) -> [UInt8] {
        guard let template = templates[timer.kind] else { return JSONCoding.encode(config(for: timer)) }
        return template.fill(id: timer.id, name: timer.name)
    }

    /// Home Assistant's birth and last-will topic: `online` there asks for every config again.
    var statusTopic: String { "\(prefix)/status" }

    /// `<prefix>/device/<node>_<timer>/config`. Node and timer ids use `[a-z0-9_-]` only, which
    /// is within the `[a-zA-Z0-9_-]` Home Assistant allows for an object id.
    func configTopic(timer id: String) -> String { "\(prefix)/device/\(objectID(timer: id))/config" }

    /// The node's own device (its speaker): `<prefix>/device/<node>/config`.
    var nodeConfigTopic: String { "\(prefix)/device/\(nodeID)/config" }

    /// The node's own device, for a node with a speaker: a switch that mutes and unmutes it
    /// and a number for its volume, both through the `sound` command on `<base>/cmd` and read
    /// back from the retained `<base>/sound` (docs/home-assistant.md).
    func nodeConfig() -> JSONValue {
        let stem = "pacer_\(nodeID)"
        return .object([
            "dev": .object(["ids": .array([.string(stem)]), "name": .string("Pacer \(nodeID)"), "mf": "Pacer", "mdl": "node", "sw": .string(version)]),
            "o": .object(["name": "Pacer", "sw": .string(version)]),
            "availability_topic": .string(topics.status),
            "qos": 1,
            "cmps": .object([
                "speaker": .object([
                    "platform": "switch", "name": "Speaker", "unique_id": .string("\(stem)_speaker"), "icon": "mdi:volume-high",
                    "command_topic": .string(topics.command), "state_topic": .string(topics.sound),
                    "payload_on": #"{"action":"sound","muted":false}"#, "payload_off": #"{"action":"sound","muted":true}"#,
                    "value_template": "{{ 'OFF' if value_json.muted else 'ON' }}", "state_on": "ON", "state_off": "OFF",
                ]),
                "speaker_volume": .object([
                    "platform": "number", "name": "Speaker volume", "unique_id": .string("\(stem)_speaker_volume"), "icon": "mdi:volume-medium",
                    "command_topic": .string(topics.command), "command_template": #"{"action":"sound","volume":{{ value | int }}}"#,
                    "state_topic": .string(topics.sound), "value_template": "{{ value_json.volume }}",
                    "min": 0, "max": 100, "step": 5, "unit_of_measurement": "%", "mode": "slider",
                ]),
            ]),
        ])
    }

    /// `<node>_<timer>`: the device's object id, its identifier and the stem of its unique ids.
    func objectID(timer id: String) -> String { "\(nodeID)_\(id)" }

    /// The buttons, in the order Home Assistant lists them, with the plain word each publishes
    /// to the timer's `cmd` topic (the word is the action's name).
    static let buttons: [(action: TimerAction, name: String, icon: String)] = [
        (.start, "Start", "mdi:play"),
        (.pause, "Pause", "mdi:pause"),
        (.resume, "Resume", "mdi:play-pause"),
        (.skip, "Skip", "mdi:skip-next"),
        (.cancel, "Cancel", "mdi:stop"),
        (.ack, "Acknowledge", "mdi:check"),
    ]

    /// The events the event entity fires: every event but the cues (`countdown`, `halfway`,
    /// `alert`), which come every second or so and would flood Home Assistant's logbook. A new
    /// event type is fired by default.
    static let eventTypes: [EventType] = EventType.allCases.filter { ![.countdown, .halfway, .alert].contains($0) }

    /// The node's events carry `type`; Home Assistant's event entity wants `event_type`. The
    /// template passes every field through as an attribute, adds `event_type`, and renders
    /// nothing (which Home Assistant ignores) for a type not in `event_types`.
    static var eventTemplate: String {
        let list = eventTypes.map { "'\($0.rawValue)'" }.joined(separator: ",")
        return "{% if value_json['type'] in [\(list)] %}{{ dict(value_json, event_type=value_json['type']) | tojson }}{% endif %}"
    }

    /// The Next class sensor's state: the class's name and local time, or `none` when the
    /// retained `next` is empty.
    static let nextClassTemplate =
        "{{ value_json.name ~ ' at ' ~ value_json.local_time if value and value_json is defined and value_json.name is defined else 'none' }}"

    /// Its attributes: `starts_at` (ISO 8601 UTC), `schedule`, `local_date`, `time_zone`; none
    /// (an empty object) when there is no class ahead.
    static let nextClassAttributesTemplate =
        "{{ {'starts_at': value_json.starts_at, 'schedule': value_json.schedule, 'local_date': value_json.local_date, 'time_zone': value_json.time_zone} | tojson if value and value_json is defined and value_json.starts_at is defined else '{}' }}"

    /// The discovery payload of one timer: `dev`, `o`, the shared availability and QoS, and
    /// `cmps` (sensors, buttons, the event entity). Keys are written in full inside `cmps`.
    func config(for timer: Subject) -> JSONValue {
        let t = topics.timer(timer.id)
        let stem = "pacer_\(objectID(timer: timer.id))"
        func component(_ key: String, platform: String, name: String, _ fields: [String: JSONValue]) -> (String, JSONValue) {
            var object = fields
            object["platform"] = .string(platform)
            object["name"] = .string(name)
            object["unique_id"] = .string("\(stem)_\(key)")
            return (key, .object(object))
        }
        var components: [(String, JSONValue)] = [
            component("remaining", platform: "sensor", name: "Remaining", [
                "state_topic": .string(t.remaining), "device_class": "duration", "unit_of_measurement": "s",
                "icon": "mdi:timer-outline",
            ]),
            component("phase", platform: "sensor", name: "Phase", [
                "state_topic": .string(t.phase), "device_class": "enum",
                "options": .array(Phase.allCases.map { .string($0.rawValue) }), "icon": "mdi:run",
            ]),
            component("round", platform: "sensor", name: "Round", [
                "state_topic": .string(t.round), "icon": "mdi:counter",
            ]),
            // From the retained state: `ends_at` is there only while the timer runs; otherwise
            // `None`, which Home Assistant shows as unknown.
            component("ends_at", platform: "sensor", name: "Ends at", [
                "state_topic": .string(t.state), "device_class": "timestamp",
                "value_template": "{{ value_json.ends_at if value_json is defined and value_json.ends_at is defined else None }}",
            ]),
            // Empty while no fresh reading: `None` makes it unknown (an empty value would be
            // ignored by a numeric sensor and leave the last reading showing).
            // The exercise now and the next one, from the retained state (a phone's
            // notification names them: examples/home-assistant/).
            component("exercise", platform: "sensor", name: "Exercise", [
                "state_topic": .string(t.state), "icon": "mdi:weight-lifter",
                "value_template": "{{ value_json.label if value_json is defined and value_json.label else None }}",
            ]),
            component("next_exercise", platform: "sensor", name: "Next exercise", [
                "state_topic": .string(t.state), "icon": "mdi:arrow-right-bold",
                "value_template": "{{ value_json.next_label if value_json is defined and value_json.next_label else None }}",
            ]),
            // The timer's next scheduled class from the retained `next` (docs/schedules.md):
            // "HIIT 45 at 18:00" (the schedule's zone), or "none" for its empty payload (no
            // class ahead, or no schedule targets the timer: this type cannot tell which timers
            // a schedule targets, so every timer has it). The instant and the rest are attributes.
            component("next_class", platform: "sensor", name: "Next class", [
                "state_topic": .string(t.next), "icon": "mdi:calendar-clock",
                "value_template": .string(Self.nextClassTemplate),
                "json_attributes_topic": .string(t.next),
                "json_attributes_template": .string(Self.nextClassAttributesTemplate),
            ]),
            // Starts the timer with a preset or a saved workout; shows the preset it runs.
            component("workout", platform: "select", name: "Workout", [
                "command_topic": .string(t.command), "options": .array(workouts.map { .string($0) }),
                "command_template": "{\"action\":\"start\",\"restart\":true,\"preset\":{{ value | tojson }}}",
                "state_topic": .string(t.state), "icon": "mdi:playlist-play",
                "value_template": "{{ value_json.preset if value_json is defined and value_json.preset else None }}",
            ]),
            component("heart_rate", platform: "sensor", name: "Heart rate", [
                "state_topic": .string(t.hr), "unit_of_measurement": "bpm", "state_class": "measurement",
                "value_template": "{{ value if value else None }}", "icon": "mdi:heart-pulse",
                "enabled_by_default": .bool(hasHeartRate),
            ]),
        ]
        for button in Self.buttons {
            components.append(component(button.action.rawValue, platform: "button", name: button.name, [
                "command_topic": .string(t.command), "payload_press": .string(button.action.rawValue), "icon": .string(button.icon),
            ]))
        }
        // Skips the next class on this timer (`skip_next` on its own topic; docs/schedules.md).
        components.append(component("skip_next", platform: "button", name: "Skip next class", [
            "command_topic": .string(t.command), "payload_press": "{\"action\":\"skip_next\"}", "icon": "mdi:calendar-remove",
        ]))
        components.append(component("event", platform: "event", name: "Event", [
            "state_topic": .string(t.event), "event_types": .array(Self.eventTypes.map { .string($0.rawValue) }),
            "value_template": .string(Self.eventTemplate),
        ]))
        return .object([
            "dev": .object([
                "ids": .array([.string(stem)]),
                "name": .string(timer.name),
                "mf": "Pacer",
                "mdl": .string("\(timer.kind.rawValue) timer"),
                "sw": .string(version),
            ]),
            "o": .object(["name": "Pacer", "sw": .string(version)]),
            // Shared by every component: the node's `online`/`offline` and QoS 1 both ways.
            "availability_topic": .string(topics.status),
            "qos": 1,
            "cmps": .object(Dictionary(uniqueKeysWithValues: components)),
        ])
    }
}

/// A discovery payload as bytes with holes where a timer's id and name go. Made by writing the
/// config of a timer whose id and name are single control characters (written as `\u0001`
/// and `\u0002`, which nothing else in a config contains) and cutting it there; kept only if
/// it fills in to exactly what `config(for:)` writes for a probe timer.
struct ConfigTemplate: Sendable, Equatable {
    enum Part: Sendable, Equatable {
        case text([UInt8])
        case id
        case name
    }

    let parts: [Part]

    init?(_ discovery: HomeAssistantDiscovery, kind: TimerKind) {
        let bytes = JSONCoding.encode(discovery.config(for: .init(id: "\u{1}", name: "\u{2}", kind: kind)))
        let idHole = Array(#"\u0001"#.utf8), nameHole = Array(#"\u0002"#.utf8)
        var parts: [Part] = []
        var text: [UInt8] = []
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "\\"), i + 6 <= bytes.count {
                let window = Array(bytes[i..<i + 6])
                if window == idHole || window == nameHole {
                    parts.append(.text(text))
                    text = []
                    parts.append(window == idHole ? .id : .name)
                    i += 6
                    continue
                }
            }
            text.append(bytes[i])
            i += 1
        }
        parts.append(.text(text))
        self.parts = parts
        // A prefix, base topic or version that itself held such an escape would misplace a
        // hole: then no template, and every config is written the slow way.
        let probe = HomeAssistantDiscovery.Subject(id: "probe-id_0", name: "Probe \"name\" \\ é\u{7}", kind: kind)
        guard fill(id: probe.id, name: probe.name) == JSONCoding.encode(discovery.config(for: probe)) else { return nil }
    }

    /// The payload of the timer with this id and name.
    func fill(id: String, name: String) -> [UInt8] {
        let idText = Self.escaped(id), nameText = Self.escaped(name)
        var out: [UInt8] = []
        out.reserveCapacity(parts.reduce(0) { if case .text(let t) = $1 { $0 + t.count } else { $0 + 32 } })
        for part in parts {
            switch part {
            case .text(let text): out += text
            case .id: out += idText
            case .name: out += nameText
            }
        }
        return out
    }

    /// A string as written inside a JSON string (the one writer's escaping, without the quotes).
    private static func escaped(_ value: String) -> ArraySlice<UInt8> {
        let quoted = JSONCoding.encode(.string(value))
        return quoted[1..<quoted.count - 1]
    }
}

/// What the node last published to Home Assistant: a timer's config is republished only when
/// what it depends on changed (created, renamed, its kind changed), or when asked for all.
struct HomeAssistantPublisher: Sendable {
    var discovery: HomeAssistantDiscovery
    private var published: [String: HomeAssistantDiscovery.Subject] = [:]

    init(discovery: HomeAssistantDiscovery) { self.discovery = discovery }

    /// A config to publish (retained), or an empty payload that removes a deleted timer's device.
    struct Message: Sendable, Equatable {
        var topic: String
        var payload: [UInt8]
    }

    /// The configs of `timers` that changed since they were last published (all with `force`).
    mutating func configs(for timers: [HomeAssistantDiscovery.Subject], force: Bool) -> [Message] {
        timers.compactMap { timer in
            guard force || published[timer.id] != timer else { return nil }
            published[timer.id] = timer
            return Message(topic: discovery.configTopic(timer: timer.id), payload: discovery.configBytes(for: timer))
        }
    }

    /// The empty retained config that removes a deleted timer's device from Home Assistant.
    mutating func removal(of id: String) -> Message {
        published[id] = nil
        return Message(topic: discovery.configTopic(timer: id), payload: [])
    }

    // MARK: Every config, in chunks

    /// Timers whose config is still to be published for a connect or Home Assistant's `online`.
    private var backlog: [String] = []
    private var backlogHead = 0
    /// When the next chunk of the backlog is due; nil when there is none.
    private(set) var nextChunkAtMs: Millis?

    /// Every one of `ids` is to be published (again), the first chunk at once.
    mutating func queueAll(_ ids: [String], at now: Millis) {
        backlog = ids
        backlogHead = 0
        nextChunkAtMs = ids.isEmpty ? nil : now
    }

    func chunkIsDue(now: Millis) -> Bool {
        nextChunkAtMs.map { now >= $0 } ?? false
    }

    /// The next `count` timers of the backlog; the chunk after them is due at `nextAt`.
    mutating func takeChunk(_ count: Int, nextAt: Millis) -> [String] {
        let end = min(backlog.count, backlogHead + count)
        let chunk = Array(backlog[backlogHead..<end])
        backlogHead = end
        if backlogHead >= backlog.count {
            clearBacklog()
        } else {
            nextChunkAtMs = nextAt
        }
        return chunk
    }

    mutating func postpone(until instant: Millis) {
        if nextChunkAtMs != nil { nextChunkAtMs = instant }
    }

    mutating func clearBacklog() {
        backlog = []
        backlogHead = 0
        nextChunkAtMs = nil
    }
}

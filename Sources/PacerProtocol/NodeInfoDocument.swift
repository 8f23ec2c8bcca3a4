public import PacerCore

/// The words of the node's retained `status` (docs/API.md, "Node topics"); `offline` is also
/// the last will.
public enum NodeStatus: String, Sendable, CaseIterable {
    case online, offline

    /// The payload.
    public var payload: [UInt8] { Array(rawValue.utf8) }
}

/// What a node can do, as `info.capabilities` lists it (docs/API.md, "Node topics"). Kept as
/// text: a newer node may list one this client does not know.
public struct Capability: RawRepresentable, Sendable, Hashable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let interval = Capability(rawValue: TimerKind.interval.rawValue)
    public static let rest = Capability(rawValue: TimerKind.rest.rawValue)
    public static let countdown = Capability(rawValue: TimerKind.countdown.rawValue)
    public static let stopwatch = Capability(rawValue: TimerKind.stopwatch.rawValue)
    public static let program = Capability(rawValue: TimerKind.program.rawValue)
    public static let presets = Capability(rawValue: WireField.presets.rawValue)
    public static let heartRate = Capability(rawValue: "heart_rate")
    public static let timeSync = Capability(rawValue: "time_sync")
    public static let dedup = Capability(rawValue: "dedup")
    public static let ifRevision = Capability(rawValue: WireField.ifRevision.rawValue)
    public static let startAt = Capability(rawValue: WireField.startAt.rawValue)
    public static let history = Capability(rawValue: NodeAction.history.rawValue)
    /// The node answers clock requests on `<base>/time` (older nodes only the `time` command).
    public static let timeTopic = Capability(rawValue: "time_topic")
    public static let workouts = Capability(rawValue: TopicLevel.workouts.rawValue)
    public static let athletes = Capability(rawValue: TopicLevel.athletes.rawValue)
    public static let classHR = Capability(rawValue: "class_hr")
    public static let sound = Capability(rawValue: NodeAction.sound.rawValue)
    public static let afterAck = Capability(rawValue: "after_ack")
    /// Only while the node's broker connection speaks MQTT 5.
    public static let mqtt5ResponseTopic = Capability(rawValue: "mqtt5_response_topic")
    /// Only with `publish.cue_ahead`.
    public static let cueAhead = Capability(rawValue: TopicLevel.cueAhead.rawValue)

    /// What every node of this version can do, whatever its configuration and broker.
    public static let always: [Capability] = [
        .interval, .rest, .countdown, .stopwatch, .program, .presets, .heartRate, .timeSync, .dedup, .ifRevision, .startAt,
        .history, .timeTopic, .workouts, .athletes, .classHR, .sound, .afterAck,
    ]
    /// Every capability this version knows, for the vocabulary.
    public static let known: [Capability] = always + [.mqtt5ResponseTopic, .cueAhead]
}

/// The node's retained `info` (docs/API.md, "Node topics"): written by the node, read by `pacer
/// doctor`.
public struct NodeInfoDocument: Sendable, Equatable {
    public struct TimerEntry: Sendable, Equatable {
        public var id: String
        public var name: String
        public init(id: String, name: String) {
            self.id = id
            self.name = name
        }
    }

    public var version: String
    public var node: String
    public var baseTopic: String
    public var timers: [TimerEntry]
    public var capabilities: [Capability]
    public var presets: [String]
    public var heartRateSources: [String]
    public var startedAtMs: Millis?
    /// Whether systemd-timesyncd reports the clock synchronised (nil: cannot be told).
    public var clockSynchronized: Bool?
    /// The database file; nil when the node runs without one (or the reader found none).
    public var storagePath: String?
    /// Why the node runs without a database, or nil.
    public var storageProblem: String?
    /// Whether the node saves its timers (`storage.ok`); nil when `info` does not say.
    public var storageOK: Bool?

    public init(version: String, node: String, baseTopic: String, timers: [TimerEntry], capabilities: [Capability], presets: [String],
                heartRateSources: [String], startedAtMs: Millis?, clockSynchronized: Bool?, storagePath: String?, storageProblem: String?) {
        self.version = version
        self.node = node
        self.baseTopic = baseTopic
        self.timers = timers
        self.capabilities = capabilities
        self.presets = presets
        self.heartRateSources = heartRateSources
        self.startedAtMs = startedAtMs
        self.clockSynchronized = clockSynchronized
        self.storagePath = storagePath
        self.storageProblem = storageProblem
        self.storageOK = storagePath != nil
    }

    /// Reads an `info` payload; nil without a `version` (not an `info` of a Pacer node).
    public init?(json: JSONValue) {
        guard let version = json[.version]?.string else { return nil }
        self.version = version
        node = json[.node]?.string ?? ""
        baseTopic = json[.baseTopic]?.string ?? ""
        timers = json[.timers]?.array?.compactMap { t in t[.id]?.string.map { TimerEntry(id: $0, name: t[.name]?.string ?? $0) } } ?? []
        capabilities = json[.capabilities]?.array?.compactMap { $0.string.map(Capability.init(rawValue:)) } ?? []
        presets = json[.presets]?.array?.compactMap(\.string) ?? []
        heartRateSources = json[.heartRateSources]?.array?.compactMap(\.string) ?? []
        startedAtMs = json[.startedAtMs]?.int64
        clockSynchronized = json[.clockSynchronized]?.bool
        let storage = json[.storage]
        storageOK = storage?[.ok]?.bool
        storagePath = storage?[.path]?.string
        storageProblem = storage?[.error]?.string
    }

    /// The `info` payload (the members of ``WireField/ofInfo``; `clock_synchronized` only when
    /// known).
    public var json: JSONValue {
        var info: [String: JSONValue] = [:]
        info[.version] = .string(version)
        info[.node] = .string(node)
        info[.baseTopic] = .string(baseTopic)
        info[.timers] = .array(timers.map { t in
            var entry: [String: JSONValue] = [:]
            entry[.id] = .string(t.id)
            entry[.name] = .string(t.name)
            return .object(entry)
        })
        info[.capabilities] = .array(capabilities.map { .string($0.rawValue) })
        info[.presets] = .array(presets.map { .string($0) })
        info[.heartRateSources] = .array(heartRateSources.map { .string($0) })
        info[.startedAtMs] = .optional(startedAtMs)
        if let clockSynchronized { info[.clockSynchronized] = .bool(clockSynchronized) }
        var storage: [String: JSONValue] = [:]
        storage[.ok] = .bool(storagePath != nil)
        if let storagePath { storage[.path] = .string(storagePath) }
        if let storageProblem { storage[.error] = .string(storageProblem) }
        info[.storage] = .object(storage)
        return .object(info)
    }
}

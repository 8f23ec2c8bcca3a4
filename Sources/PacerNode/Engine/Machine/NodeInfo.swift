import PacerCore

/// What the retained `info` topic says about the node: fixed at start, except the timer list
/// and the storage state.
struct NodeInfo {
    var version: String
    var nodeID: String
    var baseTopic: String
    var startedAtMs: Millis
    /// Whether systemd-timesyncd reports the clock synchronised (nil: cannot be told).
    var clockSynchronized: Bool?
    var presets: [String]
    var heartRateSources: [String]
    /// The database file, or nil when the node runs without one.
    var storagePath: String?
    /// Why the node runs without a database, or nil.
    var storageProblem: String?

    /// `info` (the whole timer list: 300 KB at 10,000 timers) goes out at most once per this
    /// interval: a burst of creates publishes it once, with every new timer, instead of once
    /// per create (which made starting many timers quadratic).
    static let minIntervalMs: Millis = 1_000
    /// When `info` was last published (nil: not yet on this connection).
    var publishedAtMs: Millis?

    /// Whether the broker connection speaks MQTT 5 (set on each connect): only then are a
    /// command's response topic and correlation data honoured (`mqtt5_response_topic`).
    var speaksMQTT5 = true
    /// Whether cues are announced on `<base>/cue_ahead` (`publish.cue_ahead`).
    var announcesCues = false

    /// What every node of this version can do, whatever its configuration and broker.
    static let alwaysCapabilities = [
        "interval", "rest", "countdown", "stopwatch", "program", "presets", "heart_rate",
        "time_sync", "dedup", "if_revision", "start_at", "history", "time_topic", "workouts",
        "athletes", "class_hr", "sound", "after_ack",
    ]

    /// What `info.capabilities` lists: `alwaysCapabilities`, `mqtt5_response_topic` on an
    /// MQTT 5 connection, `cue_ahead` when cues are announced.
    var capabilities: [String] {
        var all = Self.alwaysCapabilities
        if speaksMQTT5 { all.append("mqtt5_response_topic") }
        if announcesCues { all.append("cue_ahead") }
        return all
    }

    /// The `info` JSON with `timers` (id and name, sorted by id).
    func json(timers: [(id: String, name: String)]) -> JSONValue {
        var info: [String: JSONValue] = [
            "version": .string(version),
            "node": .string(nodeID),
            "base_topic": .string(baseTopic),
            "timers": .array(timers.map { .object(["id": .string($0.id), "name": .string($0.name)]) }),
            "capabilities": .array(capabilities.map { .string($0) }),
            "presets": .array(presets.map { .string($0) }),
            "heart_rate_sources": .array(heartRateSources.map { .string($0) }),
            "started_at_ms": .int(startedAtMs),
        ]
        if let clockSynchronized { info["clock_synchronized"] = .bool(clockSynchronized) }
        var storage: [String: JSONValue] = ["ok": .bool(storagePath != nil)]
        if let storagePath { storage["path"] = .string(storagePath) }
        if let storageProblem { storage["error"] = .string(storageProblem) }
        info["storage"] = .object(storage)
        return .object(info)
    }
}

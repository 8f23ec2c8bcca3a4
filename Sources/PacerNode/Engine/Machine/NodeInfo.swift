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

    /// What `info.capabilities` lists.
    static let capabilities = [
        "interval", "rest", "countdown", "stopwatch", "program", "presets", "heart_rate",
        "time_sync", "dedup", "if_revision", "start_at", "history", "mqtt5_response_topic", "time_topic", "workouts",
        "athletes", "class_hr",
    ]

    /// The `info` JSON with `timers` (id and name, sorted by id).
    func json(timers: [(id: String, name: String)]) -> JSONValue {
        var info: [String: JSONValue] = [
            "version": .string(version),
            "node": .string(nodeID),
            "base_topic": .string(baseTopic),
            "timers": .array(timers.map { .object(["id": .string($0.id), "name": .string($0.name)]) }),
            "capabilities": .array(Self.capabilities.map { .string($0) }),
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

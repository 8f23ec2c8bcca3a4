import PacerCore
import PacerProtocol

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

    /// What `info.capabilities` lists: `Capability.always`, `mqtt5_response_topic` on an
    /// MQTT 5 connection, `cue_ahead` when cues are announced.
    var capabilities: [Capability] {
        var all = Capability.always
        if speaksMQTT5 { all.append(.mqtt5ResponseTopic) }
        if announcesCues { all.append(.cueAhead) }
        return all
    }

    /// The `info` JSON with `timers` (id and name, sorted by id).
    func json(timers: [(id: String, name: String)]) -> JSONValue {
        NodeInfoDocument(version: version, node: nodeID, baseTopic: baseTopic, timers: timers.map { .init(id: $0.id, name: $0.name) },
                         capabilities: capabilities, presets: presets, heartRateSources: heartRateSources, startedAtMs: startedAtMs,
                         clockSynchronized: clockSynchronized, storagePath: storagePath, storageProblem: storageProblem).json
    }
}

extension NodeInfo {
    /// Publishes `info` now, or once `minIntervalMs` has passed since the last one (an `.info`
    /// deadline; the list is built when it goes out, so it has every change).
    mutating func publishThrottled(to topic: String, now: Millis, linkUp: Bool, on board: inout Board) {
        if let last = publishedAtMs, now < last.saturatingAdd(Self.minIntervalMs) {
            board.deadlines.set(.info, at: last.saturatingAdd(Self.minIntervalMs))
            return
        }
        publish(to: topic, now: now, linkUp: linkUp, on: &board)
    }

    mutating func publish(to topic: String, now: Millis, linkUp: Bool, on board: inout Board) {
        guard linkUp else { return }  // republished on connect
        board.deadlines.set(.info, at: nil)
        publishedAtMs = now
        board.out.publish(to: topic, JSONCoding.encode(json(timers: board.timers)), retain: true)
    }

    /// The `info` JSON with every timer's id and name.
    func json(timers: TimerTable) -> JSONValue {
        json(timers: timers.ids.map { id in (id: id, name: timers.read(id) { $0.machine.name } ?? "") })
    }
}

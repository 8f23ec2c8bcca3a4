import Mosquitto
import PacerCore
import PacerStore

/// What the engine sends to the broker: the only MQTT calls it makes. `MQTTTransport` is the
/// real one; the in-process tests record the calls instead (Tests/PacerNodeTests/Engine).
///
/// Every publish is QoS 1 (retained state, events and replies) but the per-second values
/// (`publishSuperseding`, QoS 0). The publishes run on the
/// caller's executor (`nonisolated(nonsending)`, like the client's): the engine does not hop
/// off its actor and back for each of the many publishes of one input.
protocol EngineTransport: Sendable {
    /// Publishes and returns once the client has queued it.
    nonisolated(nonsending) func publish(to topic: String, payload: [UInt8], retain: Bool, properties: MQTTProperties) async throws(MQTTError)
    /// Publishes a retained per-second value (`remaining`, `display`) that the next second
    /// replaces: QoS 0, since a lost one is superseded within a second and every retained
    /// topic is republished on reconnect anyway; the broker sends no PUBACK for it.
    nonisolated(nonsending) func publishSuperseding(to topic: String, payload: [UInt8]) async throws(MQTTError)
    /// Publishes at QoS 1 with a token that `client.deliveries` reports on the broker's PUBACK:
    /// an event of the outbox, or the last `state` of a connect (the plain topics wait for it).
    nonisolated(nonsending) func publishTracked(to topic: String, payload: [UInt8], retain: Bool) async throws(MQTTError) -> MQTTDeliveryToken
    func subscribe(to filter: String, qos: MQTTQoS) async throws(MQTTError)
    func unsubscribe(from filter: String) async throws(MQTTError)
    /// Brackets the publishes of one input: handed to the network thread with one wake-up.
    func beginBatch()
    func endBatch()
    /// The broker has read nothing for a while (publishes wait unwritten): per-second values,
    /// which the next second supersedes, are skipped rather than queued without bound.
    var isBacklogged: Bool { get }
    /// The plain topics' own connection (`publish.plain_connection: separate`); nil when they
    /// go over this one.
    var plainTopics: (any PlainTopicsTransport)? { get }
    /// Whether the connection speaks MQTT 5 (response topics, properties); read on each connect.
    var speaksMQTT5: Bool { get }
}

extension EngineTransport {
    func beginBatch() {}
    func endBatch() {}
    var speaksMQTT5: Bool { true }
    var isBacklogged: Bool { false }
    var plainTopics: (any PlainTopicsTransport)? { nil }

    /// A transport without a cheaper path publishes per-second values like any retained one.
    nonisolated(nonsending) func publishSuperseding(to topic: String, payload: [UInt8]) async throws(MQTTError) {
        try await publish(to: topic, payload: payload, retain: true, properties: .none)
    }
}

/// The connection the plain topics (`remaining`, `display`, `phase`, `round`, `rounds`, `hr`) have
/// to themselves (`publish.plain_connection: separate`): a per-second flip is never queued behind
/// the replies, states and discovery configs of the main connection, which mosquitto reads one
/// packet per turn of its loop (the command storm's flips: docs/RELIABILITY.md). Its batches are
/// begun and ended with the main transport's.
protocol PlainTopicsTransport: Sendable {
    /// Publishes a retained plain value: QoS 0 for a value (the next one supersedes it, and all
    /// are republished when this connection comes back), QoS 1 for a deleted timer's clear
    /// (the client keeps it while disconnected and sends it after the reconnect: no ghosts).
    nonisolated(nonsending) func publish(to topic: String, payload: [UInt8], qos: MQTTQoS) async throws(MQTTError)
    /// Like ``EngineTransport/isBacklogged``, for this connection.
    var isBacklogged: Bool { get }
}

/// The engine's transport over the real client (and the plain topics' own client, if any).
struct MQTTTransport: EngineTransport {
    let client: MQTTClient
    /// The plain topics' own connection (`publish.plain_connection: separate`), or nil.
    let plainClient: MQTTClient?
    let plainTopics: (any PlainTopicsTransport)?

    init(client: MQTTClient, plainClient: MQTTClient? = nil) {
        self.client = client
        self.plainClient = plainClient
        self.plainTopics = plainClient.map(PlainMQTTTransport.init)
    }

    var speaksMQTT5: Bool { client.protocolVersion == .v5 }

    nonisolated(nonsending) func publish(to topic: String, payload: [UInt8], retain: Bool, properties: MQTTProperties) async throws(MQTTError) {
        try await client.publish(to: topic, payload: payload, qos: .atLeastOnce, retain: retain, properties: properties)
    }

    nonisolated(nonsending) func publishSuperseding(to topic: String, payload: [UInt8]) async throws(MQTTError) {
        try await client.publish(to: topic, payload: payload, qos: .atMostOnce, retain: true)
    }

    nonisolated(nonsending) func publishTracked(to topic: String, payload: [UInt8], retain: Bool) async throws(MQTTError) -> MQTTDeliveryToken {
        try await client.publishTracked(to: topic, payload: payload, qos: .atLeastOnce, retain: retain)
    }

    func subscribe(to filter: String, qos: MQTTQoS) async throws(MQTTError) {
        try await client.subscribe(to: filter, qos: qos)
    }

    func beginBatch() {
        client.beginPublishBatch()
        plainClient?.beginPublishBatch()
    }

    func endBatch() {
        client.endPublishBatch()
        plainClient?.endPublishBatch()
    }

    /// Over half a second of unwritten packets: per-second values are shed.
    var isBacklogged: Bool { client.isWriteBacklogged }

    func unsubscribe(from filter: String) async throws(MQTTError) {
        try await client.unsubscribe(from: filter)
    }
}

/// The plain topics' own client as the engine's `PlainTopicsTransport`.
struct PlainMQTTTransport: PlainTopicsTransport {
    let client: MQTTClient

    nonisolated(nonsending) func publish(to topic: String, payload: [UInt8], qos: MQTTQoS) async throws(MQTTError) {
        try await client.publish(to: topic, payload: payload, qos: qos, retain: true)
    }

    var isBacklogged: Bool { client.isWriteBacklogged }
}

extension MQTTClient {
    /// Over half a second of unwritten packets: the broker reads slower than the node
    /// publishes, and per-second values are shed.
    var isWriteBacklogged: Bool { (writeBacklog ?? .zero) > .milliseconds(500) }
}

/// What the engine reads from and writes to SQLite: the only store methods the node uses.
/// `PacerDatabase` is the real one; tests wrap it to fail on demand.
protocol EngineStore: Sendable {
    /// The database file (reported in `info`).
    var path: String { get }
    /// Writes a batch in one transaction; returns the new events with their seqs. Runs on the
    /// caller's executor (`nonisolated(nonsending)`): the engine's own thread, which it blocks
    /// for the fsync; nothing else runs there, and the engine takes no other input meanwhile.
    nonisolated(nonsending) func commit(_ batch: StoreBatch) async throws(StoreError) -> StoreCommit
    func loadTimers() throws(StoreError) -> [TimerRecord]
    func loadRequests(sinceMs: Int64) throws(StoreError) -> [RequestRecord]
    /// The outbox: events written and not yet marked published, in seq order.
    func unpublishedEvents() throws(StoreError) -> [EventRecord]
    func history(_ query: HistoryQuery) throws(StoreError) -> [EventRecord]
    /// A `meta` value (the saved workouts' document).
    func meta(_ key: String) throws(StoreError) -> String?
    nonisolated(nonsending) func prune(_ policy: RetentionPolicy, nowMs: Int64) async throws(StoreError) -> PruneResult
}

/// The database as the engine's store: its writes run synchronously on the engine's own
/// thread (`EngineThread`), where an fsync (`synchronous=FULL`) on a slow SD card blocks only
/// the engine, which has to wait for it anyway, and not one of the few threads Swift
/// concurrency runs every other task on (the client's streams, the services). No hop to a
/// writer queue and back (one thread switch less per command).
struct EngineThreadStore: EngineStore {
    let database: PacerDatabase

    init(database: PacerDatabase) {
        self.database = database
    }

    var path: String { database.path }

    nonisolated(nonsending) func commit(_ batch: StoreBatch) async throws(StoreError) -> StoreCommit {
        try database.commit(batch)
    }

    nonisolated(nonsending) func prune(_ policy: RetentionPolicy, nowMs: Int64) async throws(StoreError) -> PruneResult {
        try database.prune(policy, nowMs: nowMs)
    }

    func loadTimers() throws(StoreError) -> [TimerRecord] { try database.loadTimers() }
    func loadRequests(sinceMs: Int64) throws(StoreError) -> [RequestRecord] { try database.loadRequests(sinceMs: sinceMs) }
    func unpublishedEvents() throws(StoreError) -> [EventRecord] { try database.unpublishedEvents() }
    func history(_ query: HistoryQuery) throws(StoreError) -> [EventRecord] { try database.history(query) }
    func meta(_ key: String) throws(StoreError) -> String? { try database.meta(key) }
}

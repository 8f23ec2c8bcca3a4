import PacerTestSupport
import Foundation
import Logging
import Mosquitto
import PacerCore
@testable import PacerNode
import PacerSound
import PacerStore
import Synchronization

/// What the engine did, in order: store writes and broker calls in one journal, so a test can
/// check that a write came before the publishes it allows.
enum EngineStep: Sendable, Equatable, CustomStringConvertible {
    /// A store write that succeeded: its timers, events (type) and marks.
    case write(timers: [String], events: [String], marks: [Int64])
    case writeFailed
    case publish(topic: String, payload: [UInt8], retain: Bool)
    /// A retained publish on the plain topics' own connection, with its QoS (0 or 1).
    case plain(topic: String, payload: [UInt8], qos: Int)
    /// A QoS 1 publish with a delivery token: an event, or a connect's last state (retained).
    case tracked(topic: String, payload: [UInt8], token: UInt64, retain: Bool)
    case subscribe(String)
    case unsubscribe(String)

    var description: String {
        switch self {
        case .write(let t, let e, let m): "write(timers: \(t), events: \(e), marks: \(m))"
        case .writeFailed: "writeFailed"
        case .publish(let topic, let payload, let retain): "publish(\(topic) \(retain ? "R " : "")\(String(decoding: payload.prefix(60), as: UTF8.self)))"
        case .tracked(let topic, let payload, let token, let retain): "tracked#\(token)(\(topic) \(retain ? "R " : "")\(String(decoding: payload.prefix(60), as: UTF8.self)))"
        case .plain(let topic, let payload, let qos): "plain(\(topic) q\(qos) \(String(decoding: payload.prefix(60), as: UTF8.self)))"
        case .subscribe(let f): "subscribe(\(f))"
        case .unsubscribe(let f): "unsubscribe(\(f))"
        }
    }

    /// The topic of a publish (plain or tracked).
    var topic: String? {
        switch self {
        case .publish(let topic, _, _), .tracked(let topic, _, _, _), .plain(let topic, _, _): topic
        default: nil
        }
    }

    /// The payload of a publish as JSON.
    var json: JSONValue? {
        switch self {
        case .publish(_, let payload, _), .tracked(_, let payload, _, _), .plain(_, let payload, _): JSONCoding.decode(payload)
        default: nil
        }
    }
}

/// The journal the recording transport and the store write to.
final class Journal: Sendable {
    private let steps = Mutex<[EngineStep]>([])
    func append(_ step: EngineStep) { steps.withLock { $0.append(step) } }
    var all: [EngineStep] { steps.withLock { $0 } }
    var count: Int { steps.withLock { $0.count } }
    func since(_ index: Int) -> [EngineStep] { Array(all[index...]) }
    /// Hands over what was recorded and forgets it (a long run reads as it goes, in bounded memory).
    func take() -> [EngineStep] { steps.withLock { steps in defer { steps = [] }; return steps } }
}

/// A transport that records every call and never touches a network.
final class RecordingTransport: EngineTransport {
    let journal: Journal
    private let nextToken = Mutex<UInt64>(0)
    /// The MQTT 5 properties of every plain publish, by topic, in order.
    let properties = Mutex<[(topic: String, properties: MQTTProperties)]>([])

    /// What `isBacklogged` says (a broker that reads slower than the node publishes).
    let backlogged = Mutex(false)
    var isBacklogged: Bool { backlogged.withLock { $0 } }

    /// What `speaksMQTT5` says (false: a broker that settled on MQTT 3.1.1).
    let mqtt5 = Mutex(true)
    var speaksMQTT5: Bool { mqtt5.withLock { $0 } }

    /// The plain topics' own connection (`publish.plain_connection: separate`), when the test has one.
    let plainLane: RecordingPlainTransport?
    var plainTopics: (any PlainTopicsTransport)? { plainLane }

    init(journal: Journal, plainLane: Bool = false) {
        self.journal = journal
        self.plainLane = plainLane ? RecordingPlainTransport(journal: journal) : nil
    }

    nonisolated(nonsending) func publish(to topic: String, payload: [UInt8], retain: Bool, properties: MQTTProperties) async throws(MQTTError) {
        self.properties.withLock { $0.append((topic, properties)) }
        journal.append(.publish(topic: topic, payload: payload, retain: retain))
    }

    nonisolated(nonsending) func publishTracked(to topic: String, payload: [UInt8], retain: Bool) async throws(MQTTError) -> MQTTDeliveryToken {
        let token = nextToken.withLock { $0 += 1; return $0 }
        journal.append(.tracked(topic: topic, payload: payload, token: token, retain: retain))
        return MQTTDeliveryToken(rawValue: token)
    }

    func subscribe(to filter: String, qos: MQTTQoS) async throws(MQTTError) { journal.append(.subscribe(filter)) }
    func unsubscribe(from filter: String) async throws(MQTTError) { journal.append(.unsubscribe(filter)) }
}

/// The plain topics' own connection, recorded in the same journal.
final class RecordingPlainTransport: PlainTopicsTransport {
    let journal: Journal
    /// What `isBacklogged` says.
    let backlogged = Mutex(false)
    var isBacklogged: Bool { backlogged.withLock { $0 } }

    init(journal: Journal) { self.journal = journal }

    nonisolated(nonsending) func publish(to topic: String, payload: [UInt8], qos: MQTTQoS) async throws(MQTTError) {
        journal.append(.plain(topic: topic, payload: payload, qos: qos == .atMostOnce ? 0 : 1))
    }
}

/// A real SQLite database that journals its writes and fails the next ones on demand.
final class JournaledStore: EngineStore {
    let database: PacerDatabase
    let journal: Journal
    /// How many of the next writes fail.
    let failingWrites = Mutex(0)

    init(database: PacerDatabase, journal: Journal) {
        self.database = database
        self.journal = journal
    }

    var path: String { database.path }

    nonisolated(nonsending) func commit(_ batch: StoreBatch) async throws(StoreError) -> StoreCommit {
        let fail = failingWrites.withLock { n -> Bool in
            guard n > 0 else { return false }
            n -= 1
            return true
        }
        if fail {
            journal.append(.writeFailed)
            throw StoreError(.full, "the test made this write fail")
        }
        let result = try database.commit(batch)
        journal.append(.write(timers: batch.upsertTimers.map(\.id), events: batch.appendEvents.map(\.type), marks: batch.markPublished))
        return result
    }

    func loadTimers() throws(StoreError) -> [TimerRecord] { try database.loadTimers() }
    func loadRequests(sinceMs: Int64) throws(StoreError) -> [RequestRecord] { try database.loadRequests(sinceMs: sinceMs) }
    func unpublishedEvents() throws(StoreError) -> [EventRecord] { try database.unpublishedEvents() }
    func history(_ query: HistoryQuery) throws(StoreError) -> [EventRecord] { try database.history(query) }
    func meta(_ key: String) throws(StoreError) -> String? { try database.meta(key) }
    nonisolated(nonsending) func prune(_ policy: RetentionPolicy, nowMs: Int64) async throws(StoreError) -> PruneResult { try database.prune(policy, nowMs: nowMs) }
}

/// Virtual time: a wall clock and a monotonic clock the test moves by hand.
final class VirtualTime: Sendable {
    /// Starts at the real wall clock (so "in 30 days" means the same to the test and the engine).
    private let clocks: Mutex<(wall: Millis, mono: Millis)>
    init() { clocks = Mutex((wall: NodeClock.systemWallClock(), mono: Millis(0))) }
    /// Starts at the wall instant `wall` (a test of a given date: a DST change, a year).
    init(wall: Millis) { clocks = Mutex((wall: wall, mono: Millis(0))) }
    var wall: Millis { clocks.withLock { $0.wall } }
    var mono: Millis { clocks.withLock { $0.mono } }
    /// Time passes: both clocks move.
    func pass(_ ms: Millis) { clocks.withLock { $0.wall += ms; $0.mono += ms } }
    /// The wall clock is stepped (NTP): only it moves.
    func stepWall(_ ms: Millis) { clocks.withLock { $0.wall += ms } }
    var clock: NodeClock { NodeClock(wall: { self.wall }, monotonic: { self.mono }) }
}

/// The engine in-process: the machine alone (`MachineDriver`; with `shell: true`, the shell
/// around it, `NodeEngine`), a real SQLite file, a recording transport and virtual time. Inputs
/// are handled one at a time by the test, so every run is deterministic and takes milliseconds.
struct EngineHarness {
    let engine: any DrivenEngine
    /// The shell, when the harness was made with `shell: true` (the same engine as `engine`).
    let shell: NodeEngine?
    let journal: Journal
    let transport: RecordingTransport
    let store: JournaledStore
    let time: VirtualTime
    let directory: URL
    let base = "pacer/t"
    static let replyTopic = "test/reply"

    /// A harness over the data directory `directory` (a restart keeps it), with the YAML `config`.
    /// - Parameter sound: a sound player the engine hands its events to (EngineSoundTests).
    /// - Parameter plainLane: the plain topics get a connection of their own (recorded as `.plain`).
    static func make(config: String = "", directory: URL? = nil, time: VirtualTime = VirtualTime(),
                     sound: SoundPlayer? = nil, plainLane: Bool = false, shell: Bool = false) async throws -> EngineHarness {
        let directory = try directory ?? makeTemporaryDirectory("pacer-engine")
        let file = directory.appendingPathComponent("pacer.yaml")
        try config.write(to: file, atomically: false, encoding: .utf8)
        let configuration = try NodeConfiguration.load(
            flags: .init(configFile: file.path, node: "t", baseTopic: "pacer/t", dataDirectory: directory.appendingPathComponent("data").path),
            environment: [:])
        let (database, _) = try PacerDatabase.open(directory: configuration.dataDirectory)
        let journal = Journal()
        let store = JournaledStore(database: database, journal: journal)
        let transport = RecordingTransport(journal: journal, plainLane: plainLane)
        let logger = Logger(label: "engine-test") { _ in SwiftLogNoOpLogHandler() }
        let node = shell ? NodeEngine(configuration: configuration, transport: transport, store: store, logger: logger,
                                      clock: time.clock, usesAlarm: false, sound: sound) : nil
        let engine: any DrivenEngine = node ?? MachineDriver(configuration: configuration, transport: transport, store: store, logger: logger,
                                                              clock: time.clock, sound: sound)
        await engine.restore()
        return EngineHarness(engine: engine, shell: node, journal: journal, transport: transport, store: store, time: time, directory: directory)
    }

    /// The same data directory, a new engine (a restart after a crash: nothing was shut down).
    func restart(config: String = "") async throws -> EngineHarness {
        try store.database.close()
        return try await Self.make(config: config, directory: directory, time: time, plainLane: transport.plainLane != nil, shell: shell != nil)
    }

    func topic(_ timer: String, _ name: String) -> String { "\(base)/timers/\(timer)/\(name)" }

    func connect() async { await engine.handle(.connection(.connected(sessionPresent: false))) }
    func disconnect() async { await engine.handle(.connection(.disconnected(reason: "test"))) }
    func plainConnect() async { await engine.handle(.plainLink(.connected(sessionPresent: false))) }
    func plainDisconnect() async { await engine.handle(.plainLink(.disconnected(reason: "test"))) }

    /// Sends a JSON command and returns the reply the engine published.
    @discardableResult
    func send(_ command: JSONValue, timer: String? = nil) async throws -> JSONValue {
        let topic = timer.map { self.topic($0, "cmd") } ?? "\(base)/cmd"
        let start = journal.count
        await engine.handle(.message(MQTTMessage(topic: topic, payload: Array(command.description.utf8), qos: .atLeastOnce,
                                                 properties: MQTTProperties(responseTopic: Self.replyTopic))))
        guard let reply = journal.since(start).last(where: { $0.topic == Self.replyTopic })?.json else {
            throw HarnessError("no reply to \(command): \(journal.since(start))")
        }
        return reply
    }

    /// Sends any payload on a `cmd` topic; returns every reply it got (one, unless broken).
    func sendRaw(_ payload: [UInt8], timer: String?) async -> [JSONValue] {
        let topic = timer.map { self.topic($0, "cmd") } ?? "\(base)/cmd"
        let start = journal.count
        await engine.handle(.message(MQTTMessage(topic: topic, payload: payload, qos: .atLeastOnce,
                                                 properties: MQTTProperties(responseTopic: Self.replyTopic))))
        return journal.since(start).filter { $0.topic == Self.replyTopic }.compactMap(\.json)
    }

    /// A retained message the broker sends on one of the node's topics.
    func retained(_ topic: String, _ json: JSONValue) async {
        await engine.handle(.message(MQTTMessage(topic: topic, payload: Array(json.description.utf8), qos: .atMostOnce, retain: true)))
    }

    /// The broker acknowledged the tracked publish `token`.
    /// The broker acknowledges the connect's last state (a tracked retained publish, made when
    /// the plain topics have their own connection): their republish no longer waits for it.
    func deliverStates() async {
        for case .tracked(_, _, let token, true) in journal.all { await deliver(token) }
    }

    func deliver(_ token: UInt64) async {
        await engine.handle(.delivered(MQTTDeliveryReport(token: MQTTDeliveryToken(rawValue: token), reasonCode: 0)))
    }

    /// Lets `ms` pass, handling every deadline on the way at its instant.
    func pass(_ ms: Millis) async {
        let end = time.mono + ms
        while let next = await engine.nextDeadline() {
            let wait = next - time.wall  // the timeline equals the wall clock unless it was stepped
            guard time.mono + max(0, wait) <= end else { break }
            time.pass(max(0, wait))
            await engine.handle(.deadline)
        }
        time.pass(end - time.mono)
    }

    /// The publishes on `topic` from journal index `start` on.
    func published(_ topic: String, from start: Int = 0) -> [EngineStep] {
        journal.since(start).filter { $0.topic == topic }
    }

    /// The last `state` JSON published for `timer`.
    func state(_ timer: String) -> JSONValue? { published(topic(timer, "state")).last?.json }
}

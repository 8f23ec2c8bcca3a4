// libFuzzer target `engine`: the whole engine in-process. The input is a small program of
// steps (commands of any bytes on every topic the node reads, structured commands that reach
// deep states, time passing, reconnects, acknowledgements, restarts), run against a real
// `NodeEngine` over a real SQLite file in /dev/shm, a transport that records, and virtual time.
// After every step the engine's invariants are checked; a broken one aborts (a crash for
// libFuzzer). Built by scripts/fuzz with SwiftPM (`PACER_FUZZ_ENGINE=1 swift build
// --sanitize fuzzer --sanitize address`), since it needs PacerNode and every dependency.
import Foundation
import Logging
import Mosquitto
import PacerCore
@testable import PacerNode
import PacerStore
import Synchronization
import PacerProtocol

/// Every publish the engine made, in order.
final class Recorder: EngineTransport {
    struct Publish: Sendable {
        var topic: String
        var payload: [UInt8]
        var retain: Bool
    }
    private let log = Mutex<[Publish]>([])
    private let tokens = Mutex<UInt64>(0)
    var count: Int { log.withLock { $0.count } }
    func since(_ index: Int) -> [Publish] { log.withLock { Array($0[index...]) } }
    var lastToken: UInt64 { tokens.withLock { $0 } }

    nonisolated(nonsending) func publish(to topic: String, payload: [UInt8], retain: Bool, properties: MQTTProperties) async throws(MQTTError) {
        log.withLock { $0.append(.init(topic: topic, payload: payload, retain: retain)) }
    }
    nonisolated(nonsending) func publishTracked(to topic: String, payload: [UInt8], retain: Bool) async throws(MQTTError) -> MQTTDeliveryToken {
        log.withLock { $0.append(.init(topic: topic, payload: payload, retain: retain)) }
        return MQTTDeliveryToken(rawValue: tokens.withLock { $0 += 1; return $0 })
    }
    func subscribe(to filter: String, qos: MQTTQoS) async throws(MQTTError) {}
    func unsubscribe(from filter: String) async throws(MQTTError) {}
}

/// The database as the store, counting writes that change timers or events (a refused
/// command writes at most its request id's record, kept so a retry gets the same reply).
final class CountingStore: EngineStore {
    let database: PacerDatabase
    private let writes = Mutex(0)
    init(database: PacerDatabase) { self.database = database }
    var writeCount: Int { writes.withLock { $0 } }
    var path: String { database.path }
    nonisolated(nonsending) func commit(_ batch: StoreBatch) async throws(StoreError) -> StoreCommit {
        if !batch.upsertTimers.isEmpty || !batch.deleteTimers.isEmpty || !batch.appendEvents.isEmpty {
            writes.withLock { $0 += 1 }
        }
        return try database.commit(batch)
    }
    func loadTimers() throws(StoreError) -> [TimerRecord] { try database.loadTimers() }
    func loadRequests(sinceMs: Int64) throws(StoreError) -> [RequestRecord] { try database.loadRequests(sinceMs: sinceMs) }
    func unpublishedEvents() throws(StoreError) -> [EventRecord] { try database.unpublishedEvents() }
    func history(_ query: HistoryQuery) throws(StoreError) -> [EventRecord] { try database.history(query) }
    func meta(_ key: String) throws(StoreError) -> String? { try database.meta(key) }
    nonisolated(nonsending) func prune(_ policy: RetentionPolicy, nowMs: Int64) async throws(StoreError) -> PruneResult {
        try database.prune(policy, nowMs: nowMs)
    }
}

/// Virtual time: the test moves it.
final class Time: Sendable {
    private let clocks = Mutex((wall: Millis(1_795_370_400_000), mono: Millis(0)))
    var wall: Millis { clocks.withLock { $0.wall } }
    var mono: Millis { clocks.withLock { $0.mono } }
    func pass(_ ms: Millis) { clocks.withLock { $0.wall += ms; $0.mono += ms } }
    var clock: NodeClock { NodeClock(wall: { self.wall }, monotonic: { self.mono }) }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("engine invariant broken: \(message)\n".utf8))
    abort()
}

/// Reads the input as a program.
struct Program {
    let bytes: [UInt8]
    var index = 0
    var isAtEnd: Bool { index >= bytes.count }
    mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }
    mutating func chunk() -> [UInt8] {
        let length = Int(byte()) | (Int(byte()) << 8) % 4096
        let end = min(bytes.count, index + length)
        defer { index = end }
        return Array(bytes[min(index, end)..<end])
    }
}

let base = "pacer/f"
let replyTopic = "fuzz/reply"
let timerIDs = ["a", "b", "main", "Bad", "a/b", ""]
let words = ["start", "pause", "resume", "toggle", "cancel", "reset", "finish", "skip", "back", "ack", "snooze",
             "+30", "-10", "delete", "restart", "snooze 120", "adjust 5", "+0", "-999999"]
let specs: [JSONValue] = [
    ["kind": "interval", "work": "20s", "rest": "10s", "rounds": 3],
    ["kind": "interval", "work": 2, "rest": 1, "rounds": 2, "sets": 2, "set_rest": 3, "prepare": 1, "cooldown": 2,
     "exercises": ["a", "b"], "skip_last_rest": true],
    ["kind": "countdown", "duration": "0:00:05"],
    ["kind": "countdown", "duration": "1m", "ack": true],
    ["kind": "rest", "duration": 3, "exercise": "Rows", "next": "Squats"],
    ["kind": "stopwatch", "target": "5s"],
    ["kind": "stopwatch"],
    ["kind": "program", "segments": [["kind": "work", "duration": 2, "label": "x"], ["kind": "rest", "duration": 1], ["kind": "session"]]],
    ["preset": "tabata"], ["preset": "emom", "rounds": 2], ["preset": "amrap", "duration": "1m"], ["preset": "for_time", "cap": "10s"],
]
let actions = ["start", "pause", "resume", "toggle", "cancel", "reset", "finish", "skip", "back", "adjust", "ack", "snooze",
               "delete", "create", "list", "time", "history"]

/// One engine over a data directory; `restart()` makes a new one over the same files.
final class Rig: @unchecked Sendable {
    // Safety: used by one task at a time (the fuzz input's), never concurrently.
    let directory: String
    let time = Time()
    var engine: NodeEngine
    var transport: Recorder
    var store: CountingStore
    let configuration: NodeConfiguration

    init(directory: String) async throws {
        self.directory = directory
        let file = directory + "/pacer.yaml"
        try """
            heart_rate: {max_hr: 190, sources: [{name: a, topic: hr/a}, {name: b, topic: hr/b, field: data.bpm}]}
            limits: {max_timers: 4}
            home_assistant: {enabled: true}
            """.write(toFile: file, atomically: false, encoding: .utf8)
        configuration = try NodeConfiguration.load(
            flags: .init(configFile: file, node: "f", baseTopic: base, dataDirectory: directory + "/data"), environment: [:])
        (engine, transport, store) = try await Self.engine(configuration, time)
    }

    static func engine(_ configuration: NodeConfiguration, _ time: Time) async throws -> (NodeEngine, Recorder, CountingStore) {
        let (database, _) = try PacerDatabase.open(directory: configuration.dataDirectory)
        let store = CountingStore(database: database)
        let transport = Recorder()
        let engine = NodeEngine(configuration: configuration, transport: transport, store: store,
                                logger: Logger(label: "fuzz") { _ in SwiftLogNoOpLogHandler() },
                                clock: time.clock, usesAlarm: false)
        await engine.restore()
        return (engine, transport, store)
    }

    func restart() async throws {
        try store.database.close()
        (engine, transport, store) = try await Self.engine(configuration, time)
        await engine.handle(.connection(.connected(sessionPresent: false)))
    }

    /// Sends `payload` on `topic` as a command; checks exactly one reply came, and that a
    /// refused command wrote and published nothing else.
    func command(_ topic: String, _ payload: [UInt8]) async {
        let before = transport.count, writes = store.writeCount
        await engine.handle(.message(MQTTMessage(topic: topic, payload: payload, qos: .atLeastOnce,
                                                 properties: MQTTProperties(responseTopic: replyTopic))))
        let published = transport.since(before)
        let replies = published.filter { $0.topic == replyTopic }
        // `timers//cmd` and `timers/a/b/cmd` are no command topics: no reply.
        let topics = Topics(base: base)
        guard topic == topics.command || topics.timerID(ofCommandTopic: topic) != nil else {
            guard replies.isEmpty else { fail("a reply to a message on \(topic)") }
            return check(published)
        }
        guard replies.count == 1 else { fail("\(replies.count) replies to \(String(decoding: payload.prefix(200), as: UTF8.self))") }
        guard case .object(let reply)? = try? JSONValue.parse(replies[0].payload) else { fail("a reply that is not a JSON object") }
        if reply["ok"] == .bool(false) {
            guard case .object(let error)? = reply["error"], case .string(let code)? = error["code"],
                  ReplyErrorCode(rawValue: code) != nil, case .string(let message)? = error["message"], message.count >= 10 else {
                fail("an error reply without a code and a message: \(reply)")
            }
            guard !message.unicodeScalars.contains(where: { $0.value < 0x20 }) else { fail("control characters in \(message)") }
            if code != "storage_failure" {
                let others = published.filter { $0.topic != replyTopic }
                guard others.isEmpty, store.writeCount == writes else {
                    fail("refused (\(code)) but published \(others.map(\.topic)) and wrote \(store.writeCount - writes)")
                }
            }
        }
        check(published)
    }

    /// Every state published is a snapshot a display can trust.
    func check(_ published: [Recorder.Publish]) {
        for p in published where p.topic.hasSuffix("/state") && !p.payload.isEmpty {
            guard case .object(let s)? = try? JSONValue.parse(p.payload) else { fail("a state that is not JSON on \(p.topic)") }
            guard case .string(let status)? = s["status"], TimerStatus(rawValue: status) != nil else { fail("status of \(s)") }
            if let remaining = s["remaining_ms"]?.int64, remaining < 0 { fail("negative remaining_ms in \(s)") }
            if case .number(let progress)? = s["progress"], !(0...1).contains(progress) { fail("progress \(progress)") }
            // 1-based positions (docs/API.md), 0 before the first.
            for (position, count) in [("segment", "segments"), ("round", "rounds"), ("set", "sets")] {
                if let index = s[position]?.int, let total = s[count]?.int, !(0...max(total, 0)).contains(index) {
                    fail("\(position) \(index) of \(total) in \(s)")
                }
            }
            // A running segment with time left has an end (a stopwatch past its target, in
            // overtime, has none: it counts on until completed).
            if status == "running", case .number? = s["segment_duration_ms"], let left = s["remaining_ms"]?.int64, left > 0,
               s["ends_at_ms"] == nil { fail("running without ends_at_ms: \(s)") }
        }
    }
}

func step(_ rig: Rig, _ program: inout Program) async throws {
    let op = program.byte()
    switch op % 11 {
    case 0:  // any bytes on the node's cmd topic
        await rig.command("\(base)/cmd", program.chunk())
    case 1:  // any bytes on a timer's cmd topic
        let id = timerIDs[Int(program.byte()) % timerIDs.count]
        await rig.command("\(base)/timers/\(id)/cmd", program.chunk())
    case 2:  // a plain word
        let id = timerIDs[Int(program.byte()) % 3]
        await rig.command("\(base)/timers/\(id)/cmd", Array(words[Int(program.byte()) % words.count].utf8))
    case 3:  // a structured command: reaches states random bytes rarely do
        let action = actions[Int(program.byte()) % actions.count]
        let id = timerIDs[Int(program.byte()) % 3]
        var o: [String: JSONValue] = ["action": .string(action), "timer": .string(id)]
        let flags = program.byte()
        if flags & 1 != 0 { o["spec"] = specs[Int(program.byte()) % specs.count] }
        if flags & 2 != 0 { o["id"] = .string("r\(program.byte() % 8)") }
        if flags & 4 != 0 { o["at"] = .int(rig.time.wall - Millis(program.byte()) * 50) }
        if flags & 8 != 0 { o["seconds"] = .int(Int(Int8(bitPattern: program.byte()))) }
        if flags & 16 != 0 { o["start_at"] = .int(rig.time.wall + Millis(program.byte()) * 100) }
        if flags & 32 != 0 { o["if_revision"] = .int(Int(program.byte() % 16)) }
        if case .object(let spec)? = o["spec"], spec["preset"] != nil, action == "start" {
            o["spec"] = nil
            o.merge(spec) { $1 }
        }
        await rig.command("\(base)/cmd", Array(JSONValue.object(o).description.utf8))
    case 4:  // time passes, every deadline handled at its instant
        let ms = Millis(program.byte()) * Millis(program.byte() % 8 + 1) * 37
        let end = rig.time.mono + ms
        while let next = await rig.engine.nextDeadline() {
            let wait = max(0, next - rig.time.wall)
            guard rig.time.mono + wait <= end else { break }
            rig.time.pass(wait)
            let before = rig.transport.count
            await rig.engine.handle(.deadline)
            rig.check(rig.transport.since(before))
        }
        rig.time.pass(end - rig.time.mono)
    case 5:  // the connection drops and comes back
        await rig.engine.handle(.connection(.disconnected(reason: "fuzz")))
        await rig.engine.handle(.connection(.connected(sessionPresent: program.byte() & 1 == 1)))
    case 6:  // a heart-rate reading
        await rig.engine.handle(.message(MQTTMessage(topic: program.byte() & 1 == 0 ? "hr/a" : "hr/b", payload: program.chunk())))
    case 7:  // a retained state read back on connect (the outbox check), of any bytes
        let id = timerIDs[Int(program.byte()) % 3]
        await rig.engine.handle(.message(MQTTMessage(topic: "\(base)/timers/\(id)/state", payload: program.chunk(), retain: true)))
    case 8:  // the broker acknowledges the tracked publishes so far; HA's birth message
        for token in stride(from: 1, through: rig.transport.lastToken, by: 1) {
            await rig.engine.handle(.delivered(MQTTDeliveryReport(token: MQTTDeliveryToken(rawValue: token), reasonCode: 0)))
        }
        await rig.engine.handle(.message(MQTTMessage(topic: "homeassistant/status", payload: program.chunk())))
    case 10:  // a clock request on the time topic (readers may publish there): a reply or none, never more
        let before = rig.transport.count, writes = rig.store.writeCount
        await rig.engine.handle(.message(MQTTMessage(topic: "\(base)/time", payload: program.chunk(), qos: .atMostOnce,
                                                     properties: MQTTProperties(responseTopic: "\(base)/reply/fuzz"))))
        let published = rig.transport.since(before)
        guard published.count <= 1, rig.store.writeCount == writes else { fail("a clock request published \(published.map(\.topic)) and wrote") }
    default:  // a restart (a crash: nothing shut down): the same timers come back
        let before = await rig.engine.timerIDs()
        try await rig.restart()
        let after = await rig.engine.timerIDs()
        guard before == after else { fail("restart: \(before) became \(after)") }
    }
}

func run(_ input: [UInt8]) async {
    let directory = "/dev/shm/pacer-fuzz-\(getpid())"
    try? FileManager.default.removeItem(atPath: directory)
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    do {
        let rig = try await Rig(directory: directory)
        await rig.engine.handle(.connection(.connected(sessionPresent: false)))
        var program = Program(bytes: input)
        var steps = 0
        while !program.isAtEnd, steps < 64 {
            try await step(rig, &program)
            steps += 1
        }
        try rig.store.database.close()
    } catch {
        fail("the rig failed: \(error)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEngine(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        await run(input)
        done.signal()
    }
    done.wait()
    return 0
}

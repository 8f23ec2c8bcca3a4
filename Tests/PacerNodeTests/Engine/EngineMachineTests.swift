import Foundation
import Logging
import Mosquitto
import PacerCore
@testable import PacerNode
import PacerProtocol
import PacerSound
import PacerStore
import PacerTestSupport
import Testing

/// The engine's machine alone: no store, no transport, no thread, no clock. Each
/// test hands it inputs with their instants and reads the batch it would write and the
/// effects it asks for — the shell's whole job, done here by hand.
@Suite("Engine machine (no store, no transport)")
struct EngineMachineTests {
    static let base = "pacer/m"

    /// A machine over a configuration read from YAML (`hasStore`: as if a database backed it).
    static func machine(_ yaml: String = "", hasStore: Bool = false, hasSound: Bool = false) throws -> EngineMachine {
        let directory = try makeTemporaryDirectory("pacer-machine")
        let file = directory.appendingPathComponent("pacer.yaml")
        try yaml.write(to: file, atomically: false, encoding: .utf8)
        let configuration = try NodeConfiguration.load(
            flags: .init(configFile: file.path, node: "m", baseTopic: base, dataDirectory: directory.path), environment: [:])
        return EngineMachine(configuration: configuration, logger: Logger(label: "machine-test") { _ in SwiftLogNoOpLogHandler() },
                             startedAtMs: 1_000_000, hasStore: hasStore, hasSound: hasSound)
    }

    /// One input through the machine's step; a write it asks for is given `result` (nil: no
    /// store) and handed back as `.written`. Returns the batch (empty: no write) and the effects.
    @discardableResult
    static func step(_ m: inout EngineMachine, _ input: EngineInput, at now: Millis,
                     result: (StoreBatch) -> WriteResult = { _ in nil }) -> (StoreBatch, [EngineEffect]) {
        drive(&m, m.step(input, at: Moment(now: now)), at: now, result: result)
    }

    /// Carries `effects` on through their writes and their parts, as the shell does.
    static func drive(_ m: inout EngineMachine, _ effects: [EngineEffect], at now: Millis,
                      result: (StoreBatch) -> WriteResult = { _ in nil }) -> (StoreBatch, [EngineEffect]) {
        var effects = effects
        var done: [EngineEffect] = []
        var written = StoreBatch()
        while true {
            if case .write(let batch, _)? = effects.last {
                effects.removeLast()
                done += effects
                written = batch
                effects = m.step(.written(batch.isEmpty ? nil : result(batch), unpublished: []), at: Moment(now: now))
            } else if m.hasMoreOutput {
                done += effects
                effects = m.nextPart(at: Moment(now: now))
            } else {
                return (written, done + effects)
            }
        }
    }

    /// A start-up with `saved`; returns the restore's batch.
    @discardableResult
    static func restore(_ m: inout EngineMachine, _ saved: RestoredState = RestoredState(), at now: Millis) -> StoreBatch {
        drive(&m, m.restore(saved, clockSynchronized: true, at: now), at: now, result: { _ in .success(StoreCommit()) }).0
    }

    static func command(_ json: JSONValue, timer: String? = nil) -> EngineInput {
        let topic = timer.map { "\(base)/timers/\($0)/cmd" } ?? "\(base)/cmd"
        return .message(InboundMessage(topic: topic, payload: Array(json.description.utf8)))
    }

    /// The QoS 1 and tracked publishes among `effects`, as (topic, JSON payload).
    static func published(_ effects: [EngineEffect]) -> [(topic: String, json: JSONValue?)] {
        effects.compactMap { effect in
            switch effect {
            case .publish(let topic, let payload, _, _), .publishTracked(let topic, let payload, _, _):
                (topic, payload.isEmpty ? nil : JSONCoding.decode(payload))
            default: nil
            }
        }
    }

    static func plainValues(_ effects: [EngineEffect]) -> [String: String] {
        var values: [String: String] = [:]
        for case .publishSuperseding(let topic, let payload) in effects { values[topic] = String(decoding: payload, as: UTF8.self) }
        for case .publish(let topic, let payload, true, _) in effects where !topic.hasSuffix("/state") {
            values[topic] = String(decoding: payload, as: UTF8.self)
        }
        return values
    }

    @Test("a connect publishes status, info and every declared timer's state; nothing is written")
    func connectRepublishes() throws {
        var m = try Self.machine("timers:\n  - {id: egg, name: Egg, spec: {kind: countdown, duration: 5s}}\n")
        Self.restore(&m, at: 1_000_000)
        #expect(m.board.timers.ids == ["egg"])
        let (batch, effects) = Self.step(&m, .connection(.connected(sessionPresent: false)), at: 1_000_000)
        #expect(batch.isEmpty)
        let topics = Self.published(effects).map(\.topic)
        #expect(topics.contains("\(Self.base)/status"))
        #expect(topics.contains("\(Self.base)/info"))
        #expect(Self.published(effects).first { $0.topic == "\(Self.base)/timers/egg/state" }?.json?["status"] == "idle")
    }

    @Test("a start: the batch holds the timer and the request; the state, then the reply, are published; the deadline is its end")
    func startWritesThenPublishes() throws {
        var m = try Self.machine()
        Self.step(&m, .connection(.connected(sessionPresent: false)), at: 0)
        let (batch, effects) = Self.step(&m, Self.command(["action": "start", "id": "r1", "spec": ["kind": "countdown", "duration": "3s"]], timer: "tea"), at: 10_000,
                                         result: { _ in .success(StoreCommit()) })
        // Step 2 gave the write (done by the shell): the timer's row and the request id.
        #expect(batch.upsertTimers.map(\.id) == ["tea"])
        #expect(batch.requests.map(\.id) == ["r1"])
        // Step 3 gave the publishes, in order: the state before the reply.
        let published = Self.published(effects)
        let state = try #require(published.firstIndex { $0.topic == "\(Self.base)/timers/tea/state" })
        let reply = try #require(published.firstIndex { $0.topic == "\(Self.base)/reply" })
        #expect(state < reply)
        #expect(published[state].json?["status"] == "running")
        #expect(published[state].json?["ends_at_ms"] == .int(13_000))
        #expect(published[reply].json?["ok"] == true && published[reply].json?["id"] == "r1")
        #expect(m.nextDeadline() == 11_000, "the displayed second flips at 2 s left")
    }

    @Test("time alone: the flips are published and nothing is written until the outcome")
    func flipsAreNotWritten() throws {
        var m = try Self.machine()
        Self.step(&m, .connection(.connected(sessionPresent: false)), at: 0)
        Self.step(&m, Self.command(["action": "start", "spec": ["kind": "countdown", "duration": "3s"]], timer: "tea"), at: 0,
                  result: { _ in .success(StoreCommit()) })
        var remaining: [String] = []
        var written: [StoreBatch] = []
        while let next = m.nextDeadline(), next <= 3_000 {
            let (batch, effects) = Self.step(&m, .deadline, at: next, result: { _ in .success(StoreCommit()) })
            if !batch.isEmpty { written.append(batch) }
            if let value = Self.plainValues(effects)["\(Self.base)/timers/tea/remaining"] { remaining.append(value) }
        }
        #expect(remaining == ["2", "1", "0"], "\(remaining)")
        // One write: the end (an outcome that must not repeat), with its event.
        #expect(written.count == 1)
        #expect(written.first?.appendEvents.map(\.type) == ["finished"])
    }

    @Test("a failed write: the command is undone and refused storage_failure; nothing it changed is published")
    func failedWriteRollsBack() throws {
        var m = try Self.machine(hasStore: true)
        Self.step(&m, .connection(.connected(sessionPresent: false)), at: 0)
        let (_, effects) = Self.step(&m, Self.command(["action": "start", "id": "r2", "spec": ["kind": "countdown", "duration": "1m"]], timer: "tea"), at: 5_000,
                                     result: { _ in .failure(StoreError(.io, "disk I/O error")) })
        let published = Self.published(effects)
        #expect(!published.contains { $0.topic.hasPrefix("\(Self.base)/timers/tea/") }, "\(published.map(\.topic))")
        let reply = try #require(published.first { $0.topic == "\(Self.base)/reply" }?.json)
        #expect(reply["ok"] == false && reply["error"]?["code"] == "storage_failure" && reply["id"] == "r2", "\(reply)")
        #expect(!m.board.timers.contains("tea"))
        // The same request id is not a duplicate: the retry is applied.
        let (_, retry) = Self.step(&m, Self.command(["action": "start", "id": "r2", "spec": ["kind": "countdown", "duration": "1m"]], timer: "tea"), at: 6_000,
                                   result: { _ in .success(StoreCommit()) })
        #expect(Self.published(retry).first { $0.topic == "\(Self.base)/reply" }?.json?["ok"] == true)
        #expect(m.board.timers.contains("tea"))
    }

    @Test("history is the shell's read: the machine asks for it with the request's reply topic and id")
    func historyIsAnEffect() throws {
        var m = try Self.machine(hasStore: true)
        Self.step(&m, .connection(.connected(sessionPresent: false)), at: 0)
        let (batch, effects) = Self.step(&m, Self.command(["action": "history", "id": "h1", "timer": "tea", "limit": 5]), at: 1_000)
        #expect(batch.isEmpty, "a read writes nothing")
        let asked = effects.compactMap { effect -> (HistoryQuery, EngineOutput.Reply)? in
            if case .history(let query, let reply) = effect { (query, reply) } else { nil }
        }
        #expect(asked.count == 1)
        #expect(asked.first?.0.timer == "tea" && asked.first?.0.limit == 5)
        #expect(asked.first?.1.topic == "\(Self.base)/reply" && asked.first?.1.id == "h1")
        // Without a store the machine answers at once: an empty history.
        var bare = try Self.machine()
        Self.step(&bare, .connection(.connected(sessionPresent: false)), at: 0)
        let (_, bareEffects) = Self.step(&bare, Self.command(["action": "history", "id": "h2"]), at: 1_000)
        #expect(Self.published(bareEffects).first { $0.topic == "\(Self.base)/reply" }?.json?["events"] == .array([]))
    }

    @Test("a written event goes out tracked with the machine's own token; its acknowledgement marks it in the next write")
    func trackedEventsAndMarks() throws {
        var m = try Self.machine(hasStore: true)
        Self.step(&m, .connection(.connected(sessionPresent: false)), at: 0)
        // The store gives the written events their seqs (as SQLite would).
        let (_, effects) = Self.step(&m, Self.command(["action": "start", "spec": ["kind": "countdown", "duration": "1s"]], timer: "tea"), at: 0,
                                     result: { batch in .success(StoreCommit(appended: batch.appendEvents.enumerated().map { i, e in
                                         var e = e; e.seq = Int64(i + 1); return e }, duplicates: [])) })
        let tokens = effects.compactMap { effect -> PublishToken? in
            if case .publishTracked(_, _, _, let token) = effect { token } else { nil }
        }
        #expect(tokens.count == 1, "the started event, tracked")
        Self.step(&m, .delivered(PublishAck(token: tokens[0], reasonCode: 0)), at: 100)
        let (next, _) = Self.step(&m, Self.command(["action": "pause"], timer: "tea"), at: 200, result: { _ in .success(StoreCommit()) })
        #expect(next.markPublished == [1])
    }

    @Test("a rest timer with after_ack ready: Acknowledge (from any client) publishes it idle at its full duration, and the change is written")
    func restComesBackReady() throws {
        var m = try Self.machine()
        Self.step(&m, .connection(.connected(sessionPresent: false)), at: 0)
        Self.step(&m, Self.command(["action": "start", "spec": ["kind": "rest", "duration": "90s", "exercise": "Squat", "next": "Rows", "after_ack": "ready"]], timer: "rest"),
                  at: 0, result: { _ in .success(StoreCommit()) })
        while let next = m.nextDeadline(), next <= 90_000 { Self.step(&m, .deadline, at: next, result: { _ in .success(StoreCommit()) }) }
        let (batch, effects) = Self.step(&m, Self.command(["action": "ack", "id": "a1"], timer: "rest"), at: 95_000, result: { _ in .success(StoreCommit()) })
        #expect(batch.upsertTimers.map(\.id) == ["rest"])
        #expect(batch.appendEvents.map(\.type) == ["acknowledged", "finished", "reset"])
        let state = try #require(Self.published(effects).last { $0.topic == "\(Self.base)/timers/rest/state" }?.json)
        #expect(state["status"] == "idle" && state["remaining_ms"] == .int(90_000) && state["display"] == "1:30", "\(state)")
        #expect(Self.plainValues(effects)["\(Self.base)/timers/rest/display"] == "1:30")
    }

    @Test("saving a workout republishes every timer's Home Assistant config with it among the Workout select's options")
    func savedWorkoutReachesHomeAssistant() throws {
        var m = try Self.machine("timers:\n  - {id: tea, name: Tea, spec: {kind: countdown, duration: 3m}}\n", hasStore: true)
        Self.restore(&m, at: 0)
        Self.step(&m, .connection(.connected(sessionPresent: false)), at: 0)
        let configTopic = "homeassistant/device/m_tea/config"
        func options(_ effects: [EngineEffect]) -> [String]? {
            Self.published(effects).last { $0.topic == configTopic }?.json?["cmps"]?["workout"]?["options"]?.array?.compactMap(\.string)
        }
        let (_, saved) = Self.step(&m, Self.command(["action": "save_workout", "workout": "hiit", "spec": ["kind": "interval", "work": "45s", "rest": "15s", "rounds": 10]]),
                                   at: 1_000, result: { _ in .success(StoreCommit()) })
        #expect(options(saved)?.contains("hiit") == true, "\(Self.published(saved).map(\.topic))")
        // A command that changes no workout publishes no config again.
        let (_, other) = Self.step(&m, Self.command(["action": "start"], timer: "tea"), at: 2_000, result: { _ in .success(StoreCommit()) })
        #expect(options(other) == nil)
        let (_, deleted) = Self.step(&m, Self.command(["action": "delete_workout", "workout": "hiit"]), at: 3_000, result: { _ in .success(StoreCommit()) })
        #expect(options(deleted).map { !$0.contains("hiit") } == true)
    }

    @Test("sound: mute and volume are written, published on <base>/sound, handed to the player, kept through a restart; refused without a speaker")
    func speakerCommand() throws {
        var m = try Self.machine(hasStore: true, hasSound: true)
        let (_, connect) = Self.step(&m, .connection(.connected(sessionPresent: false)), at: 0)
        #expect(Self.published(connect).first { $0.topic == "\(Self.base)/sound" }?.json == ["available": true, "muted": false, "volume": 100])
        // The node's own Home Assistant device: the speaker switch and its volume.
        let node = try #require(Self.published(connect).first { $0.topic == "homeassistant/device/m/config" }?.json)
        #expect(node["cmps"]?["speaker"]?["platform"] == "switch" && node["cmps"]?["speaker_volume"]?["platform"] == "number")
        let (batch, effects) = Self.step(&m, Self.command(["action": "sound", "muted": true, "volume": 30, "id": "s1"]), at: 1_000,
                                         result: { _ in .success(StoreCommit()) })
        #expect(batch.meta[Speaker.metaKey] == #"{"muted":true,"volume":30}"#)
        #expect(Self.published(effects).first { $0.topic == "\(Self.base)/sound" }?.json == ["available": true, "muted": true, "volume": 30])
        #expect(effects.contains { if case .speaker(true, 30) = $0 { true } else { false } })
        #expect(Self.published(effects).last?.json?["muted"] == true)  // the reply says so too
        // A failed write leaves it as it was.
        let (_, failed) = Self.step(&m, Self.command(["action": "sound", "muted": false]), at: 2_000,
                                    result: { _ in .failure(StoreError(.io, "disk I/O error")) })
        #expect(m.sound.speaker.value.muted == true)
        #expect(!failed.contains { if case .speaker = $0 { true } else { false } })
        // A restart reads it back.
        var restarted = try Self.machine(hasStore: true, hasSound: true)
        Self.restore(&restarted, RestoredState(speakerDocument: batch.meta[Speaker.metaKey]), at: 3_000)
        #expect(restarted.sound.speaker.value == m.sound.speaker.value)
        // Without a speaker: refused, naming what to configure.
        var silent = try Self.machine()
        Self.step(&silent, .connection(.connected(sessionPresent: false)), at: 0)
        let (_, refused) = Self.step(&silent, Self.command(["action": "sound", "muted": true]), at: 1_000)
        let reply = try #require(Self.published(refused).first { $0.topic == "\(Self.base)/reply" }?.json)
        #expect(reply["ok"] == false && reply["error"]?["code"] == "invalid_state" && reply["error"]?["message"]?.string?.contains("sound:") == true, "\(reply)")
    }

    @Test("publish.cue_ahead: every cue the timer sounds is announced once, its lead before its due instant, with its kind and length")
    func cueAhead() throws {
        var m = try Self.machine("publish: {cue_ahead: 1s}\n")
        Self.step(&m, .connection(.connected(sessionPresent: false)), at: 0)
        let spec: JSONValue = ["kind": "interval", "prepare": "5s", "work": "6s", "rest": "4s", "rounds": 2]
        var announced: [(at: Millis, json: JSONValue)] = []
        var sounded: [(due: Millis, cue: String)] = []
        func record(_ effects: [EngineEffect], at now: Millis) {
            for (topic, json) in Self.published(effects) where topic == "\(Self.base)/cue_ahead" { announced.append((now, json ?? .null)) }
            for case .sound(let events, _) in effects {
                for event in events { if let cue = SoundCue.cue(for: event) { sounded.append((event.dueMs, cue.rawValue)) } }
            }
        }
        let (_, started) = Self.step(&m, Self.command(["action": "start", "spec": spec], timer: "hiit"), at: 10_000)
        record(started, at: 10_000)
        while let next = m.nextDeadline(), next <= 60_000 {
            let (_, effects) = Self.step(&m, .deadline, at: next)
            record(effects, at: next)
        }
        // The cues after the start (the start's own work cue sounded at once, with nothing ahead).
        let expected = sounded.filter { $0.due > 10_000 }
        #expect(expected.count >= 10, "\(sounded)")
        #expect(announced.map { $0.json["due_ms"]?.int ?? -1 } == expected.map { Int($0.due) }, "\(announced.map(\.json)) vs \(expected)")
        #expect(announced.map { $0.json["cue"]?.string ?? "" } == expected.map(\.cue))
        for (at, json) in announced {
            #expect(json["lead_ms"]?.int == 1_000 && json["due_ms"]?.int.map { Millis($0) - at } == 1_000, "\(json) at \(at)")
            #expect(json["timer"] == "hiit" && (json["duration_ms"]?.int ?? 0) > 0)
        }
        // A pause stops the announcements; nothing is announced while it is paused.
        var paused = try Self.machine("publish: {cue_ahead: 1s}\n")
        Self.step(&paused, .connection(.connected(sessionPresent: false)), at: 0)
        Self.step(&paused, Self.command(["action": "start", "spec": ["kind": "countdown", "duration": "20s"]], timer: "tea"), at: 0)
        Self.step(&paused, Self.command(["action": "pause"], timer: "tea"), at: 5_000)
        var late: [String] = []
        while let next = paused.nextDeadline(), next <= 60_000 {
            late += Self.published(Self.step(&paused, .deadline, at: next).1).map(\.topic).filter { $0.hasSuffix("/cue_ahead") }
        }
        #expect(late.isEmpty)
    }

    @Test("sound.music without publish.cue_ahead: every cue is told to the music's ducker ahead of its lead, and nothing is published")
    func musicDuckerHearsAhead() throws {
        let wav = try makeTemporaryDirectory("pacer-machine-wav").appendingPathComponent("cues.wav").path
        var m = try Self.machine("sound: {device: \"file:\(wav)\", music: {mpd: \"127.0.0.1:6600\", lead: 200ms}}\n")
        Self.step(&m, .connection(.connected(sessionPresent: false)), at: 0)
        Self.step(&m, Self.command(["action": "start", "spec": ["kind": "interval", "work": "5s", "rest": "3s", "rounds": 1]], timer: "t"), at: 0)
        var told: [(at: Millis, due: Millis)] = []
        var sounded: [Millis] = []
        while let next = m.nextDeadline(), next <= 30_000 {
            let (_, effects) = Self.step(&m, .deadline, at: next)
            for case .expectCue(let due, _) in effects { told.append((next, due)) }
            for case .sound(let events, _) in effects { sounded += events.filter { SoundCue.cue(for: $0) != nil }.map(\.dueMs) }
            #expect(!Self.published(effects).contains { $0.topic.hasSuffix("/cue_ahead") })
        }
        #expect(told.map(\.due) == sounded, "\(told) vs \(sounded)")
        for (at, due) in told { #expect(due - at == 300, "told at \(at) for \(due)") }  // the lead and 100 ms to spare
    }

    @Test("extend through the node: the extended event is written with the timer, then the state with the new rounds and the reply; a refusal writes nothing")
    func extend() throws {
        var m = try Self.machine(hasStore: true)
        Self.step(&m, .connection(.connected(sessionPresent: false)), at: 0, result: { _ in .success(StoreCommit()) })
        Self.step(&m, Self.command(["action": "start", "spec": ["kind": "interval", "work": "20s", "rest": "10s", "rounds": 2]], timer: "hiit"), at: 1_000,
                  result: { _ in .success(StoreCommit()) })
        let (batch, effects) = Self.step(&m, Self.command(["action": "extend", "rounds": 3, "seconds": 30], timer: "hiit"), at: 6_000,
                                         result: { _ in .success(StoreCommit()) })
        #expect(batch.upsertTimers.map(\.id) == ["hiit"])
        #expect(batch.appendEvents.map(\.type) == ["extended"])
        let published = Self.published(effects)
        let state = try #require(published.last { $0.topic == "\(Self.base)/timers/hiit/state" }?.json)
        #expect(state["rounds"] == 5 && state["remaining_ms"] == 45_000)
        #expect(published.last?.json?["ok"] == true)
        let refused = Self.step(&m, Self.command(["action": "extend", "rounds": 1], timer: "nope"), at: 7_000)
        #expect(refused.0.isEmpty && Self.published(refused.1).last?.json?["error"]?["code"] == "unknown_timer")
    }
}

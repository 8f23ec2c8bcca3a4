import Foundation
import PacerCore
@testable import PacerNode
import PacerProtocol
import PacerStore
import PacerTestSupport
import Testing

/// Rests that end on recovery, in the machine alone: the class's readings end the rest (as a
/// written `recovered` event, then the next phase), never before `min`, at `max` without one.
@Suite("Engine machine: rest until recovered")
struct EngineRecoveryTests {
    typealias M = EngineMachineTests
    typealias A = EngineAthletesTests

    static let spec: JSONValue = ["kind": "interval", "work": "10s", "rounds": 2,
                                  "rest": ["until_hr": ["below_bpm": 120, "who": "class_all", "min": "5s", "max": "1m"]]]

    /// Runs the deadlines up to `end`, feeding `readings` (instant, athlete, bpm) in order between them.
    /// Returns the batches written and the timer's events published, in order.
    static func run(_ m: inout EngineMachine, until end: Millis, readings: [(Millis, String, Int)]) -> ([StoreBatch], [JSONValue]) {
        var written: [StoreBatch] = []
        var events: [JSONValue] = []
        var pending = readings[...]
        while true {
            let deadline = m.nextDeadline().flatMap { $0 <= end ? $0 : nil }
            let step: (StoreBatch, [EngineEffect])
            if let (at, athlete, bpm) = pending.first, deadline.map({ at <= $0 }) ?? (at <= end) {
                pending.removeFirst()
                step = M.step(&m, A.reading(athlete, bpm), at: at, result: { _ in .success(StoreCommit()) })
            } else if let deadline {
                step = M.step(&m, .deadline, at: deadline, result: { _ in .success(StoreCommit()) })
            } else {
                return (written, events)
            }
            written.append(step.0)
            events += M.published(step.1).filter { $0.topic == "\(M.base)/timers/hiit/event" }.compactMap(\.json)
        }
    }

    /// The instants of the published events of `type` (with `phase`, when given).
    static func dues(_ events: [JSONValue], _ type: String, phase: String? = nil) -> [Millis] {
        events.filter { $0["type"]?.string == type && (phase == nil || $0["phase"]?.string == phase) }.compactMap { $0["due_ms"]?.int64 }
    }

    @Test("the rest ends at the reading that makes the whole class recovered: recovered and the next work written in that input")
    func endsOnRecovery() throws {
        var m = try M.machine(A.classYAML, hasStore: true)
        M.restore(&m, at: 0)
        M.step(&m, .connection(.connected(sessionPresent: false)), at: 0, result: { _ in .success(StoreCommit()) })
        M.step(&m, M.command(["action": "start", "spec": Self.spec], timer: "hiit"), at: 0, result: { _ in .success(StoreCommit()) })
        // The rest begins at 10 s; a recovers at 16 s, bo (reading all along) at 21 s.
        let (written, events) = Self.run(&m, until: 25_000, readings: [(9_000, "a", 150), (9_500, "bo", 150), (14_000, "bo", 140), (16_000, "a", 110),
                                                                        (18_000, "bo", 130), (20_000, "a", 108), (21_000, "bo", 115)])
        let recovered = try #require(written.first { $0.appendEvents.contains { $0.type == "recovered" } }, "\(written.map { $0.appendEvents.map(\.type) })")
        #expect(recovered.appendEvents.first { $0.type == "recovered" }?.dueMs == 21_000)
        #expect(recovered.upsertTimers.map(\.id) == ["hiit"], "written like a command")
        #expect(Self.dues(events, "phase", phase: "work") == [21_000], "the next round's work at the recovery: \(events)")
    }

    @Test("recovered before min: the rest ends at min; nobody fresh: it runs to max")
    func minAndMax() throws {
        var early = try M.machine(A.classYAML, hasStore: true)
        M.restore(&early, at: 0)
        M.step(&early, M.command(["action": "start", "spec": Self.spec], timer: "hiit"), at: 0, result: { _ in .success(StoreCommit()) })
        let (_, earlyEvents) = Self.run(&early, until: 20_000, readings: [(9_000, "a", 150), (11_000, "a", 100)])
        #expect(Self.dues(earlyEvents, "phase", phase: "work") == [15_000], "ends at min (5 s into the rest): \(earlyEvents)")

        var quiet = try M.machine(A.classYAML, hasStore: true)
        M.restore(&quiet, at: 0)
        M.step(&quiet, M.command(["action": "start", "spec": Self.spec], timer: "hiit"), at: 0, result: { _ in .success(StoreCommit()) })
        let (written, quietEvents) = Self.run(&quiet, until: 75_000, readings: [(1_000, "a", 150)])  // stale after 10 s: nobody counts
        #expect(!written.contains { $0.appendEvents.contains { $0.type == "recovered" } })
        #expect(Self.dues(quietEvents, "phase", phase: "work") == [70_000], "at max (1 min): \(quietEvents)")
    }

    // MARK: - The `recovery` topic: "12 of 14 recovered"

    static let recoveryTopic = "\(M.base)/timers/hiit/recovery"

    /// Drives the machine to `end`, feeding `inputs` (instant, input) in order between the
    /// deadlines. Returns the `recovery` topic's publishes: (instant, payload; nil: cleared).
    static func recoveryPublishes(_ m: inout EngineMachine, until end: Millis, inputs: [(Millis, EngineInput)]) -> [(at: Millis, json: JSONValue?)] {
        var shown: [(at: Millis, json: JSONValue?)] = []
        var pending = inputs[...]
        while true {
            let deadline = m.nextDeadline().flatMap { $0 <= end ? $0 : nil }
            let at: Millis
            let effects: [EngineEffect]
            if let (when, input) = pending.first, deadline.map({ when <= $0 }) ?? (when <= end) {
                pending.removeFirst()
                (at, effects) = (when, M.step(&m, input, at: when, result: { _ in .success(StoreCommit()) }).1)
            } else if let deadline {
                (at, effects) = (deadline, M.step(&m, .deadline, at: deadline, result: { _ in .success(StoreCommit()) }).1)
            } else {
                return shown
            }
            shown += M.published(effects).filter { $0.topic == recoveryTopic }.map { (at, $0.json) }
        }
    }

    /// A connected machine with the class of `A.classYAML` running `rest` between 10 s works from 0.
    static func started(rest: JSONValue) throws -> EngineMachine {
        var m = try M.machine(A.classYAML, hasStore: true)
        M.restore(&m, at: 0)
        M.step(&m, .connection(.connected(sessionPresent: false)), at: 0, result: { _ in .success(StoreCommit()) })
        let spec: JSONValue = ["kind": "interval", "work": "10s", "rounds": 2, "rest": ["until_hr": rest]]
        M.step(&m, M.command(["action": "start", "spec": spec], timer: "hiit"), at: 0, result: { _ in .success(StoreCommit()) })
        return m
    }

    static func tally(_ recovered: Int, of counted: Int, stale: Int = 0, needed: Int?, who: String = "class_80pct") -> JSONValue {
        var o: [String: JSONValue] = ["who": .string(who), "recovered": .int(recovered), "counted": .int(counted), "stale": .int(stale)]
        if let needed { o["needed"] = .int(needed) }
        return .object(o)
    }

    /// The class of `A.classYAML` with a configured source besides (a coach's strap on `coach/hr`).
    static let classWithSourceYAML = """
        heart_rate:
          max_hr: 190
          stale_after: 10s
          sources:
            - {name: coach, topic: coach/hr}
          athletes:
            topic: hr/+
            field: bpm
            absent_after: 30s

        """

    @Test("a class rule counts the athletes present, not a configured source (no stale coach's strap in the tally); with nobody present, the source is the class")
    func classRuleLooksAtAthletes() throws {
        var m = try M.machine(Self.classWithSourceYAML, hasStore: true)
        M.restore(&m, at: 0)
        M.step(&m, .connection(.connected(sessionPresent: false)), at: 0, result: { _ in .success(StoreCommit()) })
        let rest: JSONValue = ["below_bpm": 120, "who": "class_all", "min": "5s", "max": "1m"]
        M.step(&m, M.command(["action": "start", "spec": ["kind": "interval", "work": "10s", "rounds": 2, "rest": ["until_hr": rest]]], timer: "hiit"),
               at: 0, result: { _ in .success(StoreCommit()) })
        // Two athletes read; the coach's strap never does. The rest begins at 10 s.
        let shown = Self.recoveryPublishes(&m, until: 12_000, inputs: [(9_000, A.reading("a", 150)), (9_100, A.reading("bo", 150))])
        #expect(shown.first?.json == Self.tally(0, of: 2, needed: 2, who: "class_all"), "\(shown)")

        // A single strap, nobody checked in: the default class_all looks at the source.
        var single = try M.machine(Self.classWithSourceYAML, hasStore: true)
        M.restore(&single, at: 0)
        M.step(&single, .connection(.connected(sessionPresent: false)), at: 0, result: { _ in .success(StoreCommit()) })
        M.step(&single, M.command(["action": "start", "spec": ["kind": "interval", "work": "10s", "rounds": 2, "rest": ["until_hr": rest]]], timer: "hiit"),
               at: 0, result: { _ in .success(StoreCommit()) })
        let strap = { (bpm: Int) in EngineInput.message(InboundMessage(topic: "coach/hr", payload: Array("\(bpm)".utf8))) }
        let alone = Self.recoveryPublishes(&single, until: 30_000, inputs: [(12_000, strap(140)), (16_000, strap(110))])
        #expect(alone.contains { $0.at == 12_000 && $0.json == Self.tally(0, of: 1, needed: 1, who: "class_all") }, "\(alone)")
        #expect(alone.last.map { $0.at == 16_000 && $0.json == nil } == true, "the strap's recovery ends the rest: \(alone)")
    }

    @Test("recovery: class_80pct counted as the straps recover one by one, published only when a count moves, cleared as the rest ends")
    func recoveryTopicCounts() throws {
        var m = try Self.started(rest: ["below_bpm": 120, "who": "class_80pct", "min": "5s", "max": "1m"])
        // Five athletes; 80 % of 5 is 4. The rest begins at 10 s.
        var readings: [(Millis, EngineInput)] = []
        for (index, athlete) in ["a", "b", "c", "d", "e"].enumerated() { readings.append((9_000 + Millis(index) * 100, A.reading(athlete, 150))) }
        let falling: [(Millis, String, Int)] = [(12_000, "a", 110), (12_500, "a", 108), (13_000, "b", 140), (14_000, "b", 115),
                                                (15_000, "c", 100), (15_500, "e", 149), (16_000, "d", 100)]
        for (at, athlete, bpm) in falling { readings.append((at, A.reading(athlete, bpm))) }
        let shown = Self.recoveryPublishes(&m, until: 20_000, inputs: readings)
        #expect(shown.map(\.at) == [10_000, 12_000, 14_000, 15_000, 16_000], "only a moved count publishes: \(shown)")
        #expect(shown.map(\.json) == [Self.tally(0, of: 5, needed: 4), Self.tally(1, of: 5, needed: 4), Self.tally(2, of: 5, needed: 4),
                                      Self.tally(3, of: 5, needed: 4), nil])
        // d's reading made 4 of 5: the rest ended there, and its topic was cleared (retained, empty).
        let snap = try #require(m.board.timers.read("hiit") { $0.machine.snapshot(at: 16_000) })
        #expect(snap.phase == .work && snap.round == 2)
        #expect(m.heart.waitingRecovery.isEmpty)
    }

    @Test("recovery: a stale strap moves from counted to stale; a connect publishes the tally again")
    func recoveryTopicStaleAndReconnect() throws {
        var m = try Self.started(rest: ["below_bpm": 120, "who": "class_all", "max": "1m"])
        // a reads until 9 s only (stale at 19 s, after stale_after: 10 s); bo reads on.
        let shown = Self.recoveryPublishes(&m, until: 21_000, inputs: [(9_000, A.reading("a", 150)), (9_500, A.reading("bo", 150)),
                                                                      (15_000, A.reading("bo", 130)), (20_000, A.reading("bo", 125))])
        #expect(shown.map(\.at) == [10_000, 19_000])
        #expect(shown.map(\.json) == [Self.tally(0, of: 2, needed: 2, who: "class_all"), Self.tally(0, of: 1, stale: 1, needed: 1, who: "class_all")])
        M.step(&m, .connection(.disconnected(reason: "test")), at: 21_000)
        let again = M.published(M.step(&m, .connection(.connected(sessionPresent: false)), at: 22_000, result: { _ in .success(StoreCommit()) }).1)
        #expect(again.filter { $0.topic == Self.recoveryTopic }.map(\.json) == [Self.tally(0, of: 1, stale: 1, needed: 1, who: "class_all")])
    }

    @Test("recovery: cleared when the rest is skipped, and when the timer is deleted")
    func recoveryTopicClearedBySkipAndDelete() throws {
        let rest: JSONValue = ["below_bpm": 120, "who": "class_all", "max": "1m"]
        var skipped = try Self.started(rest: rest)
        let bySkip = Self.recoveryPublishes(&skipped, until: 13_000, inputs: [(9_000, A.reading("a", 150)), (12_000, M.command(["action": "skip"], timer: "hiit"))])
        #expect(bySkip.map(\.at) == [10_000, 12_000])
        #expect(bySkip.map(\.json) == [Self.tally(0, of: 1, needed: 1, who: "class_all"), nil])

        var deleted = try Self.started(rest: rest)
        let byDelete = Self.recoveryPublishes(&deleted, until: 13_000, inputs: [(9_000, A.reading("a", 150)),
                                                                             (12_000, M.command(["action": "delete", "timer": "hiit"]))])
        #expect(byDelete.map(\.at) == [10_000, 12_000])
        #expect(byDelete.last.map { $0.json == nil } == true, "\(byDelete)")
        #expect(deleted.heart.waitingRecovery.isEmpty)
    }

    @Test("recovery: one athlete's rule shows that athlete's bpm and its target; the others' readings change nothing")
    func recoveryTopicOneAthlete() throws {
        // a's profile says max HR 200: 65 % of it is 130 bpm.
        var m = try Self.started(rest: ["below_pct_max": 65, "who": "a", "max": "1m"])
        let shown = Self.recoveryPublishes(&m, until: 40_000, inputs: [
            (9_000, A.reading("a", 150)), (11_000, A.reading("a", 140)), (11_500, A.reading("bo", 100)), (12_000, A.reading("a", 140)),
            (25_000, A.reading("a", 129)),
        ])
        func one(_ bpm: Int?, counted: Int, stale: Int) -> JSONValue {
            var o: [String: JSONValue] = ["who": "a", "recovered": 0, "counted": .int(counted), "stale": .int(stale), "needed": 1, "target_bpm": 130]
            if let bpm { o["bpm"] = .int(bpm) }
            return .object(o)
        }
        // 150 at the rest's start, 140 (bo's reading and a's same 140 publish nothing), a stale at 22 s, then 129: recovered.
        #expect(shown.map(\.at) == [10_000, 11_000, 22_000, 25_000], "\(shown)")
        #expect(shown.map(\.json) == [one(150, counted: 1, stale: 0), one(140, counted: 1, stale: 0), one(nil, counted: 0, stale: 1), nil])
    }
}

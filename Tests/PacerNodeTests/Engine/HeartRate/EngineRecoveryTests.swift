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
}

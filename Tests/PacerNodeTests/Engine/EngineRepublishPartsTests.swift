import Foundation
import PacerCore
import PacerProtocol
import PacerStore
import Testing
@testable import PacerNode

@Suite("Engine machine: a connect's republish in parts")
struct EngineRepublishPartsTests {
    typealias M = EngineMachineTests
    static let base = M.base

    /// A machine with `count` running countdowns, started while disconnected (nothing published).
    static func machine(timers count: Int) throws -> EngineMachine {
        var m = try M.machine("limits: {max_timers: 2000}\n")
        M.restore(&m, at: 0)
        for index in 0..<count {
            M.step(&m, M.command(["action": "start", "spec": ["kind": "countdown", "duration": "1h"]], timer: "t\(index)"), at: 1_000,
                   result: { _ in .success(StoreCommit()) })
        }
        return m
    }

    /// The timer a topic belongs to, and its last level.
    static func timerTopic(_ topic: String) -> (id: String, leaf: String)? {
        let prefix = "\(base)/timers/"
        guard topic.hasPrefix(prefix) else { return nil }
        let rest = topic.dropFirst(prefix.count).split(separator: "/")
        return rest.count == 2 ? (String(rest[0]), String(rest[1])) : nil
    }

    /// Every publish's topic, in order (QoS 1, tracked and QoS 0 alike).
    static func topics(_ effects: [EngineEffect]) -> [String] {
        effects.compactMap { effect in
            switch effect {
            case .publish(let topic, _, _, _), .publishTracked(let topic, _, _, _), .publishSuperseding(let topic, _), .publishPlain(let topic, _, _):
                topic
            default: nil
            }
        }
    }

    @Test("a connect of 1,200 timers goes out in parts of at most 500 timers: every state once, then every plain topic, then what the step decided after them")
    func connectInParts() throws {
        let count = 1_200, chunk = BrokerLink.republishChunk
        var m = try Self.machine(timers: count)
        var parts = [m.step(.connection(.connected(sessionPresent: false)), at: Moment(now: 2_000))]
        #expect(m.hasMoreOutput)
        while m.hasMoreOutput { parts.append(m.nextPart(at: Moment(now: 2_000))) }
        #expect(parts.count == 2 * ((count + chunk - 1) / chunk), "the states in 3 parts, the plain topics in 3")
        for (index, part) in parts.enumerated() {
            let timers = Set(Self.topics(part).compactMap { Self.timerTopic($0)?.id })
            #expect(timers.count <= chunk, "part \(index) holds \(timers.count) timers")
        }
        let all = Self.topics(parts.flatMap { $0 })
        let timerIndices = all.indices.filter { Self.timerTopic(all[$0]) != nil }
        let states = timerIndices.filter { Self.timerTopic(all[$0])?.leaf == "state" }
        let plain = timerIndices.filter { Self.timerTopic(all[$0])?.leaf != "state" }
        #expect(states.count == count && Set(states.map { all[$0] }).count == count, "each timer's state once")
        #expect(plain.count == count * 6 && Set(plain.map { all[$0] }).count == count * 6, "each timer's six plain topics once")
        #expect(states.max()! < plain.min()!, "every state before the first plain topic")
        // One block: nothing of the step comes between the timers' topics; what it decided
        // after the republish (the first Home Assistant configs) follows the last part.
        #expect(timerIndices.last! - timerIndices.first! + 1 == timerIndices.count)
        let before = all[..<timerIndices.first!], after = all[(timerIndices.last! + 1)...]
        #expect(Array(before) == ["status", "info", "workouts", "sound", "displays"].map { "\(Self.base)/\($0)" })
        #expect(!after.isEmpty && after.allSatisfy { $0.hasPrefix("homeassistant/device/") })
        #expect(Self.topics(parts.last!).last == after.last, "the held effects are in the last part")
    }

    @Test("a connect of up to 500 timers is one part, as before: states, then plain topics, then the configs")
    func smallConnectIsOnePart() throws {
        var m = try Self.machine(timers: 3)
        let effects = m.step(.connection(.connected(sessionPresent: false)), at: Moment(now: 2_000))
        #expect(!m.hasMoreOutput)
        let all = Self.topics(effects)
        #expect(all.filter { Self.timerTopic($0)?.leaf == "state" }.count == 3)
        #expect(all.filter { Self.timerTopic($0).map { $0.leaf != "state" } ?? false }.count == 18)
        #expect(all.last?.hasPrefix("homeassistant/device/") == true)
    }

    @Test("the shell's driver takes every part: a restart of 1,200 timers republishes all of them")
    func driverTakesEveryPart() throws {
        var m = try Self.machine(timers: 1_200)
        let (_, effects) = M.step(&m, .connection(.connected(sessionPresent: false)), at: 2_000)
        #expect(!m.hasMoreOutput)
        #expect(Self.topics(effects).filter { Self.timerTopic($0)?.leaf == "state" }.count == 1_200)
    }
}

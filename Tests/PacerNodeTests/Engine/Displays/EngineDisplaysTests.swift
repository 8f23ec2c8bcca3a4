import Foundation
import PacerCore
@testable import PacerNode
import PacerProtocol
import PacerStore
import PacerTestSupport
import Testing

/// The displays part in the machine alone: what reaches an AWTRIX clock and when.
@Suite("Engine machine: LED displays")
struct EngineDisplaysTests {
    typealias M = EngineMachineTests

    static func app(_ effects: [EngineEffect]) -> [JSONValue?] {
        M.published(effects).filter { $0.topic == "awtrix_m/custom/pacer" }.map(\.json)
    }

    @Test("a start updates the clock at once and at each flip of the shown second (a deadline of the one queue); none while disconnected, all again on connect; a deletion removes the app")
    func clock() throws {
        var m = try M.machine("displays: [{type: awtrix, prefix: awtrix_m, timer: cd}]\n")
        M.step(&m, .connection(.connected(sessionPresent: false)), at: 0)
        let (_, started) = M.step(&m, M.command(["action": "start", "spec": ["kind": "countdown", "duration": "3s"]], timer: "cd"), at: 1_000)
        #expect(Self.app(started).count == 1 && Self.app(started).first??["text"] != nil, "\(M.published(started))")
        #expect(m.nextDeadline() == 2_000)
        var flips: [Millis] = []
        while let next = m.nextDeadline(), next < 3_500 {
            if !Self.app(M.step(&m, .deadline, at: next).1).isEmpty { flips.append(next) }
        }
        #expect(flips == [2_000, 3_000], "one update per second flip: \(flips)")
        M.step(&m, .connection(.disconnected(reason: "test")), at: 3_200)
        #expect(Self.app(M.step(&m, .deadline, at: 4_000).1).isEmpty, "nothing queued while disconnected")
        let (_, again) = M.step(&m, .connection(.connected(sessionPresent: false)), at: 4_100)
        #expect(Self.app(again).count == 1, "a connect sends the clock its app again")
        let (_, deleted) = M.step(&m, M.command(["action": "delete", "timer": "cd"]), at: 4_200)
        #expect(Self.app(deleted).last == .some(nil), "an empty payload removes the app: \(M.published(deleted))")
    }

    @Test("a paused timer's app refresh left out while the broker is backlogged is tried again: the clock does not lapse blank")
    func backlogKeepsTheRefresh() throws {
        var m = try M.machine("displays: [{type: awtrix, prefix: awtrix_m, timer: cd}]\n")
        M.step(&m, .connection(.connected(sessionPresent: false)), at: 0)
        M.step(&m, M.command(["action": "start", "spec": ["kind": "countdown", "duration": "1m"]], timer: "cd"), at: 1_000)
        M.step(&m, M.command(["action": "pause"], timer: "cd"), at: 1_500)
        // Paused: the app (lifetime 10 s) is refreshed every half lifetime, the one deadline.
        let nextRefresh = m.nextDeadline()
        let refresh = try #require(nextRefresh)
        let shed = M.drive(&m, m.step(.deadline, at: Moment(now: refresh, backlogged: true)), at: refresh).1
        #expect(Self.app(shed).isEmpty, "a refresh time alone asks for is left out while backlogged: \(M.published(shed))")
        let nextAgain = m.nextDeadline()
        let again = try #require(nextAgain, "no deadline left: the app would lapse blank")
        #expect(again > refresh && again < 1_500 + 10_000, "tried again before the app's lifetime runs out: \(again)")
        var refreshed: [Millis] = []
        while let next = m.nextDeadline(), next < 30_000 {
            if !Self.app(M.step(&m, .deadline, at: next).1).isEmpty { refreshed.append(next) }
        }
        #expect(refreshed.first.map { $0 < 1_500 + 10_000 } == true && refreshed.count >= 3, "refreshed again: \(refreshed)")
    }
}

/// Displays saved by command: checked like the configuration's, written before the reply,
/// listed on `<base>/displays`, and kept through a restart.
@Suite("Engine machine: displays saved by command")
struct EngineSavedDisplaysTests {
    typealias M = EngineMachineTests

    @Test("save_display: written in meta, listed, and the clock gets its app; a bad one names its key and changes nothing; delete blanks it; a restart keeps it")
    func saveAndDelete() throws {
        var m = try M.machine(hasStore: true)
        M.step(&m, .connection(.connected(sessionPresent: false)), at: 0, result: { _ in .success(StoreCommit()) })
        M.step(&m, M.command(["action": "start", "spec": ["kind": "countdown", "duration": "1m"]], timer: "main"), at: 1_000,
               result: { _ in .success(StoreCommit()) })
        let save: JSONValue = ["action": "save_display", "display": "wall", "type": "awtrix", "prefix": "awtrix_wall", "timers": ["main"]]
        let (batch, effects) = M.step(&m, M.command(save), at: 1_500, result: { _ in .success(StoreCommit()) })
        let document = try #require(batch.meta[DisplayPart.metaKey])
        let published = M.published(effects)
        #expect(published.last?.json?["ok"] == true && published.last?.json?["display"] == "wall")
        #expect(published.first { $0.topic == "\(M.base)/displays" }?.json?["displays"]?.array?.first?["prefix"] == "awtrix_wall")
        #expect(published.contains { $0.topic == "awtrix_wall/custom/pacer" }, "the clock shows the running timer at once: \(published.map(\.topic))")

        let bad: JSONValue = ["action": "save_display", "display": "strip", "type": "wled", "topic": "wled/rig", "timers": ["main"], "brightness": 0]
        let (badBatch, badEffects) = M.step(&m, M.command(bad), at: 1_600, result: { _ in .success(StoreCommit()) })
        #expect(badBatch.meta.isEmpty)
        let error = try #require(M.published(badEffects).last?.json?["error"])
        #expect(error["code"] == "invalid_argument" && error["message"]?.string?.contains("brightness") == true, "\(error)")

        // A light saved by command names its one timer in `timers`, as a clock names its timers.
        let light: JSONValue = ["action": "save_display", "display": "rig", "type": "wled", "topic": "wled/rig", "timers": ["main"]]
        #expect(M.published(M.step(&m, M.command(light), at: 1_700, result: { _ in .success(StoreCommit()) }).1).last?.json?["ok"] == true)
        let two: JSONValue = ["action": "save_display", "display": "rig2", "type": "wled", "topic": "wled/rig2", "timers": ["main", "other"]]
        #expect(M.published(M.step(&m, M.command(two), at: 1_800).1).last?.json?["error"]?["message"]?.string?.contains("a light shows one timer") == true)

        var restarted = try M.machine(hasStore: true)
        M.restore(&restarted, RestoredState(displaysDocument: document), at: 2_000)
        #expect(restarted.displays.saved.value.keys.sorted() == ["wall"])

        let (deleted, deleteEffects) = M.step(&m, M.command(["action": "delete_display", "display": "wall"]), at: 2_000,
                                              result: { _ in .success(StoreCommit()) })
        #expect(deleted.meta[DisplayPart.metaKey].flatMap { JSONCoding.decode(Array($0.utf8)) }?["displays"]?.array?.compactMap { $0["display"]?.string } == ["rig"])
        #expect(M.published(deleteEffects).contains { $0.topic == "awtrix_wall/custom/pacer" && $0.json == nil }, "its app removed")
        let (_, unknown) = M.step(&m, M.command(["action": "delete_display", "display": "wall"]), at: 2_100)
        #expect(M.published(unknown).last?.json?["error"]?["code"] == "unknown_display")
    }
}

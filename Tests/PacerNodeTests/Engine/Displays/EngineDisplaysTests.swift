import Foundation
import PacerCore
@testable import PacerNode
import PacerProtocol
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
}

import Foundation
import PacerCore
@testable import PacerNode
import PacerStore
import PacerTestSupport
import Testing

/// Saved workouts: `save_workout` and `delete_workout` on the node's topic, the
/// retained `<base>/workouts`, a saved workout started like a preset, kept across restarts.
@Suite("Engine: saved workouts (in-process)")
struct EngineWorkoutsTests {
    static let hiit: JSONValue = ["kind": "interval", "work": "45s", "rest": "15s", "rounds": 10]

    func saved(_ h: EngineHarness) -> [JSONValue]? {
        h.published("\(h.base)/workouts").last?.json?["workouts"]?.array
    }

    @Test("saved, published retained, started like a preset, kept across a restart, deleted")
    func lifecycle() async throws {
        let h = try await EngineHarness.make()
        await h.connect()
        #expect(saved(h) == [], "a connect publishes the (empty) list")
        let reply = try await h.send(["action": "save_workout", "workout": "hiit", "name": "HIIT 45/15", "spec": Self.hiit])
        #expect(reply["ok"] == true && reply["saved"] == true && reply["workout"] == "hiit", "\(reply)")
        let list = try #require(saved(h))
        #expect(list.count == 1 && list.first?["name"] == "HIIT 45/15" && list.first?["spec"]?["work"] == "45s", "\(list)")

        let started = try await h.send(["action": "start", "preset": "hiit"], timer: "main")
        #expect(started["state"]?["kind"] == "interval" && started["state"]?["rounds"] == 10
                && started["state"]?["segment_duration_ms"] == 45_000, "\(started)")

        // Kept in the database: a restart publishes it again and can start it.
        let again = try await h.restart()
        await again.connect()
        #expect(saved(again)?.first?["id"] == "hiit")
        let second = try await again.send(["action": "start", "preset": "hiit"], timer: "other")
        #expect(second["ok"] == true, "\(second)")

        let deleted = try await again.send(["action": "delete_workout", "workout": "hiit"])
        #expect(deleted["ok"] == true && deleted["deleted"] == true, "\(deleted)")
        #expect(saved(again) == [])
        let gone = try await again.send(["action": "start", "preset": "hiit"], timer: "third")
        #expect(gone["error"]?["code"] == "invalid_spec", "\(gone)")
        let twice = try await again.send(["action": "delete_workout", "workout": "hiit"])
        #expect(twice["error"]?["code"] == "unknown_workout", "\(twice)")
    }

    @Test("a workout made from a preset is kept resolved; a preset's name, a bad spec and a failed write are refused and change nothing")
    func refusals() async throws {
        let h = try await EngineHarness.make()
        await h.connect()
        let fromPreset = try await h.send(["action": "save_workout", "workout": "short-tabata", "spec": ["preset": "tabata", "rounds": 4]])
        #expect(fromPreset["spec"]?["kind"] == "interval" && fromPreset["spec"]?["rounds"] == 4 && fromPreset["spec"]?["preset"] == nil,
                "\(fromPreset)")
        #expect(try await h.send(["action": "start", "preset": "short-tabata"], timer: "t")["ok"] == true)

        let before = h.journal.count
        let builtIn = try await h.send(["action": "save_workout", "workout": "tabata", "spec": Self.hiit])
        #expect(builtIn["error"]?["code"] == "invalid_argument", "\(builtIn)")
        let bad = try await h.send(["action": "save_workout", "workout": "bad", "spec": ["kind": "interval", "work": "-5s", "rest": "1s", "rounds": 2]])
        #expect(bad["error"]?["code"] == "invalid_spec" && bad["error"]?["message"]?.string?.hasPrefix("work") == true, "\(bad)")
        h.store.failingWrites.withLock { $0 = 1 }
        let failed = try await h.send(["action": "save_workout", "workout": "later", "spec": Self.hiit])
        #expect(failed["error"]?["code"] == "storage_failure", "\(failed)")
        #expect(h.published("\(h.base)/workouts", from: before).isEmpty, "nothing refused is published")
        #expect(saved(h)?.map { $0["id"] } == ["short-tabata"])
        #expect(try await h.send(["action": "start", "preset": "later"], timer: "u")["error"]?["code"] == "invalid_spec",
                "the failed save left nothing behind")
    }
}

import Foundation
import PacerCore
import Testing

/// The persisted machine read without `Codable` (TimerMachine+Persisted.swift);
/// random machines in every state are in PropertyTests (`persistedWithoutCodable`).
@Suite("Persisted machines without Codable")
struct PersistedMachineTests {
    /// Specs with every optional member set, so each key is written and read at least once.
    static let fullSpecs: [JSONValue] = [
        ["kind": "interval", "work": "40s", "rest": "20s", "rounds": 3, "prepare": "10s", "sets": 2, "set_rest": "1m",
         "exercises": ["Squat", "Row \"2\""], "cooldown": "2m", "skip_last_rest": false, "ack": true, "hr_source": "strap-1", "class_hr": true,
         "alert_interval": "15s", "auto_dismiss": "2m", "cues": [5, 1]],
        ["preset": "tabata"],
        ["kind": "rest", "duration": "90s", "exercise": "Bench", "next": "Deadlift"],
        ["kind": "countdown", "duration": "1:00:00", "label": "Laundry"],
        ["kind": "stopwatch", "target": "20m", "label": "Meditation"],
        ["kind": "program", "segments": [["kind": "work", "duration": "30s", "label": "Plank", "round": 2, "set": 1],
                                         ["kind": "session"]]],
    ]

    @Test("every member of every kind of spec, idle, running, paused, expired, finished and cancelled", arguments: fullSpecs.indices)
    func everyMember(index: Int) throws {
        var m = try makeMachine(try TimerSpec(json: Self.fullSpecs[index]))
        try expectPersistedFormsAgree(m)
        let start: Millis = 1_790_000_000_000
        _ = m.handle(TimerCommand(.start(spec: nil, startAt: start + 5_000, restart: false)), now: start)
        try expectPersistedFormsAgree(m)  // scheduled
        _ = m.advance(to: start + 6_000)
        try expectPersistedFormsAgree(m)  // running
        _ = m.handle(TimerCommand(.pause), now: start + 7_000)
        try expectPersistedFormsAgree(m)  // paused
        _ = m.handle(TimerCommand(.resume), now: start + 8_000)
        _ = m.advance(to: start + 4 * 3_600_000)
        try expectPersistedFormsAgree(m)  // expired, finished or overtime
        _ = m.handle(TimerCommand(.cancel), now: start + 4 * 3_600_000 + 1)
        try expectPersistedFormsAgree(m)
    }

    @Test("settings given to the reader replace the persisted ones; missing settings take the defaults")
    func settings() throws {
        let m = try makeMachine(.countdown(durationMs: 60_000), settings: TimerSettings(cues: [7]))
        let override = TimerSettings(cues: [9, 4])
        let persisted = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(m))
        #expect(try TimerMachine(persisted: persisted, settings: override).settings == override)
        #expect(try TimerMachine(persisted: persisted).settings == TimerSettings(cues: [7]))
        guard case .object(var members) = persisted else { Issue.record("not an object"); return }
        members["settings"] = nil
        #expect(try TimerMachine(persisted: .object(members)).settings == TimerSettings())
        members["settings"] = ["cues": [2]]
        #expect(try TimerMachine(persisted: .object(members)).settings == TimerSettings(cues: [2]))
    }

    @Test("a damaged record names the member that is wrong")
    func errors() throws {
        var m = try makeMachine(.countdown(durationMs: 60_000))
        _ = m.handle(TimerCommand(.start(spec: nil, startAt: nil, restart: false)), now: 1_000)
        let persisted = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(m))
        guard case .object(let members) = persisted, case .object(var state) = members["state"]!,
              case .object(var running) = state["running"]!, case .object(var run) = running["run"]! else {
            Issue.record("unexpected shape \(persisted)"); return
        }
        func read(_ change: (inout [String: JSONValue]) -> Void) -> String {
            var copy = members
            change(&copy)
            do {
                _ = try TimerMachine(persisted: .object(copy))
                return "read"
            } catch {
                return error.description
            }
        }
        #expect(read { $0["id"] = nil } == "id: missing")
        #expect(read { $0["revision"] = "3" } == "revision: expected a whole number")
        #expect(read { $0["version"] = 99 } == "version: unsupported timer format version 99")
        run["index"] = 4
        running["run"] = .object(run)
        state["running"] = .object(running)
        #expect(read { $0["state"] = .object(state) } == "state: segment 4 is outside the program (1 segments)")
        run["index"] = 0.5
        running["run"] = .object(run)
        state["running"] = .object(running)
        #expect(read { $0["state"] = .object(state) } == "state.running.run.index: expected a whole number")
        #expect(read { $0["state"] = ["jogging": [:]] } == "state: unknown state \"jogging\"")
        #expect(read { $0["spec"] = ["kind": "countdown", "duration_ms": 0, "skip_last_rest": true, "ack": false] }
                    .hasPrefix("spec: persisted spec no longer valid"))
    }
}

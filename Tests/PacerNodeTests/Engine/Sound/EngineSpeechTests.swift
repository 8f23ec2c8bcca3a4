import Foundation
import Logging
import PacerCore
@testable import PacerNode
import PacerProtocol
import PacerSound
import PacerStore
import PacerTestSupport
import Testing

/// Spoken cues in the machine alone: what it asks to render ahead, what it says with each
/// event (the speaker and the `say` topic), and a spoken cue's real length on `cue_ahead`.
@Suite("Engine machine: spoken cues")
struct EngineSpeechTests {
    typealias M = EngineMachineTests

    static func machine(_ yaml: String = "") throws -> EngineMachine {
        let plain = try M.machine(yaml, hasSound: true)
        let planner = SpeechPlanner(settings: SpeechSettings(), phrases: try PhraseTable.load(language: "en", directories: [PhraseTable.sourceDirectory]))
        return EngineMachine(configuration: plain.configuration, logger: Logger(label: "speech-test") { _ in SwiftLogNoOpLogHandler() },
                             startedAtMs: 0, hasStore: false, hasSound: true, speech: planner)
    }

    static let workout: JSONValue = ["kind": "program", "segments": [
        ["kind": "work", "duration": "4s", "label": "Burpees"], ["kind": "rest", "duration": "4s"],
        ["kind": "work", "duration": "4s", "label": "Swings"]]]

    @Test("created: every phrase of the workout is asked for ahead; started: each event says its phrase, on the say topic and to the speaker")
    func sayWithEvents() throws {
        var m = try Self.machine("timing: {cues: []}\n")
        M.step(&m, .connection(.connected(sessionPresent: false)), at: 0)
        let (_, created) = M.step(&m, M.command(["action": "create", "timer": "wod", "spec": Self.workout]), at: 0)
        let prepared = created.compactMap { if case .prepareSpeech(let texts) = $0 { texts } else { nil } }.flatMap { $0 }
        #expect(Set(["Work: Burpees", "Rest. Next: Swings", "Work: Swings", "Done"]).isSubset(of: Set(prepared)), "\(prepared)")

        var said: [SpokenCue] = []
        var spoken: [String] = []
        func record(_ effects: [EngineEffect]) {
            said += M.published(effects).filter { $0.topic == "\(M.base)/timers/wod/say" }.compactMap { $0.json.flatMap(SpokenCue.init(json:)) }
            for case .sound(let events, let texts) in effects { spoken += events.compactMap { texts[EventKey($0)] } }
        }
        record(M.step(&m, M.command(["action": "start"], timer: "wod"), at: 1_000).1)
        while let next = m.nextDeadline(), next <= 13_000 { record(M.step(&m, .deadline, at: next).1) }
        #expect(said.map(\.text) == ["Work: Burpees", "Rest. Next: Swings", "Work: Swings", "Done"], "\(said)")
        #expect(said.map(\.dueMs) == [1_000, 5_000, 9_000, 13_000])
        #expect(said.allSatisfy { $0.lang == "en" && $0.durationMs == nil }, "no clip reported ready yet")
        #expect(spoken == said.map(\.text))
    }

    @Test("cue_ahead: a spoken cue says its text and lasts its clip once the cache reports it ready (the beep's length before)")
    func cueAheadLength() throws {
        var m = try Self.machine("publish: {cue_ahead: 1s}\ntiming: {cues: []}\n")
        M.step(&m, .connection(.connected(sessionPresent: false)), at: 0)
        M.step(&m, .speechReady(text: "Rest. Next: Swings", durationMs: 1_432), at: 0)
        M.step(&m, M.command(["action": "start", "spec": Self.workout], timer: "wod"), at: 1_000)
        var announced: [JSONValue] = []
        while let next = m.nextDeadline(), next <= 13_000 {
            announced += M.published(M.step(&m, .deadline, at: next).1).filter { $0.topic == "\(M.base)/cue_ahead" }.compactMap(\.json)
        }
        let rest = try #require(announced.first { $0["due_ms"] == 5_000 }, "\(announced)")
        #expect(rest["say"] == "Rest. Next: Swings" && rest["duration_ms"] == 1_432)
        let next = try #require(announced.first { $0["due_ms"] == 9_000 }, "\(announced)")
        #expect(next["say"] == "Work: Swings" && next["duration_ms"] == .int(SoundCue.work.durationMs))
    }
}

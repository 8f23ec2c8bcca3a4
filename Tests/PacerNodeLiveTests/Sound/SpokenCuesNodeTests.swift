import Foundation
import PacerCore
import PacerProtocol
import PacerSound
import PacerTestSupport
import Testing

/// Spoken cues on a real `pacer run` (`sound.speech` with espeak-ng): the phrases are rendered
/// when the timer is created, each is published on the timer's `say` topic with its event, and
/// the node's speaker says it at the event's `due_ms` in place of the beep (sox on the WAV file).
@Suite("Spoken cues on a real node")
struct SpokenCuesNodeTests {
    @Test("a labelled workout: say messages with their events, and the speech in the sound at each due instant")
    func spokenAtDueInstants() async throws {
        let directory = try makeTemporaryDirectory("pacer-spoken-node")
        defer { try? FileManager.default.removeItem(at: directory) }
        let wav = directory.appendingPathComponent("cues.wav").path
        let cache = directory.appendingPathComponent("speech")
        let config = """
            sound: {device: "file:\(wav)", speech: {voice: en-us, cache: {directory: \(cache.path)}}}
            timing: {cues: [1]}
            """
        try await withNode(.init(config: config)) { node in
            let spec: JSONValue = ["kind": "program", "segments": [
                ["kind": "work", "duration": "4s", "label": "Burpees"], ["kind": "rest", "duration": "4s"],
                ["kind": "work", "duration": "4s", "label": "Swings"]]]
            let created = try await node.send(["action": "create", "timer": "wod", "spec": spec])
            try #require(created.ok, "\(created)")
            // Created: its phrases are rendered ahead (4 of them: the two works, the rest, done).
            let deadline = ContinuousClock.now + .seconds(20)
            while ((try? FileManager.default.contentsOfDirectory(atPath: cache.path)) ?? []).filter({ $0.hasSuffix(".wav") }).count < 4,
                  ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            try await Task.sleep(for: .milliseconds(300))  // the clips reach the cache's memory
            let start = node.probe.count
            let started = try await node.send(["action": "start"], timer: "wod")
            try #require(started.ok, "\(started)")
            try await node.waitForEvent("wod", "finished", from: start, timeout: .seconds(20))
            try await Task.sleep(for: .milliseconds(2_000))  // "Done" ends before the node does
            try await node.barrier()
            await node.terminate()

            let said = node.probe.all[start...].filter { $0.topic.hasSuffix("/wod/say") }.compactMap { $0.json.flatMap(SpokenCue.init(json:)) }
            #expect(said.map(\.text) == ["Work: Burpees", "Rest. Next: Swings", "Work: Swings", "Done"], "\(said)")
            #expect(said.map(\.event) == ["started", "phase", "phase", "finished"])
            #expect(said.allSatisfy { ($0.durationMs ?? 0) > 300 }, "each clip was ready, with its length: \(said)")

            let line = try #require(node.log.split(separator: "\n").first { $0.contains("sample 0 is") }, "no sound line in the log:\n\(node.log)")
            let origin = try #require(line.split(separator: " ").drop { $0 != "is" }.dropFirst().first.flatMap { Millis($0) })
            let analysis = try SoxAnalysis(path: wav)
            // Speech and beeps are the only sound: one run per phrase (merged over its pauses)
            // starting at its due instant, and a countdown beep 1 s before each segment's end.
            let runs = analysis.runs(threshold: 0.003, mergeMs: 400)
            for cue in said {
                let due = Double(cue.dueMs - origin) / 1000
                let run = runs.min { abs($0.start - due) < abs($1.start - due) }
                #expect(run.map { abs($0.start - due) < 0.005 } == true, "\(cue.text) due at \(due) s: \(runs)")
                #expect(run.map { abs($0.duration - Double(cue.durationMs ?? 0) / 1000) < 0.05 } == true, "\(cue.text): \(String(describing: run))")
            }
            // The beep of each spoken event is not played: no work or finish tone at those instants.
            #expect(runs.count == said.count + 3, "four phrases and three countdown beeps: \(runs)")
        }
    }
}

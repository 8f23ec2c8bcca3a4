import Foundation
import Logging
import PacerCore
@testable import PacerNode
import PacerSound
import PacerTestSupport
import Testing

/// The engine's sound hook in-process (virtual time): every commit's cue-worthy events reach
/// the player with their due instants, also while the broker is unreachable.
@Suite("Engine: sound hook")
struct EngineSoundTests {
    @Test("while disconnected, a countdown's cues are rendered at their due instants (within 2 ms: detection of the tone edges)")
    func cuesWhileDisconnected() async throws {
        let directory = try makeTemporaryDirectory("pacer-engine-sound")
        let path = directory.appendingPathComponent("cues.wav").path
        var settings = SoundSettings()
        settings.output = .file(path)
        let player = SoundPlayer(settings: settings, logger: Logger(label: "sound") { _ in SwiftLogNoOpLogHandler() })
        player.start()
        let h = try await EngineHarness.make(config: "timing: {cues: [1]}\n", sound: player)
        await h.connect()
        let reply = try await h.send(["action": "start", "spec": ["kind": "countdown", "duration": "2s"]], timer: "cd")
        let t0 = try #require(reply["state"]?["started_at_ms"]?.int64, "\(reply)")
        await h.disconnect()  // the speaker is local: it plays on
        await h.pass(3_000)
        player.stop()

        let wav = try SoxAnalysis(path: path)
        // Sample 0 is the whole second at least 1 s before the first cue (docs/sound.md).
        let origin = (t0 / 1000 - 1) * 1000
        let expected: [(SoundCue, Millis)] = [(.work, t0), (.countdown, t0 + 1_000), (.finish, t0 + 2_000)]
        let runs = wav.runs()
        for (cue, due) in expected {
            let tones = cue.tones.map { SoxAnalysis.Tone(frequency: $0.frequency, durationMs: $0.durationMs, gapMs: $0.gapMs) }
            let problems = try wav.check(cueAt: Double(due - origin) / 1000, tones: tones, runs: runs, toleranceMs: 2)
            #expect(problems.isEmpty, "\(cue) at \(due): \(problems)")
        }
        #expect(runs.count == expected.reduce(0) { $0 + $1.0.tones.count }, "\(runs)")
    }
}

import Foundation
import PacerCore
import PacerSound
import PacerTestSupport
import Testing

/// `pacer sound test`: every cue once, rendered here to a WAV file and checked with sox.
@Suite("pacer sound test")
struct SoundTestCommandTests {
    @Test("renders every cue (also one that is off, in quiet hours) at the instant it prints, with its tones")
    func everyCue() async throws {
        let directory = try makeTemporaryDirectory("pacer-sound-test")
        defer { try? FileManager.default.removeItem(at: directory) }
        let wav = directory.appendingPathComponent("cues.wav").path
        let config = try CheckConfigTests.write("""
            sound:
              volume: 80%
              cues: {rest: off}
              quiet: [{from: "00:00", to: "24:00"}]
            """, "pacer.yaml", in: directory)
        let (status, output) = try await CheckConfigTests.runPacer(["sound", "test", "--config", config, "--device", "file:\(wav)"], in: directory)
        #expect(status == .exited(0), "\(output)")
        #expect(output.contains("rest: due") && output.contains("(off in the configuration)"), "\(output)")
        #expect(output.contains("rendered to \(wav)"), "\(output)")
        // "  work: due 1795… ms: …" per cue, and the file's sample 0.
        var dues: [(SoundCue, Millis)] = []
        for line in output.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard words.count > 2, words[1] == "due", let cue = SoundCue(rawValue: String(words[0].dropLast())),
                  let due = Millis(words[2]) else { continue }
            dues.append((cue, due))
        }
        #expect(dues.map(\.0) == SoundCue.allCases, "\(output)")
        let line = try #require(output.split(separator: "\n").first { $0.contains("sample 0 is") }, "\(output)")
        let origin = try #require(line.split(separator: " ").drop { $0 != "is" }.dropFirst().first.flatMap { Millis($0) })
        let analysis = try SoxAnalysis(path: wav)
        let runs = analysis.runs()
        for (cue, due) in dues {
            let tones = cue.tones.map { SoxAnalysis.Tone(frequency: $0.frequency, durationMs: $0.durationMs, gapMs: $0.gapMs) }
            let problems = try analysis.check(cueAt: Double(due - origin) / 1000, tones: tones, runs: runs)
            #expect(problems.isEmpty, "\(cue) due at \(due): \(problems)")
        }
        #expect(runs.count == SoundCue.allCases.reduce(0) { $0 + $1.tones.count }, "\(runs)")
    }

    @Test("a device that cannot be opened fails with its name; a relative file is refused")
    func badDevice() async throws {
        let directory = try makeTemporaryDirectory("pacer-sound-test")
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = try CheckConfigTests.write("sound: true\n", "pacer.yaml", in: directory)
        let (status, output) = try await CheckConfigTests.runPacer(["sound", "test", "--config", config, "--device", "pacer-no-such-device"], in: directory)
        #expect(status == .exited(1), "\(output)")
        #expect(output.contains("cannot open the ALSA device 'pacer-no-such-device'"), "\(output)")
        let (relative, message) = try await CheckConfigTests.runPacer(["sound", "test", "--config", config, "--device", "file:cues.wav"], in: directory)
        #expect(relative != .exited(0), "\(message)")
        #expect(message.contains("absolute path"), "\(message)")
    }
}

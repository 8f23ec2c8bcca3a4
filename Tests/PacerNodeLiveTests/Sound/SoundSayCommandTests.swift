import Foundation
import PacerCore
import PacerSound
import PacerTestSupport
import Testing

/// `pacer sound test --say "…"`: one phrase in the configured voice, rendered here to a WAV file
/// and checked with sox.
@Suite("pacer sound test --say")
struct SoundSayCommandTests {
    @Test("renders the phrase with espeak-ng at the instant it prints, as long as it says")
    func say() async throws {
        let directory = try makeTemporaryDirectory("pacer-sound-say")
        defer { try? FileManager.default.removeItem(at: directory) }
        let wav = directory.appendingPathComponent("say.wav").path
        let config = try CheckConfigTests.write("""
            sound:
              volume: 80%
              speech: {voice: en-us, say: {done: off}}
            """, "pacer.yaml", in: directory)
        let (status, output) = try await CheckConfigTests.runPacer(
            ["sound", "test", "--config", config, "--device", "file:\(wav)", "--say", "Next: kettlebell swings"], in: directory)
        #expect(status == .exited(0), "\(output)")
        #expect(output.contains("saying \"Next: kettlebell swings\" with espeak-ng (voice en-us)"), "\(output)")
        #expect(output.contains("rendered to \(wav)"), "\(output)")
        // "saying … due 1795… ms, 1234 ms long", and the file's sample 0.
        let words = try #require(output.split(separator: "\n").first { $0.hasPrefix("saying") }).split(separator: " ")
        let due = try #require(words.drop { $0 != "due" }.dropFirst().first.flatMap { Millis($0) }, "\(output)")
        let length = try #require(words.drop { !$0.hasSuffix("ms,") }.dropFirst().first.flatMap { Int($0) }, "\(output)")
        let line = try #require(output.split(separator: "\n").first { $0.contains("sample 0 is") }, "\(output)")
        let origin = try #require(line.split(separator: " ").drop { $0 != "is" }.dropFirst().first.flatMap { Millis($0) })
        let runs = try SoxAnalysis(path: wav).runs(threshold: 0.003, mergeMs: 600)
        #expect(runs.count == 1, "\(runs)")
        #expect(abs(try #require(runs.first).start - Double(due - origin) / 1000) < 0.005, "\(runs) due \(due - origin) ms")
        #expect(abs(try #require(runs.first).duration - Double(length) / 1000) < 0.02, "\(runs) \(length) ms")
        #expect((500...5_000).contains(length))
    }

    @Test("a missing speech engine fails with what to install")
    func missingEngine() async throws {
        let directory = try makeTemporaryDirectory("pacer-sound-say")
        defer { try? FileManager.default.removeItem(at: directory) }
        // An engine that runs and writes nothing.
        let fake = directory.appendingPathComponent("espeak-ng").path
        try "#!/bin/sh\nexit 0\n".write(toFile: fake, atomically: true, encoding: .utf8)
        chmod(fake, 0o755)
        let config = try CheckConfigTests.write("sound: {speech: {command: \(fake)}}\n", "pacer.yaml", in: directory)
        let wav = directory.appendingPathComponent("say.wav").path
        let (silent, quiet) = try await CheckConfigTests.runPacer(
            ["sound", "test", "--config", config, "--device", "file:\(wav)", "--say", "Done"], in: directory)
        #expect(silent == .exited(1), "\(quiet)")
        #expect(quiet.contains("cannot say \"Done\"") && quiet.contains("wrote no sound"), "\(quiet)")
        // espeak-ng looked for on a PATH without it.
        let empty = directory.appendingPathComponent("empty-bin")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let plain = try CheckConfigTests.write("sound: {speech: true}\n", "plain.yaml", in: directory)
        let process = try TestProcess.launch(try PacerExecutable.require(),
                                             ["sound", "test", "--config", plain, "--device", "file:\(wav)", "--say", "Done"],
                                             outputFile: directory.appendingPathComponent("out.txt"),
                                             environment: ["PATH": empty.path])
        let exited = await process.waitForExit(timeout: .seconds(30))
        if !exited { await process.kill() }
        #expect(ProcessEnd(waitStatus: process.terminationStatus) == .exited(1), "\(process.output)")
        #expect(process.output.contains("espeak-ng is not installed: sudo apt install espeak-ng"), "\(process.output)")
    }
}

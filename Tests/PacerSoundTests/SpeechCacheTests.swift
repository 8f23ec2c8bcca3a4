import Foundation
import Logging
import PacerCore
@testable import PacerSound
import PacerTestSupport
import Testing

/// An espeak-ng that counts its runs: a script that appends a line to `runs.log` beside it and
/// runs the real one (scripts/setup installs espeak-ng).
func countingEspeak(in directory: URL) throws -> (command: String, runs: () -> Int) {
    let script = directory.appendingPathComponent("espeak-counting")
    let log = directory.appendingPathComponent("runs.log")
    try """
        #!/bin/sh
        echo run >> '\(log.path)'
        exec espeak-ng "$@"
        """.write(to: script, atomically: true, encoding: .utf8)
    chmod(script.path, 0o755)
    return (script.path, { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").count })
}

func espeakRenderer(command: String? = nil) throws -> SpeechRenderer {
    var settings = SpeechSettings()
    settings.command = command
    return SpeechRenderer(settings: settings, defaultVoice: try englishTable().espeakVoice)
}

@Suite("Speech: rendering and the cache")
struct SpeechCacheTests {
    @Test("espeak-ng renders a phrase: sound of a speaking length, levelled like the tones, starting at once")
    func render() throws {
        let renderer = try espeakRenderer()
        let clip = try renderer.render("Rest. Next: kettlebell swings")
        #expect((800...6_000).contains(clip.durationMs), "\(clip.durationMs) ms")
        let peak = clip.samples.reduce(0) { max($0, abs(Int($1))) }
        #expect(abs(Double(peak) / Double(Int16.max) - SpeechClip.peak) < 0.01, "peak \(peak)")
        #expect(abs(Int(clip.samples[0])) > 300, "the engine's lead-in silence is trimmed")
        let rms = (clip.samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(clip.samples.count)).squareRoot()
        #expect(rms > 1_000, "not silent: rms \(rms)")
        // A file sox reads, with that sound in it.
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("clip.wav").path
        try WAVFile(sampleRate: SoundPlayer.sampleRate, channels: 1, samples: clip.samples).encoded().write(to: URL(fileURLWithPath: path))
        let sox = try SoxAnalysis(path: path)
        #expect(sox.sampleRate == SoundPlayer.sampleRate)
        #expect(try #require(sox.runs(threshold: 0.003, mergeMs: 600).first).start < 0.01)
    }

    @Test("a missing engine is an error that says how to install it")
    func missingEngine() throws {
        let renderer = try espeakRenderer(command: "/nonexistent/espeak-ng")
        #expect(renderer.executable == nil)
        #expect(throws: SpeechError.engineMissing(SpeechRenderer.installAdvice(.espeak))) { try renderer.render("Done") }
        var settings = SpeechSettings()
        settings.engine = .piper
        settings.voice = "/nonexistent/voice.onnx"
        let piper = SpeechRenderer(settings: settings, defaultVoice: "en", environment: ["PATH": "/nonexistent"])
        #expect(throws: SpeechError.engineMissing(SpeechRenderer.installAdvice(.piper))) { try piper.render("Done") }
    }

    @Test("prepared clips are ready from memory; a second request is a hit; a restart loads them from disk, not rendering again")
    func hits() throws {
        let directory = try temporaryDirectory()
        let (command, runs) = try countingEspeak(in: directory)
        let cacheDirectory = directory.appendingPathComponent("cache").path
        let cache = SpeechCache(directory: cacheDirectory, renderer: try espeakRenderer(command: command), logger: LogRecorder().logger)
        #expect(cache.clip(for: "Halfway") == nil, "not rendered yet: the cue beeps")
        cache.prepare(["Work: burpees", "Halfway"])
        cache.waitUntilIdle()
        #expect(runs() == 2)
        let clip = try #require(cache.clip(for: "Work: burpees"))
        #expect(clip.text == "Work: burpees" && clip.durationMs > 300)
        #expect(cache.clip(for: "Work: burpees") == clip)
        cache.prepare(["Work: burpees"])
        cache.waitUntilIdle()
        #expect(runs() == 2, "a hit renders nothing")
        #expect(cache.usage.clips == 2)
        #expect(FileManager.default.fileExists(atPath: cache.path(for: "Halfway")))

        // The node restarted: the files are there, memory is empty.
        let again = SpeechCache(directory: cacheDirectory, renderer: try espeakRenderer(command: command), logger: LogRecorder().logger)
        #expect(again.clip(for: "Halfway") == nil, "not in memory yet")
        again.waitUntilIdle()
        #expect(again.clip(for: "Halfway") != nil)
        #expect(again.usage.clips == 2)
        #expect(runs() == 2, "loaded from disk")
        // Another voice is another clip.
        var settings = SpeechSettings()
        settings.command = command
        settings.voice = "en-us"
        let us = SpeechCache(directory: cacheDirectory, renderer: SpeechRenderer(settings: settings, defaultVoice: "en"), logger: LogRecorder().logger)
        us.prepare(["Halfway"])
        us.waitUntilIdle()
        #expect(runs() == 3 && us.usage.clips == 3)
    }

    @Test("bounded in clips and bytes: the least recently used go first")
    func eviction() throws {
        let directory = try temporaryDirectory()
        let (command, runs) = try countingEspeak(in: directory)
        let cacheDirectory = directory.appendingPathComponent("cache").path
        let cache = SpeechCache(directory: cacheDirectory, renderer: try espeakRenderer(command: command),
                                limits: .init(maxClips: 2), logger: LogRecorder().logger)
        cache.prepare(["One", "Two"])
        cache.waitUntilIdle()
        #expect(cache.clip(for: "One") != nil)  // used: "Two" is now the least recently used
        cache.prepare(["Three"])
        cache.waitUntilIdle()
        #expect(cache.usage.clips == 2)
        #expect(FileManager.default.fileExists(atPath: cache.path(for: "One")))
        #expect(!FileManager.default.fileExists(atPath: cache.path(for: "Two")))
        #expect(FileManager.default.fileExists(atPath: cache.path(for: "Three")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: cacheDirectory).count == 2)
        #expect(runs() == 3)

        // Bytes: room for exactly "Two" and "Three" (sizes from an unbounded cache).
        let sizes = SpeechCache(directory: directory.appendingPathComponent("sizes").path, renderer: try espeakRenderer(command: command),
                                logger: LogRecorder().logger)
        sizes.prepare(["Two", "Three"])
        sizes.waitUntilIdle()
        let bytes = sizes.usage.bytes
        let small = SpeechCache(directory: directory.appendingPathComponent("small").path, renderer: try espeakRenderer(command: command),
                                limits: .init(maxClips: 100, maxBytes: bytes), logger: LogRecorder().logger)
        small.prepare(["One", "Two", "Three"])
        small.waitUntilIdle()
        #expect(small.usage.clips == 2 && small.usage.bytes == bytes, "\(small.usage)")
        #expect(!FileManager.default.fileExists(atPath: small.path(for: "One")))
        // A restart with a smaller limit trims what is there, oldest first.
        let trimmed = SpeechCache(directory: directory.appendingPathComponent("small").path, renderer: try espeakRenderer(command: command),
                                  limits: .init(maxClips: 1), logger: LogRecorder().logger)
        trimmed.waitUntilIdle()
        #expect(trimmed.usage.clips == 1)
        #expect(FileManager.default.fileExists(atPath: trimmed.path(for: "Three")))
    }

    @Test("a corrupt or missing clip file is rendered again")
    func corrupt() throws {
        let directory = try temporaryDirectory()
        let (command, runs) = try countingEspeak(in: directory)
        let cacheDirectory = directory.appendingPathComponent("cache").path
        let first = SpeechCache(directory: cacheDirectory, renderer: try espeakRenderer(command: command), logger: LogRecorder().logger)
        first.prepare(["Done", "Halfway"])
        first.waitUntilIdle()
        #expect(runs() == 2)
        try Data("not a wav".utf8).write(to: URL(fileURLWithPath: first.path(for: "Done")))
        let truncated = try #require(FileManager.default.contents(atPath: first.path(for: "Halfway"))).prefix(44)
        try truncated.write(to: URL(fileURLWithPath: first.path(for: "Halfway")))

        let log = LogRecorder()
        let second = SpeechCache(directory: cacheDirectory, renderer: try espeakRenderer(command: command), logger: log.logger)
        second.prepare(["Done", "Halfway"])
        second.waitUntilIdle()
        #expect(runs() == 4)
        #expect(second.clip(for: "Done") != nil && second.clip(for: "Halfway") != nil)
        #expect(try WAVFile.decode(try #require(FileManager.default.contents(atPath: second.path(for: "Done")))).samples.count > 1_000)
        #expect(log.all.filter { $0.1.contains("missing or unreadable") }.count == 2, "\(log.all)")

        // Deleted behind the node's back after it indexed the directory.
        let third = SpeechCache(directory: cacheDirectory, renderer: try espeakRenderer(command: command), logger: LogRecorder().logger)
        third.waitUntilIdle()
        try FileManager.default.removeItem(atPath: third.path(for: "Done"))
        third.prepare(["Done"])
        third.waitUntilIdle()
        #expect(runs() == 5 && third.clip(for: "Done") != nil)
        #expect(FileManager.default.fileExists(atPath: third.path(for: "Done")))
    }

    @Test("a missing engine is logged once; its cues stay nil (they beep), and prepare tries again")
    func engineMissingInCache() throws {
        let directory = try temporaryDirectory()
        let log = LogRecorder()
        let cache = SpeechCache(directory: directory.path, renderer: try espeakRenderer(command: "/nonexistent/espeak-ng"), logger: log.logger)
        cache.prepare(["Done", "Halfway"])
        cache.waitUntilIdle()
        #expect(cache.clip(for: "Done") == nil)
        cache.waitUntilIdle()
        cache.prepare(["Done"])
        cache.waitUntilIdle()
        let warnings = log.all.filter { $0.0 >= .warning }
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.1.contains("espeak-ng is not installed") == true)
        #expect(cache.usage.clips == 0)
    }
    @Test("every phrase of a labelled workout, every switch on, renders ahead: ready, of a speaking length, not silent")
    func wholeWorkout() throws {
        var settings = SpeechSettings()
        settings.rounds = true
        settings.lastRound = true
        settings.halfway = true
        settings.marks = [60, 30, 10]
        let spoken = try SpokenCues(settings: settings, cacheDirectory: try temporaryDirectory().path, logger: LogRecorder().logger)
        var segments = [Segment(kind: .prepare, durationMs: 10_000)]
        for round in 1...3 {
            segments += [Segment(kind: .work, durationMs: 45_000, label: "Burpees", round: round),
                         Segment(kind: .rest, durationMs: 15_000, round: round),
                         Segment(kind: .work, durationMs: 45_000, label: "Kettlebell swings", round: round),
                         Segment(kind: .rest, durationMs: 15_000, round: round)]
        }
        segments += [Segment(kind: .cooldown, durationMs: 90_000)]
        let program = Program(segments: segments)
        spoken.prepare(program)
        spoken.cache.waitUntilIdle()
        let texts = spoken.planner.texts(for: program)
        #expect(texts.contains("Round 2 of 3. Work: Burpees") && texts.contains("Last round. Work: Burpees")
                && texts.contains("Rest. Next: Kettlebell swings") && texts.contains("1 minute") && texts.contains("Cool down"), "\(texts)")
        #expect(spoken.cache.usage.clips == texts.count)
        for text in texts {
            let clip = try #require(spoken.cache.clip(for: text), "\(text)")
            #expect((250...5_000).contains(clip.durationMs), "\(text): \(clip.durationMs) ms")
            let rms = (clip.samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(clip.samples.count)).squareRoot()
            #expect(rms > 1_000, "\(text): rms \(rms)")
        }
        let event = TimerEvent(type: .phase, timer: "t", revision: 1, dueMs: 0, atMs: 0, phase: .rest, round: 1, nextLabel: "Kettlebell swings")
        #expect(spoken.text(for: event) == "Rest. Next: Kettlebell swings")
    }

    @Test("Piper renders a phrase (opt-in: PACER_PIPER_COMMAND, the piper of a virtualenv, and PACER_PIPER_VOICE, a model)",
          .enabled(if: ProcessInfo.processInfo.environment["PACER_PIPER_VOICE"] != nil))
    func piper() throws {
        let environment = ProcessInfo.processInfo.environment
        var settings = SpeechSettings()
        settings.engine = .piper
        settings.command = environment["PACER_PIPER_COMMAND"]
        settings.voice = environment["PACER_PIPER_VOICE"]
        let clip = try SpeechRenderer(settings: settings, defaultVoice: "en").render("Rest. Next: kettlebell swings")
        #expect((800...6_000).contains(clip.durationMs), "\(clip.durationMs) ms")
        let rms = (clip.samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(clip.samples.count)).squareRoot()
        #expect(rms > 1_000, "rms \(rms)")
    }
}

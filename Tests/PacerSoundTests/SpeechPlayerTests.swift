import Foundation
import Logging
import PacerCore
@testable import PacerSound
import PacerTestSupport
import Testing

@Suite("Speech: playing on time or beeping")
struct SpeechPlayerTests {
    @Test("a ready clip plays at its event's due instant in place of the beep; one not ready beeps; beeps are intact")
    func timeline() throws {
        let directory = try temporaryDirectory()
        let wav = directory.appendingPathComponent("cues.wav").path
        var settings = SoundSettings()
        settings.output = .file(wav)
        settings.speech = SpeechSettings()
        let cache = SpeechCache(directory: directory.appendingPathComponent("speech").path, renderer: try espeakRenderer(),
                                logger: LogRecorder().logger)
        cache.prepare(["Work: Burpees", "Rest. Next: Swings"])
        cache.waitUntilIdle()
        let work = try #require(cache.clip(for: "Work: Burpees"))
        let rest = try #require(cache.clip(for: "Rest. Next: Swings"))

        let t0: Millis = 1_795_000_000_000 + 321
        let planner = SpeechPlanner(settings: SpeechSettings(), phrases: try englishTable())
        let timeline: [TimerEvent] = [
            spoken(.started, phase: .work, label: "Burpees", round: 1, due: t0),                 // spoken
            spoken(.countdown, cue: 1, due: t0 + 4_000),                                           // beep
            spoken(.phase, phase: .rest, next: "Swings", round: 1, due: t0 + 5_000),              // spoken
            spoken(.phase, phase: .work, label: "Swings", round: 1, due: t0 + 9_000),             // not ready: beep
        ]
        let log = LogRecorder()
        let player = SoundPlayer(settings: settings, logger: log.logger, speech: cache)
        player.start()
        for event in timeline {
            player.submit([event], nowMs: event.dueMs + 7, say: { planner.utterance(for: $0)?.text })
        }
        player.stop(timeout: .seconds(60))
        let line = try #require(log.all.first { $0.1.contains("sample 0 is") }?.1, "\(log.all)")
        let origin = try #require(line.split(separator: " ").drop { $0 != "is" }.dropFirst().first.flatMap { Millis($0) })
        let analysis = try SoxAnalysis(path: wav)
        // Speech pauses between words and sentences, and starts softly: a low threshold and 600 ms merged see each clip as one run.
        let runs = analysis.runs(threshold: 0.003, mergeMs: 600)
        func start(_ due: Millis) -> Double { Double(due - origin) / 1000 }
        let spokenRuns = runs.filter { run in [t0, t0 + 5_000].contains { abs(run.start - start($0)) < 0.005 } }
        #expect(spokenRuns.count == 2, "\(runs)")
        #expect(abs(try #require(spokenRuns.first).duration - Double(work.durationMs) / 1000) < 0.02, "\(runs)")
        #expect(abs(try #require(spokenRuns.last).duration - Double(rest.durationMs) / 1000) < 0.02, "\(runs)")
        let toneRuns = analysis.runs()
        #expect(try analysis.check(cueAt: start(t0 + 4_000), tones: tones(.countdown), runs: toneRuns).isEmpty)
        #expect(try analysis.check(cueAt: start(t0 + 9_000), tones: tones(.work), runs: toneRuns).isEmpty,
                "the unprepared phrase beeps: \(toneRuns)")
        #expect(try analysis.check(cueAt: start(t0), tones: tones(.work), runs: toneRuns).isEmpty == false,
                "no work beep where the phrase was said")
        #expect(runs.count == 4, "\(runs)")
    }

    @Test("speech follows the speaker's mute and volume, the speech volume, and quiet hours of its beep")
    func volumeAndQuiet() throws {
        let directory = try temporaryDirectory()
        let wav = directory.appendingPathComponent("cues.wav").path
        var settings = SoundSettings()
        settings.output = .file(wav)
        settings.volume = 0.8
        var speech = SpeechSettings()
        speech.volume = 0.5
        speech.halfway = true
        settings.speech = speech
        // 2026-11-18 03:00 UTC: countdown cues quiet from 03:00 to 03:01; everything from 03:02 to 03:03.
        let three: Millis = 1_795_046_400_000 + 3 * 3_600_000
        settings.timeZone = TimeZone(identifier: "UTC")!
        settings.quiet = [QuietHours(fromMs: QuietHours.time("03:00")!, toMs: QuietHours.time("03:01")!, cues: [.countdown]),
                          QuietHours(fromMs: QuietHours.time("03:02")!, toMs: QuietHours.time("03:03")!)]
        let cache = SpeechCache(directory: directory.appendingPathComponent("speech").path, renderer: try espeakRenderer(),
                                logger: LogRecorder().logger)
        cache.prepare(["Halfway", "10 seconds", "Done"])
        cache.waitUntilIdle()
        let log = LogRecorder()
        let player = SoundPlayer(settings: settings, logger: log.logger, speech: cache)
        player.start()
        let texts: [EventType: String] = [.halfway: "Halfway", .countdown: "10 seconds", .finished: "Done"]
        let say: (TimerEvent) -> String? = { texts[$0.type] }
        player.submit([spoken(.halfway, due: three + 10_000)], nowMs: three + 10_000, say: say)                     // plays
        player.submit([spoken(.countdown, cue: 10, due: three + 20_000)], nowMs: three + 20_000, say: say)         // quiet (countdown)
        player.submit([spoken(.finished, reason: .completed, due: three + 30_000)], nowMs: three + 30_000, say: say)  // plays
        player.submit([spoken(.halfway, due: three + 150_000)], nowMs: three + 150_000, say: say)                  // quiet (all)
        player.setSpeaker(muted: true, volume: 1)
        player.submit([spoken(.finished, reason: .completed, due: three + 170_000)], nowMs: three + 170_000, say: say)  // muted
        player.stop(timeout: .seconds(60))
        let line = try #require(log.all.first { $0.1.contains("sample 0 is") }?.1, "\(log.all)")
        let origin = try #require(line.split(separator: " ").drop { $0 != "is" }.dropFirst().first.flatMap { Millis($0) })
        let analysis = try SoxAnalysis(path: wav)
        let runs = analysis.runs(threshold: 0.003, mergeMs: 600)
        #expect(runs.map { ($0.start * 1000).rounded() } == [Double(three + 10_000 - origin), Double(three + 30_000 - origin)], "\(runs)")
        let peak = try analysis.stat(from: runs[0].start, duration: runs[0].duration).maxAmplitude
        #expect(abs(peak - 0.8 * 0.5 * SpeechClip.peak) < 0.01, "peak \(peak)")
    }

    @Test("play(clip:) renders a clip at its instant, whatever the settings say")
    func playClip() throws {
        let directory = try temporaryDirectory()
        let wav = directory.appendingPathComponent("say.wav").path
        var settings = SoundSettings()
        settings.output = .file(wav)
        let clip = try espeakRenderer().render("Last round")
        let log = LogRecorder()
        let player = SoundPlayer(settings: settings, logger: log.logger)
        player.start()
        let due: Millis = 1_795_000_000_000 + 500
        player.play(clip, dueMs: due, nowMs: due - 500)
        player.stop(timeout: .seconds(60))
        let analysis = try SoxAnalysis(path: wav)
        let runs = analysis.runs(threshold: 0.003, mergeMs: 600)
        #expect(runs.count == 1, "\(runs)")
        #expect(abs(runs[0].start - 1.5) < 0.005 && abs(runs[0].duration - Double(clip.durationMs) / 1000) < 0.02, "\(runs)")
    }

    @Test("on a device (ALSA's null device) a long clip and beeps due during it play without a warning")
    func nullDevice() async throws {
        var settings = SoundSettings()
        settings.output = .alsa("null")
        let clip = try espeakRenderer().render("Rest. Next: kettlebell swings")
        let log = LogRecorder()
        let player = SoundPlayer(settings: settings, logger: log.logger)
        player.start()
        let now: Millis = 1_000_000
        player.play(clip, dueMs: now, nowMs: now)
        player.submit([spoken(.countdown, cue: 1, due: now + 300)], nowMs: now)
        try await Task.sleep(for: .milliseconds(Int64(clip.durationMs) + 300))
        player.stop()
        #expect(log.all.filter { $0.0 >= .warning }.isEmpty, "\(log.all)")
    }
}

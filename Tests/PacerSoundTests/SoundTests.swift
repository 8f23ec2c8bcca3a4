import Foundation
import Logging
import PacerCore
@testable import PacerSound
import PacerTestSupport
import Synchronization
import Testing

/// Collects log messages (to check that a failing device is logged once).
final class LogRecorder: Sendable {
    let lines = Mutex<[(Logger.Level, String)]>([])
    var all: [(Logger.Level, String)] { lines.withLock { $0 } }

    var logger: Logger {
        Logger(label: "sound-test") { _ in Handler(recorder: self) }
    }

    struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            recorder.lines.withLock { $0.append((event.level, "\(event.message)")) }
        }
    }
}

func event(_ type: EventType, due: Millis, phase: Phase? = nil, reason: FinishReason? = nil, cue: Int? = nil) -> TimerEvent {
    TimerEvent(type: type, timer: "t", revision: 1, dueMs: due, atMs: due, phase: phase, cue: cue, reason: reason)
}

func tones(_ cue: SoundCue) -> [SoxAnalysis.Tone] {
    cue.tones.map { SoxAnalysis.Tone(frequency: $0.frequency, durationMs: $0.durationMs, gapMs: $0.gapMs) }
}

func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("pacer-sound-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

@Suite("Sound cues")
struct SoundCueTests {
    @Test("events map to cues: segment starts, the countdown, completion and expiry; the rest is silent")
    func mapping() {
        #expect(SoundCue.cue(for: event(.started, due: 0, phase: .work)) == .work)
        #expect(SoundCue.cue(for: event(.phase, due: 0, phase: .rest)) == .rest)
        #expect(SoundCue.cue(for: event(.phase, due: 0, phase: .prepare)) == .rest)
        #expect(SoundCue.cue(for: event(.skipped, due: 0, phase: .work)) == .work)
        #expect(SoundCue.cue(for: event(.started, due: 0, phase: .countdown)) == .work)
        #expect(SoundCue.cue(for: event(.countdown, due: 0, cue: 3)) == .countdown)
        #expect(SoundCue.cue(for: event(.finished, due: 0, reason: .completed)) == .finish)
        #expect(SoundCue.cue(for: event(.finished, due: 0, reason: .acknowledged)) == nil)
        #expect(SoundCue.cue(for: event(.expired, due: 0)) == .expired)
        #expect(SoundCue.cue(for: event(.alert, due: 0)) == .expired)
        for silent in [EventType.paused, .resumed, .cancelled, .halfway, .acknowledged, .reset, .adjusted] {
            #expect(SoundCue.cue(for: event(silent, due: 0, phase: .work)) == nil, "\(silent)")
        }
    }

    @Test("every cue is distinct (pitch or rhythm) and the synth renders its exact length")
    func patterns() {
        let signatures = SoundCue.allCases.map { $0.tones.map { "\($0.frequency)/\($0.durationMs)/\($0.gapMs)" } }
        #expect(Set(signatures).count == SoundCue.allCases.count)
        let synth = ToneSynth(sampleRate: 44_100)
        for cue in SoundCue.allCases {
            let samples = synth.render(cue, volume: 1)
            #expect(abs(samples.count - synth.samples(ms: cue.durationMs)) <= cue.tones.count * 2, "\(cue)")
            #expect(samples.first == 0, "\(cue) starts with a ramp, not a click")
            #expect(synth.render(cue, volume: 0).allSatisfy { $0 == 0 })
        }
    }
}

@Suite("Sound player")
struct SoundPlayerTests {
    /// Renders `events` handed over at `nowMs` into a WAV file and returns its analysis with
    /// the sample-0 instant the player logged.
    func render(_ events: [(events: [TimerEvent], nowMs: Millis)], settings configure: (inout SoundSettings) -> Void = { _ in },
                speaker: [(muted: Bool, volume: Double)?]? = nil)
        throws -> (SoxAnalysis, origin: Millis, log: LogRecorder) {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("cues.wav").path
        var settings = SoundSettings()
        settings.output = .file(path)
        configure(&settings)
        let log = LogRecorder()
        let player = SoundPlayer(settings: settings, logger: log.logger)
        player.start()
        for (index, batch) in events.enumerated() {
            // The node's `sound` command before this batch, if any.
            if let setting = speaker?[index] { player.setSpeaker(muted: setting.muted, volume: setting.volume) }
            player.submit(batch.events, nowMs: batch.nowMs)
        }
        // Generous: the file is renamed into place when the thread ends, which a loaded CI
        // machine (a debug build) took more than the default 2 s to reach.
        player.stop(timeout: .seconds(60))
        let line = try #require(log.all.first { $0.1.contains("sample 0 is") }?.1, "\(log.all)")
        let origin = try #require(line.split(separator: " ").drop { $0 != "is" }.dropFirst().first.flatMap { Millis($0) })
        return (try SoxAnalysis(path: path), origin, log)
    }

    @Test("each cue is rendered at its due instant on the sample timeline, with its tones' frequencies and durations")
    func placement() throws {
        let t0: Millis = 1_795_000_000_000 + 123
        // Handed over late by varying amounts (as a busy engine would): placement follows due_ms.
        let timeline: [(TimerEvent, Millis)] = [
            (event(.started, due: t0, phase: .work), t0 + 3),
            (event(.countdown, due: t0 + 1_000, cue: 2), t0 + 1_000 + 41),
            (event(.countdown, due: t0 + 2_000, cue: 1), t0 + 2_000),
            (event(.phase, due: t0 + 3_000, phase: .rest), t0 + 3_000 + 250),
            (event(.finished, due: t0 + 4_321, reason: .completed), t0 + 4_321 + 9),
            (event(.expired, due: t0 + 6_007), t0 + 6_007 + 120),
        ]
        let (wav, origin, _) = try render(timeline.map { ([$0.0], $0.1) })
        #expect(wav.sampleRate == SoundPlayer.sampleRate)
        let runs = wav.runs()
        var expectedRuns = 0
        for (event, _) in timeline {
            let cue = try #require(SoundCue.cue(for: event))
            let start = Double(event.dueMs - origin) / 1000
            let problems = try wav.check(cueAt: start, tones: tones(cue), runs: runs)
            #expect(problems.isEmpty, "\(cue) due at \(start) s: \(problems)")
            expectedRuns += cue.tones.count
        }
        #expect(runs.count == expectedRuns, "\(runs)")
    }

    @Test("a cue that is off is not rendered; a cue's volume scales its amplitude")
    func volumes() throws {
        let t0: Millis = 1_795_000_000_000
        let (wav, origin, _) = try render([([event(.started, due: t0, phase: .work), event(.countdown, due: t0 + 1_000, cue: 1),
                                              event(.phase, due: t0 + 2_000, phase: .rest)], t0)]) { settings in
            settings.volume = 0.8
            settings.cues[.countdown] = .init(enabled: false)
            settings.cues[.rest] = .init(volume: 0.5)
        }
        let runs = wav.runs()
        #expect(runs.count == SoundCue.work.tones.count + SoundCue.rest.tones.count, "\(runs)")
        let work = try wav.stat(from: Double(t0 - origin) / 1000 + 0.05, duration: 0.3).maxAmplitude
        let rest = try wav.stat(from: Double(t0 + 2_000 - origin) / 1000 + 0.05, duration: 0.15).maxAmplitude
        #expect(abs(work - 0.8 * 0.7) < 0.01, "work at \(work)")
        #expect(abs(rest - 0.4 * 0.7) < 0.01, "rest at \(rest)")
    }

    @Test("the node's speaker: muted plays nothing from then on; its volume scales every cue's")
    func speaker() throws {
        let t0: Millis = 1_795_000_000_000
        let batches: [(events: [TimerEvent], nowMs: Millis)] = [
            ([event(.started, due: t0, phase: .work)], t0),
            ([event(.phase, due: t0 + 1_000, phase: .rest)], t0 + 1_000),
            ([event(.started, due: t0 + 2_000, phase: .work)], t0 + 2_000),
        ]
        let (wav, origin, _) = try render(batches, settings: { $0.volume = 0.8 },
                                          speaker: [(false, 0.5), (true, 0.5), (false, 1.0)])
        let runs = wav.runs()
        // The rest's cue, muted, is missing; both work cues sound.
        #expect(runs.count == 2 * SoundCue.work.tones.count, "\(runs)")
        #expect(try wav.check(cueAt: Double(t0 + 1_000 - origin) / 1000, tones: tones(.rest), runs: runs).isEmpty == false)
        let first = try wav.stat(from: Double(t0 - origin) / 1000 + 0.05, duration: 0.3).maxAmplitude
        let last = try wav.stat(from: Double(t0 + 2_000 - origin) / 1000 + 0.05, duration: 0.3).maxAmplitude
        #expect(abs(first - 0.5 * 0.8 * 0.7) < 0.01, "at 50 %: \(first)")
        #expect(abs(last - 0.8 * 0.7) < 0.01, "at 100 %: \(last)")
    }

    @Test("quiet hours: a cue of a quiet kind due in the window is not played; other kinds, and the same kind after it, are")
    func quietHours() throws {
        // 2026-11-18 03:00:00 UTC; the window 03:00-03:01 in UTC, for countdown cues only.
        let three: Millis = 1_795_046_400_000 + 3 * 3_600_000
        let events = [event(.countdown, due: three + 30_000, cue: 1),  // 03:00:30: quiet
                      event(.started, due: three + 31_000, phase: .work),  // a kind not listed: plays
                      event(.countdown, due: three + 59_999, cue: 1),  // 03:00:59.999: quiet
                      event(.countdown, due: three + 60_000, cue: 1)]  // 03:01:00: the window is over
        let (wav, origin, _) = try render([(events, three + 30_000)]) { settings in
            settings.timeZone = TimeZone(identifier: "UTC")!
            settings.quiet = [QuietHours(fromMs: QuietHours.time("03:00")!, toMs: QuietHours.time("03:01")!, cues: [.countdown])]
        }
        let runs = wav.runs()
        #expect(runs.count == 2, "\(runs)")
        for (e, cue) in [(events[1], SoundCue.work), (events[3], .countdown)] {
            #expect(try wav.check(cueAt: Double(e.dueMs - origin) / 1000, tones: tones(cue), runs: runs).isEmpty, "\(cue)")
        }
    }

    @Test("a cue handed over more than 1 s late is dropped (a timer restored after downtime)")
    func late() throws {
        let t0: Millis = 1_795_000_000_000
        let (wav, _, _) = try render([([event(.finished, due: t0 - 60_000, reason: .completed), event(.started, due: t0, phase: .work)], t0)])
        #expect(wav.runs().count == 1)
    }

    @Test("a missing device is logged once and playing goes on without it")
    func missingDevice() async throws {
        var settings = SoundSettings()
        settings.output = .alsa("pacer-no-such-device")
        let log = LogRecorder()
        let player = SoundPlayer(settings: settings, logger: log.logger)
        player.start()
        let now: Millis = 1_000_000
        for i in 0..<5 {
            player.submit([event(.countdown, due: now + Millis(i), cue: 1)], nowMs: now + Millis(i))
            try await Task.sleep(for: .milliseconds(100))
        }
        player.stop()
        let warnings = log.all.filter { $0.0 >= .warning }
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.1.contains("pacer-no-such-device") == true)
    }

    @Test("the ALSA path plays on a device (ALSA's null device) without a warning")
    func nullDevice() async throws {
        var settings = SoundSettings()
        settings.output = .alsa("null")
        let log = LogRecorder()
        let player = SoundPlayer(settings: settings, logger: log.logger)
        player.start()
        let now: Millis = 1_000_000
        player.submit([event(.started, due: now, phase: .work), event(.countdown, due: now + 200, cue: 1)], nowMs: now)
        try await Task.sleep(for: .milliseconds(600))
        player.stop()
        #expect(log.all.filter { $0.0 >= .warning }.isEmpty, "\(log.all)")
    }
}

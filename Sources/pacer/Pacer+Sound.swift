import ArgumentParser
import Foundation
import Logging
import PacerCore
import PacerNode
import PacerSound
import Synchronization

extension Pacer {
    /// `pacer sound …`: the node's speaker.
    struct Sound: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The node's speaker (docs/sound.md).",
            subcommands: [Test.self])

        /// `pacer sound test`: every cue once, so an owner hears that the speaker works; with
        /// `--say`, one phrase in the configured voice.
        struct Test: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Play each cue once on the configured sound device (or render them to a WAV file).",
                discussion: """
                    Uses the sound: section of the configuration (device, volumes, music ducking); \
                    without one, the ALSA device 'default' at full volume. Every cue plays, also one \
                    that is off or in quiet hours. Stop the node first if it holds the device \
                    (sudo systemctl stop pacer); exits 1 when the device cannot be opened. \
                    With --say "text", speaks that text instead, with the speech engine and voice of \
                    sound.speech (espeak-ng by default); exits 1 when the engine is missing or fails.
                    """)

            @OptionGroup var options: NodeOptions

            @Option(help: "An ALSA device (aplay -L) or file:/absolute/path.wav, instead of the configured one.")
            var device: String?

            @Option(help: "Say this text with the configured speech engine and voice, instead of playing the cues.")
            var say: String?

            func run() async throws {
                let (config, _) = try options.loadForControl()
                var settings = config.sound ?? SoundSettings()
                if let device {
                    let output = SoundSettings.output(device: device)
                    if case .file(let path) = output, !path.hasPrefix("/") {
                        throw ValidationError("--device file: needs an absolute path, like file:/tmp/cues.wav, got '\(device)'")
                    }
                    if case .alsa(let name) = output, name.isEmpty {
                        throw ValidationError("--device needs an ALSA device like default or plughw:CARD=Headphones, or file:/path/cues.wav")
                    }
                    settings.output = output
                }
                let problems = ProblemCount()
                let logger = Logger(label: "pacer") { _ in TestLogHandler(problems: problems) }
                if config.sound == nil { print("no sound: section in the configuration: every cue at full volume") }
                if config.sound?.enabled == false { print("sound is off in the configuration (enabled: false); playing anyway") }
                if let say {
                    try await speak(say, settings: settings, logger: logger, problems: problems)
                    return
                }
                let player = SoundPlayer(settings: settings, logger: logger)
                player.start()
                // Each cue 1.5 s after the one before (the longest lasts under 1 s), the first in 0.5 s.
                let nowMs = Millis(Date().timeIntervalSince1970 * 1000)
                var dueMs = nowMs + 500
                print("playing \(SoundCue.allCases.count) cues on \(settings.output)"
                      + (settings.music.map { ", ducking the music on MPD \($0.host):\($0.port)" } ?? ""))
                for cue in SoundCue.allCases {
                    let tones = cue.tones.map { "\(Int($0.frequency)) Hz \($0.durationMs) ms" }.joined(separator: ", ")
                    let note = settings.cue(cue).enabled ? "" : " (off in the configuration)"
                    print("  \(cue.rawValue): due \(dueMs) ms: \(tones)\(note)")
                    player.play(cue, dueMs: dueMs, nowMs: nowMs)
                    dueMs += 1_500
                }
                let endMs = dueMs - 1_500 + Millis(SoundCue.allCases.map(\.durationMs).max() ?? 0)
                    + Millis(settings.latencyMs) + Millis(settings.music?.holdMs ?? 0) + 200
                try await Task.sleep(for: .milliseconds(max(0, endMs - Millis(Date().timeIntervalSince1970 * 1000))))
                player.stop(timeout: .seconds(10))
                if problems.value.load(ordering: .relaxed) > 0 {
                    FileHandle.standardError.write(Data("""
                        pacer sound test: failed (above). A running node may hold the device: sudo systemctl stop pacer; \
                        the device names: aplay -L; under systemd the service needs the sound drop-in (docs/deployment.md, "Sound").

                        """.utf8))
                    throw ExitCode(1)
                }
                if case .file(let path) = settings.output { print("rendered to \(path)") } else { print("done") }
            }

            /// `--say`: renders `text` (no cache: the node's may be another user's) and plays it 0.5 s on.
            private func speak(_ text: String, settings: SoundSettings, logger: Logger, problems: ProblemCount) async throws {
                let speech = settings.speech ?? SpeechSettings()
                let table = try? PhraseTable.load(language: speech.language,
                                                  directories: PhraseTable.searchPath(configured: speech.phrasesDirectory))
                let renderer = SpeechRenderer(settings: speech, defaultVoice: table?.espeakVoice ?? speech.language)
                let clip: SpeechClip
                do {
                    clip = try renderer.render(text)
                } catch {
                    FileHandle.standardError.write(Data("pacer sound test: cannot say \"\(text)\": \(error)\n".utf8))
                    throw ExitCode(1)
                }
                let player = SoundPlayer(settings: settings, logger: logger)
                player.start()
                let nowMs = Millis(Date().timeIntervalSince1970 * 1000)
                let dueMs = nowMs + 500
                print("saying \"\(text)\" with \(renderer.description) on \(settings.output): due \(dueMs) ms, \(clip.durationMs) ms long")
                player.play(clip, dueMs: dueMs, nowMs: nowMs)
                let endMs = dueMs + Millis(clip.durationMs) + Millis(settings.latencyMs) + Millis(settings.music?.holdMs ?? 0) + 200
                try await Task.sleep(for: .milliseconds(max(0, endMs - Millis(Date().timeIntervalSince1970 * 1000))))
                player.stop(timeout: .seconds(10))
                if problems.value.load(ordering: .relaxed) > 0 {
                    FileHandle.standardError.write(Data("""
                        pacer sound test: failed (above). A running node may hold the device: sudo systemctl stop pacer; \
                        the device names: aplay -L.

                        """.utf8))
                    throw ExitCode(1)
                }
                if case .file(let path) = settings.output { print("rendered to \(path)") } else { print("done") }
            }
        }
    }
}

/// How many warnings the player logged.
private final class ProblemCount: Sendable {
    let value = Atomic<Int>(0)
}

/// Prints the player's log lines (stderr: warnings and above, stdout: the rest) and counts the
/// warnings: the device could not be opened, or the music could not be ducked.
private struct TestLogHandler: LogHandler {
    let problems: ProblemCount
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        if event.level >= .warning {
            problems.value.add(1, ordering: .relaxed)
            FileHandle.standardError.write(Data("pacer: \(event.message)\n".utf8))
        } else {
            print("\(event.message)")
        }
    }
}

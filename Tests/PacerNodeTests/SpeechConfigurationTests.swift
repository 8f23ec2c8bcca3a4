import Foundation
@testable import PacerNode
import PacerSound
import PacerTestSupport
import Testing

@Suite("Speech configuration")
struct SpeechConfigurationTests {
    func load(_ yaml: String, dataDirectory: String? = nil) throws(ConfigurationError) -> NodeConfiguration {
        let directory = try! makeTemporaryDirectory("pacer-speech-config")
        let file = directory.appendingPathComponent("pacer.yaml")
        try! yaml.write(to: file, atomically: false, encoding: .utf8)
        return try NodeConfiguration.load(flags: .init(configFile: file.path, dataDirectory: dataDirectory), environment: [:], hostname: "node")
    }

    @Test("no speech without the section; `speech: true` is the defaults: labels, next and done on, numbers off")
    func defaults() throws {
        #expect(try load("sound: true\n").sound?.speech == nil)
        #expect(try load("sound: {speech: false}\n").sound?.speech == nil)
        #expect(try load("sound: {speech: {enabled: false}}\n").sound?.speech == nil)
        let speech = try #require(try load("sound: {speech: true}\n", dataDirectory: "/var/lib/pacer").sound?.speech)
        #expect(speech == SpeechSettings())
        #expect(speech.engine == .espeak && speech.language == "en" && speech.voice == nil)
        #expect(speech.labels && speech.next && speech.done)
        #expect(!speech.rounds && !speech.lastRound && !speech.halfway && speech.marks.isEmpty)
        #expect(speech.cacheMaxClips == 500 && speech.cacheMaxBytes == 50_000_000)
        #expect(try load("sound: {speech: true}\n", dataDirectory: "/var/lib/pacer").speechCacheDirectory == "/var/lib/pacer/speech")
        #expect(try load("sound: true\n").speechCacheDirectory == nil)
    }

    @Test("time-left marks become countdown cues of every timer (at most 10 in all, with timing.cues)")
    func marksAreCountdownCues() throws {
        #expect(try load("sound: {speech: {say: {time_left: [1m, 10s]}}}\n").timerSettings.cues == [60, 10, 3, 2, 1])
        #expect(try load("sound: {speech: {say: {time_left: [10s]}}}\ntiming: {cues: [10, 5]}\n").timerSettings.cues == [10, 5])
        #expect(try load("sound: {enabled: false, speech: {say: {time_left: [1m]}}}\n").timerSettings.cues == [3, 2, 1])
        do {
            _ = try load("sound: {speech: {say: {time_left: [1m, 50s, 40s]}}}\ntiming: {cues: [9, 8, 7, 6, 5, 4, 3, 2]}\n")
            Issue.record("11 countdown cues were accepted")
        } catch {
            #expect(error.description.contains("sound.speech.say.time_left") && error.description.contains("at most 10"), "\(error)")
        }
    }

    @Test("every key: engine, voice, command, language, phrases, volume, the cache and each cue")
    func keys() throws {
        let phrases = try makeTemporaryDirectory("pacer-phrases")
        try FileManager.default.copyItem(atPath: PhraseTable.sourceDirectory + "/en.json", toPath: phrases.appendingPathComponent("en.json").path)
        let speech = try #require(try load("""
            sound:
              speech:
                engine: espeak
                voice: en-us
                command: /bin/sh
                language: en
                phrases: \(phrases.path)
                volume: 70%
                cache: {directory: /srv/speech, max_clips: 200, max_size: 20MB}
                say:
                  labels: off
                  next: on
                  rounds: on
                  last_round: yes
                  halfway: true
                  done: off
                  time_left: [10s, 1m, 90, 10]
            """).sound?.speech)
        #expect(speech.voice == "en-us" && speech.command == "/bin/sh" && speech.phrasesDirectory == phrases.path)
        #expect(speech.volume == 0.7)
        #expect(speech.cacheDirectory == "/srv/speech" && speech.cacheMaxClips == 200 && speech.cacheMaxBytes == 20_000_000)
        #expect(!speech.labels && speech.next && speech.rounds && speech.lastRound && speech.halfway && !speech.done)
        #expect(speech.marks == [90, 60, 10])
    }

    @Test("Piper: the voice model and its settings beside it")
    func piper() throws {
        let directory = try makeTemporaryDirectory("pacer-piper-voice")
        let model = directory.appendingPathComponent("en_US-test-medium.onnx").path
        try Data("model".utf8).write(to: URL(fileURLWithPath: model))
        try Data("{}".utf8).write(to: URL(fileURLWithPath: model + ".json"))
        let speech = try #require(try load("sound: {speech: {engine: piper, voice: '\(model)', command: /bin/sh}}\n").sound?.speech)
        #expect(speech.engine == .piper && speech.voice == model)
    }

    @Test("bad values fail with the key and the reason", arguments: [
        ("sound: {speech: {engine: festival}}\n", "sound.speech.engine", "expected espeak"),
        ("sound: {speech: {engine: piper}}\n", "sound.speech.voice", "missing: Piper needs a voice model"),
        ("sound: {speech: {engine: piper, voice: joe.onnx}}\n", "sound.speech.voice", "absolute path"),
        ("sound: {speech: {engine: piper, voice: /nowhere/joe.onnx}}\n", "sound.speech.voice", "does not exist"),
        ("sound: {speech: {command: piper}}\n", "sound.speech.command", "absolute path"),
        ("sound: {speech: {command: /nowhere/espeak-ng}}\n", "sound.speech.command", "not an executable"),
        ("sound: {speech: {language: English}}\n", "sound.speech.language", "language tag"),
        ("sound: {speech: {language: zz}}\n", "sound.speech.language", "no phrase table zz.json"),
        ("sound: {speech: {phrases: /nowhere}}\n", "sound.speech.phrases", "not a directory"),
        ("sound: {speech: {phrases: phrases}}\n", "sound.speech.phrases", "absolute path"),
        ("sound: {speech: {volume: 2}}\n", "sound.speech.volume", "from 0 to 1"),
        ("sound: {speech: {cache: {directory: speech}}}\n", "sound.speech.cache.directory", "absolute path"),
        ("sound: {speech: {cache: {max_clips: 0}}}\n", "sound.speech.cache.max_clips", "between 10 and 100000"),
        ("sound: {speech: {cache: {max_size: lots}}}\n", "sound.speech.cache.max_size", "like 50MB"),
        ("sound: {speech: {cache: {max_size: 500kB}}}\n", "sound.speech.cache.max_size", "between 1MB and 10GB"),
        ("sound: {speech: {cache: {size: 5MB}}}\n", "sound.speech.cache.size", "unknown key"),
        ("sound: {speech: {say: {numbers: on}}}\n", "sound.speech.say.numbers", "unknown key"),
        ("sound: {speech: {say: {next: sometimes}}}\n", "sound.speech.say.next", "true or false"),
        ("sound: {speech: {say: {time_left: 10s}}}\n", "sound.speech.say.time_left", "list"),
        ("sound: {speech: {say: {time_left: [2h]}}}\n", "sound.speech.say.time_left[0]", "between"),
        ("sound: {speech: {say: {time_left: [10s, 1.5s]}}}\n", "sound.speech.say.time_left[1]", "whole number of seconds"),
        ("sound: {speech: {voices: en}}\n", "sound.speech.voices", "unknown key"),
        ("sound: {speech: maybe}\n", "sound.speech", "true or false"),
    ])
    func badValues(yaml: String, key: String, reason: String) {
        do {
            _ = try load(yaml)
            Issue.record("\(yaml) was accepted")
        } catch {
            #expect(error.problems.contains { $0.key == key && $0.reason.contains(reason) }, "\(error)")
        }
    }

    @Test("a phrase table with a missing phrase fails at start with the file and the phrase")
    func brokenTable() throws {
        let phrases = try makeTemporaryDirectory("pacer-phrases")
        let english = try String(contentsOfFile: PhraseTable.sourceDirectory + "/en.json", encoding: .utf8)
        try english.replacingOccurrences(of: "\"done\": \"Done\",", with: "")
            .write(to: phrases.appendingPathComponent("en.json"), atomically: true, encoding: .utf8)
        do {
            _ = try load("sound: {speech: {phrases: \(phrases.path)}}\n")
            Issue.record("accepted")
        } catch {
            #expect(error.problems.contains { $0.key == "sound.speech.phrases" && $0.reason.contains("has no text for \"done\"") }, "\(error)")
        }
    }
}

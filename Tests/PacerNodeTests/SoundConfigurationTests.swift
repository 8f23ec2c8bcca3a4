import Foundation
@testable import PacerNode
import PacerSound
import PacerTestSupport
import Testing

@Suite("Sound configuration")
struct SoundConfigurationTests {
    func load(_ yaml: String) throws(ConfigurationError) -> NodeConfiguration {
        let directory = try! makeTemporaryDirectory("pacer-sound-config")
        let file = directory.appendingPathComponent("pacer.yaml")
        try! yaml.write(to: file, atomically: false, encoding: .utf8)
        return try NodeConfiguration.load(flags: .init(configFile: file.path), environment: [:], hostname: "node")
    }

    @Test("no sound without the section; device, volumes, latency and per-cue switches")
    func settings() throws {
        #expect(try load("").sound == nil)
        #expect(try load("sound: true\n").sound == SoundSettings())
        let s = try #require(try load("""
            sound:
              device: plughw:CARD=Headphones
              volume: 80%
              latency: 20ms
              cues: {countdown: off, rest: {volume: 0.5}, finish: {enabled: false}}
            """).sound)
        #expect(s.output == .alsa("plughw:CARD=Headphones"))
        #expect(s.latencyMs == 20)
        #expect(s.volume(of: .work) == 0.8)
        #expect(s.volume(of: .rest) == 0.4)
        #expect(s.volume(of: .countdown) == nil && s.volume(of: .finish) == nil)
        #expect(try load("sound: {device: 'file:/tmp/cues.wav'}\n").sound?.output == .file("/tmp/cues.wav"))
    }

    @Test("bad values fail with the key and the reason", arguments: [
        ("sound: {volume: 1.5}\n", "sound.volume", "from 0 to 1"),
        ("sound: {device: 'file:cues.wav'}\n", "sound.device", "absolute path"),
        ("sound: {cues: {beep: off}}\n", "sound.cues.beep", "unknown key"),
        ("sound: {cues: {work: {volume: loud}}}\n", "sound.cues.work.volume", "volume"),
        ("sound: {latency: 5s}\n", "sound.latency", "between"),
    ])
    func badValues(yaml: String, key: String, reason: String) {
        do {
            _ = try load(yaml)
            Issue.record("\(yaml) was accepted")
        } catch {
            #expect(error.problems.contains { $0.key == key && $0.reason.contains(reason) }, "\(error)")
        }
    }
}

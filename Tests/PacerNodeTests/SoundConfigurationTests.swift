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

    @Test("music: the MPD server (host, port, password) and the duck's depth, lead and hold")
    func music() throws {
        #expect(try load("sound: true\n").sound?.music == nil)
        let m = try #require(try load("""
            sound:
              music: {mpd: "192.168.1.20:6601", password: "s3cret \\"x\\"", duck_to: 25%, lead: 400ms, hold: 1s}
            """).sound?.music)
        #expect(m.host == "192.168.1.20" && m.port == 6601 && m.password == "s3cret \"x\"")
        #expect(m.duckTo == 0.25 && m.leadMs == 400 && m.holdMs == 1_000)
        let d = try #require(try load("sound: {music: {mpd: jukebox.local}}\n").sound?.music)
        #expect(d.host == "jukebox.local" && d.port == 6600 && d.password == nil)
        #expect(d.duckTo == 0.3 && d.leadMs == 150 && d.holdMs == 300)
        #expect(try load("sound: {music: {mpd: '[::1]:6602'}}\n").sound?.music.map { "\($0.host) \($0.port)" } == "::1 6602")
    }

    @Test("quiet: windows of local time, unquoted or quoted, all cues or some")
    func quiet() throws {
        let q = try #require(try load("""
            sound:
              quiet:
                - {from: 22:00, to: "07:00"}
                - {from: "12:30", to: "13:00", cues: [countdown, expired]}
                - {from: "00:00", to: "24:00", cues: all}
            """).sound?.quiet)
        #expect(q == [
            QuietHours(fromMs: 22 * 3_600_000, toMs: 7 * 3_600_000),
            QuietHours(fromMs: 12 * 3_600_000 + 30 * 60_000, toMs: 13 * 3_600_000, cues: [.countdown, .expired]),
            QuietHours(fromMs: 0, toMs: 24 * 3_600_000),
        ])
    }

    @Test("bad values fail with the key and the reason", arguments: [
        ("sound: {volume: 1.5}\n", "sound.volume", "from 0 to 1"),
        ("sound: {device: 'file:cues.wav'}\n", "sound.device", "absolute path"),
        ("sound: {cues: {beep: off}}\n", "sound.cues.beep", "unknown key"),
        ("sound: {cues: {work: {volume: loud}}}\n", "sound.cues.work.volume", "volume"),
        ("sound: {latency: 5s}\n", "sound.latency", "between"),
        ("sound: {music: {duck_to: 30%}}\n", "sound.music.mpd", "missing"),
        ("sound: {music: {mpd: 'jukebox:66000'}}\n", "sound.music.mpd", "host:port"),
        ("sound: {music: {mpd: 'a:b:c'}}\n", "sound.music.mpd", "host:port"),
        ("sound: {music: {mpd: jukebox, duck_to: 130%}}\n", "sound.music.duck_to", "0% to 100%"),
        ("sound: {music: {mpd: jukebox, lead: 10s}}\n", "sound.music.lead", "between"),
        ("sound: {music: {mpd: jukebox, volume: 3}}\n", "sound.music.volume", "unknown key"),
        ("sound: {music: jukebox}\n", "sound.music", "mapping"),
        ("sound: {quiet: {from: '22:00', to: '07:00'}}\n", "sound.quiet", "list"),
        ("sound: {quiet: [{from: '22:00'}]}\n", "sound.quiet[0].to", "missing"),
        ("sound: {quiet: [{from: '25:00', to: '07:00'}]}\n", "sound.quiet[0].from", "HH:MM"),
        ("sound: {quiet: [{from: '10pm', to: '07:00'}]}\n", "sound.quiet[0].from", "HH:MM"),
        ("sound: {quiet: [{from: '07:00', to: '07:00'}]}\n", "sound.quiet[0].to", "empty"),
        ("sound: {quiet: [{from: '22:00', to: '07:00', cues: [beep]}]}\n", "sound.quiet[0].cues", "unknown cue 'beep'"),
        ("sound: {quiet: [{from: '22:00', to: '07:00', cues: some}]}\n", "sound.quiet[0].cues", "expected all"),
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

import Foundation
import PacerCore
import PacerSound

extension NodeConfiguration {
    /// Reads `sound:` (docs/sound.md). Without the section the node plays nothing.
    mutating func readSound(_ node: ConfigTree?, _ r: inout ConfigReader) {
        guard let node else { return }
        var settings = SoundSettings()
        if case .scalar = node.value {  // `sound: true` / `sound: false`
            if let enabled = r.bool(node, key: "sound") { settings.enabled = enabled; sound = settings }
            return
        }
        let s = r.mapping(node, key: "sound", known: ["enabled", "device", "volume", "latency", "cues", "music", "quiet"])
        if let v = r.bool(s["enabled"], key: "sound.enabled") { settings.enabled = v }
        if let v = r.string(s["device"], key: "sound.device") {
            let output = SoundSettings.output(device: v)
            switch output {
            case .alsa(let name) where name.isEmpty:
                r.fail("sound.device", s["device"], "give an ALSA device like default or plughw:CARD=Headphones, or file:/path/cues.wav")
            case .file(let path) where path.isEmpty || !path.hasPrefix("/"):
                r.fail("sound.device", s["device"], "a file output needs an absolute path, like file:/var/lib/pacer/cues.wav, got '\(v)'")
            default:
                settings.output = output
            }
        }
        if let v = Self.volume(s["volume"], key: "sound.volume", &r) { settings.volume = v }
        if let v = r.duration(s["latency"], key: "sound.latency", range: 0...1_000) { settings.latencyMs = Int(v) }
        let cues = r.mapping(s["cues"], key: "sound.cues", known: Set(SoundCue.allCases.map(\.rawValue)))
        for cue in SoundCue.allCases {
            guard let item = cues[cue.rawValue] else { continue }
            let key = "sound.cues.\(cue.rawValue)"
            var settingsOfCue = SoundSettings.Cue()
            if case .scalar = item.value {  // `countdown: off`
                if let enabled = r.bool(item, key: key) { settingsOfCue.enabled = enabled }
            } else {
                let c = r.mapping(item, key: key, known: ["enabled", "volume"])
                if let v = r.bool(c["enabled"], key: "\(key).enabled") { settingsOfCue.enabled = v }
                if let v = Self.volume(c["volume"], key: "\(key).volume", &r) { settingsOfCue.volume = v }
            }
            settings.cues[cue] = settingsOfCue
        }
        if let music = s["music"] { settings.music = Self.music(music, &r) }
        for (index, item) in r.sequence(s["quiet"], key: "sound.quiet").enumerated() {
            if let window = Self.quietHours(item, key: "sound.quiet[\(index)]", &r) { settings.quiet.append(window) }
        }
        sound = settings
    }

    /// `sound.music`: `{mpd: "host:port", password, duck_to, lead, hold}`.
    private static func music(_ node: ConfigTree, _ r: inout ConfigReader) -> SoundSettings.Music? {
        let m = r.mapping(node, key: "sound.music", known: ["mpd", "password", "duck_to", "lead", "hold"])
        guard case .mapping = node.value else { return nil }
        var address: (host: String, port: Int)?
        if let text = r.string(m["mpd"], key: "sound.music.mpd") {
            address = SoundSettings.Music.address(text)
            if address == nil {
                r.fail("sound.music.mpd", m["mpd"], "expected host or host:port (port 1-65535), like 127.0.0.1:6600 or jukebox.local, got '\(text)'")
            }
        } else if m["mpd"] == nil {
            r.fail("sound.music.mpd", node, "missing: give the MPD server to duck, like mpd: \"127.0.0.1:6600\"")
        }
        var music = SoundSettings.Music(host: address?.host ?? "", port: address?.port ?? 6600)
        if let v = r.string(m["password"], key: "sound.music.password") { music.password = v }
        if let v = volume(m["duck_to"], key: "sound.music.duck_to", &r) { music.duckTo = v }
        if let v = r.duration(m["lead"], key: "sound.music.lead", range: 0...5_000) { music.leadMs = Int(v) }
        if let v = r.duration(m["hold"], key: "sound.music.hold", range: 0...10_000) { music.holdMs = Int(v) }
        return address == nil ? nil : music
    }

    /// One `sound.quiet` window: `{from: "22:00", to: "07:00", cues: all | [kinds]}`.
    private static func quietHours(_ node: ConfigTree, key: String, _ r: inout ConfigReader) -> QuietHours? {
        let q = r.mapping(node, key: key, known: ["from", "to", "cues"])
        guard case .mapping = node.value else { return nil }
        var times: [Millis] = []
        for name in ["from", "to"] {
            guard let item = q[name] else {
                r.fail("\(key).\(name)", node, "missing: give a time of day like \"22:00\" (24-hour HH:MM, the node's local time)")
                continue
            }
            guard let text = r.string(item, key: "\(key).\(name)") else { continue }
            guard let ms = QuietHours.time(text) else {
                r.fail("\(key).\(name)", item, "expected a time of day as HH:MM from 00:00 to 24:00, like \"22:00\", got '\(text)'")
                continue
            }
            times.append(ms)
        }
        var cues = Set(SoundCue.allCases)
        if let item = q["cues"] {
            let names = SoundCue.allCases.map(\.rawValue).joined(separator: ", ")
            switch item.value {
            case .scalar(let text, _, _) where text == "all":
                break
            case .sequence:
                cues = []
                for entry in r.sequence(item, key: "\(key).cues") {
                    guard let name = r.string(entry, key: "\(key).cues") else { continue }
                    guard let cue = SoundCue(rawValue: name) else {
                        r.fail("\(key).cues", entry, "unknown cue '\(name)'; expected all, or a list of: \(names)")
                        continue
                    }
                    cues.insert(cue)
                }
            case .scalar, .mapping:
                r.fail("\(key).cues", item, "expected all, or a list of cues like [countdown, expired] (\(names)), got \(ConfigReader.describe(item))")
            }
        }
        guard times.count == 2 else { return nil }
        guard times[0] != times[1] else {
            r.fail("\(key).to", q["to"], "the window is empty: from and to are the same time; for the whole day use from: \"00:00\", to: \"24:00\"")
            return nil
        }
        return QuietHours(fromMs: times[0], toMs: times[1], cues: cues)
    }

    /// A volume: a number from 0 to 1, or a percentage like `80%`.
    private static func volume(_ node: ConfigTree?, key: String, _ r: inout ConfigReader) -> Double? {
        guard let node else { return nil }
        guard case .scalar(let text, _, _) = node.value else {
            r.fail(key, node, "expected a volume from 0 to 1 or a percentage like 80%, got \(ConfigReader.describe(node))")
            return nil
        }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let value = trimmed.hasSuffix("%") ? Double(trimmed.dropLast()).map { $0 / 100 } : Double(trimmed)
        guard let value, (0...1).contains(value) else {
            r.fail(key, node, "expected a volume from 0 to 1 or a percentage from 0% to 100%, got '\(text)'")
            return nil
        }
        return value
    }
}

import Foundation
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
        let s = r.mapping(node, key: "sound", known: ["enabled", "device", "volume", "latency", "cues"])
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
        sound = settings
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

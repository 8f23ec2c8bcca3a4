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
        let s = r.mapping(node, key: "sound", known: ["enabled", "device", "volume", "latency", "cues", "music", "quiet", "speech"])
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
        if let speech = s["speech"] { settings.speech = Self.speech(speech, &r) }
        sound = settings
    }

    /// Where spoken cues' clips are kept: `sound.speech.cache.directory`, else `speech` in the
    /// data directory; nil without speech.
    public var speechCacheDirectory: String? {
        guard let speech = sound?.speech else { return nil }
        return speech.cacheDirectory ?? (dataDirectory as NSString).appendingPathComponent("speech")
    }

    /// `sound.speech`: `true`/`false`, or `{enabled, engine, voice, command, language, phrases,
    /// volume, cache: {directory, max_clips, max_size}, say: {labels, next, rounds, last_round,
    /// halfway, done, time_left}}` (docs/sound.md, "Speech").
    private static func speech(_ node: ConfigTree, _ r: inout ConfigReader) -> SpeechSettings? {
        var speech = SpeechSettings()
        if case .scalar = node.value {  // `speech: true` / `speech: false`
            return r.bool(node, key: "sound.speech") == true ? speech : nil
        }
        let s = r.mapping(node, key: "sound.speech",
                          known: ["enabled", "engine", "voice", "command", "language", "phrases", "volume", "cache", "say"])
        guard case .mapping = node.value else { return nil }
        if r.bool(s["enabled"], key: "sound.speech.enabled") == false { return nil }
        if let text = r.string(s["engine"], key: "sound.speech.engine") {
            if let engine = SpeechSettings.Engine(rawValue: text) {
                speech.engine = engine
            } else {
                r.fail("sound.speech.engine", s["engine"], "expected espeak (espeak-ng, the default) or piper, got '\(text)'")
            }
        }
        if let voice = r.string(s["voice"], key: "sound.speech.voice") {
            if speech.engine == .piper, !voice.hasPrefix("/") {
                r.fail("sound.speech.voice", s["voice"], "Piper's voice is the absolute path of a voice model, like /var/lib/pacer/voices/en_US-joe-medium.onnx, got '\(voice)'")
            } else if speech.engine == .piper, !FileManager.default.fileExists(atPath: voice) {
                r.fail("sound.speech.voice", s["voice"], "the Piper voice model \(voice) does not exist")
            } else if speech.engine == .piper, !FileManager.default.fileExists(atPath: voice + ".json") {
                r.fail("sound.speech.voice", s["voice"], "the Piper voice model needs its settings beside it: \(voice).json does not exist")
            } else if voice.isEmpty {
                r.fail("sound.speech.voice", s["voice"], "give a voice: an espeak-ng voice like en or en-us (espeak-ng --voices), or Piper's model file")
            } else {
                speech.voice = voice
            }
        } else if speech.engine == .piper, s["voice"] == nil {
            r.fail("sound.speech.voice", node, "missing: Piper needs a voice model file, like voice: /var/lib/pacer/voices/en_US-joe-medium.onnx (docs/sound.md, \"Voices\")")
        }
        if let command = r.string(s["command"], key: "sound.speech.command") {
            if !command.hasPrefix("/") {
                r.fail("sound.speech.command", s["command"], "give the absolute path of the engine's executable, like /opt/piper/bin/piper, got '\(command)'")
            } else if !FileManager.default.isExecutableFile(atPath: command) {
                r.fail("sound.speech.command", s["command"], "\(command) is not an executable file")
            } else {
                speech.command = command
            }
        }
        if let directory = Self.directory(s["phrases"], key: "sound.speech.phrases", mustExist: true, &r) { speech.phrasesDirectory = directory }
        if let language = r.string(s["language"], key: "sound.speech.language") {
            if PhraseTable.isValidLanguage(language) {
                speech.language = language
            } else {
                r.fail("sound.speech.language", s["language"], "expected a language tag like en, de or pt-BR (the phrase table's file name), got '\(language)'")
            }
        }
        // The phrase table must be there and whole: a node that cannot say its cues fails at start.
        do {
            _ = try PhraseTable.load(language: speech.language, directories: PhraseTable.searchPath(configured: speech.phrasesDirectory))
        } catch {
            r.fail(s["language"] == nil && s["phrases"] != nil ? "sound.speech.phrases" : "sound.speech.language", s["language"] ?? s["phrases"] ?? node, "\(error)")
        }
        if let v = volume(s["volume"], key: "sound.speech.volume", &r) { speech.volume = v }
        let cache = r.mapping(s["cache"], key: "sound.speech.cache", known: ["directory", "max_clips", "max_size"])
        if let directory = Self.directory(cache["directory"], key: "sound.speech.cache.directory", mustExist: false, &r) {
            speech.cacheDirectory = directory
        }
        if let v = r.int(cache["max_clips"], key: "sound.speech.cache.max_clips", range: 10...100_000) { speech.cacheMaxClips = v }
        if let v = byteSize(cache["max_size"], key: "sound.speech.cache.max_size", range: 1_000_000...10_000_000_000, &r) {
            speech.cacheMaxBytes = v
        }
        let say = r.mapping(s["say"], key: "sound.speech.say",
                            known: ["labels", "next", "rounds", "last_round", "halfway", "done", "time_left"])
        if let v = r.bool(say["labels"], key: "sound.speech.say.labels") { speech.labels = v }
        if let v = r.bool(say["next"], key: "sound.speech.say.next") { speech.next = v }
        if let v = r.bool(say["rounds"], key: "sound.speech.say.rounds") { speech.rounds = v }
        if let v = r.bool(say["last_round"], key: "sound.speech.say.last_round") { speech.lastRound = v }
        if let v = r.bool(say["halfway"], key: "sound.speech.say.halfway") { speech.halfway = v }
        if let v = r.bool(say["done"], key: "sound.speech.say.done") { speech.done = v }
        if let item = say["time_left"] {
            if case .scalar(let text, _, _) = item.value, ["off", "false", "no", "none"].contains(text.lowercased()) {
                speech.marks = []
            } else {
                var marks: [Int] = []
                for (index, entry) in r.sequence(item, key: "sound.speech.say.time_left").enumerated() {
                    let key = "sound.speech.say.time_left[\(index)]"
                    guard let ms = r.duration(entry, key: key, range: 1_000...3_600_000) else { continue }
                    guard ms % 1_000 == 0 else {
                        r.fail(key, entry, "a mark is a whole number of seconds, like 10s or 1m, got \(Durations.describe(ms))")
                        continue
                    }
                    if !marks.contains(Int(ms / 1_000)) { marks.append(Int(ms / 1_000)) }
                }
                speech.marks = marks.sorted(by: >)
            }
        }
        return speech
    }

    /// An absolute directory path (`mustExist`: and a directory there).
    private static func directory(_ node: ConfigTree?, key: String, mustExist: Bool, _ r: inout ConfigReader) -> String? {
        guard let node, let path = r.string(node, key: key) else { return nil }
        guard path.hasPrefix("/") else {
            r.fail(key, node, "give an absolute path, like /var/lib/pacer/speech, got '\(path)'")
            return nil
        }
        var isDirectory: ObjCBool = false
        if mustExist, !(FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue) {
            r.fail(key, node, "\(path) is not a directory")
            return nil
        }
        return path
    }

    /// A size in bytes: a number, or with a unit: `500kB`, `50MB`, `1GB` (powers of 1000).
    private static func byteSize(_ node: ConfigTree?, key: String, range: ClosedRange<Int>, _ r: inout ConfigReader) -> Int? {
        guard let node else { return nil }
        guard case .scalar(let raw, _, _) = node.value else {
            r.fail(key, node, "expected a size like 50MB, got \(ConfigReader.describe(node))")
            return nil
        }
        let text = raw.trimmingCharacters(in: .whitespaces)
        let units: [(String, Double)] = [("GB", 1e9), ("MB", 1e6), ("kB", 1e3), ("KB", 1e3), ("B", 1)]
        var value: Double?
        for (unit, factor) in units where text.hasSuffix(unit) {
            value = Double(text.dropLast(unit.count).trimmingCharacters(in: .whitespaces)).map { $0 * factor }
            break
        }
        if value == nil, let number = Double(text) { value = number }
        guard let value, value.isFinite, value >= 0 else {
            r.fail(key, node, "expected a size like 50MB, 500kB or 1GB, got '\(raw)'")
            return nil
        }
        guard range.contains(Int(value)) else {
            r.fail(key, node, "must be between \(range.lowerBound / 1_000_000)MB and \(range.upperBound / 1_000_000_000)GB, got '\(raw)'")
            return nil
        }
        return Int(value)
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

public import Foundation
public import PacerCore

/// The `sound:` section of the configuration (docs/sound.md).
public struct SoundSettings: Sendable, Equatable {
    /// Where the cues go.
    public enum Output: Sendable, Equatable {
        /// An ALSA PCM device: `default`, `plughw:CARD=Headphones`, `hw:1,0`, ...
        case alsa(String)
        /// A WAV file the cues are rendered into, each at its due instant on the sample
        /// timeline (tests, and checking a setup without a speaker): `file:/path/cues.wav`.
        case file(String)
    }

    /// Per cue: on or off, and its volume (0...1, times the master volume).
    public struct Cue: Sendable, Equatable {
        public var enabled = true
        public var volume = 1.0
        public init(enabled: Bool = true, volume: Double = 1.0) {
            self.enabled = enabled
            self.volume = volume
        }
    }

    public var enabled = true
    public var output = Output.alsa("default")
    /// Master volume, 0...1.
    public var volume = 1.0
    /// How long after its due instant a cue sounds on a device: covers the node's own delay in
    /// noticing a deadline, so consecutive cues keep their exact spacing.
    public var latencyMs = 50
    public var cues: [SoundCue: Cue] = [:]
    /// An MPD server whose volume goes down around each cue (`music:`); nil: none.
    public var music: Music?
    /// When cues of some kinds are not played (`quiet:`), in `timeZone`.
    public var quiet: [QuietHours] = []
    /// The time zone of the quiet hours: the node's local one.
    public var timeZone = TimeZone.current
    /// Spoken cues (`speech:`); nil: none, the beeps only.
    public var speech: SpeechSettings?

    /// `music:`: ducking an MPD server's volume around each cue (docs/sound.md, "Music").
    public struct Music: Sendable, Equatable {
        public var host: String
        public var port: Int
        public var password: String?
        /// The music's volume during a cue, as a share of its volume just before (0...1).
        public var duckTo = 0.3
        /// How long before a cue sounds the music goes down.
        public var leadMs = 150
        /// How long after a cue ends the music stays down (close cues make one duck).
        public var holdMs = 300

        public init(host: String, port: Int = 6600, password: String? = nil) {
            self.host = host
            self.port = port
            self.password = password
        }

        /// Parses `host`, `host:port` or `[v6 address]:port` (MPD's default port: 6600).
        public static func address(_ text: String) -> (host: String, port: Int)? {
            var host = Substring(text.trimmingCharacters(in: .whitespaces))
            var port = 6600
            if host.hasPrefix("[") {
                guard let close = host.firstIndex(of: "]") else { return nil }
                let rest = host[host.index(after: close)...]
                host = host[host.index(after: host.startIndex)..<close]
                if !rest.isEmpty {
                    guard rest.hasPrefix(":"), let p = Int(rest.dropFirst()) else { return nil }
                    port = p
                }
            } else if let colon = host.lastIndex(of: ":") {
                guard host.firstIndex(of: ":") == colon, let p = Int(host[host.index(after: colon)...]) else { return nil }
                port = p
                host = host[..<colon]
            }
            guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "/" }), (1...65_535).contains(port) else { return nil }
            return (String(host), port)
        }
    }

    public init() {}

    /// Whether quiet hours silence `cue` at `epochMs` (its due instant).
    public func isQuiet(_ cue: SoundCue, atMs epochMs: Millis) -> Bool {
        guard !quiet.isEmpty else { return false }
        let msOfDay = QuietHours.msOfDay(epochMs: epochMs, timeZone: timeZone)
        return quiet.contains { $0.cues.contains(cue) && $0.contains(msOfDay: msOfDay) }
    }

    /// The settings of one cue (default: on, full volume).
    public func cue(_ cue: SoundCue) -> Cue { cues[cue] ?? Cue() }

    /// The volume `cue` plays at, or nil when it is off.
    public func volume(of cue: SoundCue) -> Double? {
        let c = self.cue(cue)
        return c.enabled ? volume * c.volume : nil
    }

    /// Parses `device`: `file:<path>` or an ALSA device name.
    public static func output(device: String) -> Output {
        device.hasPrefix("file:") ? .file(String(device.dropFirst(5))) : .alsa(device)
    }
}

extension SoundSettings.Output: CustomStringConvertible {
    public var description: String {
        switch self {
        case .alsa(let device): "ALSA device \(device)"
        case .file(let path): "file \(path)"
        }
    }
}

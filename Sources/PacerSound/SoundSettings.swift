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

    public init() {}

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

#if canImport(Glibc)
import Glibc
#endif

/// The media role of the cues' stream where the sound goes through a sound server, so that the
/// server's role-based ducking lowers the other streams while a cue plays (docs/sound.md,
/// "Role-based ducking").
///
/// ALSA has no stream properties of its own: the sound servers' ALSA plugins take them from
/// the environment of the process when the device is opened. PulseAudio's client library
/// (used by alsa-plugins' `pulse` device) reads `PULSE_PROP`; PipeWire's (its `pipewire` ALSA
/// device, and `default` where pipewire-alsa is installed) reads `PIPEWIRE_PROPS` for each
/// stream. The roles differ in spelling: PulseAudio's `event`, PipeWire's `Notification`.
public enum StreamRole {
    public static let pulseRole = "event"
    public static let pipewireRole = "Notification"

    /// The variables to set before opening `device`: none for a hardware device (`hw:`,
    /// `plughw:`, a file), both for `default` (it may be routed to either server).
    public static func environment(forDevice device: String) -> [(name: String, value: String)] {
        let base = device.split(separator: ":", maxSplits: 1).first.map(String.init) ?? device
        let pulse = ("PULSE_PROP", "media.role=\(pulseRole)")
        let pipewire = ("PIPEWIRE_PROPS", "{ media.role = \"\(pipewireRole)\" }")
        switch base {
        case "pulse": return [pulse]
        case "pipewire": return [pipewire]
        case "default": return [pulse, pipewire]
        default: return []
        }
    }

    /// Sets the variables for `device` that are not set already (an owner's own value wins).
    /// Returns those it set. Called when the player is made (SoundPlayer.init): before its
    /// thread opens the device, and before the node's services start threads that could read
    /// the environment while it changes. (The tests call the variant with their own `read`
    /// and `write`.)
    @discardableResult
    public static func apply(forDevice device: String) -> [String] {
        apply(forDevice: device, read: { getenv($0).map { String(cString: $0) } }, write: { setenv($0, $1, 0) })
    }

    static func apply(forDevice device: String, read: (String) -> String?, write: (String, String) -> Void) -> [String] {
        var set: [String] = []
        for (name, value) in environment(forDevice: device) where read(name) == nil {
            write(name, value)
            set.append(name)
        }
        return set
    }
}

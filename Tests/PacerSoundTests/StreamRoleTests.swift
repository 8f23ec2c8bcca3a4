import Foundation
import Logging
@testable import PacerSound
import Testing

/// The cues' media role for the sound servers' role-based ducking.
@Suite("Stream role", .serialized)
struct StreamRoleTests {
    @Test("pulse and pipewire devices get their server's role; default both; hardware none")
    func environment() {
        func names(_ device: String) -> [String] { StreamRole.environment(forDevice: device).map(\.name) }
        #expect(names("pulse") == ["PULSE_PROP"])
        #expect(names("pulse:DEVICE=alsa_output.usb") == ["PULSE_PROP"])
        #expect(names("pipewire") == ["PIPEWIRE_PROPS"])
        #expect(names("pipewire:NODE=42") == ["PIPEWIRE_PROPS"])
        #expect(names("default") == ["PULSE_PROP", "PIPEWIRE_PROPS"])
        for device in ["hw:1,0", "plughw:CARD=Headphones", "null", "sysdefault:CARD=0", "dmix"] {
            #expect(names(device).isEmpty, "\(device)")
        }
        let values = Dictionary(uniqueKeysWithValues: StreamRole.environment(forDevice: "default").map { ($0.name, $0.value) })
        #expect(values["PULSE_PROP"] == "media.role=event")
        #expect(values["PIPEWIRE_PROPS"] == "{ media.role = \"Notification\" }")
    }

    @Test("a player on a pulse or pipewire device sets the role in its environment; an owner's own value wins")
    func applied() {
        unsetenv("PULSE_PROP")
        setenv("PIPEWIRE_PROPS", "{ media.role = \"Alert\" }", 1)
        defer { unsetenv("PULSE_PROP"); unsetenv("PIPEWIRE_PROPS") }
        var settings = SoundSettings()
        settings.output = .alsa("hw:9,0")
        _ = SoundPlayer(settings: settings, logger: Logger(label: "t"))
        #expect(getenv("PULSE_PROP") == nil, "a hardware device needs no role")
        settings.output = .alsa("default")
        _ = SoundPlayer(settings: settings, logger: Logger(label: "t"))
        #expect(getenv("PULSE_PROP").map { String(cString: $0) } == "media.role=event")
        #expect(getenv("PIPEWIRE_PROPS").map { String(cString: $0) } == "{ media.role = \"Alert\" }")
    }
}

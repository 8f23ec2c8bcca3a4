import Foundation
@testable import PacerSound
import Testing

/// The cues' media role for the sound servers' role-based ducking. (That a real PulseAudio gets
/// it from a running `pacer` and ducks the music: Tests/extra/role-ducking.)
@Suite("Stream role")
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

    @Test("applied: the variables a device needs that are not set yet; an owner's own value wins")
    func applied() {
        var environment = ["PIPEWIRE_PROPS": "{ media.role = \"Alert\" }"]
        func apply(_ device: String) -> [String] {
            StreamRole.apply(forDevice: device, read: { environment[$0] }, write: { environment[$0] = $1 })
        }
        #expect(apply("hw:9,0").isEmpty)
        #expect(environment["PULSE_PROP"] == nil, "a hardware device needs no role")
        #expect(apply("default") == ["PULSE_PROP"])
        #expect(environment["PULSE_PROP"] == "media.role=event")
        #expect(environment["PIPEWIRE_PROPS"] == "{ media.role = \"Alert\" }", "the owner's value is kept")
        #expect(apply("pulse").isEmpty, "set once")
    }
}

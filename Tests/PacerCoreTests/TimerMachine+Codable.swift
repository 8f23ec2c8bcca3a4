import Foundation
@testable public import PacerCore

// The test oracle of a timer's persisted format: `Codable`, kept only here. The
// node reads and writes a timer with one implementation (TimerMachine+Persisted.swift:
// `init(persisted:)` and `persistedBytes`); these tests check it against Foundation's
// `JSONDecoder`/`JSONEncoder` over the synthesized `Codable` of the machine's state types,
// which define the format's shape.
extension TimerMachine: Codable {
    enum CodingKeys: String, CodingKey {
        case version, id, name, spec, settings, state, revision
        case advancedToMs = "advanced_to_ms", lastChangeMs = "last_change_ms"
    }

    /// A decoder's `userInfo` key: `TimerSettings` to give every decoded machine instead of
    /// the persisted ones (a node that restores replaces them with its configuration's anyway,
    /// so they are not decoded: a restore of 10,000 timers skips 10,000 of them).
    static let settingsOverride = CodingUserInfoKey(rawValue: "pacer.settingsOverride")!

    /// Restores a persisted machine. The program is recompiled from its spec (it is not
    /// persisted: a 10,000-segment program would otherwise be rewritten on every change).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let version = try container.decodeIfPresent(Int.self, forKey: .version) ?? 1
        guard version <= TimerMachine.codingVersion else {
            throw DecodingError.dataCorruptedError(forKey: .version, in: container, debugDescription: "unsupported timer format version \(version)")
        }
        let settings: TimerSettings
        if let override = decoder.userInfo[TimerMachine.settingsOverride] as? TimerSettings {
            settings = override
        } else {
            settings = try container.decodeIfPresent(TimerSettings.self, forKey: .settings) ?? TimerSettings()
        }
        let id = try container.decode(String.self, forKey: .id), name = try container.decode(String.self, forKey: .name)
        let spec = try container.decode(TimerSpec.self, forKey: .spec), state = try container.decode(State.self, forKey: .state)
        let revision = try container.decode(Int.self, forKey: .revision)
        let advancedToMs = try container.decode(Millis.self, forKey: .advancedToMs)
        let lastChangeMs = try container.decode(Millis.self, forKey: .lastChangeMs)
        do throws(PersistedMachineError) {
            try self.init(restoring: id, name: name, spec: spec, settings: settings, state: state, revision: revision,
                          advancedToMs: advancedToMs, lastChangeMs: lastChangeMs)
        } catch {
            throw DecodingError.dataCorruptedError(forKey: error.path == "spec" ? .spec : .state, in: container, debugDescription: error.problem)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(TimerMachine.codingVersion, forKey: .version)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(spec, forKey: .spec)
        try container.encode(settings, forKey: .settings)
        try container.encode(state, forKey: .state)
        try container.encode(revision, forKey: .revision)
        try container.encode(advancedToMs, forKey: .advancedToMs)
        try container.encode(lastChangeMs, forKey: .lastChangeMs)
    }
}

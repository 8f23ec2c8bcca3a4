import PacerCore

/// The node's speaker as commanded (`sound`: mute, unmute, volume), kept in the database (one
/// JSON document in its `meta` table, written with the command, so a node muted for the night
/// stays muted through a power cut) and published retained on `<base>/sound`. What the speaker
/// plays is the sound player's (PacerSound); muting never changes what the topics say.
struct Speaker: Equatable, Sendable {
    /// The `meta` key of the stored document.
    static let metaKey = "speaker"

    var muted = false
    /// Percent of each cue's configured volume (`sound.volume`, per kind).
    var volume = 100

    init() {}

    /// Reads the stored document; a member it cannot read keeps its default.
    init(json: JSONValue?) {
        if case .bool(let muted)? = json?["muted"] { self.muted = muted }
        if let volume = json?["volume"]?.int, (0...100).contains(volume) { self.volume = volume }
    }

    /// The stored document: `{"muted":false,"volume":100}`.
    var document: [UInt8] {
        JSONValue.object(["muted": .bool(muted), "volume": .int(volume)]).jsonBytes
    }

    /// The retained `<base>/sound` and the `sound` command's reply members: whether the node has
    /// a speaker at all (`sound:` in its configuration), and its state.
    func members(available: Bool) -> [String: JSONValue] {
        ["available": .bool(available), "muted": .bool(muted), "volume": .int(volume)]
    }
}

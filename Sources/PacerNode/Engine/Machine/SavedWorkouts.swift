import PacerCore
import PacerProtocol

/// The workouts saved on the node (`save_workout`, `delete_workout`): a name and a spec
/// each, started like a preset (`{"action":"start","preset":"<id>"}`), kept in the database
/// (one JSON document in its `meta` table, written with the command) and published retained on
/// `<base>/workouts` for every page and phone.
struct SavedWorkouts: Equatable {
    /// The workouts' specs by id (each as the node read it: `TimerSpec.json`, canonical, without a
    /// preset of its own), as presets. The configuration's own presets come first: a saved workout
    /// cannot take their names.
    private(set) var presets: [String: JSONValue] = [:]
    private var names: [String: String] = [:]
    /// The retained `<base>/workouts` payload and the stored document,
    /// `{"workouts":[{"id","name","spec"}, …]}` by id: written once per change, for both.
    private(set) var document: [UInt8] = []

    /// The `meta` key of the stored document.
    static let metaKey = "workouts"

    var count: Int { presets.count }
    /// The saved ids, sorted.
    var ids: [String] { presets.keys.sorted() }

    func contains(_ id: String) -> Bool { presets[id] != nil }

    mutating func save(_ id: String, name: String, spec: JSONValue) {
        presets[id] = spec
        names[id] = name
        document = Self.write(presets, names)
    }

    /// Removes one; false when there is none of that id.
    mutating func remove(_ id: String) -> Bool {
        guard presets.removeValue(forKey: id) != nil else { return false }
        names[id] = nil
        document = Self.write(presets, names)
        return true
    }

    private static func write(_ presets: [String: JSONValue], _ names: [String: String]) -> [UInt8] {
        JSONValue.object(["workouts": .array(presets.keys.sorted().map { id in
            .object(["id": .string(id), "name": .string(names[id] ?? id), "spec": presets[id]!])
        })]).jsonBytes
    }

    /// Reads the stored document; an entry it cannot read is left out.
    init(json: JSONValue?) {
        for item in json?["workouts"]?.array ?? [] {
            guard let id = item["id"]?.string, let spec = item["spec"], case .object = spec else { continue }
            presets[id] = spec
            names[id] = item["name"]?.string ?? id
        }
        document = Self.write(presets, names)
    }
}

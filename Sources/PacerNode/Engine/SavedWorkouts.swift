import PacerCore
import PacerProtocol

/// The workouts saved on the node (`save_workout`, `delete_workout`): a name and a spec
/// each, started like a preset (`{"action":"start","preset":"<id>"}`), kept in the database
/// (one JSON document in its `meta` table, written with the command) and published retained on
/// `<base>/workouts` for every page and phone.
struct SavedWorkouts: Equatable {
    struct Workout: Equatable {
        var name: String
        /// The spec as the node read it (`TimerSpec.json`, canonical), without a preset of its own.
        var spec: JSONValue
    }

    private(set) var byID: [String: Workout] = [:]

    /// The `meta` key of the stored document.
    static let metaKey = "workouts"

    var count: Int { byID.count }

    /// The specs by id, as presets (the configuration's own presets come first: a saved
    /// workout cannot take their names).
    var presets: [String: JSONValue] { byID.mapValues(\.spec) }

    mutating func save(_ id: String, name: String, spec: JSONValue) { byID[id] = Workout(name: name, spec: spec) }

    /// Removes one; false when there is none of that id.
    mutating func remove(_ id: String) -> Bool { byID.removeValue(forKey: id) != nil }

    /// The retained `<base>/workouts` payload and the stored document:
    /// `{"workouts":[{"id","name","spec"}, …]}`, by id.
    var json: JSONValue {
        .object(["workouts": .array(byID.keys.sorted().map { id in
            .object(["id": .string(id), "name": .string(byID[id]!.name), "spec": byID[id]!.spec])
        })])
    }

    /// Reads the stored document; an entry it cannot read is left out.
    init(json: JSONValue?) {
        for item in json?["workouts"]?.array ?? [] {
            guard let id = item["id"]?.string, let spec = item["spec"], case .object = spec else { continue }
            byID[id] = Workout(name: item["name"]?.string ?? id, spec: spec)
        }
    }
}

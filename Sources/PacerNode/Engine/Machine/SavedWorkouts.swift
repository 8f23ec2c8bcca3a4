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

/// The saved workouts as the machine keeps them: the `save_workout` and `delete_workout`
/// commands' rules, the change an input made (written in `meta` before it counts) and the
/// retained `<base>/workouts`.
struct WorkoutLibrary {
    private(set) var saved = Staged(SavedWorkouts(json: nil))
    /// The configuration's presets: a saved workout cannot take their names, and they come
    /// first where a spec names a preset.
    let configured: [String: JSONValue]
    let topic: String

    init(configured: [String: JSONValue], topic: String) {
        self.configured = configured
        self.topic = topic
    }

    /// The presets a spec may name: the configuration's, then the saved workouts.
    var presets: [String: JSONValue] {
        saved.value.count == 0 ? configured : configured.merging(saved.value.presets) { configured, _ in configured }
    }

    /// `save_workout`: `parse` reads the spec as a timer's would be (the machine's `parseSpec`).
    mutating func save(_ id: String, name: String?, specJSON: JSONValue,
                       parse: (JSONValue) -> Result<TimerSpec, ReplyError>) -> Result<CommandResult, ReplyError> {
        if Presets.builtIn[id] != nil || configured[id] != nil {
            return .failure(.init(.invalidArgument, "'\(id)' is a preset \(Presets.builtIn[id] != nil ? "built into Pacer" : "of the node's configuration"); save the workout under another id"))
        }
        if !saved.value.contains(id) && saved.value.count >= ProtocolLimits.maxWorkouts {
            return .failure(.init(.invalidArgument, "the node keeps at most \(ProtocolLimits.maxWorkouts) saved workouts; delete one first"))
        }
        let spec: TimerSpec
        switch parse(specJSON) {
        case .success(let parsed): spec = parsed
        case .failure(let error): return .failure(error)
        }
        // Kept as the node read it, resolved: a workout made from a preset holds that preset's
        // values (a preset cannot name another one).
        guard case .object(var canonical) = spec.json else { return .failure(.init(.invalidSpec, "spec is not an object")) }
        canonical["preset"] = nil
        saved.change { $0.save(id, name: name ?? id, spec: .object(canonical)) }
        var members: [String: JSONValue] = [:]
        members[.workout] = .string(id)
        members[.name] = .string(name ?? id)
        members[.saved] = .bool(true)
        members[.spec] = .object(canonical)
        return .success(CommandResult(members: members))
    }

    /// `delete_workout`.
    mutating func delete(_ id: String) -> Result<CommandResult, ReplyError> {
        guard saved.value.contains(id) else {
            let known = saved.value.ids
            return .failure(.init(.unknownWorkout, "there is no saved workout '\(id)'" + (known.isEmpty ? "" : "; saved: \(known.prefix(20).joined(separator: ", "))")))
        }
        _ = saved.change { $0.remove(id) }
        var members: [String: JSONValue] = [:]
        members[.workout] = .string(id)
        members[.deleted] = .bool(true)
        return .success(CommandResult(members: members))
    }

    /// The stored document at start (the `meta` row).
    mutating func load(_ document: String?) {
        guard let document else { return }
        saved.load(SavedWorkouts(json: JSONCoding.decode(Array(document.utf8))))
    }

    /// The write of an input that changed them: the document for `meta`.
    var changedDocument: String? {
        saved.isChanged ? String(decoding: saved.value.document, as: UTF8.self) : nil
    }

    /// The write is done: the change stands.
    mutating func settle() { saved.settle() }

    /// The write failed: back to the workouts before the input.
    mutating func undo() { saved.undo() }

    /// The retained `<base>/workouts`.
    func publish(into out: inout EffectSink) {
        out.publish(to: topic, saved.value.document, retain: true)
    }
}

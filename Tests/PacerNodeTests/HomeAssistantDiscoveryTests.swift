import Foundation
import PacerCore
@testable import PacerNode
import PacerTestSupport
import Testing
import PacerProtocol

/// What Home Assistant requires of a device-based discovery payload, written down from its
/// documentation (home-assistant.io/integrations/mqtt, "Device discovery payload", and each
/// platform's page) and its schema (`DEVICE_DISCOVERY_SCHEMA` in components/mqtt/schemas.py):
enum HomeAssistantSchema {
    /// The device payload: `device` (`dev`), `origin` (`o`), `components` (`cmps`).
    static let deviceRequired = ["dev", "o", "cmps"]
    /// `device` needs at least one of `identifiers` (`ids`) or `connections` (`cns`).
    static let deviceIdentifying = ["ids", "cns"]
    /// `origin` needs `name`.
    static let originRequired = ["name"]
    /// Every component needs `platform` (`p`), and an entity platform needs `unique_id`.
    static let componentRequired = ["platform", "unique_id"]
    /// Required per platform (sensor.mqtt, button.mqtt, event.mqtt).
    static let platformRequired: [String: [String]] = [
        "sensor": ["state_topic"],
        "button": ["command_topic"],
        "event": ["state_topic", "event_types"],
        "select": ["command_topic", "options"],
    ]
    /// The keys each platform takes that the node uses (a typo would be silently ignored by
    /// Home Assistant, so the test refuses any other key).
    static let common: Set<String> = ["platform", "name", "unique_id", "icon", "enabled_by_default", "availability_topic", "qos"]
    static let platformKeys: [String: Set<String>] = [
        "sensor": common.union(["state_topic", "device_class", "unit_of_measurement", "state_class", "value_template", "options",
                                 "json_attributes_topic", "json_attributes_template"]),
        "button": common.union(["command_topic", "payload_press"]),
        "select": common.union(["command_topic", "command_template", "options", "state_topic", "value_template"]),
        "event": common.union(["state_topic", "event_types", "value_template", "device_class"]),
    ]
    /// `device_class: duration` takes one of these units (sensor device classes).
    static let durationUnits: Set<String> = ["d", "h", "min", "s", "ms"]
    /// An object id in a discovery topic: `[a-zA-Z0-9_-]+`.
    static func isValidObjectID(_ text: String) -> Bool {
        !text.isEmpty && text.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_" || $0 == "-") }
    }
}

@Suite("Home Assistant discovery payloads")
struct HomeAssistantDiscoveryTests {
    let discovery = HomeAssistantDiscovery(
        settings: HomeAssistantSettings(), nodeID: "gym-1", topics: Topics(base: "pacer/gym-1"), version: "9.9.9", hasHeartRate: true)
    let kitchen = HomeAssistantDiscovery.Subject(id: "kitchen_2", name: "Kitchen timer", kind: .countdown)

    var payload: JSONValue { discovery.config(for: kitchen) }
    var components: [String: JSONValue] { payload["cmps"]?.object ?? [:] }

    @Test("the topic is <prefix>/device/<node>_<timer>/config with an object id Home Assistant accepts")
    func topic() {
        #expect(discovery.configTopic(timer: "kitchen_2") == "homeassistant/device/gym-1_kitchen_2/config")
        #expect(HomeAssistantSchema.isValidObjectID(discovery.objectID(timer: "kitchen_2")))
        #expect(discovery.statusTopic == "homeassistant/status")
        let custom = HomeAssistantDiscovery(settings: .init(prefix: "ha/site2"), nodeID: "n", topics: Topics(base: "x/n"), version: "1", hasHeartRate: false)
        #expect(custom.configTopic(timer: "t") == "ha/site2/device/n_t/config")
        #expect(custom.statusTopic == "ha/site2/status")
    }

    @Test("the device payload has every key Home Assistant requires")
    func deviceKeys() throws {
        for key in HomeAssistantSchema.deviceRequired { #expect(payload[key] != nil, "missing \(key)") }
        let device = try #require(payload["dev"]?.object)
        #expect(HomeAssistantSchema.deviceIdentifying.contains { device[$0]?.array?.isEmpty == false })
        #expect(device["ids"] == ["pacer_gym-1_kitchen_2"])
        #expect(device["name"] == "Kitchen timer")
        #expect(device["mdl"] == "countdown timer")
        #expect(device["sw"] == "9.9.9")
        for key in HomeAssistantSchema.originRequired { #expect(payload["o"]?[key]?.string?.isEmpty == false, "origin needs \(key)") }
        #expect(payload["availability_topic"] == "pacer/gym-1/status")
        #expect(payload["qos"] == 1)
    }

    @Test("every component has the keys its platform requires, and no key its platform does not take")
    func componentKeys() throws {
        #expect(Set(components.keys) == ["remaining", "phase", "round", "ends_at", "exercise", "next_exercise", "next_class", "heart_rate", "workout",
                                          "start", "pause", "resume", "skip", "cancel", "ack", "skip_next", "event"])
        for (key, component) in components {
            let platform = try #require(component["platform"]?.string, "\(key) has no platform")
            for required in HomeAssistantSchema.componentRequired + (HomeAssistantSchema.platformRequired[platform] ?? ["?"]) {
                #expect(component[required] != nil, "\(key) (\(platform)) lacks \(required)")
            }
            let allowed = try #require(HomeAssistantSchema.platformKeys[platform], "unexpected platform \(platform)")
            let extra = Set(component.object?.keys.map { $0 } ?? []).subtracting(allowed)
            #expect(extra.isEmpty, "\(key) has keys \(platform) does not take: \(extra.sorted())")
        }
    }

    @Test("the Workout select offers the presets and the saved workouts, and starts the timer with the one chosen")
    func workoutSelect() throws {
        var discovery = discovery
        let select = try #require(discovery.config(for: kitchen)["cmps"]?["workout"])
        #expect(select["options"] == .array(Presets.builtInNames.sorted().map { .string($0) }))
        #expect(select["command_topic"] == "pacer/gym-1/timers/kitchen_2/cmd")
        #expect(select["command_template"] == #"{"action":"start","restart":true,"preset":{{ value | tojson }}}"#)
        let changed = discovery.setWorkouts(Presets.builtInNames + ["hiit", "legs"])
        #expect(changed)
        let again = discovery.setWorkouts(["legs", "hiit"] + Presets.builtInNames)
        #expect(!again, "the same options: no republish")
        let after = try #require(discovery.config(for: kitchen)["cmps"]?["workout"]?["options"]?.array)
        #expect(after.compactMap(\.string) == (Presets.builtInNames + ["hiit", "legs"]).sorted())
        // The per-kind templates follow the new options.
        #expect(discovery.configBytes(for: kitchen) == JSONCoding.encode(discovery.config(for: kitchen)))
    }

    @Test("unique ids are distinct, derived only from node, timer and component (stable across restarts)")
    func uniqueIDs() {
        let ids = components.values.compactMap { $0["unique_id"]?.string }
        #expect(Set(ids).count == components.count)
        #expect(components["remaining"]?["unique_id"] == "pacer_gym-1_kitchen_2_remaining")
        // A rename or another kind changes the payload but not one unique id.
        let renamed = discovery.config(for: .init(id: "kitchen_2", name: "Oven", kind: .interval))
        #expect(renamed["dev"]?["name"] == "Oven")
        #expect(renamed["cmps"]?.object?.mapValues { $0["unique_id"] } == components.mapValues { $0["unique_id"] })
        // Another node with the same timer id gets other ids.
        let other = HomeAssistantDiscovery(settings: .init(), nodeID: "gym-2", topics: Topics(base: "pacer/gym-2"), version: "1", hasHeartRate: true)
        let otherIDs = Set(other.config(for: kitchen)["cmps"]?.object?.values.compactMap { $0["unique_id"]?.string } ?? [])
        #expect(otherIDs.isDisjoint(with: ids))
    }

    @Test("the sensors read the node's topics with the right device classes")
    func sensors() throws {
        let remaining = try #require(components["remaining"])
        #expect(remaining["state_topic"] == "pacer/gym-1/timers/kitchen_2/remaining")
        #expect(remaining["device_class"] == "duration")
        #expect(HomeAssistantSchema.durationUnits.contains(remaining["unit_of_measurement"]?.string ?? ""))

        let phase = try #require(components["phase"])
        #expect(phase["state_topic"] == "pacer/gym-1/timers/kitchen_2/phase")
        #expect(phase["device_class"] == "enum")
        // An enum sensor must list every value it can show, and take no unit or state class.
        #expect(Set(phase["options"]?.array?.compactMap(\.string) ?? []) == Set(Phase.allCases.map(\.rawValue)))
        #expect(phase["unit_of_measurement"] == nil && phase["state_class"] == nil)

        #expect(components["round"]?["state_topic"] == "pacer/gym-1/timers/kitchen_2/round")

        let endsAt = try #require(components["ends_at"])
        #expect(endsAt["state_topic"] == "pacer/gym-1/timers/kitchen_2/state")
        #expect(endsAt["device_class"] == "timestamp")
        #expect(endsAt["value_template"]?.string?.contains("value_json.ends_at") == true)

        let hr = try #require(components["heart_rate"])
        #expect(hr["state_topic"] == "pacer/gym-1/timers/kitchen_2/hr")
        #expect(hr["unit_of_measurement"] == "bpm")
        #expect(hr["enabled_by_default"] == true)
        let noHR = HomeAssistantDiscovery(settings: .init(), nodeID: "n", topics: Topics(base: "p/n"), version: "1", hasHeartRate: false)
        #expect(noHR.config(for: kitchen)["cmps"]?["heart_rate"]?["enabled_by_default"] == false)
    }

    @Test("the Next class sensor reads the retained next: name and local time, or none, with starts_at as an attribute")
    func nextClass() throws {
        let sensor = try #require(components["next_class"])
        let expected = #"{"icon":"mdi:calendar-clock","#
            + #""json_attributes_template":"{{ {'starts_at': value_json.starts_at, 'schedule': value_json.schedule, 'local_date': value_json.local_date, 'time_zone': value_json.time_zone} | tojson if value and value_json is defined and value_json.starts_at is defined else '{}' }}","#
            + #""json_attributes_topic":"pacer/gym-1/timers/kitchen_2/next","name":"Next class","platform":"sensor","#
            + #""state_topic":"pacer/gym-1/timers/kitchen_2/next","unique_id":"pacer_gym-1_kitchen_2_next_class","#
            + #""value_template":"{{ value_json.name ~ ' at ' ~ value_json.local_time if value and value_json is defined and value_json.name is defined else 'none' }}"}"#
        #expect(String(decoding: JSONCoding.encode(sensor), as: UTF8.self) == expected)
        // The topic is the node's own (PacerProtocol's), on every kind of timer.
        #expect(sensor["state_topic"] == .string(Topics(base: "pacer/gym-1").timer("kitchen_2").next))
        for kind in TimerKind.allCases {
            #expect(discovery.config(for: .init(id: "t", name: "T", kind: kind))["cmps"]?["next_class"]?["platform"] == "sensor")
        }
        // The Skip next class button: skip_next on the timer's own topic, read by the node's parser.
        let skip = try #require(components["skip_next"])
        #expect(skip["platform"] == "button" && skip["command_topic"] == .string(Topics(base: "pacer/gym-1").timer("kitchen_2").command))
        let press = try #require(skip["payload_press"]?.string)
        #expect(try CommandParser().parse(Array(press.utf8), timerID: "kitchen_2").get().request == .skipNext(schedule: nil, timer: "kitchen_2"))
    }

    @Test("each button publishes a plain word that the node's parser reads as that button's action")
    func buttons() throws {
        let parser = CommandParser()
        let expected: [String: TimerOperation] = [
            "start": .start(spec: nil, startAt: nil, restart: false), "pause": .pause, "resume": .resume,
            "skip": .skip, "cancel": .cancel, "ack": .ack,
        ]
        for (key, operation) in expected {
            let button = try #require(components[key])
            #expect(button["platform"] == "button")
            let topic = try #require(button["command_topic"]?.string)
            #expect(topic == "pacer/gym-1/timers/kitchen_2/cmd")
            let word = try #require(button["payload_press"]?.string)
            let timer = Topics(base: "pacer/gym-1").timerID(ofCommandTopic: topic)
            #expect(timer == "kitchen_2")
            let parsed = try parser.parse(Array(word.utf8), timerID: timer).get()
            #expect(parsed.request == .timer(id: "kitchen_2", operation: operation, spec: nil, name: nil), "\(key): \(parsed)")
        }
    }

    @Test("the event entity lists the node's event types and turns `type` into `event_type`")
    func event() throws {
        let event = try #require(components["event"])
        #expect(event["state_topic"] == "pacer/gym-1/timers/kitchen_2/event")
        let list = event["event_types"]?.array?.compactMap(\.string)
        let types = try #require(list)
        for needed in ["started", "phase", "paused", "resumed", "expired", "finished", "cancelled", "acknowledged"] {
            #expect(types.contains(needed), "event_types lacks \(needed)")
        }
        // The cues come every second; they are left out (and rendered as nothing, which HA ignores).
        #expect(!types.contains("countdown") && !types.contains("halfway") && !types.contains("alert"))
        #expect(Set(types).isSubset(of: Set(EventType.allCases.map(\.rawValue))))
        let template = try #require(event["value_template"]?.string)
        #expect(template.contains("event_type=value_json['type']"))
        for type in types { #expect(template.contains("'\(type)'")) }
    }

    @Test("the publisher republishes only what changed, everything when forced, and removes with an empty config")
    func publisher() {
        var publisher = HomeAssistantPublisher(discovery: discovery)
        let a = HomeAssistantDiscovery.Subject(id: "a", name: "A", kind: .countdown)
        let b = HomeAssistantDiscovery.Subject(id: "b", name: "B", kind: .rest)
        #expect(publisher.configs(for: [a, b], force: false).map(\.topic) == [discovery.configTopic(timer: "a"), discovery.configTopic(timer: "b")])
        #expect(publisher.configs(for: [a, b], force: false).isEmpty)
        var renamed = a
        renamed.name = "A2"
        let again = publisher.configs(for: [renamed, b], force: false)
        #expect(again.count == 1)
        #expect(decodeJSON(again.first?.payload ?? [])?["dev"]?["name"] == "A2")
        #expect(publisher.configs(for: [renamed, b], force: true).count == 2)
        let removal = publisher.removal(of: "b")
        #expect(removal == .init(topic: discovery.configTopic(timer: "b"), payload: []))
        // A timer created again under the same id after its deletion is published again.
        #expect(publisher.configs(for: [b], force: false).count == 1)
    }

    @Test("the template-filled payload is byte for byte the JSON writer's, for every kind and any name")
    func templateMatchesTheWriter() {
        let names = ["Kitchen timer", "", "Quote \" and backslash \\", "Tab\tnew\nline \u{1}\u{2}", "Ünïcødé ⏱", "\\u0001"]
        let others = [discovery, HomeAssistantDiscovery(settings: .init(prefix: "ha/site2"), nodeID: "n", topics: Topics(base: "x/n"), version: "1", hasHeartRate: false)]
        for d in others {
            for kind in TimerKind.allCases {
                for (index, name) in names.enumerated() {
                    let subject = HomeAssistantDiscovery.Subject(id: "t\(index)_x-\(kind.rawValue)", name: name, kind: kind)
                    #expect(d.configBytes(for: subject) == JSONCoding.encode(d.config(for: subject)), "\(kind) \(name)")
                }
            }
        }
        // The template is made at all (not the slow path every time).
        let parts = ConfigTemplate(discovery, kind: .countdown)?.parts ?? []
        #expect(parts.filter { $0 == .name }.count == 1)
        #expect(parts.filter { $0 == .id }.count == 37)  // 17 unique ids, 19 topics, the device id
    }
}

@Suite("Home Assistant configuration")
struct HomeAssistantConfigurationTests {
    func load(_ yaml: String) throws(ConfigurationError) -> NodeConfiguration {
        let directory = try! makeTemporaryDirectory("pacer-ha-config")
        let file = directory.appendingPathComponent("pacer.yaml")
        try! yaml.write(to: file, atomically: false, encoding: .utf8)
        return try NodeConfiguration.load(flags: .init(configFile: file.path), environment: [:], hostname: "node")
    }

    @Test("on by default with the prefix homeassistant; off and another prefix by configuration")
    func settings() throws {
        #expect(try load("").homeAssistant == HomeAssistantSettings(enabled: true, prefix: "homeassistant"))
        #expect(try load("home_assistant: {enabled: false}\n").homeAssistant.enabled == false)
        #expect(try load("home_assistant: false\n").homeAssistant.enabled == false)
        #expect(try load("home_assistant: {prefix: ha/site2}\n").homeAssistant == HomeAssistantSettings(enabled: true, prefix: "ha/site2"))
    }

    @Test("a bad prefix or key fails with the key and the reason", arguments: [
        ("home_assistant: {prefix: 'ha/#'}\n", "home_assistant.prefix", "'+' or '#'"),
        ("home_assistant: {prefix: ''}\n", "home_assistant.prefix", "cannot be empty"),
        ("home_assistant: {prefix: /ha}\n", "home_assistant.prefix", "start or end with '/'"),
        ("home_assistant: {enabled: maybe}\n", "home_assistant.enabled", "true or false"),
        ("home_assistant: {discovery: x}\n", "home_assistant.discovery", "unknown key"),
    ])
    func badValues(yaml: String, key: String, reason: String) {
        do {
            _ = try load(yaml)
            Issue.record("\(yaml) was accepted")
        } catch {
            #expect(error.problems.contains { $0.key == key && $0.reason.contains(reason) }, "\(error)")
        }
    }
}

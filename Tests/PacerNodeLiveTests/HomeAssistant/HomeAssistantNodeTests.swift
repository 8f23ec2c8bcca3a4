import Foundation
import PacerCore
import PacerTestSupport
import Testing

/// Home Assistant discovery on a real `pacer run` and a real broker: the buttons of the
/// published config drive the timer, Home Assistant's birth message gets the configs again,
/// and a deletion leaves no retained config behind. Each node uses its own discovery prefix,
/// so tests running side by side never see each other's configs.
@Suite("Home Assistant on a real node")
struct HomeAssistantNodeTests {
    @Test("a button's payload published to its command topic drives the timer; deletion clears the config")
    func buttonsDriveTheTimer() async throws {
        let prefix = uniqueName("ha-")
        try await withNode(.init(config: "home_assistant: {prefix: \(prefix)}\n", probeFilters: ["\(prefix)/#"])) { node in
            let configTopic = "\(prefix)/device/\(node.nodeID)_kitchen/config"
            let created = try await node.send(["action": "create", "timer": "kitchen", "name": "Kitchen",
                                               "spec": ["kind": "countdown", "duration": "10m"]])
            try #require(created.ok, "\(created)")
            let config = try #require(try await node.probe.waitFor(configTopic) { !$0.message.payload.isEmpty }.json)
            #expect(config["dev"]?["name"] == "Kitchen")
            #expect(config["availability_topic"] == .string(node.topic("status")))

            /// Presses a button as Home Assistant does: its `payload_press` on its `command_topic`
            /// (QoS 1, no response topic), then waits for the state the press must lead to.
            func press(_ button: String, expect status: String) async throws {
                let component = try #require(config["cmps"]?[button], "no \(button) button in \(config)")
                let topic = try #require(component["command_topic"]?.string)
                let payload = try #require(component["payload_press"]?.string)
                let start = node.probe.count
                try await node.probe.publish(topic, payload)
                try await node.waitForState("kitchen", from: start) { $0["status"]?.string == status }
            }
            try await press("start", expect: "running")
            try await press("pause", expect: "paused")
            try await press("resume", expect: "running")
            try await press("cancel", expect: "cancelled")

            // Home Assistant restarted: its birth message gets the config again.
            let beforeBirth = node.probe.count
            try await node.probe.publish("\(prefix)/status", "online")
            try await node.probe.waitFor(configTopic, from: beforeBirth) { $0.json?["dev"]?["name"] == "Kitchen" }

            let deleted = try await node.send(["action": "delete", "timer": "kitchen"])
            try #require(deleted.ok, "\(deleted)")
            let retained = try await retainedMessages(port: node.brokerPort, ["\(prefix)/#"])
            #expect(retained[configTopic] == nil, "the deleted timer's config is still retained: \(retained.keys.sorted())")
        }
    }

    @Test("disabled: the node publishes no config")
    func disabled() async throws {
        let prefix = uniqueName("ha-")
        try await withNode(.init(config: "home_assistant: {enabled: false, prefix: \(prefix)}\n", probeFilters: ["\(prefix)/#"])) { node in
            let created = try await node.send(["action": "create", "timer": "kitchen", "spec": ["kind": "countdown", "duration": "10m"]])
            try #require(created.ok, "\(created)")
            try await node.probe.publish("\(prefix)/status", "online")
            try await node.barrier()
            let retained = try await retainedMessages(port: node.brokerPort, ["\(prefix)/#"])
            #expect(retained.isEmpty, "\(retained.keys.sorted())")
            #expect(node.probe.all.allSatisfy { !$0.topic.hasPrefix("\(prefix)/device/") })
        }
    }
}

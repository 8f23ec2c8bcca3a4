import Foundation
import Mosquitto
import PacerCore
@testable import PacerNode
import PacerTestSupport
import Testing

/// Home Assistant discovery through the engine, in-process: when configs are published,
/// republished and removed (the payloads themselves: HomeAssistantDiscoveryTests).
@Suite("Engine: Home Assistant discovery")
struct EngineHomeAssistantTests {
    static let countdown: JSONValue = ["kind": "countdown", "duration": "60s"]

    func config(_ h: EngineHarness, _ timer: String, prefix: String = "homeassistant") -> String {
        "\(prefix)/device/t_\(timer)/config"
    }

    /// Every publish under `prefix/` from journal index `start` on.
    func discoveryPublishes(_ h: EngineHarness, from start: Int = 0, prefix: String = "homeassistant") -> [EngineStep] {
        h.journal.since(start).filter { $0.topic?.hasPrefix(prefix + "/") == true }
    }

    func isRetained(_ step: EngineStep) -> Bool {
        if case .publish(_, _, let retain) = step { return retain }
        return false
    }

    func isEmpty(_ step: EngineStep) -> Bool {
        if case .publish(_, let payload, _) = step { return payload.isEmpty }
        return false
    }

    @Test("on connect every timer's config is published, retained; a new timer's when it is created")
    func createdAndConnected() async throws {
        let h = try await EngineHarness.make(config: """
            timers:
              - {id: laundry, name: Laundry, spec: {kind: countdown, duration: 45m}}
            """)
        await h.connect()
        let onConnect = discoveryPublishes(h)
        #expect(onConnect.map(\.topic) == [config(h, "laundry")])
        #expect(onConnect.allSatisfy(isRetained))
        #expect(onConnect.first?.json?["dev"]?["name"] == "Laundry")

        let start = h.journal.count
        let reply = try await h.send(["action": "create", "timer": "kitchen", "name": "Kitchen", "spec": Self.countdown])
        #expect(reply["ok"] == true)
        let created = discoveryPublishes(h, from: start)
        #expect(created.map(\.topic) == [config(h, "kitchen")])
        #expect(created.allSatisfy(isRetained))
        #expect(created.first?.json?["cmps"]?["pause"]?["command_topic"] == .string(h.topic("kitchen", "cmd")))
        // Published before the reply: a client that waits for the reply finds the device.
        let steps = h.journal.since(start)
        let configAt = try #require(steps.firstIndex { $0.topic == config(h, "kitchen") })
        let replyAt = try #require(steps.firstIndex { $0.topic == EngineHarness.replyTopic })
        #expect(configAt < replyAt)
    }

    @Test("commands, ticks and refused commands do not republish; a rename or a new kind does")
    func renamed() async throws {
        let h = try await EngineHarness.make()
        await h.connect()
        try await h.send(["action": "create", "timer": "k", "name": "Kitchen", "spec": Self.countdown])

        var start = h.journal.count
        try await h.send(["action": "start"], timer: "k")
        await h.pass(5_000)
        try await h.send(["action": "pause"], timer: "k")
        try await h.send(["action": "pause"], timer: "k")  // refused: already paused
        #expect(discoveryPublishes(h, from: start).isEmpty, "\(discoveryPublishes(h, from: start))")

        start = h.journal.count
        let restarted = try await h.send(["action": "start", "name": "Oven", "restart": true], timer: "k")
        #expect(restarted["ok"] == true, "\(restarted)")
        let renamed = discoveryPublishes(h, from: start)
        #expect(renamed.map(\.topic) == [config(h, "k")])
        #expect(renamed.first?.json?["dev"]?["name"] == "Oven")

        start = h.journal.count
        let respecced = try await h.send(["action": "start", "restart": true, "spec": ["kind": "interval", "work": "20s", "rest": "10s", "rounds": 2]], timer: "k")
        #expect(respecced["ok"] == true, "\(respecced)")
        let rekinded = discoveryPublishes(h, from: start)
        #expect(rekinded.first?.json?["dev"]?["mdl"] == "interval timer")
        #expect(rekinded.first?.json?["dev"]?["name"] == "Oven")
    }

    @Test("a deleted timer's config is cleared with an empty retained payload")
    func deleted() async throws {
        let h = try await EngineHarness.make()
        await h.connect()
        try await h.send(["action": "create", "timer": "k", "spec": Self.countdown])
        let start = h.journal.count
        let reply = try await h.send(["action": "delete", "timer": "k"])
        #expect(reply["ok"] == true)
        let removed = discoveryPublishes(h, from: start)
        #expect(removed.map(\.topic) == [config(h, "k")])
        #expect(removed.allSatisfy { isRetained($0) && isEmpty($0) })
        // Before the timer's topics are cleared: Home Assistant would read the empty values first.
        let steps = h.journal.since(start)
        let removalAt = try #require(steps.firstIndex { $0.topic == config(h, "k") })
        let clearedAt = try #require(steps.firstIndex { $0.topic == h.topic("k", "state") && isEmpty($0) })
        #expect(removalAt < clearedAt)
        // Created again under the same id: published again.
        let again = h.journal.count
        try await h.send(["action": "create", "timer": "k", "spec": Self.countdown])
        #expect(discoveryPublishes(h, from: again).map(\.topic) == [config(h, "k")])
    }

    @Test("Home Assistant's online republishes every config; a retained online or offline does not")
    func birth() async throws {
        let h = try await EngineHarness.make()
        await h.connect()
        for id in ["a", "b"] { try await h.send(["action": "create", "timer": .string(id), "spec": Self.countdown]) }

        var start = h.journal.count
        await h.engine.handle(.message(MQTTMessage(topic: "homeassistant/status", payload: Array("online".utf8), qos: .atLeastOnce)))
        #expect(discoveryPublishes(h, from: start).map(\.topic) == [config(h, "a"), config(h, "b")])
        #expect(discoveryPublishes(h, from: start).allSatisfy { isRetained($0) && !isEmpty($0) })
        // Nothing else is published for it (it is not a heart-rate reading or a command).
        #expect(h.journal.since(start).allSatisfy { $0.topic?.hasPrefix("homeassistant/") == true })

        start = h.journal.count
        await h.engine.handle(.message(MQTTMessage(topic: "homeassistant/status", payload: Array("offline".utf8), qos: .atLeastOnce)))
        await h.engine.handle(.message(MQTTMessage(topic: "homeassistant/status", payload: Array("online".utf8), qos: .atLeastOnce, retain: true)))
        #expect(h.journal.since(start).isEmpty, "\(h.journal.since(start))")
    }

    @Test("while disconnected no config is published; the next connect publishes all")
    func disconnected() async throws {
        let h = try await EngineHarness.make()
        await h.connect()
        try await h.send(["action": "create", "timer": "a", "spec": Self.countdown])
        await h.disconnect()
        let start = h.journal.count
        try await h.send(["action": "start", "name": "Renamed"], timer: "a")
        #expect(discoveryPublishes(h, from: start).isEmpty)
        await h.connect()
        let published = discoveryPublishes(h, from: start)
        #expect(published.map(\.topic) == [config(h, "a")])
        #expect(published.first?.json?["dev"]?["name"] == "Renamed")
    }

    @Test("a connect publishes the configs after the states, in chunks, one per pause; a drop ends the chunks, the next connect starts over")
    func chunked() async throws {
        let count = DiscoveryPart.chunk + 2
        let h = try await EngineHarness.make(config: "timers:\n" + (0..<count).map { "  - {id: t\($0), name: T\($0), spec: {kind: countdown, duration: 1h}}\n" }.joined())
        var start = h.journal.count
        await h.connect()
        var steps = h.journal.since(start)
        let firstConfig = try #require(steps.firstIndex { $0.topic?.hasPrefix("homeassistant/") == true })
        let lastState = try #require(steps.lastIndex { $0.topic?.hasSuffix("/state") == true })
        #expect(lastState < firstConfig, "the states go first")
        #expect(discoveryPublishes(h, from: start).count == DiscoveryPart.chunk)
        #expect(await h.engine.nextDeadline() != nil)
        await h.pass(DiscoveryPart.pauseMs)
        steps = discoveryPublishes(h, from: start)
        #expect(steps.count == count)
        #expect(Set(steps.compactMap(\.topic)) == Set((0..<count).map { config(h, "t\($0)") }))
        await h.pass(1_000)
        #expect(discoveryPublishes(h, from: start).count == count, "nothing more")

        // Home Assistant's online: the same again, in chunks; a drop in between ends them.
        start = h.journal.count
        await h.engine.handle(.message(MQTTMessage(topic: "homeassistant/status", payload: Array("online".utf8), qos: .atLeastOnce)))
        #expect(discoveryPublishes(h, from: start).count == DiscoveryPart.chunk)
        await h.disconnect()
        await h.pass(1_000)
        #expect(discoveryPublishes(h, from: start).count == DiscoveryPart.chunk, "none while disconnected")
        start = h.journal.count
        await h.connect()
        await h.pass(DiscoveryPart.pauseMs)
        #expect(discoveryPublishes(h, from: start).count == count)
    }

    @Test("another prefix: configs and Home Assistant's status live under it")
    func prefix() async throws {
        let h = try await EngineHarness.make(config: "home_assistant: {prefix: ha/site2}\n")
        await h.connect()
        try await h.send(["action": "create", "timer": "k", "spec": Self.countdown])
        #expect(discoveryPublishes(h, prefix: "ha/site2").map(\.topic) == [config(h, "k", prefix: "ha/site2")])
        #expect(discoveryPublishes(h, prefix: "homeassistant").isEmpty)
        let start = h.journal.count
        await h.engine.handle(.message(MQTTMessage(topic: "ha/site2/status", payload: Array("online".utf8), qos: .atLeastOnce)))
        #expect(discoveryPublishes(h, from: start, prefix: "ha/site2").count == 1)
    }

    @Test("disabled: nothing is published for Home Assistant, whatever happens")
    func disabled() async throws {
        let h = try await EngineHarness.make(config: "home_assistant: {enabled: false}\n")
        await h.connect()
        try await h.send(["action": "create", "timer": "k", "name": "K", "spec": Self.countdown])
        try await h.send(["action": "start", "name": "K2"], timer: "k")
        await h.engine.handle(.message(MQTTMessage(topic: "homeassistant/status", payload: Array("online".utf8), qos: .atLeastOnce)))
        try await h.send(["action": "delete", "timer": "k"])
        #expect(discoveryPublishes(h).isEmpty, "\(discoveryPublishes(h))")
        #expect(!h.journal.all.contains { $0.topic?.contains("/device/") == true })
    }
}

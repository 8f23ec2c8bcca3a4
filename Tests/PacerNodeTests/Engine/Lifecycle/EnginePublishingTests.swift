import Foundation
import PacerCore
@testable import PacerNode
import PacerStore
import PacerTestSupport
import Testing

/// What the engine publishes per second and per change: `state` only on a change,
/// `remaining`/`display` on every displayed second (as configured), `info` at most once a second.
@Suite("Engine publishing rates")
struct EnginePublishingTests {
    static let clock = """
        timers:
          - {id: a, name: A, spec: {kind: countdown, duration: 1h}}
        """

    @Test("a connect publishes every timer's state before any plain topic, and every retained topic of each")
    func connectPublishesStatesFirst() async throws {
        let h = try await EngineHarness.make(config: """
            timers:
              - {id: a, name: A, spec: {kind: countdown, duration: 1h}}
              - {id: b, name: B, spec: {kind: countdown, duration: 2h}}
              - {id: c, name: C, spec: {kind: countdown, duration: 3h}}
            """)
        await h.connect()
        try await h.send(["action": "start"], timer: "b")
        for case .tracked(_, _, let token, _) in h.journal.all { await h.deliver(token) }
        await h.disconnect()
        let start = h.journal.count
        await h.connect()  // a reconnect: everything again, no event pending
        let topics = h.journal.since(start).compactMap(\.topic).filter { $0.contains("/timers/") }
        let leaves = ["state", "remaining", "display", "phase", "round", "rounds", "hr"]
        for id in ["a", "b", "c"] {
            for leaf in leaves { #expect(topics.filter { $0 == h.topic(id, leaf) }.count == 1, "\(id)/\(leaf): \(topics)") }
        }
        let lastState = try #require(topics.lastIndex { $0.hasSuffix("/state") })
        let firstPlain = try #require(topics.firstIndex { !$0.hasSuffix("/state") })
        #expect(lastState < firstPlain, "\(topics)")
        #expect(h.state("b")?["status"] == "running")
    }

    @Test("a running countdown flips remaining and display every second; its state goes out on changes only")
    func stateOnChangesOnly() async throws {
        let h = try await EngineHarness.make(config: Self.clock)
        await h.connect()
        try await h.send(["action": "start"], timer: "a")
        let start = h.journal.count
        await h.pass(5_000)
        #expect(h.published(h.topic("a", "state"), from: start).isEmpty, "\(h.journal.since(start))")
        let remaining = h.published(h.topic("a", "remaining"), from: start).compactMap { step -> String? in
            if case .publish(_, let payload, true) = step { String(decoding: payload, as: UTF8.self) } else { nil }
        }
        #expect(remaining == ["3599", "3598", "3597", "3596", "3595"])
        #expect(h.published(h.topic("a", "display"), from: start).count == 5)

        // A command changes it: the state goes out once, with the new ends_at_ms.
        let paused = h.journal.count
        try await h.send(["action": "pause"], timer: "a")
        let states = h.published(h.topic("a", "state"), from: paused)
        #expect(states.count == 1)
        #expect(states.first?.json?["status"] == "paused")
        let resumed = h.journal.count
        try await h.send(["action": "resume"], timer: "a")
        await h.pass(3_000)
        let after = h.published(h.topic("a", "state"), from: resumed)
        #expect(after.count == 1, "\(after)")
        #expect(after.first?.json?["ends_at_ms"]?.int != nil)
    }

    @Test("publish.per_second: [] flips nothing per second; remaining and display follow the state")
    func noPerSecondTopics() async throws {
        let h = try await EngineHarness.make(config: Self.clock + "\npublish: {per_second: []}\n")
        await h.connect()
        try await h.send(["action": "start"], timer: "a")
        let start = h.journal.count
        await h.pass(5_000)
        let prefix = h.topic("a", "")
        let ticks = h.journal.since(start).filter { step in step.topic.map { $0.hasPrefix(prefix) } ?? false }
        #expect(ticks.isEmpty, "\(ticks)")
        try await h.send(["action": "pause"], timer: "a")
        let values = h.published(h.topic("a", "remaining"), from: start).compactMap { step -> String? in
            if case .publish(_, let payload, _) = step { String(decoding: payload, as: UTF8.self) } else { nil }
        }
        #expect(values == ["3595"], "published with the pause's state")
    }

    @Test("publish.per_second: [display] flips only display")
    func displayOnly() async throws {
        let h = try await EngineHarness.make(config: Self.clock + "\npublish: {per_second: [display]}\n")
        await h.connect()
        try await h.send(["action": "start"], timer: "a")
        let start = h.journal.count
        await h.pass(3_000)
        #expect(h.published(h.topic("a", "display"), from: start).count == 3)
        #expect(h.published(h.topic("a", "remaining"), from: start).isEmpty)
    }

    @Test("a burst of creates publishes info once, a second after the last info, with every timer")
    func infoThrottled() async throws {
        let h = try await EngineHarness.make()
        await h.connect()
        let start = h.journal.count
        for i in 0..<50 {
            try await h.send(["action": "create", "timer": .string("t\(i)"), "spec": ["kind": "countdown", "duration": "1m"]])
        }
        let topic = "\(h.base)/info"
        #expect(h.published(topic, from: start).isEmpty, "the connect's info went out just before")
        await h.pass(1_000)
        let infos = h.published(topic, from: start)
        #expect(infos.count == 1, "\(infos.count) infos")
        #expect(infos.last?.json?["timers"]?.array?.count == 50)
        // Nothing more is due: an idle node does not wake up for info.
        #expect(await h.engine.nextDeadline() == nil)
        // Two seconds later a create is announced at once.
        await h.pass(2_000)
        let late = h.journal.count
        try await h.send(["action": "create", "timer": "z", "spec": ["kind": "countdown", "duration": "1m"]])
        #expect(h.published(topic, from: late).last?.json?["timers"]?.array?.count == 51)
    }

    @Test("info's capabilities follow the connection and the configuration: response topics only over MQTT 5, cue_ahead when announced")
    func capabilitiesFollowTheNode() async throws {
        func capabilities(_ h: EngineHarness) -> Set<String> {
            Set((h.published("\(h.base)/info").last?.json?["capabilities"]?.array ?? []).compactMap(\.string))
        }
        let h = try await EngineHarness.make()
        await h.connect()
        let five = capabilities(h)
        #expect(five.isSuperset(of: ["mqtt5_response_topic", "time_topic", "workouts", "sound", "after_ack"]), "\(five)")
        #expect(!five.contains("cue_ahead"), "publish.cue_ahead is not set")
        // The broker settles on 3.1.1 (a reconnect reads the version again).
        h.transport.mqtt5.withLock { $0 = false }
        await h.disconnect()
        await h.connect()
        let three = capabilities(h)
        #expect(!three.contains("mqtt5_response_topic") && three.contains("time_topic"), "\(three)")

        let announced = try await EngineHarness.make(config: "publish: {cue_ahead: 1s}\n")
        await announced.connect()
        #expect(capabilities(announced).contains("cue_ahead"))
    }

    @Test("while the broker is backlogged, per-second values are shed; states, events and replies are not")
    func shedsPerSecondValues() async throws {
        let h = try await EngineHarness.make(config: """
            timers:
              - {id: a, name: A, spec: {kind: countdown, duration: 3s}}
            """)
        await h.connect()
        try await h.send(["action": "start"], timer: "a")
        h.transport.backlogged.withLock { $0 = true }
        let start = h.journal.count
        await h.pass(2_000)
        #expect(h.published(h.topic("a", "remaining"), from: start).isEmpty, "\(h.journal.since(start))")
        #expect(h.published(h.topic("a", "display"), from: start).isEmpty)
        // A command is answered and its state published; the finish's state and event too.
        let reply = try await h.send(["action": "time"])
        #expect(reply["ok"] == true)
        await h.pass(1_000)
        #expect(h.state("a")?["status"] == "finished")
        #expect(h.journal.since(start).contains { if case .tracked = $0 { $0.json?["type"] == "finished" } else { false } })
        // The finish's values go with its state (QoS 1): never shed.
        let values = h.published(h.topic("a", "remaining"), from: start).compactMap { step -> String? in
            if case .publish(_, let payload, _) = step { String(decoding: payload, as: UTF8.self) } else { nil }
        }
        #expect(values == ["0"], "\(values)")
        // Once the broker reads again, the flips resume.
        h.transport.backlogged.withLock { $0 = false }
        try await h.send(["action": "start", "spec": ["kind": "countdown", "duration": "1m"]], timer: "a")
        let resumed = h.journal.count
        await h.pass(2_000)
        #expect(h.published(h.topic("a", "remaining"), from: resumed).count == 2)
    }
}

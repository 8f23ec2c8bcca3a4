import Foundation
import Logging
import Mosquitto
import PacerCore
@testable import PacerNode
import PacerTestSupport
import Testing

/// The plain topics' own connection (`publish.plain_connection: separate`): the
/// per-second flips never queue behind the main connection's replies and states.
@Suite("Engine: the plain topics' own connection")
struct EnginePlainLinkTests {
    static let config = """
        timers:
          - {id: a, name: A, spec: {kind: countdown, duration: 1h}}
          - {id: b, name: B, spec: {kind: countdown, duration: 2h}}
        """
    static let plainLeaves = ["remaining", "display", "phase", "round", "rounds", "hr"]

    /// An engine with the plain topics' own connection, the main one connected (and the plain
    /// one with `plainUp`), and `timer` started.
    func started(_ timer: String, plainUp: Bool) async throws -> EngineHarness {
        let h = try await EngineHarness.make(config: Self.config, plainLane: true)
        await h.connect()
        await h.deliverStates()
        if plainUp { await h.plainConnect() }
        try await h.send(["action": "start"], timer: timer)
        return h
    }

    /// The `.plain` publishes (topic, payload, QoS) from journal index `start` on.
    func plain(_ h: EngineHarness, from start: Int = 0) -> [(topic: String, value: String, qos: Int)] {
        h.journal.since(start).compactMap { step in
            if case .plain(let topic, let payload, let qos) = step { (topic, String(decoding: payload, as: UTF8.self), qos) } else { nil }
        }
    }

    /// Main-connection publishes on a plain leaf from `start` on (there must be none).
    func plainOnMain(_ h: EngineHarness, from start: Int = 0) -> [EngineStep] {
        h.journal.since(start).filter { step in
            guard case .publish(let topic, _, _) = step else { return false }
            return Self.plainLeaves.contains { topic.hasSuffix("/" + $0) } && topic.contains("/timers/")
        }
    }

    @Test("plain topics go over their own connection at QoS 0; state, events and replies over the main one")
    func routing() async throws {
        let h = try await started("a", plainUp: true)
        let start = h.journal.count
        await h.pass(3_000)
        let flips = plain(h, from: start).filter { $0.topic == h.topic("a", "remaining") }.map(\.value)
        #expect(flips == ["3599", "3598", "3597"])
        #expect(plain(h, from: start).filter { $0.topic == h.topic("a", "display") }.map(\.value) == ["59:59", "59:58", "59:57"])
        #expect(plain(h).allSatisfy { $0.qos == 0 }, "\(plain(h))")
        #expect(plainOnMain(h).isEmpty, "\(plainOnMain(h))")
        // The command's state, event and reply are on the main connection.
        let paused = h.journal.count
        let reply = try await h.send(["action": "pause"], timer: "a")
        #expect(reply["ok"] == true)
        #expect(h.published(h.topic("a", "state"), from: paused).allSatisfy { if case .publish = $0 { true } else { false } })
        #expect(h.state("a")?["status"] == "paused")
        #expect(plain(h, from: paused).contains { $0.topic == h.topic("a", "phase") && $0.value == "paused" })
    }

    @Test("with no plain connection yet nothing plain is published; when it connects every plain topic of every timer goes out once")
    func republishedWhenItConnects() async throws {
        let h = try await started("b", plainUp: false)
        await h.pass(2_000)
        #expect(plain(h).isEmpty)
        #expect(plainOnMain(h).isEmpty, "\(plainOnMain(h))")
        #expect(h.state("b")?["status"] == "running")
        let start = h.journal.count
        await h.plainConnect()
        let topics = plain(h, from: start).map(\.topic)
        for id in ["a", "b"] {
            for leaf in Self.plainLeaves { #expect(topics.filter { $0 == h.topic(id, leaf) }.count == 1, "\(id)/\(leaf): \(topics)") }
        }
        #expect(plain(h, from: start).first { $0.topic == h.topic("b", "remaining") }?.value == "7198")
        #expect(h.journal.since(start).allSatisfy { if case .plain = $0 { true } else { false } }, "only plain topics: \(h.journal.since(start))")
    }

    @Test("the flips go on over their own connection while the main one is down, and stop while theirs is")
    func independentLinks() async throws {
        let h = try await started("a", plainUp: true)
        await h.disconnect()
        let down = h.journal.count
        await h.pass(2_000)
        #expect(plain(h, from: down).filter { $0.topic == h.topic("a", "remaining") }.map(\.value) == ["3599", "3598"])
        #expect(h.published(h.topic("a", "state"), from: down).isEmpty)
        await h.connect()
        await h.deliverStates()
        await h.plainDisconnect()
        let plainDown = h.journal.count
        await h.pass(2_000)
        #expect(plain(h, from: plainDown).isEmpty)
        #expect(plainOnMain(h, from: plainDown).isEmpty, "no fallback onto the main connection")
        await h.plainConnect()
        #expect(plain(h, from: plainDown).first { $0.topic == h.topic("a", "remaining") }?.value == "3596")
    }

    @Test("a connect's plain republish waits until the broker acknowledged the last state")
    func republishWaitsForTheStates() async throws {
        let h = try await EngineHarness.make(config: Self.config, plainLane: true)
        await h.connect()
        // The last state of the connect is tracked (QoS 1, retained); the others are not.
        let tracked = h.journal.all.filter { if case .tracked(_, _, _, true) = $0 { true } else { false } }
        #expect(tracked.map(\.topic) == [h.topic("b", "state")], "\(tracked)")
        let statesIndex = h.journal.all.lastIndex { $0.topic?.hasSuffix("/state") == true } ?? 0
        await h.plainConnect()
        #expect(plain(h).isEmpty, "held: \(plain(h))")
        await h.pass(1_000)
        #expect(plain(h).isEmpty, "held: \(plain(h))")
        let delivered = h.journal.count
        await h.deliverStates()
        let topics = plain(h, from: delivered).map(\.topic)
        for id in ["a", "b"] {
            for leaf in Self.plainLeaves { #expect(topics.filter { $0 == h.topic(id, leaf) }.count == 1, "\(id)/\(leaf): \(topics)") }
        }
        #expect(delivered > statesIndex)
        // Once released, a reconnect of the plain connection alone republishes at once.
        await h.plainDisconnect()
        let again = h.journal.count
        await h.plainConnect()
        #expect(plain(h, from: again).count == 2 * Self.plainLeaves.count)
    }

    @Test("unacknowledged, the hold ends after its time limit; the running timer's flips wait too, then go out current")
    func holdTimesOut() async throws {
        let h = try await started("a", plainUp: true)
        for case .tracked(_, _, let token, _) in h.journal.all { await h.deliver(token) }  // a's `started`: no outbox check
        await h.disconnect()
        await h.plainDisconnect()
        await h.connect()  // a new hold, never acknowledged
        let start = h.journal.count
        await h.plainConnect()
        await h.pass(PlainRepublishHold.limitMs - 100)
        #expect(plain(h, from: start).isEmpty, "held: \(plain(h, from: start))")
        await h.pass(200)
        let after = plain(h, from: start)
        for id in ["a", "b"] {
            for leaf in Self.plainLeaves { #expect(after.filter { $0.topic == h.topic(id, leaf) }.count == 1, "\(id)/\(leaf): \(after)") }
        }
        // a has run 3.1 s (the hold's 2.9 + 0.2 s): its current value, then the flips again.
        #expect(after.first { $0.topic == h.topic("a", "remaining") }?.value == "3597", "\(after)")
        await h.pass(1_000)
        #expect(plain(h, from: start).last { $0.topic == h.topic("a", "remaining") }?.value == "3596")
    }

    @Test("a deleted timer's plain topics are cleared over their connection at QoS 1 (kept by the client while it is down)")
    func deletionClears() async throws {
        let h = try await EngineHarness.make(config: Self.config, plainLane: true)
        await h.connect()
        await h.plainConnect()
        await h.plainDisconnect()
        let start = h.journal.count
        let reply = try await h.send(["action": "delete", "timer": "a"])
        #expect(reply["ok"] == true)
        let clears = plain(h, from: start).filter { $0.topic.contains("/timers/a/") }
        #expect(clears.map(\.topic).sorted() == Self.plainLeaves.map { h.topic("a", $0) }.sorted())
        #expect(clears.allSatisfy { $0.value.isEmpty && $0.qos == 1 }, "\(clears)")
        #expect(h.journal.since(start).contains { step in
            if case .publish(let topic, let payload, true) = step { topic == h.topic("a", "state") && payload.isEmpty } else { false }
        })
    }

    @Test("a backlogged plain connection sheds per-second values, not changes")
    func shedding() async throws {
        let h = try await started("a", plainUp: true)
        h.transport.plainLane?.backlogged.withLock { $0 = true }
        let start = h.journal.count
        await h.pass(2_000)
        #expect(plain(h, from: start).isEmpty)
        try await h.send(["action": "pause"], timer: "a")
        #expect(plain(h, from: start).contains { $0.topic == h.topic("a", "phase") && $0.value == "paused" })
        #expect(plain(h, from: start).contains { $0.topic == h.topic("a", "remaining") && $0.value == "3598" })
    }

    @Test("refused by the broker: the plain topics go over the main connection until theirs is accepted")
    func refusedFallsBackToMain() async throws {
        let h = try await started("a", plainUp: false)
        let refused = h.journal.count
        await h.engine.handle(.plainLink(.refused(MQTTError(.notAuthorized, "not authorised"))))
        // Every plain topic at once over the main connection, then the flips.
        for leaf in Self.plainLeaves { #expect(h.published(h.topic("a", leaf), from: refused).count == 1, "\(leaf)") }
        #expect(plain(h, from: refused).isEmpty)
        await h.pass(2_000)
        #expect(h.published(h.topic("a", "remaining"), from: refused).count == 3)
        await h.engine.handle(.plainLink(.refused(MQTTError(.notAuthorized, "not authorised"))))  // retried: nothing again
        let accepted = h.journal.count
        await h.plainConnect()
        #expect(plain(h, from: accepted).filter { $0.topic.contains("/timers/a/") }.count == Self.plainLeaves.count)
        await h.pass(1_000)
        #expect(plainOnMain(h, from: accepted).isEmpty, "\(plainOnMain(h, from: accepted))")
    }

    @Test("the plain connection still down 3 s after the main one came up: the plain topics go over the main one until it is up")
    func fallbackWhenItDoesNotCome() async throws {
        let h = try await started("a", plainUp: false)
        let start = h.journal.count
        await h.pass(2_500)
        #expect(plainOnMain(h, from: start).isEmpty, "not before PlainLink.fallbackDelayMs")
        await h.pass(1_000)
        for id in ["a", "b"] {
            for leaf in Self.plainLeaves { #expect(!h.published(h.topic(id, leaf), from: start).isEmpty, "\(id)/\(leaf)") }
        }
        let flips = h.published(h.topic("a", "remaining"), from: start).count
        await h.pass(2_000)
        #expect(h.published(h.topic("a", "remaining"), from: start).count == flips + 2)
        #expect(plain(h).isEmpty)
        let up = h.journal.count
        await h.plainConnect()
        await h.pass(1_000)
        #expect(plainOnMain(h, from: up).isEmpty, "\(plainOnMain(h, from: up))")
        #expect(plain(h, from: up).filter { $0.topic == h.topic("a", "remaining") }.count == 2)
        // A drop of the plain connection alone: after the delay, over the main one again.
        await h.plainDisconnect()
        let down = h.journal.count
        await h.pass(3_500)
        #expect(!plainOnMain(h, from: down).isEmpty)
    }

    @Test("PlainLink: a refusal retried every few seconds is logged once; a drop when already down says nothing")
    func plainLinkLogsOnce() {
        var link = PlainLink()
        let refused = LinkEvent.refused("not authorised")
        let first = link.event(refused)
        #expect(first.first == .republish && first.count == 2, "\(first)")
        guard case .log(.error, let message)? = first.last else { Issue.record("\(first)"); return }
        #expect(message.contains("publish.plain_connection: shared"))
        #expect(link.usesMainConnection)
        #expect(link.event(refused) .isEmpty)
        #expect(link.event(.disconnected(reason: "x")) .isEmpty)
        #expect(!link.isUp)
        let up = link.event(.connected(sessionPresent: false))
        #expect(up.first == .republish)
        #expect(up.contains(.log(.notice, "the plain topics' connection is up")))
        #expect(link.isUp && !link.usesMainConnection)
        #expect(link.event(.disconnected(reason: "gone")).count == 1)
        #expect(link.event(.disconnected(reason: "gone")) .isEmpty)
        #expect(link.state == .down)
        #expect(link.mainStayedAlone().first == .republish)
        #expect(link.usesMainConnection)
        #expect(link.mainStayedAlone() .isEmpty)
    }
}

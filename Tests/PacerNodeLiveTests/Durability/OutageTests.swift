import Foundation
import PacerCore
import PacerTestSupport
import Testing

/// Nothing acknowledged is ever lost, during a broker outage: transitions that fall
/// due while the broker is away stay in the SQLite outbox (not in the MQTT client's memory)
/// and are published once when it is back, also when the node is killed in between.
@Suite("Broker outages")
struct OutageTests {
    /// Two countdowns, `a` ending 9.5 s and `b` 12.5 s after the broker stops: `b`'s write
    /// comes more than 2 s after `a`'s event (the delay after which a published event is
    /// marked), so a node that marked `a` while it sat in memory would lose it on a kill.
    /// (`a` once ended 1.5 s after the stop: at the start of a full parallel run the two start
    /// commands and the stop took over 5 s, and `a` ended with the broker still there.)
    static let config = """
        timers:
          - {id: a, name: A, spec: {kind: countdown, duration: 10s}}
          - {id: b, name: B, spec: {kind: countdown, duration: 13s}}
        """

    @Test(
        "transitions due while the broker is down are published once when it is back, cues of that time are not; also when the node is killed during the outage",
        arguments: [false, true])
    func transitionsDuringOutage(killDuringOutage: Bool) async throws {
        // A broker with persistence, as deployed (deploy/mosquitto/pacer.conf): its retained
        // states survive the restart and prove which events had reached it.
        try await withTestBroker(.init(persistence: true)) { broker in
            // The node reaches the broker through a proxy that can turn it away: it reconnects
            // within a second, so without the gate it could publish the outage's events before
            // the test's probe (a clean session) has subscribed again.
            let gate = try TCPProxy.start(forwardingTo: broker.port)
            defer { gate.stop() }
            var options = NodeOptions(config: Self.config, brokerPort: broker.port)
            options.nodeBrokerPort = gate.port
            try await withNode(options) { node in
                var due: [String: Millis] = [:]
                for timer in ["a", "b"] {
                    let reply = try await node.send(["action": "start"], timer: timer)
                    #expect(reply.ok, "\(reply)")
                    due[timer] = try #require(reply.state?["ends_at_ms"]?.int64)
                }
                try await Task.sleep(for: .milliseconds(500))
                await broker.stop()
                // The node sees the broker go at once (a closed socket), long before `a` ends.
                #expect(await node.process?.waitForOutput(containing: "lost the broker connection", timeout: .seconds(10)) == true)
                let aDue = try #require(due["a"])
                try #require(wallNowMs() < aDue - 500, "the broker stop came too late (\(aDue - wallNowMs()) ms before a's end): the machine is too loaded for this test's timing")
                // By now the node has handled the drop. A cue due before this instant may have
                // gone to libmosquitto while the node still believed the link up (on a machine
                // loaded far beyond its cores, noticing took over 0.5 s once); MQTT resends such
                // an in-flight QoS 1 message after the reconnect. Any cue due later is stale.
                let noticedAt = wallNowMs()
                // Both finish while the broker is away (b 4.5 s after it stopped).
                let bDue = try #require(due["b"])
                try await Task.sleep(for: .milliseconds(Int(max(0, bDue - wallNowMs()) + 1_500)))
                if killDuringOutage {
                    await node.kill()
                }
                let back = node.probe.count
                gate.setAccepting(false)
                try await broker.restart()
                // The probe (a clean session) must be subscribed again before the node can
                // publish, or it would miss what the test looks for.
                try await Self.waitProbeSubscribed(node)
                gate.setAccepting(true)
                if killDuringOutage {
                    try await node.launch()
                }

                for timer in ["a", "b"] {
                    // The node retries with a capped backoff: it may take a while to notice the broker is back.
                    let finished = try await node.waitForEvent(timer, "finished", from: back, timeout: .seconds(40)).json!
                    #expect(finished["due_ms"]?.int64 == due[timer], "\(finished)")
                    try await node.waitForState(timer, from: back, timeout: .seconds(20)) { $0["status"] == "finished" }
                }
                // Give any second copy (an in-memory queue, an outbox resend) time to arrive.
                try await Task.sleep(for: .seconds(3))
                try await node.barrier()
                for timer in ["a", "b"] {
                    let events = node.events(timer)
                    #expect(events.filter { $0["type"] == "finished" }.count == 1, "\(timer): \(events)")
                    // The countdown cues fell due while nobody could hear them: not sent late.
                    let late = node.events(timer, from: back).filter {
                        $0["type"] == "countdown" && ($0["due_ms"]?.int64 ?? .max) >= noticedAt
                    }
                    #expect(late.isEmpty, "stale cues published after the outage (the node noticed it at \(noticedAt)): \(late)")
                    // The event reaches the broker before the state that shows it.
                    let all = node.probe.all
                    let eventIndex = all.indices.first { all[$0].topic == node.topic(timer, "event") && all[$0].json?["type"] == "finished" }
                    let stateIndex = all.indices.first { all[$0].topic == node.topic(timer, "state") && all[$0].json?["status"] == "finished" }
                    #expect(eventIndex != nil && stateIndex != nil && eventIndex! < stateIndex!, "\(timer)")
                }
                let retained = try await node.retained([node.topic("timers/+/state")])
                for timer in ["a", "b"] {
                    #expect(retained[node.topic(timer, "state")].flatMap(decodeJSON)?["status"] == "finished", "\(timer)")
                }
                if killDuringOutage {
                    // The restarted node found both events unpublished in its outbox and sent them.
                    let settled = node.log.split(separator: "\n").filter { $0.contains("event outbox settled") }
                    #expect(settled.last?.contains("published=2") == true, "\(settled)")
                }
            }
        }
    }

    /// Waits until a message the probe publishes under the node's base topic comes back to it.
    static func waitProbeSubscribed(_ node: TestNode) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let marker = uniqueName("probe-back-")
            let start = node.probe.count
            try? await node.probe.publish(node.topic("probe-marker"), marker)
            if (try? await node.probe.waitFor(node.topic("probe-marker"), from: start, timeout: .milliseconds(500)) { $0.text == marker }) != nil {
                return
            }
        }
        throw HarnessError("the probe did not get its subscriptions back after the broker restart")
    }

    /// The node's link is cut while the broker keeps running (its retained states survive:
    /// the outbox check's proof rule is exercised), with a running interval timer whose phase
    /// changes during the outage and which keeps publishing states after the reconnect.
    @Test(
        "link cut with the broker up: events of the outage are published once, each before any state showing it; also with a kill",
        arguments: [false, true])
    func linkCut(killDuringOutage: Bool) async throws {
        let config = """
            timers:
              - {id: c, name: C, spec: {kind: countdown, duration: 10s}}
              - {id: i, name: I, spec: {kind: interval, work: 10s, rest: 3s, rounds: 6}}
            """
        try await withTestBroker { broker in
            let proxy = try TCPProxy.start(forwardingTo: broker.port)
            defer { proxy.stop() }
            var options = NodeOptions(config: config, brokerPort: broker.port)
            options.nodeBrokerPort = proxy.port
            try await withNode(options) { node in
                var endsAt: [String: Millis] = [:]
                for timer in ["c", "i"] {
                    let reply = try await node.send(["action": "start"], timer: timer)
                    #expect(reply.ok, "\(reply)")
                    endsAt[timer] = try #require(reply.state?["ends_at_ms"]?.int64)
                }
                try await Task.sleep(for: .milliseconds(500))
                let cutAt = wallNowMs()
                proxy.setAccepting(false)
                proxy.cutConnections()
                #expect(await node.process?.waitForOutput(containing: "lost the broker connection", timeout: .seconds(10)) == true)
                // (10 s: at the start of a full parallel run, the starts and the cut took over 5 s.)
                try #require(wallNowMs() < (endsAt["c"] ?? 0) - 500, "the cut came too late (\((endsAt["c"] ?? 0) - wallNowMs()) ms before c's end): the machine is too loaded for this test's timing")
                // c finishes and i goes to rest while the node has no link.
                try await Task.sleep(for: .milliseconds(Int(max(0, max(endsAt["c"] ?? 0, endsAt["i"] ?? 0) - wallNowMs()) + 500)))
                if killDuringOutage {
                    await node.kill()
                }
                let back = node.probe.count
                proxy.setAccepting(true)
                if killDuringOutage {
                    try await node.launch()
                }
                let finished = try await node.waitForEvent("c", "finished", from: back, timeout: .seconds(40)).json!
                #expect(finished["due_ms"]?.int64 == endsAt["c"], "\(finished)")
                let rest = try await node.waitForEvent("i", "phase", timeout: .seconds(20)) { $0["phase"] == "rest" }.json!
                #expect(rest["due_ms"]?.int64 == (endsAt["i"] ?? 0), "\(rest)\nthe node's log:\n\(node.log)")
                #expect((rest["due_ms"]?.int64 ?? 0) > cutAt, "the phase change was meant to fall in the outage")
                // i goes on after the reconnect: its next phase (work, round 2) arrives live.
                try await node.waitForEvent("i", "phase", timeout: .seconds(20)) { $0["phase"] == "work" && $0["round"] == 2 }
                try await Task.sleep(for: .seconds(1))
                try await node.barrier()

                let all = node.probe.all
                for timer in ["c", "i"] {
                    let eventTopic = node.topic(timer, "event"), stateTopic = node.topic(timer, "state")
                    let events = all.enumerated().filter { $0.element.topic == eventTopic }.compactMap { e in e.element.json.map { (e.offset, $0) } }
                    // Each transition once: (type, revision, due_ms) never repeats.
                    var seen: Set<String> = []
                    for (_, event) in events where event["type"] != "countdown" && event["type"] != "halfway" {
                        let key = "\(event["type"]?.string ?? "")/\(event["revision"]?.int ?? -1)/\(event["due_ms"]?.int64 ?? -1)"
                        #expect(seen.insert(key).inserted, "\(timer): \(key) published twice")
                    }
                    // Every event reaches the broker before the first state that shows its revision.
                    for (index, event) in events where !["countdown", "halfway", "alert"].contains(event["type"]?.string ?? "") {
                        // (Cues carry the revision they happen in; only transitions make one.)
                        guard let revision = event["revision"]?.int else { continue }
                        let firstState = all.indices.first { all[$0].topic == stateTopic && (all[$0].json?["revision"]?.int ?? -1) >= revision }
                        if let firstState {
                            #expect(index < firstState, "\(timer): \(event) came after a state with revision \(all[firstState].json?["revision"]?.int ?? -1)")
                        }
                    }
                }
                // i's phases so far, once each, in order: rest (round 1), then work (round 2).
                let phases = node.events("i").filter { $0["type"] == "phase" }.map { "\($0["phase"]?.string ?? "")\($0["round"]?.int ?? 0)" }
                #expect(Array(phases.prefix(2)) == ["rest1", "work2"], "\(phases)")
            }
        }
    }
}

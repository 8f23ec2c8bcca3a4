import Foundation
import PacerCore
import PacerTestSupport
import Testing

/// Issue 5 "Nothing acknowledged is ever lost", during a broker outage: transitions that fall
/// due while the broker is away stay in the SQLite outbox (not in the MQTT client's memory)
/// and are published once when it is back, also when the node is killed in between.
@Suite("Broker outages (issue 5)")
struct OutageTests {
    /// Two countdowns, `a` ending 1.5 s and `b` 4.5 s after the broker stops: `b`'s write
    /// comes more than 2 s after `a`'s event (the delay after which a published event is
    /// marked), so a node that marked `a` while it sat in memory would lose it on a kill.
    static let config = """
        timers:
          - {id: a, name: A, spec: {kind: countdown, duration: 2s}}
          - {id: b, name: B, spec: {kind: countdown, duration: 5s}}
        """

    @Test(
        "transitions due while the broker is down are published once when it is back, cues of that time are not; also when the node is killed during the outage",
        arguments: [false, true])
    func transitionsDuringOutage(killDuringOutage: Bool) async throws {
        try await withTestBroker { broker in
            try await withNode(.init(config: Self.config, brokerPort: broker.port)) { node in
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
                // Both finish while the broker is away (b 4.5 s after it stopped).
                let bDue = try #require(due["b"])
                try await Task.sleep(for: .milliseconds(Int(max(0, bDue - wallNowMs()) + 1_500)))
                if killDuringOutage {
                    await node.kill()
                }
                let back = node.probe.count
                try await broker.restart()
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
                    let late = node.events(timer, from: back).filter { $0["type"] == "countdown" }
                    #expect(late.isEmpty, "stale cues published after the outage: \(late)")
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
                    #expect(node.log.contains("event outbox settled"), "\(node.log)")
                }
            }
        }
    }
}

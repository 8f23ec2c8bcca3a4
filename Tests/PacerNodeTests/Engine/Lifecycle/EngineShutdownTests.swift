import Foundation
import Mosquitto
import PacerCore
@testable import PacerNode
import PacerTestSupport
import Testing

/// What the engine loop does with inputs queued when a shutdown begins.
@Suite("Engine shutdown in-process")
struct EngineShutdownTests {
    @Test("commands queued before finish() are still applied and answered, in order")
    func queuedCommandsAreDrained() async throws {
        let h = try await EngineHarness.make(config: EngineTests.eggs, shell: true)
        await h.connect()
        let start = h.journal.count
        for (i, action) in ["start", "pause", "resume"].enumerated() {
            let command: JSONValue = ["action": .string(action), "id": .string("q\(i)")]
            h.shell!.submit(.message(MQTTMessage(topic: h.topic("egg", "cmd"), payload: Array(command.description.utf8),
                                                 qos: .atLeastOnce,
                                                 properties: MQTTProperties(responseTopic: EngineHarness.replyTopic))))
        }
        h.shell!.finish()
        await h.shell!.run()
        let replies = h.journal.since(start).filter { $0.topic == EngineHarness.replyTopic }.compactMap(\.json)
        #expect(replies.map { $0["id"] } == ["q0", "q1", "q2"], "\(replies)")
        #expect(replies.allSatisfy { $0["ok"] == true }, "\(replies)")
        #expect(h.state("egg")?["status"] == "running")
    }
}

/// Deadlines against a queue of commands.
@Suite("Engine under a burst of commands in-process")
struct EngineBurstTests {
    @Test("a flip that fell due while a command waited is published before that command is handled")
    func dueFlipsComeFirst() async throws {
        let h = try await EngineHarness.make(config: """
            timers:
              - {id: run, name: Run, spec: {kind: countdown, duration: 10s}}
              - {id: other, name: Other, spec: {kind: countdown, duration: 5m}}
            """, shell: true)
        await h.connect()
        try await h.send(["action": "start"], timer: "run")
        // 1.5 s go by with the engine busy: the wake-up for `run`'s 9 s flip has not come.
        h.time.pass(1_500)
        let start = h.journal.count
        let reply = try await h.send(["action": "start", "id": "burst"], timer: "other")
        #expect(reply["ok"] == true, "\(reply)")
        let steps = h.journal.since(start)
        let flip = try #require(steps.firstIndex { $0.topic == h.topic("run", "remaining") }, "no flip of run: \(steps)")
        let answer = try #require(steps.firstIndex { $0.topic == EngineHarness.replyTopic })
        #expect(flip < answer, "\(steps)")
        if case .publish(_, let payload, _) = steps[flip] { #expect(String(decoding: payload, as: UTF8.self) == "9") }
    }
}

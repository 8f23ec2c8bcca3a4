import Foundation
import Mosquitto
import PacerCore
@testable import PacerNode
import Testing

/// What the engine loop does with inputs queued when a shutdown begins.
@Suite("Engine shutdown in-process")
struct EngineShutdownTests {
    @Test("commands queued before finish() are still applied and answered, in order")
    func queuedCommandsAreDrained() async throws {
        let h = try await EngineHarness.make(config: EngineTests.eggs)
        await h.connect()
        let start = h.journal.count
        for (i, action) in ["start", "pause", "resume"].enumerated() {
            let command: JSONValue = ["action": .string(action), "id": .string("q\(i)")]
            h.engine.submit(.message(MQTTMessage(topic: h.topic("egg", "cmd"), payload: Array(command.description.utf8),
                                                 qos: .atLeastOnce,
                                                 properties: MQTTProperties(responseTopic: EngineHarness.replyTopic))))
        }
        h.engine.finish()
        await h.engine.run()
        let replies = h.journal.since(start).filter { $0.topic == EngineHarness.replyTopic }.compactMap(\.json)
        #expect(replies.map { $0["id"] } == ["q0", "q1", "q2"], "\(replies)")
        #expect(replies.allSatisfy { $0["ok"] == true }, "\(replies)")
        #expect(h.state("egg")?["status"] == "running")
    }
}

import Foundation
import Mosquitto
import PacerCore
import PacerTestSupport
import Testing

/// Bad input (docs/SECURITY.md, "Outside text and every parser it reaches"): retained commands are
/// never replayed (a real broker and a restart). The replies to bad commands are tested in-process:
/// EngineBadInputTests, from the table `BadInputCases`
/// (Tests/PacerNodeTests/Engine/Commands/BadInputCases.swift).
@Suite("Bad input")
struct BadInputTests {
    @Test("retained messages on command topics are ignored, never replayed on (re)connect")
    func retainedCommandsIgnored() async throws {
        try await withNode(.init(launch: false)) { node in
            // Left retained before the node starts: a create, a start with a spec, a plain word.
            let stale: [(String, String)] = [
                (node.topic("cmd"), #"{"action":"create","timer":"ghost","spec":{"kind":"countdown","duration":"1m"}}"#),
                (node.topic("ghost2", "cmd"), #"{"action":"start","spec":{"kind":"countdown","duration":"1m"}}"#),
                (node.topic("ghost3", "cmd"), "start"),
            ]
            for (topic, payload) in stale {
                try await node.probe.publish(topic, Array(payload.utf8), retain: true,
                                             properties: MQTTProperties(responseTopic: node.probe.replyTopic, correlationData: Array("stale".utf8)))
            }
            try await node.launch()
            try await node.barrier()
            let list = try await node.send(["action": "list"])
            #expect(list.json["timers"] == [], "a retained command was executed: \(list)")
            #expect(node.probe.messages(on: node.probe.replyTopic).filter { $0.message.properties.correlationData == Array("stale".utf8) }.isEmpty)
            #expect(node.probe.messages(on: node.topic("reply")).isEmpty)
            #expect(node.log.contains("ignored a retained command"))

            // A retained word published while the node runs reaches it as a live message and is
            // applied once; after a restart the broker hands it over as retained: not replayed.
            _ = try await node.send(["action": "create", "timer": "live", "spec": ["kind": "countdown", "duration": "5m"]])
            var start = node.probe.count
            try await node.probe.publish(node.topic("live", "cmd"), "toggle", retain: true)
            try await node.waitForState("live", from: start) { $0["status"] == "running" }
            let paused = try await node.send(["action": "pause"], timer: "live")
            let revision = try #require(paused.revision)

            await node.terminate()
            start = node.probe.count
            try await node.launch()
            try await node.barrier()
            let state = try await node.send(["action": "list"])
            #expect(state.json["timers"]?[0]?["status"] == "paused", "the retained toggle was replayed: \(state)")
            #expect(state.json["timers"]?[0]?["revision"]?.int == revision)
            #expect(node.events("live", from: start).isEmpty)

            for (topic, _) in stale + [(node.topic("live", "cmd"), "")] {
                try await node.probe.publish(topic, [], retain: true)
            }
        }
    }
}

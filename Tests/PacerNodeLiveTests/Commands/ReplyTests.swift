import Foundation
import Mosquitto
import PacerCore
import PacerTestSupport
import Testing

/// Replies (docs/API.md): every command gets exactly one reply, on the MQTT 5 response topic with
/// the correlation data when the command has them, else on `<base>/reply`; the id is echoed.
@Suite("Reply paths")
struct ReplyTests {
    @Test("MQTT 5: reply on the response topic with the correlation data echoed; else on <base>/reply")
    func mqtt5ResponseTopic() async throws {
        try await withNode { node in
            let replyStart = node.probe.count
            // Binary correlation data (not UTF-8) comes back byte for byte.
            let correlation: [UInt8] = [0x00, 0xFF, 0x80, 0x7F, 0x0A, 0xC3]
            let command: JSONValue = ["action": "start", "id": "req-5", "spec": ["kind": "countdown", "duration": "1m"]]
            let reply = try await node.probe.request(command.bytes, on: node.topic("t1", "cmd"), correlation: correlation)
            #expect(reply.topic == node.probe.replyTopic)
            #expect(reply.message.properties.correlationData == correlation)
            #expect(reply.json?["id"] == "req-5")
            #expect(reply.json?["ok"] == true)
            #expect(reply.json?["timer"] == "t1")
            #expect(reply.json?["revision"]?.int != nil)
            #expect(reply.json?["state"]?["status"] == "running")
            // Its bytes are what the one JSON writer gives for its value (keys sorted, compact),
            // though its state is spliced in already written (CommandResult).
            #expect(reply.json.map { String(decoding: $0.jsonBytes, as: UTF8.self) } == String(decoding: reply.message.payload, as: UTF8.self))
            #expect(reply.json?.object.map { Array($0.keys).sorted() } == ["id", "ok", "revision", "state", "timer"])

            // An error reply takes the same path and echoes the id too.
            let bad = try await node.probe.request(#"{"action":"explode","id":"req-6"}"#.utf8.map { $0 }, on: node.topic("cmd"), correlation: [1, 2, 3])
            #expect(bad.message.properties.correlationData == [1, 2, 3])
            #expect(bad.json?["id"] == "req-6")
            #expect(bad.json?["ok"] == false)
            #expect(bad.json?["error"]?["code"] == "unknown_action")
            #expect(bad.json.map { String(decoding: $0.jsonBytes, as: UTF8.self) } == String(decoding: bad.message.payload, as: UTF8.self))
            let badMessage = bad.json?["error"]?["message"]?.string ?? ""
            #expect(badMessage.contains("explode"), "\(badMessage)")

            // Without a response topic: <base>/reply, no correlation data.
            try await node.probe.publish(node.topic("t1", "cmd"), #"{"action":"pause","id":"req-7"}"#)
            let plain = try await node.probe.waitFor(node.topic("reply"), from: replyStart) { $0.json?["id"] == "req-7" }
            #expect(plain.json?["ok"] == true)
            #expect(plain.message.properties.correlationData == nil)
            // A command without an id is answered with "id": null.
            try await node.probe.publish(node.topic("cmd"), #"{"action":"time"}"#)
            let anonymous = try await node.probe.waitFor(node.topic("reply"), from: replyStart) { $0.json?["now_ms"] != nil }
            #expect(anonymous.json?["id"] == .null)

            // Exactly one reply each: the ones with a response topic never reached <base>/reply,
            // and nothing was answered twice on the probe's own topic.
            try await node.barrier()
            #expect(node.probe.messages(on: node.topic("reply"), from: replyStart).compactMap { $0.json?["id"] } == ["req-7", .null])
            let own = node.probe.messages(on: node.probe.replyTopic, from: replyStart).compactMap { $0.json?["id"]?.string }
            #expect(own.filter { $0 == "req-5" }.count == 1)
            #expect(own.filter { $0 == "req-6" }.count == 1)
        }
    }

    @Test("<base>/time: a clock request is answered like time, on a response topic under <base>/reply or on <base>/reply")
    func timeTopic() async throws {
        try await withNode { node in
            let start = node.probe.count
            let own = node.topic("reply") + "/wall-1"
            let sentMs = wallNowMs()
            try await node.probe.publish(node.topic("time"), Array(#"{"id":"sync-1"}"#.utf8),
                                         properties: MQTTProperties(responseTopic: own, correlationData: [4, 2]))
            let reply = try await node.probe.waitFor(own, from: start)
            #expect(reply.json?["id"] == "sync-1" && reply.json?["ok"] == true, "\(String(describing: reply.json))")
            #expect(reply.message.properties.correlationData == [4, 2])
            let nowMs = try #require(reply.json?["now_ms"]?.int64)
            // The same machine's clock: read between the request and the reply (1 ms rounding).
            #expect(nowMs >= sentMs - 1 && nowMs <= reply.wallMs + 1,
                    "the node's clock is this machine's: \(nowMs) not within \(sentMs)...\(reply.wallMs)")

            try await node.probe.publish(node.topic("time"), [UInt8]())
            let plain = try await node.probe.waitFor(node.topic("reply"), from: start)
            #expect(plain.json?["ok"] == true && plain.json?["id"] == .null && plain.json?["now_ms"] != nil)
        }
    }

    @Test("an MQTT 3.1.1 client gets its replies on <base>/reply, with the id echoed")
    func mqtt311Client() async throws {
        try await withNode { node in
            let client = try MQTTClient(configuration: .v3_1_1(host: "127.0.0.1", port: node.brokerPort, clientID: uniqueName("v3-"), cleanSession: true))
            try await client.connect()
            let start = node.probe.count
            try await client.publish(to: node.topic("t3", "cmd"), string: #"{"action":"start","id":"v3-a","spec":{"kind":"countdown","duration":"30s"}}"#, qos: .atLeastOnce)
            let started = try await node.probe.waitFor(node.topic("reply"), from: start) { $0.json?["id"] == "v3-a" }
            #expect(started.json?["ok"] == true)
            #expect(started.json?["state"]?["status"] == "running")

            try await client.publish(to: node.topic("cmd"), string: #"{"action":"pause","timer":"t3","id":"v3-b","if_revision":0}"#, qos: .atLeastOnce)
            let conflict = try await node.probe.waitFor(node.topic("reply"), from: start) { $0.json?["id"] == "v3-b" }
            #expect(conflict.json?["error"]?["code"] == "revision_conflict")

            try await client.publish(to: node.topic("t3", "cmd"), string: "pause", qos: .atLeastOnce)
            let word = try await node.probe.waitFor(node.topic("reply"), from: start) { $0.json?["id"] == .null }
            #expect(word.json?["state"]?["status"] == "paused")
            await client.disconnect()
        }
    }

    @Test("a node speaking MQTT 3.1.1 replies on <base>/reply even when the command had a response topic")
    func node311() async throws {
        try await withNode(.init(mqttVersion: "3.1.1")) { node in
            let start = node.probe.count
            let properties = MQTTProperties(responseTopic: node.probe.replyTopic, correlationData: [9, 9])
            try await node.probe.publish(node.topic("cmd"), Array(#"{"action":"time","id":"old-1"}"#.utf8), properties: properties)
            let reply = try await node.probe.waitFor(node.topic("reply"), from: start) { $0.json?["id"] == "old-1" }
            #expect(reply.json?["ok"] == true)
            #expect(reply.json?["now_ms"]?.int64 != nil)
            #expect(node.probe.messages(on: node.probe.replyTopic, from: start).isEmpty)
            // The rest of the API works the same over 3.1.1.
            try await node.probe.publish(node.topic("k", "cmd"), #"{"action":"start","id":"old-2","spec":{"kind":"countdown","duration":"10s"}}"#)
            let started = try await node.probe.waitFor(node.topic("reply"), from: start) { $0.json?["id"] == "old-2" }
            #expect(started.json?["ok"] == true)
            try await node.probe.waitFor(node.topic("k", "phase"), from: start) { $0.text == "countdown" }
            let retained = try await node.retained([node.topic("status")])
            #expect(retained[node.topic("status")] == Array("online".utf8))
        }
    }
}

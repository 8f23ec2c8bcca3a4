import Foundation
import Mosquitto
import PacerCore
@testable import PacerNode
import PacerTestSupport
import Testing

/// The clock requests of read-only displays on `<base>/time` (docs/API.md, "Time sync").
@Suite("The time topic (in-process)")
struct EngineTimeTopicTests {
    private var timeTopic: String { "pacer/t/time" }

    /// Sends `payload` on the time topic; returns what the engine did meanwhile.
    private func ask(_ h: EngineHarness, _ payload: String, responseTopic: String? = nil, correlation: [UInt8]? = nil,
                     retain: Bool = false) async -> [EngineStep] {
        let start = h.journal.count
        await h.engine.handle(.message(MQTTMessage(topic: timeTopic, payload: Array(payload.utf8), qos: .atLeastOnce, retain: retain,
                                                   properties: MQTTProperties(responseTopic: responseTopic, correlationData: correlation))))
        return h.journal.since(start)
    }

    @Test("an empty or JSON request gets the node's clock, like the time command, and changes and writes nothing")
    func answersLikeTheTimeCommand() async throws {
        let h = try await EngineHarness.make()
        await h.connect()
        try await h.send(["action": "start", "id": "go", "spec": ["kind": "countdown", "duration": "10m"]], timer: "k")
        let revision = h.state("k")?["revision"]
        await h.pass(1_234)

        // Empty (MQTT 3.1.1 style: no response topic): on <base>/reply, id null.
        let steps = await ask(h, "")
        #expect(steps.count == 1 && steps.first?.topic == "pacer/t/reply", "only the reply: \(steps)")
        let reply = try #require(steps.first?.json)
        #expect(reply["ok"] == true && reply["id"] == .null, "\(reply)")
        #expect(reply["now_ms"]?.int64 == h.time.wall && reply["now"]?.string == iso8601(ms: h.time.wall))

        // The same body as the time command would give.
        let command = try await h.send(["action": "time"])
        #expect(command["now_ms"] == reply["now_ms"] && command["now"] == reply["now"])

        // JSON with an id, and MQTT 5: on the response topic with the correlation data.
        for payload in [#"{"id":"sync-1"}"#, #" {"action":"time","id":"sync-1"} "#] {
            let steps = await ask(h, payload, responseTopic: "pacer/t/reply/wall-1", correlation: [7, 8, 9])
            #expect(steps.count == 1 && steps.first?.topic == "pacer/t/reply/wall-1", "\(steps)")
            #expect(steps.first?.json?["id"] == "sync-1" && steps.first?.json?["ok"] == true)
            let properties = h.transport.properties.withLock { $0.last }
            #expect(properties?.topic == "pacer/t/reply/wall-1" && properties?.properties.correlationData == [7, 8, 9])
        }

        // An id already used by a command is not looked up in the dedup ledger: still the clock.
        let reused = await ask(h, #"{"id":"go"}"#)
        #expect(reused.first?.json?["now_ms"]?.int64 == h.time.wall && reused.first?.json?["state"] == nil)

        // A retained request (stale by definition) is ignored.
        #expect(await ask(h, "", retain: true).isEmpty)
        #expect(h.state("k")?["revision"] == revision)
    }

    @Test("anything else gets a clear error on the reply topic and changes nothing")
    func badRequests() async throws {
        let h = try await EngineHarness.make()
        await h.connect()
        try await h.send(["action": "start", "spec": ["kind": "countdown", "duration": "10m"]], timer: "k")
        let cases: [(String, String, String)] = [
            ("time", "bad_json", "empty or a JSON object"),
            ("[1]", "bad_json", "empty or a JSON object"),
            (#"{"action":"pause","timer":"k","id":"p1"}"#, "unknown_action", "only answers the time"),
            (#"{"id":"x","timer":"k"}"#, "invalid_argument", "takes only \"id\", not \"timer\""),
            (#"{"id":5}"#, "invalid_argument", "\"id\""),
            (String(repeating: " ", count: 70_000), "payload_too_large", "the limit is 65536 bytes"),
        ]
        for (payload, code, words) in cases {
            let steps = await ask(h, payload, responseTopic: "pacer/t/reply/wall-1")
            #expect(steps.count == 1 && steps.first?.topic == "pacer/t/reply/wall-1", "\(payload.prefix(30)): \(steps)")
            let error = steps.first?.json?["error"]
            #expect(steps.first?.json?["ok"] == false && error?["code"]?.string == code, "\(payload.prefix(30)): \(String(describing: error))")
            #expect(error?["message"]?.string?.contains(words) == true, "\(String(describing: error))")
        }
        #expect(await ask(h, #"{"action":"pause","timer":"k","id":"p1"}"#).first?.json?["id"] == "p1", "the error echoes the id")
        #expect(h.state("k")?["status"] == "running", "a pause on the time topic paused the timer")
    }

    @Test("a read-only client cannot make the node publish outside <base>/reply")
    func responseTopicStaysUnderReply() async throws {
        let h = try await EngineHarness.make()
        await h.connect()
        for asked in ["pacer/t/timers/main/state", "pacer/t/status", "homeassistant/sensor/x/config", "pacer/t/replyx", "pacer/t/reply/#"] {
            let steps = await ask(h, #"{"id":"evil"}"#, responseTopic: asked, correlation: [1])
            #expect(steps.count == 1 && steps.first?.topic == "pacer/t/reply", "\(asked): \(steps)")
            let body = steps.first?.json
            #expect(body?["ok"] == false && body?["id"] == "evil" && body?["error"]?["code"] == "invalid_argument", "\(String(describing: body))")
            #expect(body?["error"]?["message"]?.string?.contains("under it") == true)
        }
        let plain = await ask(h, "", responseTopic: "pacer/t/reply")
        #expect(plain.first?.topic == "pacer/t/reply" && plain.first?.json?["ok"] == true)
    }
}

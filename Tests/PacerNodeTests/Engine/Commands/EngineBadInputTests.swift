import Foundation
import Mosquitto
import PacerCore
@testable import PacerNode
import PacerTestSupport
import Testing

/// Bad input, in-process: each bad command gets exactly one clear error
/// reply and changes nothing: no write, no publish but the reply.
@Suite("Bad input (in-process)")
struct EngineBadInputTests {
    @Test("every bad input gets exactly one clear error reply and changes nothing")
    func everyBadInput() async throws {
        let h = try await EngineHarness.make(config: BadInputCases.config)
        await h.connect()
        let created = try await h.send(["action": "start", "spec": ["kind": "countdown", "duration": "10m"]], timer: "keep")
        let paused = try await h.send(["action": "pause"], timer: "keep")
        try #require(created["ok"] == true && paused["ok"] == true)
        let start = h.journal.count
        for bad in BadInputCases.cases {
            let replies = await h.sendRaw(bad.payload, timer: bad.timer)
            #expect(replies.count == 1, "\(bad.name): \(replies.count) replies")
            guard let reply = replies.first else { continue }
            #expect(reply["ok"] == false, "\(bad.name): \(reply)")
            #expect(reply["error"]?["code"]?.string == bad.code, "\(bad.name): \(reply)")
            let message = reply["error"]?["message"]?.string ?? ""
            #expect(message.count <= 401, "\(bad.name): a message of \(message.count) characters")
            // (A payload over the limit is not read at all, its id neither.)
            if bad.code != "payload_too_large", let sent = JSONValue.leadingMembers(bad.payload), case .string(let text)? = sent["id"], text.count <= 128, let id = sent["id"] {
                #expect(reply["id"] == id, "\(bad.name): the reply does not carry the request id: \(reply)")
            }
            #expect(message.count >= 10, "\(bad.name): the message does not help: '\(message)'")
            #expect(!message.unicodeScalars.contains { $0.properties.generalCategory == .control }, "\(bad.name): control characters in '\(message)'")
            if let word = bad.mentions {
                #expect(message.contains(word), "\(bad.name): the message should mention \(word): '\(message)'")
            }
        }
        // Nothing changed: nothing written, nothing published but the replies.
        let other = h.journal.since(start).filter { $0.topic != EngineHarness.replyTopic }
        #expect(other.isEmpty, "\(other)")
        let list = try await h.send(["action": "list"])
        #expect(list["timers"]?.array?.map { $0["id"] } == ["keep"])
        #expect(list["timers"]?.array?.first?["status"] == "paused")
        #expect(list["timers"]?.array?.first?["revision"] == paused["revision"])
    }

    @Test("a payload of exactly the limit is parsed; one byte more is refused")
    func payloadLimitBoundary() async throws {
        let h = try await EngineHarness.make(config: BadInputCases.config)
        await h.connect()
        func payload(_ size: Int) -> [UInt8] {
            let head = #"{"action":"list","id":"edge","pad":""#, tail = #""}"#
            return Array((head + String(repeating: "y", count: size - head.utf8.count - tail.utf8.count) + tail).utf8)
        }
        let exact = await h.sendRaw(payload(1_024), timer: nil)
        #expect(exact.first?["error"]?["code"] == "invalid_argument", "1024 bytes are within the limit (list does not take pad): \(exact)")
        #expect(exact.first?["id"] == "edge")
        let over = await h.sendRaw(payload(1_025), timer: nil)
        #expect(over.first?["error"]?["code"] == "payload_too_large", "\(over)")
    }

    @Test("more timers than limits.max_timers are refused; deleting one makes room")
    func timerLimit() async throws {
        let h = try await EngineHarness.make(config: BadInputCases.config)
        await h.connect()
        for id in ["t1", "t2", "t3"] {
            let reply = try await h.send(["action": "create", "timer": .string(id), "spec": ["kind": "stopwatch"]])
            #expect(reply["ok"] == true, "\(reply)")
        }
        let start = h.journal.count
        let fourth = try await h.send(["action": "create", "timer": "t4", "spec": ["kind": "stopwatch"]])
        #expect(fourth["error"]?["code"] == "too_many_timers", "\(fourth)")
        #expect(fourth["error"]?["message"]?.string?.contains("3") == true, "\(fourth)")
        let startFourth = try await h.send(["action": "start", "spec": ["kind": "countdown", "duration": "1m"]], timer: "t4")
        #expect(startFourth["error"]?["code"] == "too_many_timers", "\(startFourth)")
        let other = h.journal.since(start).filter { $0.topic != EngineHarness.replyTopic }
        #expect(other.isEmpty, "no state, no info, no write: \(other)")
        try await h.send(["action": "delete", "timer": "t1"])
        let now = try await h.send(["action": "create", "timer": "t4", "spec": ["kind": "stopwatch"]])
        #expect(now["ok"] == true, "\(now)")
    }

    /// Found by the hostile suite (docs/RELIABILITY.md, "Hostile input"): anyone who may publish on
    /// a timer's state topic could leave a retained state whose revision is beyond Int; the node
    /// read it with `Int(value)` during the outbox check after a restart and trapped, again at
    /// every reconnect.
    @Test("hostile retained states during the outbox check are ignored, never a crash", arguments: [
        #"{"revision":1e19}"#, #"{"revision":9223372036854775808}"#, #"{"revision":-1e300}"#,
        #"{"revision":12345678901234567890123456}"#, #"{"revision":1.5}"#, #"{"revision":"7"}"#, "[1,2]", "", "\u{FF}",
    ])
    func hostileRetainedStates(payload: String) async throws {
        let config = "timers:\n  - {id: a, name: A, spec: {kind: countdown, duration: 1s}}\n"
        let first = try await EngineHarness.make(config: config)
        await first.connect()
        _ = try await first.send(["action": "start"], timer: "a")
        for case .tracked(_, _, let token, _) in first.journal.all { await first.deliver(token) }
        await first.disconnect()
        await first.pass(1_000)  // finishes while disconnected: written, not published
        let h = try await first.restart(config: config)
        await h.connect()
        await h.engine.handle(.message(MQTTMessage(topic: h.topic("a", "state"), payload: Array(payload.utf8), qos: .atMostOnce, retain: true)))
        // Nothing was proven by it: the finished event still waits, and the node answers.
        #expect(try h.store.unpublishedEvents().map(\.type) == ["finished"])
        let list = try await h.send(["action": "list"])
        #expect(list["timers"]?.array?.first?["status"] == "finished", "\(list)")
    }
}

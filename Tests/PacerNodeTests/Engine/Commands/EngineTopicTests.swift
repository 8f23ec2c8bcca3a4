import Foundation
import PacerCore
@testable import PacerNode
import PacerTestSupport
import Testing
import PacerProtocol

/// The topics of docs/API.md in-process, with virtual time: exact instants instead of arrival
/// bounds. (TopicTests keeps what the broker delivers, and when.)
@Suite("Topics in-process")
struct EngineTopicTests {
    @Test("display text: 0:42, 12:05, 1:02:03; remaining in whole seconds, rounded up")
    func displayFormats() async throws {
        let h = try await EngineHarness.make()
        await h.connect()
        for (id, duration, remaining, display) in [
            ("a", "42s", "42", "0:42"), ("b", "12:05", "725", "12:05"), ("c", "1h2m3s", "3723", "1:02:03"), ("d", "1500ms", "2", "0:02"),
        ] {
            let start = h.journal.count
            let reply = try await h.send(["action": "create", "timer": .string(id), "spec": ["kind": "countdown", "duration": .string(duration)]])
            #expect(reply["ok"] == true, "\(reply)")
            #expect(h.published(h.topic(id, "display"), from: start).map(\.text) == [display])
            #expect(h.published(h.topic(id, "remaining"), from: start).map(\.text) == [remaining])
        }
    }

    @Test("each displayed second flips once, at its instant; unchanged plain topics are not republished")
    func secondFlips() async throws {
        let h = try await EngineHarness.make()
        await h.connect()
        try await h.send(["action": "create", "timer": "egg", "spec": ["kind": "countdown", "duration": "4s"]])
        let start = h.journal.count
        let started = try await h.send(["action": "start"], timer: "egg")
        let endsAt = try #require(started["state"]?["ends_at_ms"]?.int64)
        var seen: [(text: String, at: Millis)] = []
        for _ in 0..<5 {
            let before = h.journal.count
            await h.pass(1_000)
            for step in h.published(h.topic("egg", "remaining"), from: before) {
                seen.append((step.text, h.time.wall))
            }
        }
        // 4 was on the topic before the start: not republished; then 3, 2, 1, 0 once each,
        // each at the instant its second began (virtual time: exactly).
        #expect(seen.map(\.text) == ["3", "2", "1", "0"], "\(seen)")
        for (text, at) in seen {
            #expect(at == endsAt - Millis(text)! * 1000, "\(text) at \(at), ends at \(endsAt)")
        }
        #expect(h.published(h.topic("egg", "display"), from: start).map(\.text) == ["0:03", "0:02", "0:01", "0:00"])
        #expect(h.published(h.topic("egg", "rounds"), from: start).isEmpty)
        #expect(h.published(h.topic("egg", "round"), from: start).isEmpty)
        #expect(h.published(h.topic("egg", "phase"), from: start).map(\.text) == ["countdown", "finished"])
        #expect(h.state("egg")?["status"] == "finished")
    }
}

extension EngineStep {
    /// The payload of a publish as text.
    var text: String {
        switch self {
        case .publish(_, let payload, _), .tracked(_, let payload, _, _): String(decoding: payload, as: UTF8.self)
        default: ""
        }
    }
}

import PacerCore
import PacerProtocol
import Testing

/// `extend` on the wire: its JSON, its plain word, and the command written back as JSON.
@Suite("extend command")
struct ExtendCommandTests {
    let parser = CommandParser()

    func parse(_ text: String) -> Result<NodeCommand, ReplyError> { parser.parse(Array(text.utf8), timerID: "main") }

    @Test("seconds, rounds or both; the plain word takes seconds; written back as read")
    func accepted() throws {
        let both = try parse(#"{"action":"extend","seconds":60,"rounds":2}"#).get()
        #expect(both.request == .timer(id: "main", operation: .extend(seconds: 60, rounds: 2), spec: nil, name: nil))
        #expect(both.json == ["action": "extend", "seconds": 60, "rounds": 2])
        let rounds = try parse(#"{"action":"extend","rounds":1}"#).get()
        #expect(rounds.request == .timer(id: "main", operation: .extend(seconds: nil, rounds: 1), spec: nil, name: nil))
        #expect(try parse("extend 90").get().request == .timer(id: "main", operation: .extend(seconds: 90, rounds: nil), spec: nil, name: nil))
        #expect(TimerAction.words.contains("extend N"))
    }

    @Test("refused with what to send: nothing to add, zero, too much, another member")
    func refused() {
        for (text, code) in [(#"{"action":"extend"}"#, ReplyErrorCode.invalidArgument),
                             (#"{"action":"extend","seconds":0}"#, .invalidArgument),
                             (#"{"action":"extend","seconds":-5}"#, .invalidArgument),
                             (#"{"action":"extend","rounds":1001}"#, .invalidArgument),
                             (#"{"action":"extend","seconds":10,"spec":{}}"#, .invalidArgument),
                             ("extend", .unknownAction)] {
            guard case .failure(let error) = parse(text) else { Issue.record("accepted \(text)"); continue }
            #expect(error.code == code, "\(text): \(error)")
        }
        guard case .failure(let error) = parse(#"{"action":"extend"}"#) else { return }
        #expect(error.message.contains(#"{"action":"extend","seconds":60}"#))
    }

    @Test("the extended event's document carries seconds and rounds, and reads back")
    func event() throws {
        let event = TimerEvent(type: .extended, timer: "main", revision: 4, dueMs: 1_000, atMs: 1_001, phase: .work, seconds: 30, rounds: 6)
        #expect(event.json["type"] == "extended" && event.json["seconds"] == 30 && event.json["rounds"] == 6)
        #expect(TimerEvent(event: event.json) == event)
    }
}

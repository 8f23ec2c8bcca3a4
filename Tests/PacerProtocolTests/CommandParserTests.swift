import PacerCore
@testable import PacerProtocol
import Testing

/// The command parser: JSON objects and plain words, as the node reads them.
@Suite struct CommandParserTests {
    let parser = CommandParser(maxPayloadBytes: 1_024)

    private func parse(_ text: String, timer: String? = "main") -> Result<NodeCommand, ReplyError> {
        parser.parse(Array(text.utf8), timerID: timer)
    }

    private func error(_ text: String, timer: String? = "main") -> ReplyError? {
        if case .failure(let e) = parse(text, timer: timer) { return e }
        return nil
    }

    @Test func plainWords() throws {
        #expect(try parse("pause").get().request == .timer(id: "main", operation: .pause, spec: nil, name: nil))
        #expect(try parse(" Toggle\n").get().request == .timer(id: "main", operation: .toggle, spec: nil, name: nil))
        #expect(try parse("+30").get().request == .timer(id: "main", operation: .adjust(seconds: 30), spec: nil, name: nil))
        #expect(try parse("-10").get().request == .timer(id: "main", operation: .adjust(seconds: -10), spec: nil, name: nil))
        #expect(try parse("snooze").get().request == .timer(id: "main", operation: .snooze(seconds: 60), spec: nil, name: nil))
        #expect(try parse("snooze 120").get().request == .timer(id: "main", operation: .snooze(seconds: 120), spec: nil, name: nil))
        #expect(try parse("delete").get().request == .delete(id: "main"))
        #expect(error("jump")?.code == .unknownAction)
        #expect(error("+0")?.code == .invalidArgument)
        #expect(error("pause", timer: nil)?.code == .badJSON)  // words only on a timer topic
    }

    @Test func jsonCommandsCarryIdAtAndRevision() throws {
        let c = try parse(#"{"action":"pause","id":"r1","at":1795370400123,"if_revision":7}"#).get()
        #expect(c.requestID == "r1" && c.at == 1_795_370_400_123 && c.ifRevision == 7)
        #expect(c.request == .timer(id: "main", operation: .pause, spec: nil, name: nil))
        let adjust = try parse(#"{"action":"adjust","seconds":-15}"#).get()
        #expect(adjust.request == .timer(id: "main", operation: .adjust(seconds: -15), spec: nil, name: nil))
    }

    @Test func startWithSpecPresetOrSchedule() throws {
        let spec = try parse(#"{"action":"start","spec":{"kind":"countdown","duration":"5m"},"name":"Tea"}"#).get()
        #expect(spec.request == .timer(id: "main", operation: .start(spec: nil, startAt: nil, restart: false),
                                       spec: ["kind": "countdown", "duration": "5m"], name: "Tea"))
        let preset = try parse(#"{"action":"start","preset":"emom","rounds":12}"#).get()
        #expect(preset.request == .timer(id: "main", operation: .start(spec: nil, startAt: nil, restart: false),
                                         spec: ["preset": "emom", "rounds": 12], name: nil))
        let scheduled = try parse(#"{"action":"start","start_at":"2026-11-22T18:00:00Z","restart":true}"#).get()
        #expect(scheduled.request == .timer(id: "main", operation: .start(spec: nil, startAt: 1_795_370_400_000, restart: true), spec: nil, name: nil))
    }

    @Test func nodeCommands() throws {
        #expect(try parse(#"{"action":"list"}"#, timer: nil).get().request == .list)
        #expect(try parse(#"{"action":"time","id":"s"}"#, timer: nil).get().request == .time)
        #expect(try parse(#"{"action":"delete","timer":"k"}"#, timer: nil).get().request == .delete(id: "k"))
        #expect(try parse(#"{"action":"history","timer":"k","limit":5}"#, timer: nil).get().request == .history(timer: "k", sinceMs: nil, limit: 5))
        #expect(try parse(#"{"action":"create","timer":"k","spec":{"kind":"stopwatch"}}"#, timer: nil).get().request
                == .create(id: "k", name: nil, spec: ["kind": "stopwatch"]))
        #expect(try parse(#"{"action":"pause","timer":"k"}"#, timer: nil).get().request == .timer(id: "k", operation: .pause, spec: nil, name: nil))
    }

    @Test(arguments: [
        ("", ReplyErrorCode.badJSON),
        ("{not json", .badJSON),
        ("[1,2]", .badJSON),
        (#"{"id":"x"}"#, .unknownAction),
        (#"{"action":"explode"}"#, .unknownAction),
        (#"{"action":7}"#, .unknownAction),
        (#"{"action":"pause","at":"yesterday"}"#, .invalidArgument),
        (#"{"action":"pause","if_revision":1.5}"#, .invalidArgument),
        (#"{"action":"pause","seconds":3}"#, .invalidArgument),
        (#"{"action":"adjust"}"#, .invalidArgument),
        (#"{"action":"adjust","seconds":"10"}"#, .invalidArgument),
        (#"{"action":"adjust","seconds":100000}"#, .invalidArgument),
        (#"{"action":"start","spec":"tabata"}"#, .invalidSpec),
        (#"{"action":"start","spec":{},"preset":"tabata"}"#, .invalidArgument),
        (#"{"action":"start","name":"a\u0007b"}"#, .invalidArgument),
        (#"{"action":"pause","timer":"other"}"#, .invalidArgument),
        (#"{"action":"start","name":"Push/Pull"}"#, .invalidArgument),
        (#"{"action":"start","name":"a+b"}"#, .invalidArgument),
        (#"{"action":"start","name":""}"#, .invalidArgument),
    ])
    func badTimerCommands(text: String, code: ReplyErrorCode) {
        #expect(error(text)?.code == code, "\(text)")
    }

    @Test(arguments: ["a/b", "a+b", "a#", "-lead", "UPPER", String(repeating: "x", count: 65), ""])
    func badTimerIDs(id: String) {
        let payload = #"{"action":"pause","timer":"\#(id)"}"#
        #expect(error(payload, timer: nil)?.code == .invalidTimerID, "\(id)")
    }

    @Test func oversizedPayloadIsRefusedBeforeParsing() {
        let big = "{\"action\":\"pause\",\"pad\":\"" + String(repeating: "x", count: 2_000) + "\"}"
        #expect(error(big)?.code == .payloadTooLarge)
        #expect(parser.requestID(in: Array(#"{"action":"x","id":"r9"}"#.utf8)) == "r9")
    }

    @Test("JSON is read by JSONValue.parse: its reason and byte in the message; white space around it as before")
    func jsonErrorsAndWhiteSpace() throws {
        #expect(error(#"{"action":"pause""#)?.message
                == #"the command is not valid JSON (unexpected end of input at byte 17; expected ',' or '}'); send an object like {"action":"pause","id":"r1"}"#)
        #expect(error(#" {"action":"pause",}"#)?.message.contains("trailing comma at byte 18") == true)
        // A key given twice is refused, not resolved (Foundation kept the first value).
        let twice = error(#"{"action":"pause","action":"cancel"}"#)
        #expect(twice?.code == .badJSON)
        #expect(twice?.message == #"the command is ambiguous: the key "action" appears twice (byte 18); send each key once"#)
        // Invalid UTF-8 is refused where it is, not read with U+FFFD in its place.
        let bytes = Array(#"{"action":"create","timer":"k"#.utf8) + [0xFF, 0xFE] + Array(#"","spec":{"kind":"stopwatch"}}"#.utf8)
        func failure<T>(_ result: Result<T, ReplyError>) -> ReplyError? {
            if case .failure(let error) = result { return error }
            return nil
        }
        let refused = failure(parser.parse(bytes, timerID: nil))
        #expect(refused?.code == .badJSON)
        #expect(refused?.message.contains("invalid UTF-8 at byte 29") == true, "\(String(describing: refused))")
        // Unicode white space around a command (and vertical tab, form feed) is still trimmed.
        for text in ["\u{A0}{\"action\":\"pause\"}\u{2028}", "\u{B}{\"action\":\"pause\"}\u{C}", "\r\n\t {\"action\":\"pause\"} \n"] {
            #expect(try parse(text).get().request == .timer(id: "main", operation: .pause, spec: nil, name: nil), "\(text.debugDescription)")
        }
        #expect(error("\u{A0}{\"action\":\"pause\"\u{A0}")?.message.contains("unexpected end of input") == true)
        // The clock topic: the reason too.
        let clock = failure(parser.parseTimeRequest(Array(#"{"id":"a","id":"b"}"#.utf8), topic: "pacer/n/time"))
        #expect(clock?.code == .badJSON)
        #expect(clock?.message.contains(#"the key "id" appears twice"#) == true, "\(String(describing: clock))")
        #expect(try parser.parseTimeRequest(Array("  {\"id\":\"s1\"} ".utf8), topic: "t").get() == "s1")
        // The id of a malformed command is still read when it comes before the error, so the
        // error reply carries it; not when the error comes first.
        #expect(parser.requestID(in: Array(#"{"id":"r9","action":"pause",}"#.utf8)) == "r9")
        #expect(parser.requestID(in: Array(#"{"action":"pause",,"id":"r9"}"#.utf8)) == nil)
    }

    @Test func nodeTopicNeedsATimerForTimerActions() {
        #expect(error(#"{"action":"pause"}"#, timer: nil)?.code == .invalidArgument)
    }
}

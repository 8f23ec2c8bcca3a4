import PacerCore
import PacerTestSupport
import Testing

/// A bad command, where it is sent and the error code it must get.
struct BadInput: Sendable, CustomTestStringConvertible {
    var name: String
    var payload: [UInt8]
    /// nil: `<base>/cmd`; else the timer id of the topic `<base>/timers/<id>/cmd`.
    var timer: String?
    var code: String
    /// A word the message must contain (the field or value at fault), if any.
    var mentions: String?

    init(_ name: String, _ payload: String, timer: String? = nil, _ code: String, mentions: String? = nil) {
        self.name = name
        self.payload = Array(payload.utf8)
        self.timer = timer
        self.code = code
        self.mentions = mentions
    }

    var testDescription: String { name }
}

/// Bad input: every bad command the node must answer with one clear error and
/// no change (EngineBadInputTests sends each to an in-process engine).
enum BadInputCases {
    static let config = """
        limits:
          max_timers: 3
          max_payload_bytes: 1024
        """

    static var cases: [BadInput] {
        let countdown = #""spec":{"kind":"countdown","duration":"1m"}"#
        var cases: [BadInput] = [
            // Malformed JSON.
            .init("truncated JSON", #"{"action":"#, "bad_json", mentions: "end of input at byte 10"),
            .init("a trailing comma", #"{"action":"pause",}"#, timer: "keep", "bad_json", mentions: "trailing comma"),
            .init("a key given twice", #"{"action":"pause","action":"resume"}"#, timer: "keep", "bad_json", mentions: "appears twice"),
            .init("nesting 513 levels deep", #"{"action":"pause","x":"# + String(repeating: "[", count: 512),
                  timer: "keep", "bad_json", mentions: "deeper than 512"),
            .init("a JSON array", "[1,2,3]", "bad_json"),
            .init("a JSON string", #""start""#, "bad_json"),
            .init("null", "null", "bad_json"),
            .init("empty payload", "", "bad_json"),
            .init("truncated JSON on a timer topic", #"{"action":"pause""#, timer: "keep", "bad_json"),
            // Unknown actions.
            .init("unknown action", #"{"action":"explode"}"#, "unknown_action", mentions: "explode"),
            .init("no action", #"{"timer":"keep"}"#, "unknown_action", mentions: "action"),
            .init("unknown word", "explode", timer: "keep", "unknown_action", mentions: "explode"),
            .init("word with an argument", "pause now", timer: "keep", "unknown_action"),
            // Wrong types.
            .init("action is a number", #"{"action":7}"#, "unknown_action", mentions: "action"),
            .init("timer is a number", #"{"action":"create","timer":42,\#(countdown)}"#, "invalid_argument", mentions: "timer"),
            .init("at is text", #"{"action":"pause","timer":"keep","at":"yesterday"}"#, "invalid_argument", mentions: "at"),
            .init("if_revision is text", #"{"action":"pause","if_revision":"3"}"#, timer: "keep", "invalid_argument", mentions: "if_revision"),
            .init("seconds is text", #"{"action":"adjust","seconds":"ten"}"#, timer: "keep", "invalid_argument", mentions: "seconds"),
            .init("seconds is a fraction", #"{"action":"adjust","seconds":1.5}"#, timer: "keep", "invalid_argument", mentions: "seconds"),
            .init("restart is text", #"{"action":"start","restart":"yes"}"#, timer: "keep", "invalid_argument", mentions: "restart"),
            .init("spec is text", #"{"action":"start","spec":"tabata"}"#, timer: "fresh", "invalid_spec", mentions: "spec"),
            .init("duration is a boolean", #"{"action":"create","timer":"fresh","spec":{"kind":"countdown","duration":true}}"#, "invalid_spec", mentions: "duration"),
            .init("limit is text", #"{"action":"history","limit":"all"}"#, "invalid_argument", mentions: "limit"),
            .init("a field the action does not take", #"{"action":"pause","seconds":3}"#, timer: "keep", "invalid_argument", mentions: "seconds"),
            .init("timer differs from the topic", #"{"action":"pause","timer":"other"}"#, timer: "keep", "invalid_argument", mentions: "other"),
            .init("timer action without timer", #"{"action":"pause"}"#, "invalid_argument", mentions: "timer"),
            // Control characters in names and labels.
            .init("newline in a name", #"{"action":"create","timer":"fresh","name":"Kit\nchen",\#(countdown)}"#, "invalid_argument", mentions: "name"),
            .init("bell in a name", #"{"action":"start","name":"a\u0007b",\#(countdown)}"#, timer: "fresh", "invalid_argument", mentions: "name"),
            .init("tab in a label", #"{"action":"create","timer":"fresh","spec":{"kind":"countdown","duration":"1m","label":"a\tb"}}"#, "invalid_spec", mentions: "label"),
            .init("escape in an exercise", #"{"action":"create","timer":"fresh","spec":{"kind":"interval","work":"20s","exercises":["\u001b[2J"]}}"#, "invalid_spec", mentions: "exercises"),
            .init("control character in a timer id", #"{"action":"create","timer":"tab\tid",\#(countdown)}"#, "invalid_argument", mentions: "timer"),
            // MQTT topic characters in names.
            .init("slash in a name", #"{"action":"create","timer":"fresh","name":"Oven/1",\#(countdown)}"#, "invalid_argument", mentions: "name"),
            .init("plus in a name", #"{"action":"start","name":"A+B",\#(countdown)}"#, timer: "fresh", "invalid_argument", mentions: "name"),
            .init("hash in a name", ##"{"action":"create","timer":"fresh","name":"#1",\##(countdown)}"##, "invalid_argument", mentions: "name"),
            // Absurd durations and counts.
            .init("negative work", #"{"action":"create","timer":"fresh","spec":{"kind":"interval","work":"-5s"}}"#, "invalid_spec", mentions: "work"),
            .init("work of 999999 h", #"{"action":"create","timer":"fresh","spec":{"kind":"interval","work":"999999h"}}"#, "invalid_spec", mentions: "work"),
            .init("countdown of 8 days", #"{"action":"create","timer":"fresh","spec":{"kind":"countdown","duration":"8d"}}"#, "invalid_spec", mentions: "duration"),
            .init("duration 1e300", #"{"action":"create","timer":"fresh","spec":{"kind":"countdown","duration":1e300}}"#, "invalid_spec", mentions: "duration"),
            .init("zero duration", #"{"action":"create","timer":"fresh","spec":{"kind":"countdown","duration":"0s"}}"#, "invalid_spec", mentions: "duration"),
            .init("a million rounds", #"{"action":"create","timer":"fresh","spec":{"kind":"interval","work":"1s","rounds":1000000}}"#, "invalid_spec", mentions: "rounds"),
            .init("too many segments", #"{"action":"create","timer":"fresh","spec":{"kind":"interval","work":"1s","rest":"1s","rounds":1000,"sets":100}}"#, "invalid_spec", mentions: "segments"),
            .init("adjust by 100000 s", #"{"action":"adjust","seconds":100000}"#, timer: "keep", "invalid_argument", mentions: "seconds"),
            .init("snooze 0 s", #"{"action":"snooze","seconds":0}"#, timer: "keep", "invalid_argument", mentions: "seconds"),
            .init("start_at in 30 days", #"{"action":"start","start_at":\#(wallNowMs() + 30 * 86_400_000),\#(countdown)}"#, timer: "fresh", "invalid_argument", mentions: "start_at"),
            .init("unknown preset", #"{"action":"start","preset":"nonesuch"}"#, timer: "fresh", "invalid_spec", mentions: "nonesuch"),
            .init("unknown kind", #"{"action":"create","timer":"fresh","spec":{"kind":"sundial"}}"#, "invalid_spec", mentions: "sundial"),
            // Instants: the first killed the node inside ICU (Foundation's
            // ISO8601DateFormatter divided by zero on a long fraction). Each is now read by
            // PacerCore's own parser and refused with the field named.
            .init("start_at with a 131-digit fraction (the ICU crash)", #"{"action":"start","start_at":"2026-10-22T18:02:12.\#(String(repeating: "8", count: 130))3",\#(countdown)}"#, timer: "fresh", "invalid_argument", mentions: "start_at"),
            .init("start_at with a 10-digit fraction", #"{"action":"start","start_at":"2026-10-22T18:02:12.1234567890Z",\#(countdown)}"#, timer: "fresh", "invalid_argument", mentions: "at most 9"),
            .init("start_at in the year 0000", #"{"action":"start","start_at":"0000-01-01T00:00:00Z",\#(countdown)}"#, timer: "fresh", "invalid_argument", mentions: "year 0000"),
            .init("start_at in the year 9999", #"{"action":"start","start_at":"9999-01-01T00:00:00Z",\#(countdown)}"#, timer: "fresh", "invalid_argument", mentions: "2100-01-01"),
            .init("start_at with the offset +99:99", #"{"action":"start","start_at":"2026-10-22T18:02:12+99:99",\#(countdown)}"#, timer: "fresh", "invalid_argument", mentions: "+99:99"),
            .init("start_at in full-width digits", #"{"action":"start","start_at":"２０２６-10-22T18:02:12Z",\#(countdown)}"#, timer: "fresh", "invalid_argument", mentions: "ASCII"),
            .init("start_at without a time zone", #"{"action":"start","start_at":"2026-10-22T18:02:12",\#(countdown)}"#, timer: "fresh", "invalid_argument", mentions: "time zone"),
            .init("history since a long fraction", #"{"action":"history","since":"2026-10-22T18:02:12.\#(String(repeating: "9", count: 500))Z"}"#, "invalid_argument", mentions: "since"),
            .init("a word of control characters (echoed escaped)", "\u{2}\u{3}\u{1B}[2J", timer: "keep", "unknown_action", mentions: "\\u{1B}[2J"),
            // Found by the hostile suite (docs/RELIABILITY.md, "Hostile input").
            .init("list with a timer", #"{"action":"list","timer":"+"}"#, "invalid_argument", mentions: "timer"),
            .init("time with a timer", #"{"action":"time","timer":"keep"}"#, "invalid_argument", mentions: "timer"),
            .init("list on a timer's topic", #"{"action":"list"}"#, timer: "keep", "unknown_action", mentions: "node command"),
            .init("create on a timer's topic", #"{"action":"create",\#(countdown)}"#, timer: "keep", "unknown_action", mentions: "node command"),
            .init("a word on timers//cmd", "pause", timer: "", "invalid_timer_id", mentions: "timer level"),
            .init("JSON on timers//cmd", #"{"action":"pause"}"#, timer: "", "invalid_timer_id", mentions: "timer level"),
            .init("an invalid timer field names the field", #"{"action":"pause","timer":"a.b"}"#, "invalid_timer_id", mentions: "\"timer\""),
            .init("a blank name", #"{"action":"create","timer":"fresh","name":"   ",\#(countdown)}"#, "invalid_argument", mentions: "white space"),
            .init("a name with U+2028", #"{"action":"create","timer":"fresh","name":"a\u2028b",\#(countdown)}"#, "invalid_argument", mentions: "line breaks"),
            .init("for_time's cap is named as cap", #"{"action":"start","preset":"for_time","cap":"-1s"}"#, timer: "fresh", "invalid_spec", mentions: "cap must be"),
            .init("a number beyond a double names its key", #"{"action":"adjust","id":"big","seconds":1e309}"#, timer: "keep", "bad_json", mentions: "\"seconds\""),
            .init("a 13-digit duration is out of range", #"{"action":"create","timer":"fresh","spec":{"kind":"countdown","duration":"10000000000000h"}}"#, "invalid_spec", mentions: "out of range"),
            .init("a full-width date is not ASCII", #"{"action":"start","start_at":"２０２６-１１-２２T18:00:00Z",\#(countdown)}"#, timer: "fresh", "invalid_argument", mentions: "ASCII"),
            .init("a long unknown key is cut short", #"{"action":"list","\#(String(repeating: "k", count: 900))":1}"#, "invalid_argument", mentions: "…"),
            .init("adjust by a word with two signs", "--9223372036854775808", timer: "keep", "unknown_action"),
            .init("adjust by a word beyond Int", "+99999999999999999999999999", timer: "keep", "unknown_action"),
            // Oversized payloads (limit 1024 bytes here).
            .init("payload over the limit", #"{"action":"time","id":"big","pad":"\#(String(repeating: "x", count: 1_100))"}"#, "payload_too_large", mentions: "1024"),
            .init("payload over the limit on a timer topic", #"{"action":"pause","pad":"\#(String(repeating: "x", count: 2_000))"}"#, timer: "keep", "payload_too_large"),
            // Commands that do not apply now.
            .init("ack a paused timer", "ack", timer: "keep", "invalid_state", mentions: "keep"),
            .init("pause an unknown timer", "pause", timer: "nosuch", "unknown_timer", mentions: "nosuch"),
        ]
        var invalidUTF8 = BadInput("invalid UTF-8 in JSON", "", "bad_json", mentions: "invalid UTF-8 at byte 29")
        invalidUTF8.payload = Array(#"{"action":"create","timer":""#.utf8) + [0x6B, 0xFF, 0xFE] + Array(#"",\#(countdown)}"#.utf8)
        cases.append(invalidUTF8)
        // Timer ids outside [a-z0-9][a-z0-9_-]{0,63}, including topic characters.
        for id in ["Kitchen", "-lead", "_under", "a b", "a/b", "a+b", "a#b", "a.b", "küche", "", String(repeating: "a", count: 65)] {
            let escaped = JSONValue.string(id).description
            cases.append(.init("timer id \(escaped)", #"{"action":"create","timer":\#(escaped),\#(countdown)}"#, "invalid_timer_id"))
        }
        // On a timer topic whose id level is not a valid id (topics cannot hold + or #).
        for id in ["Kitchen", "-lead", "a.b"] {
            cases.append(.init("JSON start on timers/\(id)/cmd", #"{"action":"start",\#(countdown)}"#, timer: id, "invalid_timer_id"))
            cases.append(.init("word on timers/\(id)/cmd", "start", timer: id, "invalid_timer_id"))
        }
        return cases
    }

    // Every bad input, the payload limit and limits.max_timers are checked in-process
    // (Engine/EngineBadInputTests.swift); what needs a broker and a restart stays here.
}

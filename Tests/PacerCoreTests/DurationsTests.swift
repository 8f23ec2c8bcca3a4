import PacerCore
import Testing

@Suite("Durations and time formatting")
struct DurationsTests {
    @Test("parses every documented form", arguments: [
        ("90", 90_000), ("90s", 90_000), ("1m30s", 90_000), ("1h", 3_600_000), ("500ms", 500),
        ("1:30", 90_000), ("01:30:00", 5_400_000), ("0:00:01", 1000), ("1.5", 1500), ("1.5m", 90_000),
        ("1h 30m", 5_400_000), (" 2 min ", 120_000), ("7d", 604_800_000), ("2days", 172_800_000),
        ("PT1M30S", 90_000), ("1M30S", 90_000), ("-5", -5000), ("-5s", -5000), ("0", 0), ("0:30.25", 30_250),
        ("1s500ms", 1500), ("10 seconds", 10_000), ("3hrs", 10_800_000), ("0.001", 1),
    ] as [(String, Millis)])
    func parses(text: String, expected: Millis) throws {
        #expect(try Durations.parse(text) == expected)
    }

    @Test("rejects what is not a duration", arguments: ["", " ", "abc", "1x", "1:", ":30", "1:75", "1:2:3:4", "s", "1m30", "--5", "1..5s", "99999999999999999999"])
    func rejects(text: String) {
        #expect(throws: SpecError.self) { try Durations.parse(text) }
    }

    @Test func parseErrorNamesTheField() {
        do {
            _ = try Durations.parse(.string("soon"), field: "work")
            Issue.record("expected an error")
        } catch {
            #expect(error.field == "work")
            #expect(error.message == "work must be a duration like 90, \"90s\", \"1m30s\" or \"1:30\", got \"soon\"")
        }
        #expect(throws: SpecError(field: "rest", message: "rest must be a duration like 90, \"90s\", \"1m30s\" or \"1:30\", got true")) {
            try Durations.parse(.bool(true), field: "rest")
        }
    }

    @Test func jsonNumbersAreSeconds() throws {
        #expect(try Durations.parse(.number(90), field: "x") == 90_000)
        #expect(try Durations.parse(.number(0.5), field: "x") == 500)
        #expect(try Durations.parse(.number(-5), field: "x") == -5000)
        #expect(try Durations.parse(.string("1m"), field: "x") == 60_000)
        #expect(throws: SpecError.self) { try Durations.parse(.number(1e300), field: "x") }
    }

    @Test("display rounds remaining time up", arguments: [
        (42_000, "0:42"), (41_001, "0:42"), (41_000, "0:41"), (1, "0:01"), (0, "0:00"), (-500, "0:00"),
        (725_000, "12:05"), (3_723_000, "1:02:03"), (3_600_000, "1:00:00"), (59_999, "1:00"), (604_800_000, "168:00:00"),
    ] as [(Millis, String)])
    func displayRemaining(ms: Millis, text: String) {
        #expect(Durations.display(remainingMs: ms) == text)
    }

    @Test func displayOfSecondsAndElapsed() {
        #expect(Durations.display(seconds: 0) == "0:00")
        #expect(Durations.display(seconds: 42) == "0:42")
        #expect(Durations.display(seconds: 3723) == "1:02:03")
        #expect(Durations.display(seconds: -5) == "-0:05")
        #expect(Durations.display(elapsedMs: 1999) == "0:01")
        #expect(Durations.display(elapsedMs: 59_999) == "0:59")
    }

    @Test("describe for messages", arguments: [
        (5000, "5 s"), (604_800_000, "7 days"), (90_000, "1 m 30 s"), (0, "0 s"), (500, "500 ms"), (-5000, "-5 s"),
        (1500, "1.5 s"), (86_400_000, "1 day"), (3_600_000, "1 h"), (90_061_000, "1 day 1 h 1 m 1 s"), (1050, "1.05 s"),
    ] as [(Millis, String)])
    func describe(ms: Millis, text: String) {
        #expect(Durations.describe(ms) == text)
    }

    @Test func compactRoundTrips() throws {
        let samples: [Millis] = [0, 1, 999, 1000, 1500, 20_000, 90_000, 3_600_000, 3_723_456, 604_800_000, -5000, 86_400_001]
        for sample in samples {
            #expect(try Durations.parse(Durations.compact(sample)) == sample, "\(Durations.compact(sample))")
        }
        #expect(Durations.compact(90_000) == "1m30s")
        #expect(Durations.compact(500) == "500ms")
        #expect(Durations.compact(1500) == "1.5s")
        #expect(Durations.compact(604_800_000) == "7d")
    }

    @Test("ISO 8601 UTC with milliseconds", arguments: [
        (0, "1970-01-01T00:00:00.000Z"),
        (1_795_320_306_789, "2026-11-22T04:05:06.789Z"),
        (951_782_400_000, "2000-02-29T00:00:00.000Z"),
        (951_868_799_999, "2000-02-29T23:59:59.999Z"),
        (4_107_542_400_000, "2100-03-01T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (-2_208_988_800_000, "1900-01-01T00:00:00.000Z"),
    ] as [(Millis, String)])
    func iso(ms: Millis, text: String) {
        #expect(iso8601(ms: ms) == text)
    }

    @Test func isoAgreesWithDayArithmeticOverCenturies() {
        // Walk day by day across 1999...2401 and check the calendar stays consistent.
        var previous = iso8601(ms: 915_148_800_000)  // 1999-01-01
        #expect(previous == "1999-01-01T00:00:00.000Z")
        let daysInMonth = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        var ms: Millis = 915_148_800_000
        for _ in 0..<(402 * 366) {
            ms += 86_400_000
            let text = iso8601(ms: ms)
            let year = Int(text.prefix(4))!, month = Int(text.dropFirst(5).prefix(2))!, day = Int(text.dropFirst(8).prefix(2))!
            let py = Int(previous.prefix(4))!, pm = Int(previous.dropFirst(5).prefix(2))!, pd = Int(previous.dropFirst(8).prefix(2))!
            let leap = (py % 4 == 0 && py % 100 != 0) || py % 400 == 0
            let monthLength = pm == 2 && leap ? 29 : daysInMonth[pm - 1]
            if pd < monthLength {
                #expect(year == py && month == pm && day == pd + 1, "\(previous) -> \(text)")
            } else if pm < 12 {
                #expect(year == py && month == pm + 1 && day == 1, "\(previous) -> \(text)")
            } else {
                #expect(year == py + 1 && month == 1 && day == 1, "\(previous) -> \(text)")
            }
            previous = text
        }
    }
}

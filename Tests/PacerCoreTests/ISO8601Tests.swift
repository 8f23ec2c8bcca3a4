import Foundation
import PacerCore
import PacerTestSupport
import Testing

@Suite("ISO 8601 instants: PacerCore's strict reader")
struct ISO8601Tests {
    @Test("reads RFC 3339 texts", arguments: [
        ("1970-01-01T00:00:00Z", 0),
        ("2026-11-22T18:00:00Z", 1_795_370_400_000),
        ("2026-11-22T18:00:00.5Z", 1_795_370_400_500),
        ("2026-11-22T18:00:00.123Z", 1_795_370_400_123),
        ("2026-11-22T18:00:00.1234Z", 1_795_370_400_123),
        ("2026-11-22T18:00:00.1239Z", 1_795_370_400_123),
        ("2026-11-22T18:00:00.999999999Z", 1_795_370_400_999),
        ("9999-12-31T23:59:59.9997Z", 253_402_300_799_999),  // not rounded into the year 10000
        ("2026-11-22T19:00:00+01:00", 1_795_370_400_000),
        ("2026-11-22T13:30:00-04:30", 1_795_370_400_000),
        ("2026-11-22t18:00:00z", 1_795_370_400_000),
        ("2026-11-22 18:00:00Z", 1_795_370_400_000),
        ("2024-02-29T00:00:00Z", 1_709_164_800_000),
        ("2000-02-29T12:00:00Z", 951_825_600_000),
        ("0001-01-01T00:00:00Z", -62_135_596_800_000),
        ("9999-12-31T23:59:59.999Z", 253_402_300_799_999),
        ("1969-12-31T23:59:59Z", -1000),
        ("2026-01-01T00:00:00+23:59", 1_767_139_260_000),
    ] as [(String, Millis)])
    func reads(text: String, expected: Millis) {
        #expect(ISO8601.parse(text) == .success(expected))
    }

    @Test("refuses what is not an instant, saying why", arguments: [
        ("", "is empty"),
        ("2026-11-22T18:00:00", "has no time zone"),
        ("2026-11-22", "needs 'T' and the time after the date at character 11 (it ends there)"),
        ("2026-11-22T18:00Z", "needs ':' after the minutes at character 17 (found 'Z')"),
        ("26-11-22T18:00:00Z", "needs the year (4 digits) at character 3 (found '-')"),
        ("+02026-11-22T18:00:00Z", "needs the year (4 digits) at character 1 (found '+')"),
        ("-0001-01-01T00:00:00Z", "needs the year (4 digits) at character 1 (found '-')"),
        ("10000-01-01T00:00:00Z", "needs '-' after the year at character 5 (found '0')"),
        ("0000-01-01T00:00:00Z", "has the year 0000"),
        ("2026-13-01T00:00:00Z", "has the month 13"),
        ("2026-00-01T00:00:00Z", "has the month 00"),
        ("2026-11-31T00:00:00Z", "has the day 31; 2026-11 has 30 days"),
        ("2026-02-29T00:00:00Z", "has the day 29; 2026-02 has 28 days"),
        ("1900-02-29T00:00:00Z", "has the day 29; 1900-02 has 28 days"),
        ("2026-11-00T00:00:00Z", "has the day 00"),
        ("2026-11-22T24:00:00Z", "has the hour 24"),
        ("2026-11-22T18:60:00Z", "has the minute 60"),
        ("2026-12-31T23:59:60Z", "has the second 60"),
        ("2026-11-22T18:00:00+99:99", "has the offset +99:99; offsets go from -23:59 to +23:59"),
        ("2026-11-22T18:00:00-24:00", "has the offset -24:00"),
        ("2026-11-22T18:00:00+0100", "needs ':' in the offset, like +01:00 at character 23 (found '0')"),
        ("2026-11-22T18:00:00+01", "needs ':' in the offset, like +01:00 at character 23 (it ends there)"),
        ("2026-11-22T18:00:00.Z", "needs digits after the seconds' point at character 21 (found 'Z')"),
        ("2026-11-22T18:00:00.1234567890Z", "has 10 digits after the seconds' point; at most 9 are read"),
        ("2026-11-22T18:00:00ZZ", "needs nothing after the time zone at character 21 (found 'Z')"),
        ("2026-11-22T18:00:00Z ", "needs nothing after the time zone at character 21 (found byte 32)"),
        ("２０２６-11-22T18:00:00Z", "must be written in ASCII digits"),
        ("2026-11-22T18:00:00\u{0}Z", "needs Z or an offset like +01:00 after the time at character 20 (found byte 0)"),
        ("2026-11-22T18:00:00.\(String(repeating: "8", count: 130))3", "is longer than 35 characters"),
    ])
    func refuses(text: String, reason: String) {
        guard case .failure(let error) = ISO8601.parse(text) else {
            Issue.record("\(text.prefix(40)) was read as an instant")
            return
        }
        #expect(error.description.contains(reason), "\(error)")
    }

    /// The input that killed the node through Foundation's ISO8601DateFormatter (ICU's
    /// SimpleDateFormat::subParse divided by zero on it). Refused, never handed on.
    @Test func theICUCrashInputIsRefused() {
        let text = "2026-10-22T18:02:12." + String(repeating: "8", count: 130) + "3"
        guard case .failure(let error) = ISO8601.parse(text) else { Issue.record("read as an instant"); return }
        #expect(error.description.hasPrefix("is longer than 35 characters"))
        // 60 KB of fraction, or of anything: refused after reading 36 bytes.
        let huge = "2026-10-22T18:02:12." + String(repeating: "8", count: 60_000)
        #expect((try? ISO8601.parse(huge).get()) == nil)
    }

    @Test("every instant of years 0001-9999 written by iso8601(ms:) reads back to itself")
    func roundTrip() {
        var generator = SeededGenerator(seed: 25)
        let range: ClosedRange<Millis> = -62_135_596_800_000...253_402_300_799_999
        for ms in [range.lowerBound, range.upperBound, 0, -1, 951_782_400_000] + (0..<5000).map({ _ in Millis.random(in: range, using: &generator) }) {
            #expect(ISO8601.parse(iso8601(ms: ms)) == .success(ms), "\(iso8601(ms: ms))")
        }
    }

    @Test("agrees with Foundation's formatter on valid texts with offsets")
    func agreesWithFoundation() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var generator = SeededGenerator(seed: 25)
        for _ in 0..<2000 {
            let ms = Millis.random(in: 0...4_102_444_800_000, using: &generator)
            let offset = Int.random(in: -(23 * 60 + 59)...(23 * 60 + 59), using: &generator)
            // The local time of the offset, written with it (Foundation's formatter trapped when
            // given a time zone to write with, so only its reading is the oracle).
            let local = iso8601(ms: ms + Millis(offset) * 60_000).dropLast()  // without the Z
            let sign = offset < 0 ? "-" : "+"
            let hours = String(offset.magnitude / 60), minutes = String(offset.magnitude % 60)
            let text = local + sign + (hours.count < 2 ? "0" : "") + hours + ":" + (minutes.count < 2 ? "0" : "") + minutes
            let expected = formatter.date(from: text).map { Millis(($0.timeIntervalSince1970 * 1000).rounded()) }
            #expect(ISO8601.parse(text) == expected.map { .success($0) }, "\(text)")
        }
    }
}


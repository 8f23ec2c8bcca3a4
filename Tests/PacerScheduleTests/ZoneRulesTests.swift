import PacerCore
import Testing
@testable import PacerSchedule

/// Instants from ISO text (the oracle: PacerCore's own parser, not the zone rules).
func ms(_ text: String) -> Millis {
    switch ISO8601.parse(text) {
    case .success(let value): return value
    case .failure(let error): fatalError("bad instant \(text): \(error)")
    }
}

func date(_ text: String) -> LocalDate { LocalDate.parse(text)! }
func time(_ text: String) -> LocalTime { LocalTime.parse(text)! }
let london = ZoneRules(identifier: "Europe/London")!
let newYork = ZoneRules(identifier: "America/New_York")!

@Suite struct ZoneRulesTests {
    @Test func anOrdinaryTimeIsOneInstant() {
        #expect(london.resolve(date("2026-01-15"), time("06:30")) == .exact(ms("2026-01-15T06:30:00Z")))
        #expect(london.resolve(date("2026-07-15"), time("06:30")) == .exact(ms("2026-07-15T05:30:00Z")))
        #expect(newYork.resolve(date("2026-01-15"), time("18:00")) == .exact(ms("2026-01-15T23:00:00Z")))
    }

    @Test func aTimeInTheSpringGapStartsWhenTheGapEnds() {
        // New York: 02:00 EST becomes 03:00 EDT on 2026-03-08; 02:30 does not exist.
        #expect(newYork.resolve(date("2026-03-08"), time("02:30")) == .gap(ms("2026-03-08T03:00:00-04:00")))
        #expect(newYork.resolve(date("2026-03-08"), time("02:00")) == .gap(ms("2026-03-08T03:00:00-04:00")))
        #expect(newYork.resolve(date("2026-03-08"), time("03:00")) == .exact(ms("2026-03-08T03:00:00-04:00")))
        // London: 01:00 GMT becomes 02:00 BST on 2026-03-29; 01:30 does not exist.
        #expect(london.resolve(date("2026-03-29"), time("01:30")) == .gap(ms("2026-03-29T01:00:00Z")))
        #expect(london.local(ms("2026-03-29T01:00:00Z")).description == "2026-03-29T02:00")
    }

    @Test func aRepeatedTimeIsItsFirstOccurrence() {
        // New York: 02:00 EDT becomes 01:00 EST on 2026-11-01; 01:30 happens twice.
        #expect(newYork.resolve(date("2026-11-01"), time("01:30"))
                == .overlap(first: ms("2026-11-01T01:30:00-04:00"), second: ms("2026-11-01T01:30:00-05:00")))
        // London: 02:00 BST becomes 01:00 GMT on 2026-10-25.
        #expect(london.resolve(date("2026-10-25"), time("01:30")).instant == ms("2026-10-25T00:30:00Z"))
    }

    @Test func localDatesAndWeekdays() {
        #expect(date("2026-12-25").weekday == .friday)
        #expect(date("1970-01-01").weekday == .thursday)
        #expect(date("2024-02-29").description == "2024-02-29")
        #expect(LocalDate.parse("2026-02-29") == nil)
        #expect(LocalTime.parse("24:00") == nil)
        #expect(LocalTime.parse("24:00", allowingEndOfDay: true) == .endOfDay)
        #expect(LocalTime.parse("7:05")?.description == "07:05")
        #expect(LocalTime.parse("25:00") == nil)
        #expect(newYork.local(ms("2026-01-01T04:59:00Z")).description == "2025-12-31T23:59")
        for days in stride(from: Int64(-700_000), through: 2_900_000, by: 997) {
            let d = LocalDate(days: days)
            #expect(LocalDate(year: d.year, month: d.month, day: d.day) == d)
        }
    }

    @Test func unknownZonesAreRefused() {
        #expect(ZoneRules(identifier: "Europe/Lodnon") == nil)
        #expect(ZoneRules(identifier: "") == nil)
    }
}

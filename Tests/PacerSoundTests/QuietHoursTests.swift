import Foundation
import PacerCore
@testable import PacerSound
import Testing

/// Quiet hours, decided at each cue's due instant in an injected time zone: no clock, no sleeps.
@Suite("Quiet hours")
struct QuietHoursTests {
    /// The epoch instant of a local time of day in `zone` (the date of `day`, UTC midnight).
    func instant(_ time: String, day: Millis = 1_795_046_400_000, in zone: TimeZone) -> Millis {
        let local = day + QuietHours.time(time)!
        return local - Millis(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(local) / 1000))) * 1000
    }

    @Test("HH:MM parses from 00:00 to 24:00; anything else is refused")
    func times() {
        #expect(QuietHours.time("00:00") == 0)
        #expect(QuietHours.time("07:05") == Millis(7 * 60 + 5) * 60_000)
        #expect(QuietHours.time("24:00") == QuietHours.dayMs)
        for bad in ["24:01", "7:00", "07:60", "0700", "07:00:00", "", "aa:bb", "-1:00", "١٢:٠٠"] {
            #expect(QuietHours.time(bad) == nil, "\(bad)")
        }
    }

    @Test("a window within a day includes its start and excludes its end")
    func sameDay() {
        let w = QuietHours(fromMs: QuietHours.time("12:30")!, toMs: QuietHours.time("13:00")!)
        #expect(!w.contains(msOfDay: QuietHours.time("12:29")! + 59_999))
        #expect(w.contains(msOfDay: QuietHours.time("12:30")!))
        #expect(w.contains(msOfDay: QuietHours.time("13:00")! - 1))
        #expect(!w.contains(msOfDay: QuietHours.time("13:00")!))
    }

    @Test("a window that crosses midnight covers the evening and the morning, not the day")
    func acrossMidnight() {
        let w = QuietHours(fromMs: QuietHours.time("22:00")!, toMs: QuietHours.time("07:00")!)
        for inside in ["22:00", "23:59", "00:00", "03:00", "06:59"] {
            #expect(w.contains(msOfDay: QuietHours.time(inside)!), "\(inside)")
        }
        for outside in ["07:00", "12:00", "21:59"] {
            #expect(!w.contains(msOfDay: QuietHours.time(outside)!), "\(outside)")
        }
    }

    @Test("decided in the node's time zone at the cue's due instant, daylight saving time included")
    func timeZones() throws {
        var settings = SoundSettings()
        settings.quiet = [QuietHours(fromMs: QuietHours.time("22:00")!, toMs: QuietHours.time("07:00")!, cues: [.countdown, .expired])]
        let berlin = try #require(TimeZone(identifier: "Europe/Berlin"))
        let tokyo = try #require(TimeZone(identifier: "Asia/Tokyo"))
        settings.timeZone = berlin
        // 22:30 in Berlin, winter (UTC+1) and summer (UTC+2).
        let winter: Millis = 1_795_046_400_000  // 2026-11-18 00:00 UTC
        let summer: Millis = 1_781_740_800_000  // 2026-06-18 00:00 UTC
        for day in [winter, summer] {
            let late = instant("22:30", day: day, in: berlin)
            #expect(settings.isQuiet(.countdown, atMs: late))
            #expect(settings.isQuiet(.expired, atMs: late))
            #expect(!settings.isQuiet(.work, atMs: late), "a kind not listed plays")
            #expect(!settings.isQuiet(.countdown, atMs: instant("21:59", day: day, in: berlin)))
            #expect(settings.isQuiet(.countdown, atMs: instant("06:59", day: day, in: berlin)))
            #expect(!settings.isQuiet(.countdown, atMs: instant("07:00", day: day, in: berlin)))
        }
        // The same instant is 06:30 the next morning in Tokyo: quiet there too, but 07:30 is not.
        settings.timeZone = tokyo
        #expect(settings.isQuiet(.countdown, atMs: instant("06:30", in: tokyo)))
        #expect(!settings.isQuiet(.countdown, atMs: instant("07:30", in: tokyo)))
    }

    @Test("without quiet hours nothing is quiet")
    func none() {
        #expect(!SoundSettings().isQuiet(.expired, atMs: 0))
    }
}

import PacerCore

/// A day of the week, Monday first (ISO 8601 numbering: Monday is 1, Sunday 7).
public enum Weekday: Int, Sendable, Hashable, CaseIterable, Comparable {
    case monday = 1, tuesday, wednesday, thursday, friday, saturday, sunday

    /// The three-letter name the schedule language writes (`mon` … `sun`).
    public var name: String {
        switch self {
        case .monday: "mon"
        case .tuesday: "tue"
        case .wednesday: "wed"
        case .thursday: "thu"
        case .friday: "fri"
        case .saturday: "sat"
        case .sunday: "sun"
        }
    }

    public static func < (a: Weekday, b: Weekday) -> Bool { a.rawValue < b.rawValue }
}

/// A calendar date without a zone (the proleptic Gregorian calendar), kept as days since
/// 1970-01-01 so that the next day is `+ 1`.
public struct LocalDate: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Days since 1970-01-01.
    public var days: Int64

    public init(days: Int64) { self.days = days }

    /// The date `year`-`month`-`day`; nil when it is not one (`2026-02-30`).
    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month),
              (1...LocalDate.daysIn(month: month, year: year)).contains(day) else { return nil }
        days = LocalDate.daysFromCivil(Int64(year), Int64(month), Int64(day))
    }

    public var year: Int { Int(LocalDate.civil(days).year) }
    public var month: Int { Int(LocalDate.civil(days).month) }
    public var day: Int { Int(LocalDate.civil(days).day) }

    /// The day of the week (1970-01-01 was a Thursday).
    public var weekday: Weekday {
        let index = ((days + 3) % 7 + 7) % 7  // 0 = Monday
        return Weekday(rawValue: Int(index) + 1)!
    }

    public func adding(days count: Int64) -> LocalDate { LocalDate(days: days + count) }

    /// `2026-12-25`.
    public var description: String {
        let c = LocalDate.civil(days)
        return "\(pad(c.year, 4))-\(pad(c.month, 2))-\(pad(c.day, 2))"
    }

    public static func < (a: LocalDate, b: LocalDate) -> Bool { a.days < b.days }

    /// Reads `YYYY-MM-DD`; nil for anything else.
    public static func parse(_ text: String) -> LocalDate? {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
              let y = digits(bytes[0..<4]), let m = digits(bytes[5..<7]), let d = digits(bytes[8..<10])
        else { return nil }
        return LocalDate(year: y, month: m, day: d)
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a civil date (the era-based reckoning: 400-year eras of
    /// 146,097 days, years starting in March so that the leap day ends the year).
    static func daysFromCivil(_ year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The civil date of a count of days since 1970-01-01 (the inverse of `daysFromCivil`).
    static func civil(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

/// A time of day on the wall clock, to the minute: `06:30`. `24:00` (the end of the day)
/// is one only where a rule says so (a loop's `to`).
public struct LocalTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Minutes since midnight, 0…1440.
    public var minutes: Int

    public init?(hour: Int, minute: Int) {
        guard (0...23).contains(hour), (0...59).contains(minute) else { return nil }
        minutes = hour * 60 + minute
    }

    /// Midnight, `00:00`.
    public static let midnight = LocalTime(minutes: 0)

    init(minutes: Int) { self.minutes = minutes }

    /// The end of the day, `24:00`.
    public static let endOfDay = LocalTime(minutes: 1440)

    public var hour: Int { minutes / 60 }
    public var minute: Int { minutes % 60 }

    /// `06:30`.
    public var description: String { "\(pad(Int64(hour), 2)):\(pad(Int64(minute), 2))" }

    public static func < (a: LocalTime, b: LocalTime) -> Bool { a.minutes < b.minutes }

    /// Reads `HH:MM` (or `H:MM`); `24:00` only when `allowingEndOfDay`. Nil for anything else.
    public static func parse(_ text: String, allowingEndOfDay: Bool = false) -> LocalTime? {
        let bytes = Array(text.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), (1...2).contains(colon), bytes.count == colon + 3,
              let h = digits(bytes[0..<colon]), let m = digits(bytes[(colon + 1)...])
        else { return nil }
        if allowingEndOfDay, h == 24, m == 0 { return .endOfDay }
        return LocalTime(hour: h, minute: m)
    }
}

/// A wall-clock instant in a zone, to the minute: a date and a time of day. Sorted as
/// written, so `2026-12-24T18:00` < `2026-12-25T06:30`.
public struct LocalDateTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var date: LocalDate
    public var time: LocalTime

    public init(date: LocalDate, time: LocalTime) {
        self.date = date
        self.time = time
    }

    /// `2026-12-24T18:00`.
    public var description: String { "\(date)T\(time)" }

    public static func < (a: LocalDateTime, b: LocalDateTime) -> Bool {
        (a.date, a.time.minutes) < (b.date, b.time.minutes)
    }

    /// Reads `YYYY-MM-DDTHH:MM`.
    public static func parse(_ text: String) -> LocalDateTime? {
        let parts = text.split(separator: "T", omittingEmptySubsequences: false)
        guard parts.count == 2, let date = LocalDate.parse(String(parts[0])),
              let time = LocalTime.parse(String(parts[1])) else { return nil }
        return LocalDateTime(date: date, time: time)
    }
}

/// ASCII digits as a number; nil for anything else or an empty run.
func digits(_ bytes: ArraySlice<UInt8>) -> Int? {
    guard !bytes.isEmpty, bytes.count <= 9 else { return nil }
    var value = 0
    for byte in bytes {
        guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
        value = value * 10 + Int(byte - UInt8(ascii: "0"))
    }
    return value
}

/// `value` in decimal, zero-padded to `width` digits.
func pad(_ value: Int64, _ width: Int) -> String {
    let text = String(value)
    return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
}

extension Millis {
    /// Floor division: the whole `unit`s at or before `self` (negative instants included).
    func floorDiv(_ unit: Int64) -> Int64 {
        let q = self / unit
        return (self % unit != 0 && self < 0) ? q - 1 : q
    }
}

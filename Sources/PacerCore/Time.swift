/// Milliseconds: an instant (since the Unix epoch, on the node's timeline) or a duration.
///
/// PacerCore never reads a clock: every instant comes in as a parameter.
public typealias Millis = Int64

/// Formats an instant as ISO 8601 UTC with milliseconds: `2026-11-22T04:05:06.789Z`.
///
/// Pure arithmetic (days-to-civil), no Foundation, valid for any Int64 instant whose
/// year fits four digits; years outside 0...9999 are printed with a sign.
public func iso8601(ms: Millis) -> String {
    let msPerDay: Int64 = 86_400_000
    let days = floorDivide(ms, msPerDay)
    let msOfDay = ms - days * msPerDay
    let (year, month, day) = civil(fromDays: days)
    let hour = msOfDay / 3_600_000
    let minute = (msOfDay / 60_000) % 60
    let second = (msOfDay / 1000) % 60
    let milli = msOfDay % 1000
    let yearText: String
    if year >= 0 && year <= 9999 {
        yearText = pad(year, 4)
    } else {
        yearText = (year < 0 ? "-" : "+") + pad(year.magnitude, 6)
    }
    return "\(yearText)-\(pad(month, 2))-\(pad(day, 2))T\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2)).\(pad(milli, 3))Z"
}

/// Converts days since 1970-01-01 to a proleptic Gregorian (year, month, day).
///
/// The era-based algorithm: shift the epoch to 0000-03-01 so leap days fall at the end
/// of a (March-based) year, split into 400-year eras of 146,097 days, then derive the
/// year of the era, the day of the year and the month from it.
func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
    let shifted = days + 719_468                        // days since 0000-03-01
    let era = floorDivide(shifted, 146_097)
    let dayOfEra = shifted - era * 146_097              // 0...146096
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)   // 0...365, March-based
    let monthIndex = (5 * dayOfYear + 2) / 153          // 0 = March ... 11 = February
    let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
    let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
    let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    return (year, month, day)
}

/// Division rounding toward negative infinity.
func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
    let q = a / b
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q
}

/// Division rounding toward positive infinity (b > 0).
func ceilDivide(_ a: Int64, _ b: Int64) -> Int64 {
    -floorDivide(-a, b)
}

func pad<T: BinaryInteger>(_ value: T, _ width: Int) -> String {
    let text = String(value)
    return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
}

/// Formats an integer with thousands separators: `10,000`.
func grouped<T: BinaryInteger>(_ value: T) -> String {
    let digits = Array(String(value.magnitude))
    var out = ""
    for (offset, digit) in digits.enumerated() {
        if offset > 0 && (digits.count - offset) % 3 == 0 { out.append(",") }
        out.append(digit)
    }
    return (value < 0 ? "-" : "") + out
}

extension Millis {
    /// `self + delta`, saturating instead of trapping (anchors may hold sentinels).
    public func saturatingAdd(_ delta: Millis) -> Millis {
        let (sum, overflow) = addingReportingOverflow(delta)
        if !overflow { return sum }
        return delta > 0 ? .max : .min
    }
}

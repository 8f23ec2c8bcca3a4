/// Parsing and formatting of durations.
///
/// Accepted input (case-insensitive, surrounding spaces ignored, optional leading `-`):
/// - a plain number of seconds: `90`, `1.5`;
/// - numbers with units, in any combination: `90s`, `1m30s`, `1h`, `500ms`, `2d`,
///   `1.5m`, `1h 30m` (units: `ms`, `s`/`sec`/`second(s)`, `m`/`min`/`minute(s)`,
///   `h`/`hr`/`hour(s)`, `d`/`day(s)`);
/// - clock form: `1:30` (m:s), `01:30:00` (h:m:s), with an optional fraction on the seconds;
/// - ISO 8601 durations without dates: `PT1M30S`;
/// - in JSON, a number means seconds.
///
/// Output: `display` gives the clock text of the big digits (`0:42`, `12:05`, `1:02:03`);
/// `describe` gives the text of error messages (`5 s`, `1 m 30 s`, `7 days`); `compact`
/// gives the canonical spec spelling (`1m30s`, `500ms`), which `parse` reads back exactly.
public enum Durations {
    public static let secondMs: Millis = 1000
    public static let minuteMs: Millis = 60_000
    public static let hourMs: Millis = 3_600_000
    public static let dayMs: Millis = 86_400_000
    /// The longest duration anywhere in a spec: 7 days.
    public static let maxMs: Millis = 7 * dayMs

    /// Parses a duration in text (see the type's documentation for the forms).
    /// - Throws: `SpecError` with field `duration`.
    public static func parse(_ text: String) throws(SpecError) -> Millis {
        try parse(text, field: "duration")
    }

    /// Parses a duration in text, naming `field` in the error.
    public static func parse(_ text: String, field: String) throws(SpecError) -> Millis {
        guard let value = parseText(text) else {
            // Twelve digits or more in a row overflow every unit: a duration, too long.
            var run = 0, longest = 0
            for byte in text.utf8 { run = (0x30...0x39).contains(byte) ? run + 1 : 0; longest = max(longest, run) }
            if longest >= 12 {
                throw SpecError(field: field, message: "\(field) is out of range (durations go up to days, not years), got \"\(printable(text))\"")
            }
            throw SpecError(field: field, message: "\(field) must be a duration like 90, \"90s\", \"1m30s\" or \"1:30\", got \"\(printable(text, escapingQuotes: true))\"")
        }
        return value
    }

    /// Parses a JSON duration: a number of seconds (fractions allowed, rounded to the
    /// millisecond) or a string in any of the text forms.
    public static func parse(_ json: JSONValue, field: String) throws(SpecError) -> Millis {
        switch json {
        case .number(let seconds):
            guard seconds.isFinite, seconds.magnitude <= 1e12 else {
                throw SpecError(field: field, message: "\(field) is out of range, got \(json)")
            }
            return Millis((seconds * 1000).rounded())
        case .string(let text):
            return try parse(text, field: field)
        case .null, .bool, .array, .object:
            throw SpecError(field: field, message: "\(field) must be a duration like 90, \"90s\", \"1m30s\" or \"1:30\", got \(json)")
        }
    }

    // MARK: Formatting

    /// Whole seconds left, rounded up: 41,001 ms shows as 42; 0 or less as 0.
    public static func ceilSeconds(_ ms: Millis) -> Int64 {
        ms <= 0 ? 0 : ms / 1000 + (ms % 1000 == 0 ? 0 : 1)
    }

    /// Whole seconds elapsed, rounded down (stopwatches); negative as 0.
    public static func floorSeconds(_ ms: Millis) -> Int64 {
        ms <= 0 ? 0 : ms / 1000
    }

    /// Clock text of a remaining time, whole seconds rounded up: `0:42`, `12:05`, `1:02:03`.
    public static func display(remainingMs: Millis) -> String {
        display(seconds: ceilSeconds(remainingMs))
    }

    /// Clock text of an elapsed time, whole seconds rounded down (a stopwatch).
    public static func display(elapsedMs: Millis) -> String {
        display(seconds: floorSeconds(elapsedMs))
    }

    /// Clock text of whole seconds: `m:ss` below an hour, `h:mm:ss` from an hour on; a
    /// negative value gets a leading `-`.
    public static func display(seconds: Int64) -> String {
        let magnitude = seconds.magnitude
        let hours = magnitude / 3600
        let minutes = (magnitude % 3600) / 60
        let secs = magnitude % 60
        let text = hours > 0 ? "\(hours):\(pad(minutes, 2)):\(pad(secs, 2))" : "\(minutes):\(pad(secs, 2))"
        return seconds < 0 ? "-" + text : text
    }

    /// Text for messages: `0 s`, `500 ms`, `5 s`, `1.5 s`, `1 m 30 s`, `2 h`, `7 days`.
    public static func describe(_ ms: Millis) -> String {
        if ms < 0 { return "-" + describe(magnitude: ms.magnitude) }
        return describe(magnitude: ms.magnitude)
    }

    private static func describe(magnitude ms: UInt64) -> String {
        if ms == 0 { return "0 s" }
        if ms < 1000 { return "\(ms) ms" }
        let (days, hours, minutes, seconds, millis) = split(ms)
        var parts: [String] = []
        if days > 0 { parts.append(days == 1 ? "1 day" : "\(days) days") }
        if hours > 0 { parts.append("\(hours) h") }
        if minutes > 0 { parts.append("\(minutes) m") }
        if millis > 0 {
            parts.append("\(seconds).\(fraction(millis)) s")
        } else if seconds > 0 {
            parts.append("\(seconds) s")
        }
        return parts.joined(separator: " ")
    }

    /// The canonical spelling used in spec JSON: `20s`, `1m30s`, `1h`, `7d`, `500ms`,
    /// `1.5s`, `0s`. `parse(compact(x)) == x` for every x.
    public static func compact(_ ms: Millis) -> String {
        if ms < 0 { return "-" + compact(magnitude: ms.magnitude) }
        return compact(magnitude: ms.magnitude)
    }

    private static func compact(magnitude ms: UInt64) -> String {
        if ms == 0 { return "0s" }
        if ms < 1000 { return "\(ms)ms" }
        let (days, hours, minutes, seconds, millis) = split(ms)
        var out = ""
        if days > 0 { out += "\(days)d" }
        if hours > 0 { out += "\(hours)h" }
        if minutes > 0 { out += "\(minutes)m" }
        if millis > 0 {
            out += "\(seconds).\(fraction(millis))s"
        } else if seconds > 0 {
            out += "\(seconds)s"
        }
        return out
    }

    private static func split(_ ms: UInt64) -> (UInt64, UInt64, UInt64, UInt64, UInt64) {
        (ms / 86_400_000, ms / 3_600_000 % 24, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000)
    }

    /// Milliseconds as a decimal fraction without trailing zeros: 500 -> "5", 50 -> "05".
    private static func fraction(_ millis: UInt64) -> String {
        var text = pad(millis, 3)
        while text.hasSuffix("0") { text.removeLast() }
        return text
    }

    // MARK: Parsing

    private static func unitMs(_ word: Substring) -> Millis? {
        switch word {
        case "ms", "msec", "msecs", "millisecond", "milliseconds": 1
        case "s", "sec", "secs", "second", "seconds": secondMs
        case "m", "min", "mins", "minute", "minutes": minuteMs
        case "h", "hr", "hrs", "hour", "hours": hourMs
        case "d", "day", "days": dayMs
        default: nil
        }
    }

    /// A decimal number read from text: integer part and fraction digits.
    private struct Decimal {
        var whole: Int64
        var fraction: Int64
        var fractionDigits: Int

        /// `self × unit` in ms, rounded half up; nil on overflow.
        func times(_ unit: Millis) -> Millis? {
            let (product, overflow) = whole.multipliedReportingOverflow(by: unit)
            if overflow { return nil }
            guard fractionDigits > 0 else { return product }
            var scale: Int64 = 1
            for _ in 0..<fractionDigits { scale *= 10 }
            let (fracProduct, fracOverflow) = fraction.multipliedReportingOverflow(by: unit)
            if fracOverflow { return nil }
            let extra = (fracProduct + scale / 2) / scale
            let (sum, sumOverflow) = product.addingReportingOverflow(extra)
            return sumOverflow ? nil : sum
        }
    }

    /// Reads digits with an optional `.fraction` at `index`; nil if there are no digits.
    private static func readDecimal(_ chars: [Character], _ index: inout Int, allowFraction: Bool = true) -> Decimal? {
        var value = Decimal(whole: 0, fraction: 0, fractionDigits: 0)
        var sawDigit = false
        while index < chars.count, let digit = chars[index].wholeNumberValue, chars[index].isASCII {
            let (times10, o1) = value.whole.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(Int64(digit))
            if o1 || o2 { return nil }
            value.whole = sum
            sawDigit = true
            index += 1
        }
        if allowFraction, index < chars.count, chars[index] == "." {
            index += 1
            while index < chars.count, let digit = chars[index].wholeNumberValue, chars[index].isASCII {
                if value.fractionDigits < 9 {
                    value.fraction = value.fraction * 10 + Int64(digit)
                    value.fractionDigits += 1
                }
                sawDigit = true
                index += 1
            }
        }
        return sawDigit ? value : nil
    }

    private static func parseText(_ raw: String) -> Millis? {
        var chars = Array(raw.lowercased().filter { !$0.isWhitespace || $0 == " " })
        while chars.first == " " { chars.removeFirst() }
        while chars.last == " " { chars.removeLast() }
        var negative = false
        if chars.first == "-" || chars.first == "+" {
            negative = chars.first == "-"
            chars.removeFirst()
            while chars.first == " " { chars.removeFirst() }
        }
        guard !chars.isEmpty else { return nil }
        let magnitude: Millis?
        if chars.count >= 2 && chars[0] == "p" && chars[1] == "t" {
            magnitude = parseUnits(Array(chars.dropFirst(2)))
        } else if chars.contains(":") {
            magnitude = parseClock(chars)
        } else {
            var index = 0
            if let number = readDecimal(chars, &index), index == chars.count {
                magnitude = number.times(secondMs)
            } else {
                magnitude = parseUnits(chars)
            }
        }
        guard let magnitude else { return nil }
        return negative ? -magnitude : magnitude
    }

    /// `1m30s`, `1h 30m`, `500ms`, `1.5h`.
    private static func parseUnits(_ chars: [Character]) -> Millis? {
        var index = 0
        var total: Millis = 0
        var sawTerm = false
        while true {
            while index < chars.count, chars[index] == " " { index += 1 }
            if index == chars.count { break }
            guard let number = readDecimal(chars, &index) else { return nil }
            while index < chars.count, chars[index] == " " { index += 1 }
            let start = index
            while index < chars.count, chars[index].isLetter { index += 1 }
            guard index > start, let unit = unitMs(Substring(String(chars[start..<index]))),
                  let term = number.times(unit)
            else { return nil }
            let (sum, overflow) = total.addingReportingOverflow(term)
            if overflow { return nil }
            total = sum
            sawTerm = true
        }
        return sawTerm ? total : nil
    }

    /// `m:ss`, `h:mm:ss`; the seconds may carry a fraction.
    private static func parseClock(_ chars: [Character]) -> Millis? {
        let parts = chars.split(separator: ":", omittingEmptySubsequences: false).map(Array.init)
        guard parts.count == 2 || parts.count == 3 else { return nil }
        let units: [Millis] = parts.count == 2 ? [minuteMs, secondMs] : [hourMs, minuteMs, secondMs]
        var total: Millis = 0
        for (offset, part) in parts.enumerated() {
            let isLast = offset == parts.count - 1
            var index = 0
            guard let number = readDecimal(part, &index, allowFraction: isLast), index == part.count else { return nil }
            if offset > 0 && number.whole >= 60 { return nil }
            guard let term = number.times(units[offset]) else { return nil }
            let (sum, overflow) = total.addingReportingOverflow(term)
            if overflow { return nil }
            total = sum
        }
        return total
    }
}

/// Reads instants written as RFC 3339 / ISO 8601 text (`2026-11-22T18:00:00Z`,
/// `2026-11-22T19:00:00.250+01:00`) with a fixed grammar of our own: no Foundation, no ICU.
///
/// Outside text reaches this parser (a command's `start_at`, `since`): it reads at most
/// ``maxLength`` bytes (into one buffer of that size), each once, and cannot trap. The grammar:
///
///     YYYY-MM-DD ( T | t | space ) hh:mm:ss [ . 1 to 9 digits ] ( Z | z | (+|-)hh:mm )
///
/// Years 0001–9999, the proleptic Gregorian calendar, ASCII digits only. Seconds are 00–59
/// (the node's clock has no leap seconds). The offset is required: a time without one would
/// mean a different instant on every machine. The result is epoch milliseconds; digits past
/// the millisecond are dropped (an instant is never moved into the next second).
public enum ISO8601 {
    /// The longest text read: `2026-11-22T18:00:00.123456789+01:00`.
    public static let maxLength = 35

    /// Why a text is not an instant: a message a person can act on (it never echoes more
    /// than a few characters of the input).
    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// Parses `text` into epoch milliseconds.
    public static func parse<S: StringProtocol>(_ text: S) -> Result<Millis, ParseError> {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(maxLength)
        for byte in text.utf8 {
            guard byte < 0x80 else {
                return .failure(ParseError("must be written in ASCII digits, like 2026-11-22T18:00:00Z"))
            }
            guard bytes.count < maxLength else {
                return .failure(ParseError("is longer than \(maxLength) characters; write it like 2026-11-22T18:00:00Z (at most 9 digits after the seconds' point)"))
            }
            bytes.append(byte)
        }
        var reader = Reader(bytes: bytes)
        do {
            return .success(try reader.instant())
        } catch {
            return .failure(error)
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        mutating func instant() throws(ParseError) -> Millis {
            guard !bytes.isEmpty else { throw ParseError("is empty; write it like 2026-11-22T18:00:00Z") }
            let year = try number(4, "the year (4 digits)")
            try expect("-", "'-' after the year")
            let month = try number(2, "the month (2 digits)")
            try expect("-", "'-' after the month")
            let day = try number(2, "the day (2 digits)")
            guard index < bytes.count, [UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")].contains(bytes[index]) else {
                throw problem("'T' and the time after the date")
            }
            index += 1
            let hour = try number(2, "the hour (2 digits)")
            try expect(":", "':' after the hour")
            let minute = try number(2, "the minutes (2 digits)")
            try expect(":", "':' after the minutes")
            let second = try number(2, "the seconds (2 digits)")
            var milli: Int64 = 0
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                let start = index
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
                let digits = bytes[start..<index]
                guard !digits.isEmpty else { throw problem("digits after the seconds' point") }
                guard digits.count <= 9 else {
                    throw ParseError("has \(digits.count) digits after the seconds' point; at most 9 are read")
                }
                for (offset, digit) in digits.prefix(3).enumerated() {
                    milli += Int64(digit - UInt8(ascii: "0")) * [100, 10, 1][offset]
                }
                // Digits past the millisecond are dropped, not rounded: .9996 of the last second
                // of 9999 rounded up was a year 10000 (found by the instant target).
            }
            guard index < bytes.count else {
                throw ParseError("has no time zone; end it with Z (UTC) or an offset like +01:00")
            }
            var offsetMinutes: Int64 = 0
            switch bytes[index] {
            case UInt8(ascii: "Z"), UInt8(ascii: "z"):
                index += 1
            case UInt8(ascii: "+"), UInt8(ascii: "-"):
                let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
                index += 1
                let offsetHour = try number(2, "the offset's hours (2 digits, like +01:00)")
                try expect(":", "':' in the offset, like +01:00")
                let offsetMinute = try number(2, "the offset's minutes (2 digits, like +01:00)")
                guard offsetHour <= 23, offsetMinute <= 59 else {
                    throw ParseError("has the offset \(sign < 0 ? "-" : "+")\(pad(offsetHour, 2)):\(pad(offsetMinute, 2)); offsets go from -23:59 to +23:59")
                }
                offsetMinutes = sign * (offsetHour * 60 + offsetMinute)
            default:
                throw problem("Z or an offset like +01:00 after the time")
            }
            guard index == bytes.count else { throw problem("nothing after the time zone") }

            guard (1...9999).contains(year) else { throw ParseError("has the year 0000; years go from 0001 to 9999") }
            guard (1...12).contains(month) else { throw ParseError("has the month \(pad(month, 2)); months go from 01 to 12") }
            let monthDays = ISO8601.days(inMonth: month, year: year)
            guard (1...monthDays).contains(day) else {
                throw ParseError("has the day \(pad(day, 2)); \(pad(year, 4))-\(pad(month, 2)) has \(monthDays) days")
            }
            guard hour <= 23 else { throw ParseError("has the hour \(pad(hour, 2)); hours go from 00 to 23") }
            guard minute <= 59 else { throw ParseError("has the minute \(pad(minute, 2)); minutes go from 00 to 59") }
            guard second <= 59 else { throw ParseError("has the second \(pad(second, 2)); seconds go from 00 to 59 (no leap seconds)") }
            let days = ISO8601.days(year: year, month: month, day: day)
            let secondOfDay = hour * 3600 + minute * 60 + second
            return (days * 86_400 + secondOfDay - offsetMinutes * 60) * 1000 + milli
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

        /// `count` ASCII digits as a number.
        mutating func number(_ count: Int, _ what: String) throws(ParseError) -> Int64 {
            var value: Int64 = 0
            for _ in 0..<count {
                guard index < bytes.count, isDigit(bytes[index]) else { throw problem(what) }
                value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
                index += 1
            }
            return value
        }

        mutating func expect(_ character: Unicode.Scalar, _ what: String) throws(ParseError) {
            guard index < bytes.count, bytes[index] == UInt8(ascii: character) else { throw problem(what) }
            index += 1
        }

        /// "expected X at character N (found 'c')", the character shown only when printable.
        func problem(_ expected: String) -> ParseError {
            let found: String
            if index >= bytes.count {
                found = "it ends there"
            } else if (0x21...0x7E).contains(bytes[index]) {
                found = "found '\(Character(Unicode.Scalar(bytes[index])))'"
            } else {
                found = "found byte \(bytes[index])"
            }
            return ParseError("needs \(expected) at character \(index + 1) (\(found)); write it like 2026-11-22T18:00:00Z")
        }
    }

    static func isLeap(_ year: Int64) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    static func days(inMonth month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date: the inverse of `civil(fromDays:)`
    /// (the same March-based eras of 146,097 days).
    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDivide(y, 400)
        let yearOfEra = y - era * 400                              // 0...399
        let monthIndex = (month + 9) % 12                          // 0 = March ... 11 = February
        let dayOfYear = (153 * monthIndex + 2) / 5 + day - 1       // 0...365
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

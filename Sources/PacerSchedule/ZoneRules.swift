import Foundation
public import PacerCore

/// A time zone's rules as the timetable uses them: from a wall-clock date and time to the
/// instant it names, and back. Foundation's `TimeZone` (the IANA database) gives the offsets;
/// everything else is arithmetic.
///
/// **The rule for a local time the day does not have or has twice** (a DST change):
/// - A time in a gap (02:30 on the morning the clocks go forward from 02:00 to 03:00) names
///   the first instant after the gap: the class starts when the clocks show 03:00.
/// - A time that happens twice (01:30 on the morning the clocks go back from 02:00 to 01:00)
///   names its first occurrence only (01:30 summer time); the repeat starts nothing.
///
/// So every local time of every day names exactly one instant: a class is never doubled and
/// never silently dropped.
public struct ZoneRules: Sendable {
    /// The IANA name (`Europe/London`).
    public let identifier: String
    let zone: TimeZone

    /// The rules of the zone named `identifier`; nil when the system knows no such zone.
    public init?(identifier: String) {
        guard !identifier.isEmpty, identifier.utf8.count <= 64, let zone = TimeZone(identifier: identifier) else { return nil }
        self.identifier = identifier
        self.zone = zone
    }

    /// How a wall-clock date and time maps to instants.
    public enum Resolution: Sendable, Equatable {
        /// One instant (the usual case).
        case exact(Millis)
        /// The time falls in a gap; `Millis` is the first instant after it (the rule's choice).
        case gap(Millis)
        /// The time happens twice; `first` is the rule's choice, `second` is never used.
        case overlap(first: Millis, second: Millis)

        /// The instant the rule chooses.
        public var instant: Millis {
            switch self {
            case .exact(let t), .gap(let t), .overlap(let t, _): t
            }
        }
    }

    /// Seconds east of UTC at `instant`.
    public func offsetSeconds(at instant: Millis) -> Int64 {
        Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant.floorDiv(1000)))))
    }

    /// The instant that `time` on `date` names in this zone, by the rule above.
    public func resolve(_ date: LocalDate, _ time: LocalTime) -> Resolution {
        // The wall time read as if it were UTC, in seconds.
        let wall = date.days * 86_400 + Int64(time.minutes) * 60
        let before = offsetSeconds(at: (wall - 86_400) * 1000)
        let after = offsetSeconds(at: (wall + 86_400) * 1000)
        let middle = offsetSeconds(at: wall * 1000)
        var valid: [Int64] = []
        for offset in Set([before, middle, after]) where offsetSeconds(at: (wall - offset) * 1000) == offset {
            valid.append((wall - offset) * 1000)
        }
        valid.sort()
        if valid.count == 1 { return .exact(valid[0]) }
        if valid.count >= 2 { return .overlap(first: valid[0], second: valid[valid.count - 1]) }
        // A gap: the offset grows from `before` to `after` somewhere in (wall - after, wall - before].
        // The first instant with the new offset is the end of the gap.
        var low = wall - max(before, after)   // still the old offset
        var high = wall - min(before, after)  // already the new one
        let oldOffset = offsetSeconds(at: low * 1000)
        while high - low > 1 {
            let mid = low + (high - low) / 2
            if offsetSeconds(at: mid * 1000) == oldOffset { low = mid } else { high = mid }
        }
        return .gap(high * 1000)
    }

    /// The wall-clock date and time (to the minute, seconds dropped) at `instant`.
    public func local(_ instant: Millis) -> LocalDateTime {
        let seconds = instant.floorDiv(1000) + offsetSeconds(at: instant)
        let days = seconds.floorDiv(86_400)
        let minutes = Int((seconds - days * 86_400) / 60)
        return LocalDateTime(date: LocalDate(days: days), time: LocalTime(minutes: minutes))
    }

    /// The local date at `instant`.
    public func date(_ instant: Millis) -> LocalDate { local(instant).date }
}

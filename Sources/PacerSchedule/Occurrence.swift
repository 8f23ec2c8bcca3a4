public import PacerCore

/// One class of a schedule: its planned instant and the local date and time it was planned as.
///
/// Its identity is the schedule's id and the planned instant (`key`): the written outcome of a
/// decision names it, so nothing is decided twice.
public struct Occurrence: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The schedule's id.
    public var schedule: String
    /// The planned instant (epoch ms, UTC).
    public var instant: Millis
    /// The local date and time as planned: the rule's (a time in a DST gap keeps the time it
    /// was written with; it starts at the gap's end), or a loop class's own wall time.
    public var local: LocalDateTime
    /// The rule's time fell in a DST gap; `instant` is the gap's end.
    public var shifted: Bool
    /// An exception cancels it: it is decided as a skip at its instant.
    public var cancelled: Bool

    public init(schedule: String, instant: Millis, local: LocalDateTime, shifted: Bool = false, cancelled: Bool = false) {
        self.schedule = schedule
        self.instant = instant
        self.local = local
        self.shifted = shifted
        self.cancelled = cancelled
    }

    /// `<schedule>@<instant>`: the stable identity of the class.
    public var key: String { "\(schedule)@\(instant)" }

    public var description: String { "\(key) (\(local)\(shifted ? ", moved by DST" : "")\(cancelled ? ", cancelled" : ""))" }

    public static func < (a: Occurrence, b: Occurrence) -> Bool {
        (a.instant, a.schedule, a.local) < (b.instant, b.schedule, b.local)
    }
}

/// The occurrences a schedule's rules give in a zone, day by day. Pure and deterministic; it
/// remembers the days it worked out lately (a planner asks about the same few days at every
/// deadline).
struct ScheduleCalendar: Sendable {
    let schedule: Schedule
    let zone: ZoneRules
    /// Classes by the day their rule places them on (days since 1970-01-01), a few days only.
    private(set) var cache: [Int64: [Occurrence]] = [:]

    init(schedule: Schedule, zone: ZoneRules) {
        self.schedule = schedule
        self.zone = zone
    }

    /// `classes(openingOn:)`, remembered.
    mutating func day(_ date: LocalDate) -> [Occurrence] {
        if let known = cache[date.days] { return known }
        let found = classes(openingOn: date)
        if cache.count >= 16 {
            // Keep the days around the one asked for: the planner moves forward through time.
            cache = cache.filter { abs($0.key - date.days) <= 4 }
        }
        cache[date.days] = found
        return found
    }

    /// The classes whose rule places them on `date`: weekly and dated times on that date, and
    /// the classes of loop windows that open on it (for a loop that runs after each end, only the
    /// window's first class). Unsorted, not merged.
    func classes(openingOn date: LocalDate) -> [Occurrence] {
        var out: [Occurrence] = []
        func add(_ time: LocalTime) {
            let resolution = zone.resolve(date, time)
            let nominal = LocalDateTime(date: date, time: time)
            var shifted = false
            if case .gap = resolution { shifted = true }
            out.append(Occurrence(schedule: schedule.id, instant: resolution.instant, local: nominal, shifted: shifted,
                                  cancelled: schedule.isCancelled(nominal)))
        }
        for rule in schedule.weekly where rule.days.contains(date.weekday) {
            for time in rule.times { add(time) }
        }
        for rule in schedule.dates where rule.date == date {
            for time in rule.times { add(time) }
        }
        for loop in schedule.loops where loop.days.contains(date.weekday) {
            switch loop.pace {
            case .afterEnd:
                add(loop.from)
            case .every(let step):
                let window = self.window(of: loop, openingOn: date)
                let fromOffset = zone.offsetSeconds(at: window.from)
                let steady = fromOffset == zone.offsetSeconds(at: window.to - 1)
                var instant = window.from
                while instant < window.to {
                    let local = steady ? Self.local(instant, offsetSeconds: fromOffset) : zone.local(instant)
                    // The window's first class keeps the time it was written with (a `from` in a gap).
                    let nominal = instant == window.from ? LocalDateTime(date: date, time: loop.from) : local
                    let shifted = instant == window.from && window.fromShifted
                    out.append(Occurrence(schedule: schedule.id, instant: instant, local: nominal, shifted: shifted,
                                          cancelled: schedule.isCancelled(local) || schedule.isCancelled(nominal)))
                    instant += step
                }
            }
        }
        return out
    }

    /// The instants a loop's window opening on `date` spans: [from, to).
    func window(of loop: LoopRule, openingOn date: LocalDate) -> (from: Millis, to: Millis, fromShifted: Bool) {
        let from = zone.resolve(date, loop.from)
        var shifted = false
        if case .gap = from { shifted = true }
        let toDate = loop.endsNextDay ? date.adding(days: 1) : date
        let to = zone.resolve(toDate, loop.to == .endOfDay ? LocalTime(minutes: 0) : loop.to)
        return (from.instant, to.instant, shifted)
    }

    /// Whether `instant` lies in one of the chain loop's windows, and the local date and time
    /// there (the nominal of a chained class). Nil outside every window or on a cancelled day.
    func chainClass(at instant: Millis, loop: LoopRule) -> Occurrence? {
        let local = zone.local(instant)
        // A window containing `instant` opened on its date or the day before.
        for opening in [local.date, local.date.adding(days: -1)] where loop.days.contains(opening.weekday) {
            let window = self.window(of: loop, openingOn: opening)
            if instant >= window.from && instant < window.to {
                return Occurrence(schedule: schedule.id, instant: instant, local: local, shifted: false,
                                  cancelled: schedule.isCancelled(local))
            }
        }
        return nil
    }

    static func local(_ instant: Millis, offsetSeconds: Int64) -> LocalDateTime {
        let seconds = instant.floorDiv(1000) + offsetSeconds
        let days = seconds.floorDiv(86_400)
        return LocalDateTime(date: LocalDate(days: days), time: LocalTime(minutes: Int((seconds - days * 86_400) / 60)))
    }

    /// The classes of the rules (chained runs excepted) with instants in `(after, through]`,
    /// sorted, one per instant (classes of two rules at one instant are one class, cancelled only
    /// when every rule's is).
    mutating func classes(after: Millis, through: Millis) -> [Occurrence] {
        guard through > after else { return [] }
        let first = zone.date(after).adding(days: -1)
        let last = zone.date(through)
        var found: [Occurrence] = []
        var day = first
        while day <= last {
            for occurrence in self.day(day) where occurrence.instant > after && occurrence.instant <= through {
                found.append(occurrence)
            }
            day = day.adding(days: 1)
        }
        return Self.merged(found)
    }

    /// The first class (chained runs excepted) after `after` that `accept` takes, looking at
    /// most `horizonDays` ahead for the weekly and loop rules (dated classes: any date).
    mutating func firstClass(after: Millis, horizonDays: Int64 = 9, accept: (Occurrence) -> Bool = { _ in true }) -> Occurrence? {
        let startDay = zone.date(after).adding(days: -1)
        var best: Occurrence?
        func consider(_ occurrence: Occurrence) {
            guard occurrence.instant > after, accept(occurrence) else { return }
            if let current = best, current.instant <= occurrence.instant {
                if current.instant == occurrence.instant, !occurrence.cancelled { best?.cancelled = false }
                return
            }
            best = occurrence
        }
        if !schedule.weekly.isEmpty || !schedule.loops.isEmpty {
            var day = startDay
            while day.days - startDay.days <= horizonDays + 1 {
                for occurrence in self.day(day) { consider(occurrence) }
                // A class of a later day starts at or after that day's midnight, less a DST hour or two.
                if let found = best,
                   zone.resolve(day.adding(days: 1), LocalTime(minutes: 0)).instant - 3 * Durations.hourMs > found.instant {
                    return found
                }
                day = day.adding(days: 1)
            }
        }
        for date in Set(schedule.dates.map(\.date)).filter({ $0 >= startDay }).sorted() {
            if let found = best, zone.resolve(date, LocalTime(minutes: 0)).instant - 3 * Durations.hourMs > found.instant {
                break
            }
            for occurrence in self.day(date) { consider(occurrence) }
        }
        return best
    }

    static func merged(_ classes: [Occurrence]) -> [Occurrence] {
        let sorted = classes.sorted()
        var out: [Occurrence] = []
        out.reserveCapacity(sorted.count)
        for occurrence in sorted {
            if let last = out.last, last.instant == occurrence.instant {
                if !occurrence.cancelled { out[out.count - 1].cancelled = false }
                continue
            }
            out.append(occurrence)
        }
        return out
    }
}

public import PacerCore

/// One problem of a schedule as written: where (`schedules[0].weekly[1].at`) and what to write.
public struct ScheduleProblem: Sendable, Equatable, CustomStringConvertible {
    /// The key path, from the key the caller gave (`schedules[0]`, `schedule`).
    public var key: String
    public var reason: String

    public init(key: String, reason: String) {
        self.key = key
        self.reason = reason
    }

    /// `schedules[0].weekly[1].at: "25:00" is not a time of day; write HH:MM`.
    public var description: String { "\(key): \(reason)" }
}

/// A schedule (or a list of them) that cannot be used: every problem found, not only the first.
public struct ScheduleError: Error, Sendable, Equatable, CustomStringConvertible {
    public var problems: [ScheduleProblem]
    public var description: String { problems.map(\.description).joined(separator: "\n") }
}

extension Schedule {
    /// Reads the `schedules:` list of a configuration file (as JSON: the file's YAML read as
    /// values), checking each schedule, the ids' uniqueness and `ScheduleLimits.maxSchedules`.
    /// - Parameters:
    ///   - key: the list's key in messages (`schedules`).
    ///   - presets: the presets a `spec` may name (the configuration's and the saved workouts).
    public static func parseList(_ json: JSONValue, key: String = "schedules",
                                 presets: [String: JSONValue] = [:]) -> Result<[Schedule], ScheduleError> {
        var reader = ScheduleReader(presets: presets)
        guard let items = json.array else {
            reader.fail(key, "expected a list of schedules, like [{id: hiit, timer: main, preset: tabata, weekly: [...]}]")
            return .failure(ScheduleError(problems: reader.problems))
        }
        if items.count > ScheduleLimits.maxSchedules {
            reader.fail(key, "at most \(ScheduleLimits.maxSchedules) schedules, got \(items.count); merge rules into fewer schedules")
        }
        var schedules: [Schedule] = []
        var seen: [String: Int] = [:]
        for (index, item) in items.enumerated() {
            guard let schedule = reader.schedule(item, key: "\(key)[\(index)]") else { continue }
            if let first = seen[schedule.id] {
                reader.fail("\(key)[\(index)].id", "'\(schedule.id)' is the id of \(key)[\(first)] too; give each schedule its own id")
                continue
            }
            seen[schedule.id] = index
            schedules.append(schedule)
        }
        return reader.problems.isEmpty ? .success(schedules) : .failure(ScheduleError(problems: reader.problems))
    }

    /// Reads one schedule (a `save_schedule` command's `schedule`, or one entry of the list).
    public static func parse(_ json: JSONValue, key: String = "schedule",
                             presets: [String: JSONValue] = [:]) -> Result<Schedule, ScheduleError> {
        var reader = ScheduleReader(presets: presets)
        let schedule = reader.schedule(json, key: key)
        if let schedule, reader.problems.isEmpty { return .success(schedule) }
        return .failure(ScheduleError(problems: reader.problems))
    }
}

/// Reads schedules, collecting problems with their key.
struct ScheduleReader {
    let presets: [String: JSONValue]
    var problems: [ScheduleProblem] = []

    mutating func fail(_ key: String, _ reason: String) {
        problems.append(ScheduleProblem(key: key, reason: reason))
    }

    /// A short quote of a value for messages: `"25:00"`, `42`, `a list`.
    static func quote(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): "\"\(printable(text, escapingQuotes: true))\""
        case .array: "a list"
        case .object: "a mapping"
        case .null, .bool, .number: printable(value.description)
        }
    }

    /// The members of an object, reporting unknown keys; nil (reported) when not an object.
    mutating func object(_ value: JSONValue, key: String, known: [ScheduleField], example: String) -> [String: JSONValue]? {
        guard case .object(let members) = value else {
            fail(key, "expected a mapping, like \(example); got \(Self.quote(value))")
            return nil
        }
        let names = Set(known.map(\.rawValue))
        for name in members.keys.sorted() where !names.contains(name) {
            fail("\(key).\(printable(name))", "unknown key; expected one of: \(known.map(\.rawValue).sorted().joined(separator: ", "))")
        }
        return members
    }

    /// A value that may be one item or a list of them.
    func list(_ value: JSONValue) -> [(JSONValue, String)] {
        if case .array(let items) = value { return items.enumerated().map { ($0.element, "[\($0.offset)]") } }
        return [(value, "")]
    }

    mutating func schedule(_ value: JSONValue, key: String) -> Schedule? {
        guard let o = object(value, key: key, known: ScheduleField.ofSchedule,
                             example: "{id: hiit, name: HIIT 45, timer: main, preset: tabata, weekly: [{days: [mon, wed], at: \"18:00\"}]}")
        else { return nil }
        let problemsBefore = problems.count
        let id = identifier(o[.id], key: "\(key).id", what: "the schedule's id", example: "hiit-morning")
        var name = id ?? ""
        if let value = o[.name] {
            if let text = value.string {
                do { try TimerMachine.validateName(text); name = text } catch { fail("\(key).name", error.message) }
            } else {
                fail("\(key).name", "expected text, like \"HIIT 45\"; got \(Self.quote(value))")
            }
        }
        let timer = identifier(o[.timer], key: "\(key).timer", what: "the timer the classes start on", example: "main")
        let workout = self.workout(o, key: key)
        var timeZone: String?
        if let value = o[.timeZone] {
            if let text = value.string, ZoneRules(identifier: text) != nil {
                timeZone = text
            } else {
                fail("\(key).time_zone", "\(Self.quote(value)) is not a time zone this system knows; write an IANA name like Europe/London or America/New_York")
            }
        }
        var grace = ScheduleLimits.defaultGraceMs
        if let value = o[.grace] {
            do {
                let ms = try Durations.parse(value, field: "grace")
                if ScheduleLimits.graceRange.contains(ms) {
                    grace = ms
                } else {
                    fail("\(key).grace", "grace must be between \(Durations.describe(ScheduleLimits.graceRange.lowerBound)) and \(Durations.describe(ScheduleLimits.graceRange.upperBound)), got \(Durations.describe(ms))")
                }
            } catch {
                fail("\(key).grace", error.message + " (how late a class may still start, like 5m)")
            }
        }
        var enabled = true
        if let value = o[.enabled] {
            if let flag = value.bool { enabled = flag } else { fail("\(key).enabled", "expected true or false, got \(Self.quote(value))") }
        }
        var weekly: [WeeklyRule] = []
        for (item, index) in listOf(o[.weekly], key: "\(key).weekly") {
            let k = "\(key).weekly\(index)"
            guard let r = object(item, key: k, known: [.days, .at], example: "{days: [mon, wed, fri], at: [\"06:30\", \"18:00\"]}") else { continue }
            let days = self.days(r[.days], key: "\(k).days", required: true)
            let times = self.times(r[.at], key: "\(k).at")
            if let days, let times { weekly.append(WeeklyRule(days: days, times: times)) }
        }
        var dates: [DatedRule] = []
        for (item, index) in listOf(o[.dates], key: "\(key).dates") {
            let k = "\(key).dates\(index)"
            guard let r = object(item, key: k, known: [.date, .at], example: "{date: 2026-12-24, at: \"10:00\"}") else { continue }
            let date = self.date(r[.date], key: "\(k).date")
            let times = self.times(r[.at], key: "\(k).at")
            if let date, let times { dates.append(DatedRule(date: date, times: times)) }
        }
        var loops: [LoopRule] = []
        for (item, index) in listOf(o[.loops], key: "\(key).loops") {
            if let loop = self.loop(item, key: "\(key).loops\(index)") { loops.append(loop) }
        }
        var exceptions: [ScheduleException] = []
        for (item, index) in listOf(o[.except], key: "\(key).except") {
            if let exception = self.exception(item, key: "\(key).except\(index)") { exceptions.append(exception) }
        }
        let rules = weekly.count + dates.count + loops.count
        if rules == 0 && problems.count == problemsBefore {
            fail(key, "no classes: give weekly, dates or loops, like weekly: [{days: [mon, wed], at: \"18:00\"}]")
        }
        if rules > ScheduleLimits.maxRules {
            fail(key, "at most \(ScheduleLimits.maxRules) rules (weekly, dates and loops together), got \(rules); split it into more schedules")
        }
        if exceptions.count > ScheduleLimits.maxExceptions {
            fail("\(key).except", "at most \(ScheduleLimits.maxExceptions) exceptions, got \(exceptions.count); use ranges ({from: 2026-12-24, to: 2027-01-01})")
        }
        let chains = loops.filter { if case .afterEnd = $0.pace { return true } else { return false } }.count
        if chains > 0 && rules > 1 {
            fail("\(key).loops", "a loop that starts again after each end (after) must be the schedule's only rule; put the other classes in a schedule of their own")
        }
        guard problems.count == problemsBefore, let id, let timer, let workout else { return nil }
        return Schedule(id: id, name: name, timer: timer, workout: workout, timeZone: timeZone, graceMs: grace,
                        enabled: enabled, weekly: weekly, dates: dates, loops: loops, exceptions: exceptions)
    }

    /// The items of an optional list member.
    mutating func listOf(_ value: JSONValue?, key: String) -> [(JSONValue, String)] {
        guard let value else { return [] }
        guard case .array(let items) = value else {
            fail(key, "expected a list, got \(Self.quote(value))")
            return []
        }
        return items.enumerated().map { ($0.element, "[\($0.offset)]") }
    }

    mutating func identifier(_ value: JSONValue?, key: String, what: String, example: String) -> String? {
        guard let value else {
            fail(key, "missing: give \(what), like \(example)")
            return nil
        }
        guard let text = value.string else {
            fail(key, "expected \(what) as text, like \(example); got \(Self.quote(value))")
            return nil
        }
        do {
            try TimerMachine.validateID(text)
        } catch {
            fail(key, "\(Self.quote(value)) is not an id: 1 to 64 characters of a-z, 0-9, '_' and '-', starting with a letter or digit")
            return nil
        }
        return text
    }

    mutating func workout(_ o: [String: JSONValue], key: String) -> ScheduleWorkout? {
        let given = [ScheduleField.workout, .preset, .spec].filter { o[$0] != nil }
        guard given.count == 1, let field = given.first, let value = o[field] else {
            if given.isEmpty {
                fail(key, "missing what to start: give workout (a saved workout's id), preset (like tabata) or spec (like {kind: interval, work: 40s, rest: 20s, rounds: 8})")
            } else {
                fail(key, "give one of workout, preset and spec, not \(given.map(\.rawValue).joined(separator: " and "))")
            }
            return nil
        }
        switch field {
        case .workout:
            return identifier(value, key: "\(key).workout", what: "a saved workout's id", example: "hiit45").map(ScheduleWorkout.workout)
        case .preset:
            return identifier(value, key: "\(key).preset", what: "a preset's name", example: "tabata").map(ScheduleWorkout.preset)
        default:
            guard case .object = value else {
                fail("\(key).spec", "expected a spec mapping, like {kind: interval, work: 40s, rest: 20s, rounds: 8}; got \(Self.quote(value))")
                return nil
            }
            do {
                _ = try TimerSpec(json: value, presets: presets)
                return .spec(value)
            } catch {
                fail("\(key).spec.\(error.field)", error.message)
                return nil
            }
        }
    }

    mutating func days(_ value: JSONValue?, key: String, required: Bool) -> Set<Weekday>? {
        guard let value else {
            if required { fail(key, "missing: give the days, like [mon, wed, fri], weekdays, weekends or daily") }
            return required ? nil : Set(Weekday.allCases)
        }
        var days: Set<Weekday> = []
        var ok = true
        for (item, index) in list(value) {
            guard let word = item.string, let found = Self.dayWords[word.lowercased()] else {
                fail("\(key)\(index)", "\(Self.quote(item)) is not a day; write mon, tue, wed, thu, fri, sat, sun, weekdays, weekends or daily")
                ok = false
                continue
            }
            days.formUnion(found)
        }
        if ok && days.isEmpty { fail(key, "list at least one day, like [mon, wed, fri]") }
        return ok && !days.isEmpty ? days : nil
    }

    static let dayWords: [String: Set<Weekday>] = {
        var words: [String: Set<Weekday>] = [:]
        let full = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
        for (day, name) in zip(Weekday.allCases, full) {
            words[day.name] = [day]
            words[name] = [day]
        }
        words["weekdays"] = [.monday, .tuesday, .wednesday, .thursday, .friday]
        words["weekends"] = [.saturday, .sunday]
        words["weekend"] = [.saturday, .sunday]
        words["daily"] = Set(Weekday.allCases)
        return words
    }()

    mutating func time(_ value: JSONValue?, key: String, allowingEndOfDay: Bool = false) -> LocalTime? {
        guard let value else {
            fail(key, "missing: give a time of day, like \"06:30\"")
            return nil
        }
        guard let text = value.string, let time = LocalTime.parse(text, allowingEndOfDay: allowingEndOfDay) else {
            fail(key, "\(Self.quote(value)) is not a time of day; write HH:MM\(allowingEndOfDay ? " (00:00 to 24:00)" : " (00:00 to 23:59)")")
            return nil
        }
        return time
    }

    mutating func times(_ value: JSONValue?, key: String) -> [LocalTime]? {
        guard let value else {
            fail(key, "missing: give the times of day, like [\"06:30\", \"18:00\"]")
            return nil
        }
        let items = list(value)
        if items.isEmpty { fail(key, "list at least one time of day, like [\"06:30\"]"); return nil }
        if items.count > ScheduleLimits.maxTimesPerRule {
            fail(key, "at most \(ScheduleLimits.maxTimesPerRule) times in one rule, got \(items.count); use a loop (every) for classes at a steady pace")
            return nil
        }
        var times: [LocalTime] = []
        for (item, index) in items {
            guard let time = time(item, key: "\(key)\(index)") else { return nil }
            times.append(time)
        }
        return Array(Set(times)).sorted()
    }

    mutating func date(_ value: JSONValue?, key: String) -> LocalDate? {
        guard let value else {
            fail(key, "missing: give a date, like 2026-12-24")
            return nil
        }
        guard let text = value.string, let date = LocalDate.parse(text) else {
            fail(key, "\(Self.quote(value)) is not a date; write YYYY-MM-DD, like 2026-12-24")
            return nil
        }
        return date
    }

    mutating func duration(_ value: JSONValue, key: String, field: String) -> Millis? {
        do {
            return try Durations.parse(value, field: field)
        } catch {
            fail(key, error.message)
            return nil
        }
    }

    mutating func loop(_ value: JSONValue, key: String) -> LoopRule? {
        guard let o = object(value, key: key, known: [.every, .after, .from, .to, .days],
                             example: "{every: 15m, from: \"06:00\", to: \"22:00\"} or {after: 1m}") else { return nil }
        var pace: LoopRule.Pace?
        switch (o[.every], o[.after]) {
        case (let every?, nil):
            if let ms = duration(every, key: "\(key).every", field: "every") {
                if ms < ScheduleLimits.minEveryMs || ms > ScheduleLimits.maxEveryMs {
                    fail("\(key).every", "every must be between \(Durations.describe(ScheduleLimits.minEveryMs)) and \(Durations.describe(ScheduleLimits.maxEveryMs)), got \(Durations.describe(ms))")
                } else {
                    pace = .every(ms)
                }
            }
        case (nil, let after?):
            if let ms = duration(after, key: "\(key).after", field: "after") {
                if !ScheduleLimits.afterRange.contains(ms) {
                    fail("\(key).after", "after must be between \(Durations.describe(ScheduleLimits.afterRange.lowerBound)) and \(Durations.describe(ScheduleLimits.afterRange.upperBound)), got \(Durations.describe(ms))")
                } else {
                    pace = .afterEnd(ms)
                }
            }
        case (nil, nil):
            fail(key, "give every (a class every 15m) or after (again 1m after each ends)")
        case (.some, .some):
            fail(key, "give every or after, not both")
        }
        let from = o[.from].map { time($0, key: "\(key).from") } ?? .midnight
        let to = o[.to].map { time($0, key: "\(key).to", allowingEndOfDay: true) } ?? .endOfDay
        let days = self.days(o[.days], key: "\(key).days", required: false)
        guard let pace, let from, let to, let days else { return nil }
        return LoopRule(pace: pace, from: from, to: to, days: days)
    }

    mutating func exception(_ value: JSONValue, key: String) -> ScheduleException? {
        if case .string = value {
            return date(value, key: key).map(ScheduleException.date)
        }
        guard let o = object(value, key: key, known: [.date, .at, .from, .to],
                             example: "2026-12-25, {date: 2026-12-24, at: \"18:00\"} or {from: 2026-12-24, to: 2027-01-01}")
        else { return nil }
        if o[.from] != nil || o[.to] != nil {
            if o[.date] != nil || o[.at] != nil { fail(key, "give a date (and at), or from and to, not both"); return nil }
            guard let from = date(o[.from], key: "\(key).from"), let to = date(o[.to], key: "\(key).to") else { return nil }
            guard from <= to else { fail("\(key).to", "\(to) is before from (\(from)); the range includes both dates"); return nil }
            return .dates(from: from, to: to)
        }
        guard let date = date(o[.date], key: "\(key).date") else { return nil }
        guard let at = o[.at] else { return .date(date) }
        return time(at, key: "\(key).at").map { .instance(LocalDateTime(date: date, time: $0)) }
    }
}

extension Schedule {
    /// The schedule in its canonical form (what `parse` reads back to the same value): for the
    /// store, `list_schedules` and the pages.
    public var json: JSONValue {
        var o: [String: JSONValue] = [:]
        o[.id] = .string(id)
        o[.name] = .string(name)
        o[.timer] = .string(timer)
        workout.write(into: &o)
        if let timeZone { o[.timeZone] = .string(timeZone) }
        o[.grace] = .string(Durations.compact(graceMs))
        if !enabled { o[.enabled] = false }
        func days(_ set: Set<Weekday>) -> JSONValue { .array(set.sorted().map { .string($0.name) }) }
        func times(_ list: [LocalTime]) -> JSONValue { .array(list.map { .string($0.description) }) }
        if !weekly.isEmpty {
            o[.weekly] = .array(weekly.map { .object([ScheduleField.days.rawValue: days($0.days), ScheduleField.at.rawValue: times($0.times)]) })
        }
        if !dates.isEmpty {
            o[.dates] = .array(dates.map { .object([ScheduleField.date.rawValue: .string($0.date.description), ScheduleField.at.rawValue: times($0.times)]) })
        }
        if !loops.isEmpty {
            o[.loops] = .array(loops.map { loop in
                var l: [String: JSONValue] = [:]
                switch loop.pace {
                case .every(let ms): l[.every] = .string(Durations.compact(ms))
                case .afterEnd(let ms): l[.after] = .string(Durations.compact(ms))
                }
                l[.from] = .string(loop.from.description)
                l[.to] = .string(loop.to.description)
                l[.days] = days(loop.days)
                return .object(l)
            })
        }
        if !exceptions.isEmpty {
            o[.except] = .array(exceptions.map { exception in
                switch exception {
                case .date(let date): return .string(date.description)
                case .dates(let from, let to):
                    return .object([ScheduleField.from.rawValue: .string(from.description), ScheduleField.to.rawValue: .string(to.description)])
                case .instance(let at):
                    return .object([ScheduleField.date.rawValue: .string(at.date.description), ScheduleField.at.rawValue: .string(at.time.description)])
                }
            })
        }
        return .object(o)
    }
}

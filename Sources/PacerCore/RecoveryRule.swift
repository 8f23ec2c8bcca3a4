/// A rest that ends on recovery (docs/timer-core.md, "Rests that end on recovery"): the
/// `{"until_hr": {...}}` written in place of a rest's duration.
///
/// The rest lasts at least `minMs`, ends as soon as the heart rate of `who` is below the
/// threshold, and never lasts past `maxMs`. The machine times such a rest by `maxMs` until the
/// node, which reads the straps, tells it the instant of recovery
/// (`TimerMachine.recovered(at:now:)`); `holds(_:)` and `tally(_:)` are the rule the node
/// evaluates on each reading.
public struct RecoveryRule: Sendable, Equatable {
    /// The heart rate to get below.
    public enum Threshold: Sendable, Equatable {
        /// `below_pct_max`: below this whole percentage of each athlete's own max HR.
        case percentOfMax(Int)
        /// `below_bpm`: below this many beats per minute.
        case bpm(Int)
    }

    /// Whose heart rate decides.
    public enum Who: Sendable, Equatable {
        /// One athlete, by id (a single strap: "rest until I'm ready").
        case athlete(String)
        /// `class_median`: the median of the class is below the threshold.
        case classMedian
        /// `class_all`: every athlete of the class is below it.
        case classAll
        /// `class_80pct`: at least 80 % of the class is below it.
        case class80Percent

        /// The word of a class rule, or the athlete's id.
        public var word: String {
            switch self {
            case .athlete(let id): id
            case .classMedian: "class_median"
            case .classAll: "class_all"
            case .class80Percent: "class_80pct"
            }
        }

        /// The class rules' words; any other word is an athlete's id.
        public static let classWords = ["class_median", "class_all", "class_80pct"]

        /// Reads `class_median`, `class_all`, `class_80pct` or an athlete's id (a timer id's
        /// rules: `[a-z0-9][a-z0-9_-]{0,63}`); nil for anything else.
        public init?(word: String) {
            switch word {
            case "class_median": self = .classMedian
            case "class_all": self = .classAll
            case "class_80pct": self = .class80Percent
            default:
                do throws(SpecError) { try TimerMachine.validateID(word) } catch { return nil }
                self = .athlete(word)
            }
        }
    }

    public var threshold: Threshold
    /// Default `class_all` (with one strap in the class, that strap).
    public var who: Who
    /// The shortest the rest lasts (pauses excluded), 0 s up to `maxMs`.
    public var minMs: Millis
    /// The longest the rest lasts (pauses excluded), 1 s to 7 days: the rest is timed by it
    /// until recovery is known.
    public var maxMs: Millis

    public init(threshold: Threshold, who: Who = .classAll, minMs: Millis = 0, maxMs: Millis) {
        self.threshold = threshold
        self.who = who
        self.minMs = minMs
        self.maxMs = maxMs
    }

    /// `below_pct_max`: whole percent of max HR (the bounds of the node's `heart_rate.recovery`).
    public static let percentRange = 30...95
    /// `below_bpm`: beats per minute (the bounds of the node's `heart_rate.recovery`).
    public static let bpmRange = 40...200
    /// The member holding the rule, in place of a duration.
    public static let key = "until_hr"
    static let allowedKeys = ["below_bpm", "below_pct_max", "max", "min", "who"]

    /// Checks the limits, naming `field` (the rule's place: `rest.until_hr`).
    public func validate(field: String) throws(SpecError) {
        switch threshold {
        case .percentOfMax(let percent):
            if !Self.percentRange.contains(percent) {
                throw .countRange("\(field).below_pct_max", percent, Self.percentRange)
            }
        case .bpm(let bpm):
            if !Self.bpmRange.contains(bpm) { throw .countRange("\(field).below_bpm", bpm, Self.bpmRange) }
        }
        if case .athlete(let id) = who, Who(word: id) != who {
            throw Self.whoError(field: "\(field).who", got: "\"\(printable(id, escapingQuotes: true))\"")
        }
        if maxMs < 1000 || maxMs > Durations.maxMs {
            throw .durationRange("\(field).max", maxMs, 1000...Durations.maxMs)
        }
        if minMs < 0 || minMs > maxMs {
            throw SpecError(
                field: "\(field).min",
                message: "\(field).min must be between 0 s and max (\(Durations.describe(maxMs))), got \(Durations.describe(minMs))"
            )
        }
    }

    private static func whoError(field: String, got: String) -> SpecError {
        SpecError(field: field, message: "\(field) must be an athlete's id, \"class_median\", \"class_all\" or \"class_80pct\", got \(got)")
    }

    // MARK: JSON

    /// Reads `{"until_hr": {"below_bpm" | "below_pct_max", "who", "min", "max"}}` given in place
    /// of the duration `field` (`rest`, `duration`, `segments[2].duration`), and validates it.
    /// - Throws: `SpecError` naming the member and saying what to write.
    public init(json: JSONValue, field: String) throws(SpecError) {
        let example = "{\"until_hr\": {\"below_bpm\": 120, \"who\": \"class_all\", \"min\": \"20s\", \"max\": \"2m\"}}"
        guard case .object(let outer) = json else {
            throw SpecError(field: field, message: "\(field) must be a duration like \"30s\", or \(example), got \(json)")
        }
        for key in outer.keys.sorted() where key != Self.key {
            throw SpecError(field: "\(field).\(key)", message: "unknown key '\(printable(key))' in \(field): a rest that ends on recovery is written \(example)")
        }
        let ruleField = "\(field).\(Self.key)"
        guard let inner = outer[Self.key], case .object(let members) = inner else {
            throw SpecError(field: ruleField, message: "\(ruleField) must be an object like \(example), got \(outer[Self.key] ?? .null)")
        }
        for key in members.keys.sorted() where !Self.allowedKeys.contains(key) {
            throw SpecError(field: "\(ruleField).\(key)", message: "unknown key '\(printable(key))' in \(ruleField); allowed keys: \(Self.allowedKeys.joined(separator: ", "))")
        }
        let reader = TimerSpec.Reader(members: members, prefix: ruleField + ".")
        let percent = try reader.int("below_pct_max")
        let bpm = try reader.int("below_bpm")
        switch (percent, bpm) {
        case (let percent?, nil): threshold = .percentOfMax(percent)
        case (nil, let bpm?): threshold = .bpm(bpm)
        case (nil, nil):
            throw SpecError(field: ruleField, message: "\(ruleField) needs the heart rate to wait for: \"below_bpm\": 120, or \"below_pct_max\": 65 (percent of each athlete's max HR)")
        case (_?, _?):
            throw SpecError(field: ruleField, message: "\(ruleField) takes \"below_bpm\" or \"below_pct_max\", not both")
        }
        if let word = try reader.string("who") {
            guard let who = Who(word: word) else {
                throw Self.whoError(field: "\(ruleField).who", got: "\"\(printable(word, escapingQuotes: true))\"")
            }
            self.who = who
        } else {
            who = .classAll
        }
        guard let max = try reader.duration("max") else {
            throw SpecError(field: "\(ruleField).max", message: "\(ruleField).max is required: the longest the rest may last, like \"2m\"")
        }
        maxMs = max
        minMs = try reader.duration("min") ?? 0
        try validate(field: ruleField)
    }

    /// `{"until_hr": {...}}` with every member (`who` and `min` included), durations as compact
    /// strings: what `init(json:field:)` reads back to this rule.
    public var json: JSONValue {
        .object([Self.key: ruleJSON])
    }

    /// The inner object: `{"below_bpm": 120, "max": "2m", "min": "20s", "who": "class_all"}`
    /// (the state's `until_hr`).
    public var ruleJSON: JSONValue {
        var members: [String: JSONValue] = [
            "who": .string(who.word), "min": .string(Durations.compact(minMs)), "max": .string(Durations.compact(maxMs)),
        ]
        switch threshold {
        case .percentOfMax(let percent): members["below_pct_max"] = .int(percent)
        case .bpm(let bpm): members["below_bpm"] = .int(bpm)
        }
        return .object(members)
    }
}

// MARK: - The rule against readings

/// One athlete's latest heart rate as the node judges a recovery rule against it.
public struct RecoveryReading: Sendable, Equatable {
    /// The athlete's id.
    public var athlete: String
    /// Beats per minute; nil when the athlete has no reading.
    public var bpm: Int?
    /// The athlete's max HR (their profile's, else the node's); needed by `below_pct_max`.
    public var maxHR: Int?
    /// Whether the reading is within the node's staleness window.
    public var fresh: Bool

    public init(athlete: String, bpm: Int?, maxHR: Int? = nil, fresh: Bool) {
        self.athlete = athlete
        self.bpm = bpm
        self.maxHR = maxHR
        self.fresh = fresh
    }
}

/// How a class stands against a recovery rule: "12 of 14 recovered".
public struct RecoveryTally: Sendable, Equatable {
    /// Athletes the rule looks at whose heart rate is below the threshold.
    public var recovered: Int
    /// Athletes the rule looks at that can be judged (fresh, with a bpm and, for
    /// `below_pct_max`, a max HR).
    public var counted: Int
    /// Athletes the rule looks at that cannot be judged (stale or absent straps): they do not count.
    public var uncounted: Int
    /// Whether the rule holds: the rest may end (from its `min` on).
    public var holds: Bool

    public init(recovered: Int, counted: Int, uncounted: Int, holds: Bool) {
        self.recovered = recovered
        self.counted = counted
        self.uncounted = uncounted
        self.holds = holds
    }
}

extension RecoveryRule {
    /// Whether one reading is below the threshold; nil when it cannot be judged: stale, no bpm,
    /// or (for `below_pct_max`) no max HR. "Below" is strict: 119 is below 120, 120 is not;
    /// `below_pct_max: 65` with a max HR of 190 is below 123.5 bpm.
    public func isRecovered(_ reading: RecoveryReading) -> Bool? {
        guard reading.fresh, let bpm = reading.bpm else { return nil }
        switch threshold {
        case .bpm(let limit):
            return bpm < limit
        case .percentOfMax(let percent):
            guard let maxHR = reading.maxHR, maxHR > 0 else { return nil }
            return 100 * bpm < percent * maxHR
        }
    }

    /// The rule against the latest reading of each athlete of the class (one per athlete).
    ///
    /// Stale or absent straps never hold a rest: an athlete who cannot be judged does not
    /// count, for the class rules as for a named athlete. Nobody who counts (every strap stale,
    /// or the named athlete's) means the rule does not hold, and the rest runs to its `max`.
    /// - `athlete`: that athlete counts and is below.
    /// - `class_all`: every athlete who counts is below.
    /// - `class_80pct`: at least 80 % of those who count are below (12 of 14 is 86 %: holds;
    ///   11 of 14 is 79 %: does not).
    /// - `class_median`: the median of those who count is below the threshold (of an even count,
    ///   the mean of the two middle values; for `below_pct_max`, each athlete's bpm as a
    ///   percentage of their own max HR).
    public func tally(_ readings: [RecoveryReading]) -> RecoveryTally {
        var recovered = 0, counted = 0, uncounted = 0
        // For the median: each athlete's value as the fraction value / scale (a bpm over 1, or a
        // bpm over their max HR), so that it is compared with the threshold exactly.
        var values: [(value: Int64, scale: Int64)] = []
        for reading in readings {
            if case .athlete(let id) = who, reading.athlete != id { continue }
            guard let below = isRecovered(reading), let bpm = reading.bpm else {
                uncounted += 1
                continue
            }
            counted += 1
            if below { recovered += 1 }
            if who == .classMedian {
                switch threshold {
                case .bpm: values.append((Int64(bpm), 1))
                case .percentOfMax: values.append((Int64(bpm), Int64(reading.maxHR ?? 1)))
                }
            }
        }
        let holds: Bool
        if let needed = needed(counted: counted) {
            holds = counted > 0 && recovered >= needed
        } else {
            holds = counted > 0 && medianIsBelow(values)
        }
        return RecoveryTally(recovered: recovered, counted: counted, uncounted: uncounted, holds: holds)
    }

    /// How many of `counted` athletes must be recovered for the rule to hold (at least 1: nobody
    /// who counts never holds it): all of them for `class_all`, 80 % rounded up for `class_80pct`
    /// (12 of 14, 12 of 15), the one for an athlete; nil for `class_median`, which is not a count.
    public func needed(counted: Int) -> Int? {
        switch who {
        case .athlete: 1
        case .classAll: max(1, counted)
        case .class80Percent: max(1, (counted * 8 + 9) / 10)
        case .classMedian: nil
        }
    }

    /// `tally(readings).holds`.
    public func holds(_ readings: [RecoveryReading]) -> Bool {
        tally(readings).holds
    }

    /// Whether the median of `values` (each bpm / scale: a bpm, or a bpm over the athlete's max
    /// HR) is below the threshold, exactly (fractions compared by cross-multiplying).
    private func medianIsBelow(_ values: [(value: Int64, scale: Int64)]) -> Bool {
        // Each value as a rational bpm / scale; the threshold as limit / 100 of the scale
        // (percent of max HR) or limit bpm.
        func less(_ a: (value: Int64, scale: Int64), _ b: (value: Int64, scale: Int64)) -> Bool {
            a.value * b.scale < b.value * a.scale
        }
        let sorted = values.sorted(by: less)
        let (limit, limitScale): (Int64, Int64) = switch threshold {
        case .bpm(let bpm): (Int64(bpm), 1)
        case .percentOfMax(let percent): (Int64(percent), 100)
        }
        let middle = sorted.count / 2
        if sorted.count % 2 == 1 {
            let m = sorted[middle]
            return m.value * limitScale < limit * m.scale
        }
        // (a/sa + b/sb) / 2 < limit/ls  ⇔  (a·sb + b·sa)·ls < 2·limit·sa·sb
        let a = sorted[middle - 1], b = sorted[middle]
        return (a.value * b.scale + b.value * a.scale) * limitScale < 2 * limit * a.scale * b.scale
    }
}

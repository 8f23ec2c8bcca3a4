public import PacerCore

/// How a rest that waits for recovery stands, as the node publishes it retained on
/// `<base>/timers/<id>/recovery` (docs/API.md, "Rests that end on recovery"): "12 of 14
/// recovered", and what the rule needs. Published when it changes while the rest waits; the
/// topic is cleared (an empty retained payload) when the rest stops waiting.
public struct RecoveryProgress: Sendable, Equatable {
    /// The rule's `who`: an athlete's id, `class_all`, `class_80pct` or `class_median`.
    public var who: String
    /// Athletes the rule looks at whose heart rate is below the threshold.
    public var recovered: Int
    /// Athletes the rule looks at that can be judged (a fresh reading).
    public var counted: Int
    /// Athletes the rule looks at that cannot be judged (stale or absent straps; for
    /// `below_pct_max`, no max HR): they do not count.
    public var stale: Int
    /// How many of `counted` must be recovered for the rule to hold; nil for `class_median` (a
    /// median is not a count).
    public var needed: Int?
    /// One athlete's rule: that athlete's heart rate (nil while it cannot be judged).
    public var bpm: Int?
    /// One athlete's rule: the heart rate to get strictly below, in bpm (`below_pct_max` of the
    /// athlete's max HR: 65 % of 190 is 123.5); nil while unknown.
    public var targetBpm: Double?

    public init(who: String, recovered: Int, counted: Int, stale: Int, needed: Int?, bpm: Int? = nil, targetBpm: Double? = nil) {
        self.who = who
        self.recovered = recovered
        self.counted = counted
        self.stale = stale
        self.needed = needed
        self.bpm = bpm
        self.targetBpm = targetBpm
    }

    /// The rule's standing against the readings it was tallied from: `reading` is the named
    /// athlete's, for one athlete's rule.
    public init(rule: RecoveryRule, tally: RecoveryTally, reading: RecoveryReading?) {
        self.init(who: rule.who.word, recovered: tally.recovered, counted: tally.counted, stale: tally.uncounted,
                  needed: rule.needed(counted: tally.counted))
        guard case .athlete = rule.who else { return }
        if let reading, rule.isRecovered(reading) != nil { bpm = reading.bpm }
        switch rule.threshold {
        case .bpm(let limit): targetBpm = Double(limit)
        case .percentOfMax(let percent): targetBpm = reading?.maxHR.map { Double(percent * $0) / 100 }
        }
    }

    /// The document: the members of ``WireField/ofRecovery`` (`needed`, `bpm` and `target_bpm`
    /// when known).
    public var json: JSONValue {
        var o: [String: JSONValue] = [:]
        o[.who] = .string(who)
        o[.recovered] = .int(recovered)
        o[.counted] = .int(counted)
        o[.stale] = .int(stale)
        if let needed { o[.needed] = .int(needed) }
        if let bpm { o[.bpm] = .int(bpm) }
        if let targetBpm { o[.targetBpm] = .number(targetBpm) }
        return .object(o)
    }
}

public import PacerCore

/// When an athlete counts as recovered in a rest (`heart_rate.recovery`, docs/configuration.md):
/// below a percentage of their max HR (the default, 65 %), or below a fixed bpm.
///
/// One rule, in whole numbers: `target(maxHR:)` is the bpm a reading must be strictly below, so
/// 65 % of 190 (123.5) is "below 124" and a reading of 123 has recovered. The class summary
/// reports, per athlete and rest, the time from the rest's start to the first reading below it.
public struct RecoveryTarget: Sendable, Equatable {
    public enum Rule: Sendable, Equatable {
        /// Below this % of the athlete's max HR (30…95); no target for an athlete without one.
        case belowPercentOfMax(Int)
        /// Below this many bpm (40…200), whatever the athlete's max HR.
        case belowBPM(Int)
    }

    public var rule: Rule

    public init(_ rule: Rule) { self.rule = rule }

    /// Below 65 % of max HR.
    public static let standard = RecoveryTarget(.belowPercentOfMax(65))

    public static let percentRange = 30...95
    public static let bpmRange = 40...200

    /// The bpm a reading must be strictly below; nil when the rule needs a max HR and there is none.
    public func target(maxHR: Int?) -> Int? {
        switch rule {
        case .belowBPM(let bpm):
            return bpm
        case .belowPercentOfMax(let pct):
            guard let maxHR, maxHR > 0 else { return nil }
            // bpm × 100 < pct × max  ⇔  bpm < ⌈pct × max / 100⌉
            return (pct * maxHR + 99) / 100
        }
    }

    /// The rule as the summary states it: `{"below_pct_max": 65}` or `{"below_bpm": 120}`.
    public var json: JSONValue {
        switch rule {
        case .belowPercentOfMax(let pct): .object(["below_pct_max": .int(pct)])
        case .belowBPM(let bpm): .object(["below_bpm": .int(bpm)])
        }
    }
}

/// Effort points (`heart_rate.effort_points`, docs/configuration.md): points per minute spent in
/// each heart-rate zone, 0/1/2/3/4 in zones 1–5 unless configured; none below zone 1 or without
/// a max HR. An athlete's points for a run are whole points: the sum over the zones of the
/// time in the zone × its rate, rounded down once (so no minute's fraction is lost between zones).
public struct EffortPoints: Sendable, Equatable {
    /// Points per minute in zones 1…5 (index 0 is zone 1).
    public var perMinute: [Int]

    public init(perMinute: [Int]) {
        precondition(perMinute.count == 5, "a rate for each of the five zones")
        self.perMinute = perMinute
    }

    public static let standard = EffortPoints(perMinute: [0, 1, 2, 3, 4])
    /// The range of one zone's rate.
    public static let rateRange = 0...100

    /// Whole points for the time per zone (`zoneMs`: index 0 below zone 1, 1…5 the zones, as in
    /// the class summary's `zone_ms`).
    public func points(zoneMs: [Millis]) -> Int {
        var pointMs: Int64 = 0
        for zone in 1...5 where zone < zoneMs.count { pointMs += max(zoneMs[zone], 0) * Int64(perMinute[zone - 1]) }
        return Int(pointMs / 60_000)
    }

    /// The rates as the summary states them: per zone 0…5 (zone 0, below zone 1, is always 0).
    public var json: JSONValue { .array([.int(0)] + perMinute.map { .int($0) }) }
}

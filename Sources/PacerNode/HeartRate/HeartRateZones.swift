/// The five heart-rate zones by % of max HR (docs/API.md, "Heart rate"): one rule for a timer's
/// bound source and for every athlete of a class.
enum HeartRateZones {
    /// Zone 1…5 (50–60, 60–70, 70–80, 80–90, ≥ 90 % of `maxHR`); nil below 50 % or without a max.
    static func zone(bpm: Int, maxHR: Int?) -> Int? {
        guard let maxHR, maxHR > 0 else { return nil }
        // Whole numbers: bpm × 100 against the bounds × max, no rounding at a zone's edge.
        let scaled = bpm * 100
        switch scaled {
        case ..<(50 * maxHR): return nil
        case ..<(60 * maxHR): return 1
        case ..<(70 * maxHR): return 2
        case ..<(80 * maxHR): return 3
        case ..<(90 * maxHR): return 4
        default: return 5
        }
    }

    /// What a zone is called on the tiles and in the summary (shown beside its colour).
    static func name(_ zone: Int?) -> String {
        switch zone {
        case 1?: "very light"
        case 2?: "light"
        case 3?: "moderate"
        case 4?: "hard"
        case 5?: "maximum"
        default: "below zones"
        }
    }

    /// The percentage of max HR, one decimal (nil without a max).
    static func percent(bpm: Int, maxHR: Int?) -> Double? {
        guard let maxHR, maxHR > 0 else { return nil }
        return (Double(bpm * 1000) / Double(maxHR)).rounded() / 10
    }
}

/// The athletes' results (docs/configuration.md, `heart_rate`): when a rest counts as recovered
/// (`heart_rate.recovery`) and the effort points per minute in each zone
/// (`heart_rate.effort_points`).
extension NodeConfiguration {
    /// `recovery: {below_pct_max: 65}` or `recovery: {below_bpm: 120}`: exactly one of the two.
    mutating func readRecovery(_ node: ConfigTree?, _ r: inout ConfigReader) {
        guard let node else { return }
        let key = "heart_rate.recovery"
        let m = r.mapping(node, key: key, known: ["below_pct_max", "below_bpm"])
        if m["below_pct_max"] != nil, m["below_bpm"] != nil {
            r.fail(key, node, "give below_pct_max (a % of each athlete's max HR) or below_bpm, not both")
            return
        }
        if let pct = r.int(m["below_pct_max"], key: "\(key).below_pct_max", range: RecoveryTarget.percentRange) {
            heartRate.recovery = RecoveryTarget(.belowPercentOfMax(pct))
        } else if let bpm = r.int(m["below_bpm"], key: "\(key).below_bpm", range: RecoveryTarget.bpmRange) {
            heartRate.recovery = RecoveryTarget(.belowBPM(bpm))
        } else if m.isEmpty, case .mapping = node.value {
            r.fail(key, node, "give below_pct_max (e.g. 65: below 65 % of max HR) or below_bpm (e.g. 120)")
        }
    }

    /// `effort_points: {zone1: 0, zone2: 1, zone3: 2, zone4: 3, zone5: 4}`: points per minute in
    /// each zone; a zone left out keeps its default.
    mutating func readEffortPoints(_ node: ConfigTree?, _ r: inout ConfigReader) {
        guard let node else { return }
        let key = "heart_rate.effort_points"
        let m = r.mapping(node, key: key, known: Set((1...5).map { "zone\($0)" }))
        var table = heartRate.effortPoints
        for zone in 1...5 {
            if let v = r.int(m["zone\(zone)"], key: "\(key).zone\(zone)", range: EffortPoints.rateRange) { table.perMinute[zone - 1] = v }
        }
        heartRate.effortPoints = table
    }
}

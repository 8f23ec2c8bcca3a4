import PacerCore
import PacerProtocol
import Testing

/// The `recovery` topic's document (`RecoveryProgress`): what a class's tally against a rest's
/// rule says on the wire.
@Suite("The recovery topic's document")
struct RecoveryProgressTests {
    func reading(_ athlete: String, _ bpm: Int?, max: Int? = 190, fresh: Bool = true) -> RecoveryReading {
        RecoveryReading(athlete: athlete, bpm: bpm, maxHR: max, fresh: fresh)
    }

    @Test("class_80pct: 12 of 14 recovered, 12 needed, 2 stale; exactly the members of WireField.ofRecovery that apply")
    func classRule() {
        let rule = RecoveryRule(threshold: .bpm(120), who: .class80Percent, maxMs: 90_000)
        let readings = (0..<14).map { reading("a\($0)", $0 < 12 ? 100 : 150) } + [reading("s1", 100, fresh: false), reading("s2", nil)]
        let progress = RecoveryProgress(rule: rule, tally: rule.tally(readings), reading: nil)
        #expect(progress.json == ["who": "class_80pct", "recovered": 12, "counted": 14, "needed": 12, "stale": 2])
        #expect(Set(progress.json.object!.keys).isSubset(of: Set(WireField.ofRecovery.map(\.rawValue))))
        // The median is not a count: no `needed`.
        let median = RecoveryRule(threshold: .bpm(120), who: .classMedian, maxMs: 90_000)
        #expect(RecoveryProgress(rule: median, tally: median.tally(readings), reading: nil).json["needed"] == nil)
    }

    @Test("one athlete: its bpm and the target in bpm (65 % of 190 is 123.5); a stale strap shows no bpm")
    func oneAthlete() {
        let rule = RecoveryRule(threshold: .percentOfMax(65), who: .athlete("alice"), maxMs: 90_000)
        let fresh = reading("alice", 131)
        let progress = RecoveryProgress(rule: rule, tally: rule.tally([fresh, reading("bob", 90)]), reading: fresh)
        #expect(progress.json == ["who": "alice", "recovered": 0, "counted": 1, "needed": 1, "stale": 0, "bpm": 131, "target_bpm": 123.5])
        #expect(Set(progress.json.object!.keys) == Set(WireField.ofRecovery.map(\.rawValue)))
        let stale = reading("alice", 131, fresh: false)
        #expect(RecoveryProgress(rule: rule, tally: rule.tally([stale]), reading: stale).json
                == ["who": "alice", "recovered": 0, "counted": 0, "needed": 1, "stale": 1, "target_bpm": 123.5])
        let bpmRule = RecoveryRule(threshold: .bpm(120), who: .athlete("alice"), maxMs: 90_000)
        #expect(RecoveryProgress(rule: bpmRule, tally: bpmRule.tally([]), reading: nil).json
                == ["who": "alice", "recovered": 0, "counted": 0, "needed": 1, "stale": 0, "target_bpm": 120])
    }
}

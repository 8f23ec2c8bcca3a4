import PacerCore
import PacerProtocol

/// Rests that end on recovery (`rest: {until_hr: …}`, docs/timer-core.md): the node judges the
/// rule with the heart rate it holds and tells the timer (`TimerMachine.recovered`), like a
/// command: the `recovered` event and the timer are written before anything is published, so a
/// restore lands on the same instant.
extension EngineMachine {
    /// Judges each timer waiting for recovery with the readings now (a reading came, a strap
    /// went stale or left, a rest began); a rule that holds ends its rest (or, before its `min`,
    /// ends it at `min`). Until then the timer's `recovery` topic says how the class stands
    /// ("12 of 14 recovered"), published when that changes.
    mutating func checkRecovery(now: Millis, into output: inout EngineOutput) {
        guard !heart.waitingRecovery.isEmpty else { return }
        let readings = heart.recoveryReadings(now: now)
        for id in heart.waitingRecovery.sorted() {
            guard let rule = board.timers.read(id, { $0.machine.snapshot(at: now).untilHR }) ?? nil else {
                heart.stopWaiting(id, into: &board.out)
                continue
            }
            let looked = readings.lookedAt(by: rule)
            let tally = rule.tally(looked)
            if tally.holds, case .success(let events)? = board.timers.update(id, { $0.recovered(at: now, now: now) }) {
                heart.stopWaiting(id, into: &board.out)
                output.changes.timerChanged(id, events: events)
                schedule(id, now: now)
                continue
            }
            let reading = if case .athlete(let athlete) = rule.who { looked.first { $0.athlete == athlete } } else { RecoveryReading?.none }
            heart.showRecovery(id, RecoveryProgress(rule: rule, tally: tally, reading: reading), linkUp: link.linkUp, into: &board.out)
        }
    }

    /// After a write: which changed timers now wait for recovery (their rule is judged at once,
    /// at a `.recovery` deadline: it may hold already).
    mutating func noteRecoveryWaits(_ changes: TimerChanges, now: Millis) {
        for id in changes.deleted { heart.stopWaiting(id, into: &board.out) }
        noteRecoveryWaits(of: changes.timers, now: now)
    }

    /// Which of `ids` wait for recovery now (a restore looks at every timer).
    mutating func noteRecoveryWaits(of ids: [String], now: Millis) {
        // A rest that ends on recovery needs readings: a node with no heart rate judges none (and
        // the per-second flips of its timers cost nothing here).
        guard heart.athletes != nil || !heart.sourceNames.isEmpty else { return }
        var started = false
        for id in ids {
            let waits = board.timers.read(id) { entry -> Bool in
                guard entry.machine.program.hasRecoveryRests else { return false }
                let snap = entry.machine.snapshot(at: now)
                return snap.status == .running && snap.untilHR != nil && snap.recoveredAtMs == nil
            } ?? false
            if waits { started = heart.startWaiting(id) || started } else { heart.stopWaiting(id, into: &board.out) }
        }
        if started { board.deadlines.set(.recovery, at: now) }
    }
}

public import PacerCore

extension TimerSnapshot {
    /// The payload of the plain retained topic `leaf` for this snapshot (docs/API.md, "Timer
    /// topics"): whole seconds, the clock text, the phase, the round and rounds, the heart rate
    /// (empty when unknown or stale). Dumb displays show these as they come.
    public func plainValue(_ leaf: PlainLeaf) -> String {
        switch leaf {
        case .remaining: String(remainingSeconds)
        case .display: display
        case .phase: phase.rawValue
        case .round: String(round)
        case .rounds: String(rounds)
        case .hr: hr.map(String.init) ?? ""
        }
    }
}

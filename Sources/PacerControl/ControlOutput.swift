import PacerCore
public import PacerProtocol

/// The text the control commands print: one line per result, a small table for `list`.
public enum ControlOutput {
    /// One line for a timer's state: `main: running · work 0:40 · round 1/8 · Burpees → Squat`.
    public static func stateLine(_ state: TimerState) -> String {
        let status = state.status.rawValue
        let phase = state.phase.rawValue
        var parts = ["\(state.id): \(status)"]
        switch state.status {
        case .running:
            parts.append(phase == status ? state.display : "\(phase) \(state.display)")
        case .paused:
            parts.append(state.countsUp ? "\(state.display) elapsed" : "\(state.display) left")
        case .idle, .scheduled:
            parts.append(state.display)
        case .expired, .finished, .cancelled:
            break  // the time says nothing more
        }
        if state.rounds > 1 { parts.append("round \(state.round)/\(state.rounds)") }
        if state.sets > 1 { parts.append("set \(state.set)/\(state.sets)") }
        if let label = state.label {
            parts.append(label + (state.nextLabel.map { " → \($0)" } ?? ""))
        } else if let next = state.nextLabel {
            parts.append("next: \(next)")
        }
        if state.status == .scheduled, let startAt = state.startAtMs { parts.append("starts \(iso8601(ms: startAt))") }
        if let hr = state.hr { parts.append("♥ \(hr)") }
        return parts.joined(separator: " · ")
    }

    /// The line for a successful reply: the timer's state, or what a node command did.
    public static func replyLine(_ reply: Reply) -> String {
        if let state = reply.timerState { return stateLine(state) }
        if reply.isDeleted { return "\(reply.timer ?? "?"): deleted" }
        if let now = reply.now { return "node time \(now)" }
        return "ok"
    }

    /// The `list` reply as a table: id, name, status, phase, time; "no timers" when empty.
    public static func listLines(_ reply: Reply) -> [String] {
        let timers = reply.timers ?? []
        guard !timers.isEmpty else { return ["no timers (start one: pacer start TIMER --countdown 5m)"] }
        let header = ["TIMER", "NAME", "STATUS", "PHASE", "TIME"]
        let rows = timers.map { t in [t.id, t.name, t.status.rawValue, t.phase.rawValue, t.display] }
        return table([header] + rows)
    }

    /// Rows as lines of columns two spaces apart, each as wide as its widest cell (the last unpadded).
    static func table(_ all: [[String]]) -> [String] {
        let widths = (0..<(all.first?.count ?? 0)).map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { column, text in
                column == row.count - 1 ? text : text + String(repeating: " ", count: widths[column] - text.count)
            }.joined(separator: "  ")
        }
    }

    /// An error line: `pacer pause: there is no timer 'x'; … (unknown_timer)`.
    public static func errorLine(command: String, _ error: ControlError) -> String {
        switch error.kind {
        case .refused(let code): "pacer \(command): \(error.message) (\(code))"
        case .usage, .timeout, .connection: "pacer \(command): \(error.message)"
        }
    }
}

public import PacerCore

/// The text the control commands print: one line per result, a small table for `list`.
public enum ControlOutput {
    /// One line for a timer's state: `main: running · work 0:40 · round 1/8 · Burpees → Squat`.
    public static func stateLine(_ state: JSONValue) -> String {
        let id = state["id"]?.string ?? "?"
        let status = state["status"]?.string ?? "?"
        let phase = state["phase"]?.string ?? status
        let display = state["display"]?.string ?? "?"
        var parts = ["\(id): \(status)"]
        switch status {
        case "running":
            parts.append(phase == status ? display : "\(phase) \(display)")
        case "paused":
            parts.append(state["counts_up"]?.bool == true ? "\(display) elapsed" : "\(display) left")
        case "idle", "scheduled":
            parts.append(display)
        default:
            break  // expired, finished, cancelled: the time says nothing more
        }
        if let rounds = state["rounds"]?.int, rounds > 1, let round = state["round"]?.int {
            parts.append("round \(round)/\(rounds)")
        }
        if let sets = state["sets"]?.int, sets > 1, let set = state["set"]?.int {
            parts.append("set \(set)/\(sets)")
        }
        if let label = state["label"]?.string {
            parts.append(label + (state["next_label"]?.string.map { " → \($0)" } ?? ""))
        } else if let next = state["next_label"]?.string {
            parts.append("next: \(next)")
        }
        if let startAt = state["start_at"]?.string, status == "scheduled" { parts.append("starts \(startAt)") }
        if let hr = state["hr"]?.int { parts.append("♥ \(hr)") }
        return parts.joined(separator: " · ")
    }

    /// The line for a successful reply: the timer's state, or what a node command did.
    public static func replyLine(_ reply: JSONValue) -> String {
        if let state = reply["state"], state != .null { return stateLine(state) }
        if reply["deleted"]?.bool == true { return "\(reply["timer"]?.string ?? "?"): deleted" }
        if let now = reply["now"]?.string { return "node time \(now)" }
        return "ok"
    }

    /// The `list` reply as a table: id, name, status, phase, time; "no timers" when empty.
    public static func listLines(_ reply: JSONValue) -> [String] {
        let timers = reply["timers"]?.array ?? []
        guard !timers.isEmpty else { return ["no timers (start one: pacer start TIMER --countdown 5m)"] }
        let header = ["TIMER", "NAME", "STATUS", "PHASE", "TIME"]
        let rows = timers.map { t in
            [t["id"]?.string ?? "?", t["name"]?.string ?? "", t["status"]?.string ?? "?", t["phase"]?.string ?? "?",
             t["display"]?.string ?? ""]
        }
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

public import PacerCore
import PacerStore

extension HistoryReport {
    /// The CSV columns of `pacer history --csv` (the page's "Download CSV" writes the same).
    static let classCSVHeader = "timer,run_started,ended,athlete,name,segment,phase,round,avg_bpm,peak_bpm,recovery_bpm,z0_s,z1_s,z2_s,z3_s,z4_s,z5_s"

    /// `pacer history --csv`: the class summaries among the newest events, one line per
    /// athlete and segment and one for the athlete's whole run; oldest run first.
    public static func classCSV(dataDirectory: String, timer: String?, since: String?, limit: Int,
                                now: Millis = NodeClock.systemWallClock()) throws -> [String] {
        guard (1...100_000).contains(limit) else { throw Failure(description: "--limit must be between 1 and 100000, got \(limit)") }
        // Summaries sit among every other event: read widely, keep the newest `limit` runs.
        let all = try records(dataDirectory: dataDirectory, timer: timer, since: since, limit: 100_000, now: now)
        let summaries = all.filter { $0.type == ClassRecorder.eventType }.prefix(limit)
        return [classCSVHeader] + summaries.reversed().flatMap { classCSVLines(JSONCoding.decode($0.payload) ?? .null) }
    }

    /// The lines of one summary.
    static func classCSVLines(_ summary: JSONValue) -> [String] {
        let segments = summary["segments"]?.array ?? []
        let started = summary["started_at_ms"]?.int64.map { iso8601(ms: $0) } ?? ""
        var lines: [String] = []
        for athlete in summary["athletes"]?.array ?? [] {
            let id = athlete["id"]?.string ?? ""
            var rows: [(segment: String, phase: String, round: String, figures: JSONValue)] = []
            for figures in athlete["segments"]?.array ?? [] {
                let seg = figures["segment"]?.int.flatMap { segments.indices.contains($0) ? segments[$0] : nil } ?? .null
                rows.append((segmentName(seg), seg["phase"]?.string ?? "", seg["round"]?.int.map(String.init) ?? "", figures))
            }
            rows.append(("whole run", "total", "", athlete))
            for row in rows {
                let zones = (0..<6).map { i in
                    let ms = row.figures["zone_ms"]?.array.flatMap { $0.indices.contains(i) ? $0[i].int64 : nil } ?? 0
                    return String(format1(Double(ms) / 1000))
                }
                let cells = [summary["timer"]?.string ?? "", started, summary["ended"]?.string ?? "", id, athlete["name"]?.string ?? id,
                             row.segment, row.phase, row.round, number(row.figures["avg_bpm"]), number(row.figures["peak_bpm"]),
                             number(row.figures["recovery_bpm"])] + zones
                lines.append(cells.map(csvField).joined(separator: ","))
            }
        }
        return lines
    }

    /// A segment's name: its label (with the phase), else the phase; with its round (the page's `segmentName`).
    static func segmentName(_ seg: JSONValue) -> String {
        let phase = seg["phase"]?.string ?? ""
        let names = ["prepare": "Prepare", "work": "Work", "rest": "Rest", "set_rest": "Set rest", "cooldown": "Cool down",
                     "countdown": "Countdown", "session": "Session"]
        let phaseName = names[phase] ?? phase
        let base = seg["label"]?.string.map { "\($0) (\(phaseName.lowercased()))" } ?? phaseName
        if let round = seg["round"]?.int, round > 0, phase != "prepare", phase != "cooldown" { return "\(base) \(round)" }
        return base
    }

    private static func number(_ value: JSONValue?) -> String {
        guard let value, let d = value.double else { return "" }
        return value.int64.map(String.init) ?? format1(d)
    }

    private static func format1(_ d: Double) -> String {
        let tenths = Int64((d * 10).rounded())
        return "\(tenths < 0 ? "-" : "")\(abs(tenths) / 10).\(abs(tenths) % 10)"
    }

    /// A CSV field, quoted when it holds a comma, a quote or a line break.
    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

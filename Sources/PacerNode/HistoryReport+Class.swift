public import PacerCore
import PacerStore

extension HistoryReport {
    /// The CSV columns of `pacer history --csv` (the page's "Download CSV" writes the same). The
    /// results come last, so that the earlier columns keep their places: `recovery_target_bpm`
    /// and `recovery_s` (seconds into a rest to the target, or `not reached`) on a rest's line,
    /// `effort_points` on the whole run's.
    static let classCSVHeader = "timer,run_started,ended,athlete,name,segment,phase,round,avg_bpm,peak_bpm,recovery_bpm,z0_s,z1_s,z2_s,z3_s,z4_s,z5_s,recovery_target_bpm,recovery_s,effort_points"

    /// A rest's `recovery_s` cell: seconds to the target (one decimal), `not reached`, or empty
    /// when the rest has no target (the page's `recoveryCell` writes the same).
    static func recoveryCell(_ figures: JSONValue) -> String {
        guard figures["recovery_target_bpm"]?.int != nil else { return "" }
        guard let ms = figures["recovery_ms"]?.int64 else { return "not reached" }
        return format1(Double(ms) / 1000)
    }

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
                    + [number(row.figures["recovery_target_bpm"]), recoveryCell(row.figures), row.phase == "total" ? number(row.figures["effort_points"]) : ""]
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

extension HistoryReport {
    /// `pacer history --tcx`: the TCX file of `athlete` in one class run (ClassTCX): the run that
    /// was going at `run` (ISO 8601 or epoch ms), else the newest run the athlete has heart rate in.
    /// - Returns: the file name to write it to and the document.
    public static func classTCX(dataDirectory: String, timer: String?, athlete: String, run: String?,
                                now: Millis = NodeClock.systemWallClock()) throws -> (fileName: String, xml: String) {
        do { try TimerMachine.validateID(athlete) } catch { throw Failure(description: "--athlete: \(error.message)") }
        let at = try run.map { text in
            if let ms = Int64(text), ms > 100_000_000_000 { return ms }
            if case .success(let ms) = ISO8601.parse(text) { return ms }
            throw Failure(description: "--run takes an instant during the run: ISO 8601 like 2026-11-22T18:00:00Z (the run_started column of --csv) or epoch ms, got '\(text)'")
        }
        let summaries = try records(dataDirectory: dataDirectory, timer: timer, since: nil, limit: 100_000, now: now)
            .filter { $0.type == ClassRecorder.eventType }.compactMap { JSONCoding.decode($0.payload) }
        let hasAthlete = { (s: JSONValue) in s["athletes"]?.array?.contains { $0["id"]?.string == athlete } == true }
        let chosen: JSONValue?
        if let at {
            chosen = summaries.first { s in
                guard let start = s["started_at_ms"]?.int64, let end = s["due_ms"]?.int64 else { return false }
                return start <= at && at <= end
            }
            guard let chosen else { throw Failure(description: "no class run was going at \(iso8601(ms: at))" + (timer.map { " on timer '\($0)'" } ?? "") + "; `pacer history --csv` lists the runs (run_started)") }
            guard hasAthlete(chosen) else {
                let ids = chosen["athletes"]?.array?.compactMap { $0["id"]?.string } ?? []
                throw Failure(description: "athlete '\(athlete)' has no heart rate in the run of \(iso8601(ms: chosen["started_at_ms"]?.int64 ?? 0))"
                              + (ids.isEmpty ? "" : "; its athletes: \(ids.joined(separator: ", "))"))
            }
        } else {
            chosen = summaries.first(where: hasAthlete)
        }
        guard let summary = chosen else {
            throw Failure(description: "no class run with athlete '\(athlete)'" + (timer.map { " on timer '\($0)'" } ?? "")
                          + " in the history (a class_hr timer records one; `pacer history --csv` lists the runs)")
        }
        do {
            return (ClassTCX.fileName(summary: summary, athlete: athlete), try ClassTCX.document(summary: summary, athlete: athlete))
        } catch {
            throw Failure(description: error.description)
        }
    }
}

public import PacerCore

/// One athlete's run from a class summary as a TCX file (Garmin Training Center XML v2), which
/// Strava, Garmin Connect and most training logs import (docs/API.md, "TCX export").
///
/// The rules, which the class view's `tcx.js` follows to the byte (Tests/Fixtures/tcx/ holds
/// the file both must write for the summary of Tests/Fixtures/protocol/class-summary.json):
/// - one `Activity`, `Sport="Other"`, its `Id` the run's start;
/// - a `Lap` per segment of the summary (a single one for the whole run when it lists none):
///   `StartTime` the segment's start, `TotalTimeSeconds` its length (milliseconds kept, trailing
///   zeros dropped), `DistanceMeters` and `Calories` 0 (the node knows neither; the schema
///   requires them), the athlete's average (rounded to whole bpm) and peak in it when they had a
///   reading there, `Intensity` `Resting` for `rest` and `set_rest` and `Active` otherwise,
///   `TriggerMethod` `Time`;
/// - a `Trackpoint` per point of the athlete's series that has a value: `Time` the middle of its
///   bucket (`series_start_ms + (k + ½) × series_step_ms`, where the chart draws it),
///   `HeartRateBpm` the value rounded to whole bpm (TCX holds whole bpm); in the lap of the last
///   segment that started at or before it (the first lap for one before every segment);
/// - `Notes`: `Pacer class <timer> · <name>`; times in ISO 8601 UTC with milliseconds.
public enum ClassTCX {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The TCX document of `athlete` in `summary` (a class summary event).
    /// - Throws: `Failure` when the summary has no such athlete.
    public static func document(summary: JSONValue, athlete id: String) throws(Failure) -> String {
        let athletes = summary["athletes"]?.array ?? []
        guard let athlete = athletes.first(where: { $0["id"]?.string == id }) else {
            let ids = athletes.compactMap { $0["id"]?.string }
            throw Failure(description: "athlete '\(printable(id, limit: 70))' has no heart rate in this run"
                          + (ids.isEmpty ? "" : "; its athletes: \(ids.joined(separator: ", "))"))
        }
        let started = summary["started_at_ms"]?.int64 ?? 0
        let ended = summary["due_ms"]?.int64 ?? started
        var laps = (summary["segments"]?.array ?? []).enumerated().map { position, s in
            Lap(position: position, phase: s["phase"]?.string ?? "", startMs: s["start_ms"]?.int64 ?? started,
                endMs: s["end_ms"]?.int64 ?? ended)
        }
        if laps.isEmpty { laps = [Lap(position: nil, phase: "", startMs: started, endMs: max(ended, started))] }
        var points = [[(ms: Millis, bpm: Int)]](repeating: [], count: laps.count)
        for point in trackpoints(summary: summary, athlete: athlete) {
            let lap = laps.lastIndex { $0.startMs <= point.ms } ?? 0
            points[lap].append(point)
        }
        let figures = Dictionary((athlete["segments"]?.array ?? []).compactMap { f in f["segment"]?.int.map { ($0, f) } },
                                 uniquingKeysWith: { first, _ in first })
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<TrainingCenterDatabase xmlns=\"http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2\">\n"
        xml += " <Activities>\n  <Activity Sport=\"Other\">\n"
        xml += "   <Id>\(iso8601(ms: started))</Id>\n"
        for (i, lap) in laps.enumerated() {
            let f: JSONValue? = lap.position == nil ? athlete : lap.position.flatMap { figures[$0] }
            xml += "   <Lap StartTime=\"\(iso8601(ms: lap.startMs))\">\n"
            xml += "    <TotalTimeSeconds>\(seconds(max(lap.endMs - lap.startMs, 0)))</TotalTimeSeconds>\n"
            xml += "    <DistanceMeters>0</DistanceMeters>\n    <Calories>0</Calories>\n"
            if let f, let avg = f["avg_bpm"]?.double, let peak = f["peak_bpm"]?.int, (f["samples"]?.int ?? 0) > 0 {
                xml += "    <AverageHeartRateBpm><Value>\(Int(avg.rounded()))</Value></AverageHeartRateBpm>\n"
                xml += "    <MaximumHeartRateBpm><Value>\(peak)</Value></MaximumHeartRateBpm>\n"
            }
            xml += "    <Intensity>\(lap.phase == "rest" || lap.phase == "set_rest" ? "Resting" : "Active")</Intensity>\n"
            xml += "    <TriggerMethod>Time</TriggerMethod>\n"
            if !points[i].isEmpty {
                xml += "    <Track>\n"
                for p in points[i] {
                    xml += "     <Trackpoint><Time>\(iso8601(ms: p.ms))</Time><HeartRateBpm><Value>\(p.bpm)</Value></HeartRateBpm></Trackpoint>\n"
                }
                xml += "    </Track>\n"
            }
            xml += "   </Lap>\n"
        }
        let name = athlete["name"]?.string ?? id
        xml += "   <Notes>\(escape("Pacer class \(summary["timer"]?.string ?? "") · \(name)"))</Notes>\n"
        xml += "  </Activity>\n </Activities>\n</TrainingCenterDatabase>\n"
        return xml
    }

    /// The athlete's series as (instant, whole bpm), the points without a value left out.
    static func trackpoints(summary: JSONValue, athlete: JSONValue) -> [(ms: Millis, bpm: Int)] {
        let start = summary["series_start_ms"]?.int64 ?? summary["started_at_ms"]?.int64 ?? 0
        let step = max(summary["series_step_ms"]?.int64 ?? 1_000, 1)
        return (athlete["series"]?.array ?? []).enumerated().compactMap { k, value in
            guard let bpm = value.double, bpm.isFinite, bpm >= 1, bpm < 255.5 else { return nil }
            return (start + Millis(k) * step + step / 2, Int(bpm.rounded()))
        }
    }

    /// A file name for the athlete's run: `<timer>-<athlete>-<YYYY-MM-DD>T<HH-MM>.tcx` (UTC).
    public static func fileName(summary: JSONValue, athlete: String) -> String {
        let start = iso8601(ms: summary["started_at_ms"]?.int64 ?? 0)
        let stamp = String(start.prefix(16).map { $0 == ":" ? "-" : $0 })
        return "\(summary["timer"]?.string ?? "run")-\(athlete)-\(stamp).tcx"
    }

    private struct Lap {
        var position: Int?
        var phase: String
        var startMs: Millis
        var endMs: Millis
    }

    /// Seconds of a duration in ms: `20`, `20.5`, `20.125`.
    static func seconds(_ ms: Millis) -> String {
        let whole = ms / 1000, frac = ms % 1000
        guard frac != 0 else { return String(whole) }
        var digits = String(frac)
        digits = String(repeating: "0", count: 3 - digits.count) + digits
        while digits.hasSuffix("0") { digits.removeLast() }
        return "\(whole).\(digits)"
    }

    /// Text for XML content: `&`, `<`, `>` and `"` as entities.
    static func escape(_ text: String) -> String {
        var out = ""
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(c)
            }
        }
        return out
    }
}

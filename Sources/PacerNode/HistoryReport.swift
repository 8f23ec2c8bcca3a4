public import PacerCore
import PacerProtocol
import PacerStore

/// `pacer history`: reads the event history from the database, read-only, so it works while
/// the node runs (WAL lets readers and the writer go on at once).
public enum HistoryReport {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Printable lines, newest first: a table, or one JSON event per line.
    public static func lines(dataDirectory: String, timer: String?, since: String?, limit: Int, json: Bool,
                             now: Millis = NodeClock.systemWallClock()) throws -> [String] {
        let records = try Self.records(dataDirectory: dataDirectory, timer: timer, since: since, limit: limit, now: now)
        if json { return records.map { String(decoding: $0.payload, as: UTF8.self) } }
        if records.isEmpty { return ["no events" + (timer.map { " for timer '\($0)'" } ?? "")] }
        var lines = [pad("time (UTC)", 24) + pad("timer", 18) + pad("event", 14) + pad("rev", 6) + "details"]
        for record in records {
            let payload = JSONCoding.decode(record.payload)?.object ?? [:]
            var details: [String] = []
            for key in [WireField.phase, .label, .round, .lateMs, .seconds].map(\.rawValue) + ["ended"] {
                if let value = payload[key], value != .null { details.append("\(key)=\(text(value))") }
            }
            if case .array(let athletes)? = payload["athletes"] { details.append("athletes=\(athletes.count) (--csv for the figures)") }
            lines.append(pad(iso8601(ms: record.dueMs), 24) + pad(record.timer, 18) + pad(record.type, 14)
                         + pad(String(record.revision), 6) + details.joined(separator: " "))
        }
        return lines
    }

    /// The newest events (the store opened read-only).
    static func records(dataDirectory: String, timer: String?, since: String?, limit: Int, now: Millis) throws -> [EventRecord] {
        guard (1...100_000).contains(limit) else { throw Failure(description: "--limit must be between 1 and 100000, got \(limit)") }
        if let timer {
            do { try TimerMachine.validateID(timer) } catch { throw Failure(description: error.message) }
        }
        let sinceMs = try since.map { try parseSince($0, now: now) }
        let database: PacerDatabase
        do {
            database = try PacerDatabase.openReadOnly(directory: dataDirectory)
        } catch {
            throw Failure(description: "\(error)")
        }
        defer { try? database.close() }
        let records: [EventRecord]
        do {
            records = try database.history(HistoryQuery(timer: timer, sinceMs: sinceMs, limit: limit))
        } catch {
            throw Failure(description: "\(error)")
        }
        return records
    }

    /// `10m` / `2h` ago, epoch ms, or ISO 8601.
    static func parseSince(_ text: String, now: Millis) throws -> Millis {
        if let ms = Int64(text), ms > 100_000_000_000 { return ms }
        if let ms = try? Durations.parse(text) { return now - ms }
        if case .success(let ms) = ISO8601.parse(text) { return ms }
        throw Failure(description: "--since takes a duration ago (10m, 2h), epoch ms or ISO 8601 like 2026-11-22T18:00:00Z, got '\(text)'")
    }

    private static func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count)
    }

    private static func text(_ value: JSONValue) -> String {
        switch value {
        case .string(let s): s
        case .number(let d): value.int64.map(String.init) ?? String(d)  // never Int64(d): 1e300 traps
        case .bool(let b): String(b)
        default: "\(value)"
        }
    }
}

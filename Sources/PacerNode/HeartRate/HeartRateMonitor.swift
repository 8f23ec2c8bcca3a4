import PacerCore

/// The latest heart-rate reading of each configured source, with staleness (docs/API.md, "Heart
/// rate").
///
/// A reading is kept with the node instant it arrived; it is fresh for `staleAfterMs`, after
/// which the source reads as unknown (published empty, never 0 and never the last value).
/// Readings outside 25…250 bpm are ignored; the caller logs the first one of each source.
struct HeartRateMonitor {
    struct Reading: Equatable {
        var bpm: Int
        var atMs: Millis
    }

    enum Outcome: Equatable {
        /// Accepted; `changed` is false when the bpm equals the previous fresh reading.
        case accepted(source: String, bpm: Int, changed: Bool)
        case outOfRange(source: String, bpm: Double)
        case unreadable(source: String, reason: String)
        case notASource
    }

    static let validRange = 25...250

    let settings: HeartRateSettings
    private(set) var readings: [String: Reading] = [:]
    private let sourceByTopic: [String: HeartRateSource]
    /// Sources whose unusable readings were logged already (logged once each).
    private var loggedProblems: Set<String> = []

    init(settings: HeartRateSettings) {
        self.settings = settings
        var byTopic: [String: HeartRateSource] = [:]
        for source in settings.sources where byTopic[source.topic] == nil { byTopic[source.topic] = source }
        sourceByTopic = byTopic
    }

    /// Whether this is the first unusable reading of `source` (the caller logs only that one).
    mutating func isFirstProblem(of source: String) -> Bool {
        loggedProblems.insert(source).inserted
    }

    /// The source a timer reads: its `hr_source`, else the first configured source.
    func sourceName(for bound: String?) -> String? {
        bound ?? settings.sources.first?.name
    }

    func isSource(_ name: String) -> Bool { settings.sources.contains { $0.name == name } }

    /// Takes a message from a heart-rate topic.
    mutating func receive(topic: String, payload: [UInt8], now: Millis) -> Outcome {
        guard let source = sourceByTopic[topic] else { return .notASource }
        let value: Double
        switch Self.parse(payload, field: source.field) {
        case .success(let v): value = v
        case .failure(let error): return .unreadable(source: source.name, reason: error.description)
        }
        // The range is checked on the Double: converting first traps on a reading too large for
        // an Int (`1e20` from a broken or hostile sender stopped the node; found by fuzzing).
        let rounded = value.rounded()
        guard value.isFinite, rounded >= Double(Self.validRange.lowerBound), rounded <= Double(Self.validRange.upperBound) else {
            return .outOfRange(source: source.name, bpm: value)
        }
        let bpm = Int(rounded)
        let before = current(source.name, now: now)
        readings[source.name] = Reading(bpm: bpm, atMs: now)
        return .accepted(source: source.name, bpm: bpm, changed: before?.bpm != bpm)
    }

    /// The fresh reading of a source at `now`, or nil when unknown or stale.
    func current(_ source: String?, now: Millis) -> Reading? {
        guard let source, let reading = readings[source], now - reading.atMs < settings.staleAfterMs else { return nil }
        return reading
    }

    /// Moves every reading's instant by `delta` (see `NodeEngine.checkClock`).
    mutating func shiftTimes(by delta: Millis) {
        for name in readings.keys { readings[name]!.atMs = readings[name]!.atMs.saturatingAdd(delta) }
    }

    /// When the current reading of `source` goes stale (a deadline for the scheduler).
    func staleAt(_ source: String) -> Millis? {
        readings[source].map { $0.atMs + settings.staleAfterMs }
    }

    /// Zone 1…5 by % of max HR (HeartRateZones); nil below 50 % or without a max.
    func zone(for bpm: Int) -> Int? { HeartRateZones.zone(bpm: bpm, maxHR: settings.maxHR) }

    /// The largest heart-rate payload read; a larger one is unreadable, not parsed.
    static let maxPayloadBytes = 4096

    /// A plain number (`142`, `142.0`) or JSON with the value at a dotted field path.
    ///
    /// Numbers are read as JSON numbers by PacerCore's own reader (`nan`, `inf`, `0x8E` and
    /// `142abc` are not numbers), from at most 4,096 bytes.
    static func parse(_ payload: [UInt8], field: [String]?) -> Result<Double, Reason> {
        guard payload.count <= maxPayloadBytes else {
            return .failure(.init("the payload is \(payload.count) bytes; a reading is at most \(maxPayloadBytes) bytes"))
        }
        guard let field, !field.isEmpty else {
            let text = String(decoding: payload, as: UTF8.self).trimmingWhitespace()
            if let v = number(text) { return .success(v) }
            return .failure(.init("expected a plain number of bpm, got '\(printable(text))'"))
        }
        guard let json = JSONCoding.decode(payload) else {
            return .failure(.init("expected JSON with the field \(field.joined(separator: "."))"))
        }
        var value: JSONValue? = json
        for key in field { value = value?[key] }
        switch value {
        case .number(let v)?: return .success(v)
        case .string(let s)?: if let v = number(s.trimmingWhitespace()) { return .success(v) }
        default: break
        }
        return .failure(.init("no number at \(field.joined(separator: ".")) in the JSON payload"))
    }

    /// A decimal number as JSON writes it (at most 32 characters), or nil.
    static func number(_ text: Substring) -> Double? {
        guard !text.isEmpty, text.utf8.count <= 32, case .number(let v)? = try? JSONValue.parse(Array(text.utf8)) else { return nil }
        return v
    }
}

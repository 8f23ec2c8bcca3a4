public import PacerCore

extension TimerSnapshot {
    /// The retained state payload (the one writer of a snapshot): the members of
    /// ``WireField/ofState`` in sorted order, compact. `ends_at` (ISO 8601 UTC with ms) and
    /// `ends_at_ms` are absent when not running; a rest's that ends on recovery (`until_hr`, the
    /// spec's rule, and `rest_max_ms` and `rest_min_ms` while it waits, `recovered_at_ms` once it
    /// recovered) are absent in any other segment; nullable fields are present as null. Written
    /// member by member without building an object (a restart republishes every state).
    public var jsonBytes: [UInt8] {
        var w = JSONObjectWriter(capacity: 768)
        w.object { w in
            w.bool(.ack, ack)
            w.number(.asOfMs, asOfMs)
            w.bool(.countsUp, countsUp)
            w.string(.display, display)
            w.number(.elapsedMs, elapsedMs)
            if let endsAtMs {
                w.string(.endsAt, iso8601(ms: endsAtMs))
                w.number(.endsAtMs, endsAtMs)
            }
            w.number(.hr, hr.map(Int64.init))
            w.number(.hrAgeMs, hrAgeMs)
            w.number(.hrZone, hrZone.map(Int64.init))
            w.string(.id, id)
            w.string(.kind, kind.rawValue)
            w.nullable(.label, label)
            w.string(.name, name)
            w.nullable(.nextLabel, nextLabel)
            if let nextPhase { w.string(.nextPhase, nextPhase.rawValue) }
            w.bool(.overtime, overtime)
            w.string(.phase, phase.rawValue)
            w.nullable(.preset, preset)
            w.number(.progress, progress)
            if let recoveredAtMs { w.number(.recoveredAtMs, recoveredAtMs) }
            w.number(.remaining, remainingSeconds)
            w.number(.remainingMs, remainingMs)
            if let restMaxMs { w.number(.restMaxMs, restMaxMs) }
            if let restMinMs { w.number(.restMinMs, restMinMs) }
            w.number(.revision, Int64(revision))
            w.number(.round, Int64(round))
            w.number(.rounds, Int64(rounds))
            w.number(.segment, Int64(segment))
            w.number(.segmentDurationMs, segmentDurationMs)
            w.number(.segmentElapsedMs, segmentElapsedMs)
            if let segmentStartedAtMs { w.number(.segmentStartedAtMs, segmentStartedAtMs) }
            w.number(.segments, Int64(segments))
            w.number(.set, Int64(set))
            w.number(.sets, Int64(sets))
            if let startAtMs {
                w.string(.startAt, iso8601(ms: startAtMs))
                w.number(.startAtMs, startAtMs)
            }
            w.number(.startedAtMs, startedAtMs)
            w.string(.status, status.rawValue)
            w.number(.totalProgress, totalProgress)
            w.number(.totalRemainingMs, totalRemainingMs)
            if let untilHR { w.member(WireField.untilHR.rawValue) { $0.out += untilHR.ruleJSON.jsonBytes } }
        }
        return w.out
    }

    /// The retained state as a value, read back from ``jsonBytes`` (the one writer): for
    /// tests and cold paths; the node publishes the bytes.
    public var json: JSONValue { (try? JSONValue.parse(jsonBytes)) ?? .null }

    /// The entry of a `list` reply: the members of ``WireField/ofListEntry``.
    public var listEntry: JSONValue {
        var o: [String: JSONValue] = [:]
        o[.id] = .string(id)
        o[.name] = .string(name)
        o[.kind] = .string(kind.rawValue)
        o[.status] = .string(status.rawValue)
        o[.phase] = .string(phase.rawValue)
        o[.remainingMs] = .optional(remainingMs)
        o[.display] = .string(display)
        o[.revision] = .int(revision)
        return .object(o)
    }
}

extension JSONObjectWriter {
    // The writer's members named by the wire's fields.
    mutating func bool(_ field: WireField, _ value: Bool) { bool(field.rawValue, value) }
    mutating func string(_ field: WireField, _ value: String?) { string(field.rawValue, value) }
    mutating func nullable(_ field: WireField, _ value: String?) { nullable(field.rawValue, value) }
    mutating func number(_ field: WireField, _ value: Double?) { number(field.rawValue, value) }
    mutating func number(_ field: WireField, _ value: Int64?) { number(field.rawValue, value) }
}

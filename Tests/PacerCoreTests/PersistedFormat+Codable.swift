import Foundation
@testable public import PacerCore

// The test oracle of a timer's persisted format: `Codable`, kept only here. The
// node reads and writes a timer with one implementation (TimerMachine+Persisted.swift:
// `init(persisted:)` and `persistedBytes`), and no production type is `Codable`; these tests
// check it against Foundation's `JSONDecoder`/`JSONEncoder` over records below whose
// `Codable` is synthesized (the same stored members and keys as the core's types), which
// define the format's shape.
extension TimerMachine: Codable {
    enum CodingKeys: String, CodingKey {
        case version, id, name, spec, settings, state, revision
        case advancedToMs = "advanced_to_ms", lastChangeMs = "last_change_ms"
    }

    /// A decoder's `userInfo` key: `TimerSettings` to give every decoded machine instead of
    /// the persisted ones (a node that restores replaces them with its configuration's anyway,
    /// so they are not decoded: a restore of 10,000 timers skips 10,000 of them).
    static let settingsOverride = CodingUserInfoKey(rawValue: "pacer.settingsOverride")!

    /// Restores a persisted machine. The program is recompiled from its spec (it is not
    /// persisted: a 10,000-segment program would otherwise be rewritten on every change).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let version = try container.decodeIfPresent(Int.self, forKey: .version) ?? 1
        guard version <= TimerMachine.codingVersion else {
            throw DecodingError.dataCorruptedError(forKey: .version, in: container, debugDescription: "unsupported timer format version \(version)")
        }
        let settings: TimerSettings
        if let override = decoder.userInfo[TimerMachine.settingsOverride] as? TimerSettings {
            settings = override
        } else {
            settings = try container.decodeIfPresent(SettingsRecord.self, forKey: .settings)?.value ?? TimerSettings()
        }
        let id = try container.decode(String.self, forKey: .id), name = try container.decode(String.self, forKey: .name)
        let spec = try container.decode(SpecRecord.self, forKey: .spec).value
        let state = try container.decode(StateRecord.self, forKey: .state).value
        let revision = try container.decode(Int.self, forKey: .revision)
        let advancedToMs = try container.decode(Millis.self, forKey: .advancedToMs)
        let lastChangeMs = try container.decode(Millis.self, forKey: .lastChangeMs)
        do throws(PersistedMachineError) {
            try self.init(restoring: id, name: name, spec: spec, settings: settings, state: state, revision: revision,
                          advancedToMs: advancedToMs, lastChangeMs: lastChangeMs)
        } catch {
            throw DecodingError.dataCorruptedError(forKey: error.path == "spec" ? .spec : .state, in: container, debugDescription: error.problem)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(persistedVersion, forKey: .version)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(SpecRecord(spec), forKey: .spec)
        try container.encode(SettingsRecord(settings), forKey: .settings)
        try container.encode(StateRecord(state), forKey: .state)
        try container.encode(revision, forKey: .revision)
        try container.encode(advancedToMs, forKey: .advancedToMs)
        try container.encode(lastChangeMs, forKey: .lastChangeMs)
    }
}

extension TimerKind: Codable {}
extension SegmentKind: Codable {}
extension AfterAck: Codable {}
extension FinishReason: Codable {}

/// `TimerSpec`'s stored members, with synthesized `Codable`.
struct SpecRecord: Codable {
    var kind: TimerKind
    var workMs: Millis?, restMs: Millis?, restUntilHR: RecoveryRecord?, rounds: Int?, prepareMs: Millis?, sets: Int?, setRestMs: Millis?
    var exercises: [String]?, cooldownMs: Millis?, skipLastRest: Bool
    var durationMs: Millis?, exercise: String?, next: String?, label: String?, targetMs: Millis?
    var segments: [SegmentRecord]?, ack: Bool, afterAck: AfterAck?, hrSource: String?, classHR: Bool?
    var alertIntervalMs: Millis?, autoDismissMs: Millis?, cues: [Int]?, preset: String?

    enum CodingKeys: String, CodingKey {
        case kind, workMs = "work_ms", restMs = "rest_ms", restUntilHR = "rest_until_hr", rounds, prepareMs = "prepare_ms", sets
        case setRestMs = "set_rest_ms", exercises, cooldownMs = "cooldown_ms", skipLastRest = "skip_last_rest"
        case durationMs = "duration_ms", exercise, next, label, targetMs = "target_ms", segments, ack
        case hrSource = "hr_source", classHR = "class_hr", alertIntervalMs = "alert_interval_ms", autoDismissMs = "auto_dismiss_ms", cues, preset
        case afterAck = "after_ack"
    }

    init(_ s: TimerSpec) {
        kind = s.kind; workMs = s.workMs; restMs = s.restMs; restUntilHR = s.restUntilHR.map(RecoveryRecord.init); rounds = s.rounds; prepareMs = s.prepareMs; sets = s.sets
        setRestMs = s.setRestMs; exercises = s.exercises; cooldownMs = s.cooldownMs; skipLastRest = s.skipLastRest
        durationMs = s.durationMs; exercise = s.exercise; next = s.next; label = s.label; targetMs = s.targetMs
        segments = s.segments?.map(SegmentRecord.init); ack = s.ack; afterAck = s.afterAck; hrSource = s.hrSource; classHR = s.classHR
        alertIntervalMs = s.alertIntervalMs; autoDismissMs = s.autoDismissMs; cues = s.cues; preset = s.preset
    }

    var value: TimerSpec {
        var s = TimerSpec(kind: kind)
        s.workMs = workMs; s.restMs = restMs; s.restUntilHR = restUntilHR?.value; s.rounds = rounds; s.prepareMs = prepareMs; s.sets = sets
        s.setRestMs = setRestMs; s.exercises = exercises; s.cooldownMs = cooldownMs; s.skipLastRest = skipLastRest
        s.durationMs = durationMs; s.exercise = exercise; s.next = next; s.label = label; s.targetMs = targetMs
        s.segments = segments?.map(\.value); s.ack = ack; s.afterAck = afterAck; s.hrSource = hrSource; s.classHR = classHR
        s.alertIntervalMs = alertIntervalMs; s.autoDismissMs = autoDismissMs; s.cues = cues; s.preset = preset
        return s
    }
}

/// `Segment`'s stored members, with synthesized `Codable`.
struct SegmentRecord: Codable {
    var kind: SegmentKind, durationMs: Millis?, label: String?, round: Int, set: Int, untilHR: RecoveryRecord?

    enum CodingKeys: String, CodingKey {
        case kind, durationMs = "duration_ms", label, round, set, untilHR = "until_hr"
    }

    init(_ s: Segment) {
        kind = s.kind; durationMs = s.durationMs; label = s.label; round = s.round; set = s.set; untilHR = s.untilHR.map(RecoveryRecord.init)
    }
    var value: Segment { Segment(kind: kind, durationMs: durationMs, label: label, round: round, set: set, untilHR: untilHR?.value) }
}

/// `RecoveryRule`'s members, with synthesized `Codable`: one of the two thresholds, the bounds in
/// ms, and `who` as its word.
struct RecoveryRecord: Codable {
    var belowBpm: Int?, belowPctMax: Int?, maxMs: Millis, minMs: Millis, who: String

    enum CodingKeys: String, CodingKey {
        case belowBpm = "below_bpm", belowPctMax = "below_pct_max", maxMs = "max_ms", minMs = "min_ms", who
    }

    init(_ r: RecoveryRule) {
        switch r.threshold {
        case .bpm(let bpm): belowBpm = bpm
        case .percentOfMax(let percent): belowPctMax = percent
        }
        maxMs = r.maxMs; minMs = r.minMs; who = r.who.word
    }

    var value: RecoveryRule {
        RecoveryRule(threshold: belowBpm.map { .bpm($0) } ?? .percentOfMax(belowPctMax ?? 0), who: RecoveryRule.Who(word: who) ?? .classAll,
                     minMs: minMs, maxMs: maxMs)
    }
}

/// `TimerSettings`' stored members; a member left out takes its default, so settings
/// persisted by an older version load.
struct SettingsRecord: Codable {
    var lagWindowMs: Millis?, cues: [Int]?, alertIntervalMs: Millis?, autoDismissMs: Millis?, backWindowMs: Millis?, halfwayMinimumMs: Millis?

    enum CodingKeys: String, CodingKey {
        case lagWindowMs = "lag_window_ms", cues, alertIntervalMs = "alert_interval_ms", autoDismissMs = "auto_dismiss_ms"
        case backWindowMs = "back_window_ms", halfwayMinimumMs = "halfway_minimum_ms"
    }

    init(_ s: TimerSettings) {
        lagWindowMs = s.lagWindowMs; cues = s.cues; alertIntervalMs = s.alertIntervalMs; autoDismissMs = s.autoDismissMs
        backWindowMs = s.backWindowMs; halfwayMinimumMs = s.halfwayMinimumMs
    }

    var value: TimerSettings {
        let d = TimerSettings()
        return TimerSettings(lagWindowMs: lagWindowMs ?? d.lagWindowMs, cues: cues ?? d.cues, alertIntervalMs: alertIntervalMs ?? d.alertIntervalMs,
                             autoDismissMs: autoDismissMs ?? d.autoDismissMs, backWindowMs: backWindowMs ?? d.backWindowMs,
                             halfwayMinimumMs: halfwayMinimumMs ?? d.halfwayMinimumMs)
    }
}

/// `TimerMachine.Run`'s stored members, with synthesized `Codable`.
struct RunRecord: Codable {
    var index: Int, segmentStartMs: Millis, durationMs: Millis?, startedAtMs: Millis, activeMs: Millis, activeSinceMs: Millis
    var halfwayDone: Bool, overtime: Bool, snoozed: Bool, recoveredAtMs: Millis?

    init(_ r: TimerMachine.Run) {
        index = r.index; segmentStartMs = r.segmentStartMs; durationMs = r.durationMs; startedAtMs = r.startedAtMs
        activeMs = r.activeMs; activeSinceMs = r.activeSinceMs; halfwayDone = r.halfwayDone; overtime = r.overtime; snoozed = r.snoozed
        recoveredAtMs = r.recoveredAtMs
    }

    var value: TimerMachine.Run {
        TimerMachine.Run(index: index, segmentStartMs: segmentStartMs, durationMs: durationMs, startedAtMs: startedAtMs, activeMs: activeMs,
                         activeSinceMs: activeSinceMs, halfwayDone: halfwayDone, overtime: overtime, snoozed: snoozed,
                         recoveredAtMs: recoveredAtMs)
    }
}

/// `TimerMachine.Ended`'s stored members, with synthesized `Codable`.
struct EndedRecord: Codable {
    var atMs: Millis, run: RunRecord?, segmentElapsedMs: Millis, remainingMs: Millis?, reason: FinishReason?

    init(_ e: TimerMachine.Ended) {
        atMs = e.atMs; run = e.run.map(RunRecord.init); segmentElapsedMs = e.segmentElapsedMs; remainingMs = e.remainingMs; reason = e.reason
    }

    var value: TimerMachine.Ended {
        TimerMachine.Ended(atMs: atMs, run: run?.value, segmentElapsedMs: segmentElapsedMs, remainingMs: remainingMs, reason: reason)
    }
}

/// `TimerMachine.State`'s cases, with synthesized `Codable` (`{"case": {labels...}}`, an
/// unlabelled value under `_0`).
enum StateRecord: Codable {
    case idle
    case scheduled(startAtMs: Millis)
    case running(run: RunRecord)
    case paused(run: RunRecord, pausedAtMs: Millis)
    case expired(run: RunRecord, sinceMs: Millis)
    case finished(EndedRecord)
    case cancelled(EndedRecord)

    init(_ state: TimerMachine.State) {
        switch state {
        case .idle: self = .idle
        case .scheduled(let startAtMs): self = .scheduled(startAtMs: startAtMs)
        case .running(let run): self = .running(run: RunRecord(run))
        case .paused(let run, let pausedAtMs): self = .paused(run: RunRecord(run), pausedAtMs: pausedAtMs)
        case .expired(let run, let sinceMs): self = .expired(run: RunRecord(run), sinceMs: sinceMs)
        case .finished(let ended): self = .finished(EndedRecord(ended))
        case .cancelled(let ended): self = .cancelled(EndedRecord(ended))
        }
    }

    var value: TimerMachine.State {
        switch self {
        case .idle: .idle
        case .scheduled(let startAtMs): .scheduled(startAtMs: startAtMs)
        case .running(let run): .running(run: run.value)
        case .paused(let run, let pausedAtMs): .paused(run: run.value, pausedAtMs: pausedAtMs)
        case .expired(let run, let sinceMs): .expired(run: run.value, sinceMs: sinceMs)
        case .finished(let ended): .finished(ended.value)
        case .cancelled(let ended): .cancelled(ended.value)
        }
    }
}

public import PacerCore

/// The member names of the wire's JSON documents (docs/API.md): a command's, a reply's, a
/// timer's retained `state` and its events. Each is spelled here once; the writers
/// (`TimerSnapshot.jsonBytes`, `TimerEvent.json`, `NodeCommand.json`, the node's replies) and
/// the readers (`CommandParser`, `TimerState`, `TimerEvent(event:)`, `Reply`) use these cases.
/// ``ofState``, ``ofEvent``, ``ofCommand`` and ``ofReply`` list which document carries which; the
/// vocabulary fixture (Tests/Fixtures/protocol/vocabulary.json) is made from them.
///
/// A spec's members (`kind`, `work`, `rest`, ...) are the core's spec language (`TimerSpec(json:)`,
/// docs/timer-core.md), read the same from a command, a configuration file and a saved workout.
public enum WireField: String, Sendable, CaseIterable {
    // A command's (and a reply's `id`).
    case action, id, at, ifRevision = "if_revision", timer, spec, name, restart, preset, seconds, since, limit
    case workout, athlete, colour, maxHR = "max_hr", leaderboard, muted, volume
    // A spoken cue's (`say` topic, `cue_ahead`).
    case text, say, event, lang, durationMs = "duration_ms", leadMs = "lead_ms"
    // The displays' (`<base>/displays`; a display's own settings are docs/displays.md's).
    case displays, configured
    // The timetable's (`<base>/timers/<id>/next`, `list_schedules`; a schedule's own members are docs/schedules.md's).
    case schedule, schedules, classes, skipped
    // A reply's.
    case ok, error, code, message, revision, state, deleted, saved, cleared, timers, events, now, nowMs = "now_ms"
    case profile, athletes, present
    // A state's.
    case ack, asOfMs = "as_of_ms", countsUp = "counts_up", display, elapsedMs = "elapsed_ms", endsAt = "ends_at"
    case endsAtMs = "ends_at_ms", hr, hrAgeMs = "hr_age_ms", hrZone = "hr_zone", kind, label, nextLabel = "next_label"
    case nextPhase = "next_phase", overtime, phase, progress, remaining, remainingMs = "remaining_ms", round, rounds
    case segment, segmentDurationMs = "segment_duration_ms", segmentElapsedMs = "segment_elapsed_ms"
    case segmentStartedAtMs = "segment_started_at_ms", segments, set, sets, startAt = "start_at", startAtMs = "start_at_ms"
    case startedAtMs = "started_at_ms", status, totalProgress = "total_progress", totalRemainingMs = "total_remaining_ms"
    // A state's, in a rest that ends on recovery (`until_hr` holds the spec's rule).
    case untilHR = "until_hr", restMaxMs = "rest_max_ms", restMinMs = "rest_min_ms", recoveredAtMs = "recovered_at_ms"
    // An event's.
    case type, dueMs = "due_ms", atMs = "at_ms", cue, lateMs = "late_ms", finishedAt = "finished_at"
    case finishedAtMs = "finished_at_ms", reason
    // The node's `info`.
    case version, node, baseTopic = "base_topic", capabilities, presets, heartRateSources = "heart_rate_sources"
    case clockSynchronized = "clock_synchronized", storage, path
    // A rest's recovery (`<base>/timers/<id>/recovery`; the rule's own members are the spec's).
    case who, recovered, counted, needed, stale, bpm, targetBpm = "target_bpm"

    /// A timer's retained `state` (`TimerSnapshot.jsonBytes`; absent when they do not apply:
    /// `ends_at`, `ends_at_ms`, `next_phase`, `segment_started_at_ms`, `start_at`, `start_at_ms`,
    /// and a rest's that ends on recovery: `until_hr`, `rest_max_ms`, `rest_min_ms`, `recovered_at_ms`).
    public static let ofState: [WireField] = [
        .ack, .asOfMs, .countsUp, .display, .elapsedMs, .endsAt, .endsAtMs, .hr, .hrAgeMs, .hrZone, .id, .kind, .label,
        .name, .nextLabel, .nextPhase, .overtime, .phase, .preset, .progress, .recoveredAtMs, .remaining, .remainingMs,
        .restMaxMs, .restMinMs, .revision, .round, .rounds, .segment, .segmentDurationMs, .segmentElapsedMs, .segmentStartedAtMs,
        .segments, .set, .sets, .startAt, .startAtMs, .startedAtMs, .status, .totalProgress, .totalRemainingMs, .untilHR,
    ]

    /// A timer's event (`TimerEvent.json`): the first five always, the others when they apply.
    public static let ofEvent: [WireField] = [
        .type, .timer, .revision, .dueMs, .atMs, .phase, .label, .nextLabel, .round, .set, .cue, .lateMs,
        .finishedAt, .finishedAtMs, .seconds, .rounds, .reason, .startAt, .startAtMs,
    ]

    /// A spoken cue's, on `<base>/timers/<id>/say` (`SpokenCue.json`; `duration_ms` when the
    /// node's clip is ready).
    public static let ofSay: [WireField] = [.timer, .event, .text, .dueMs, .atMs, .lang, .durationMs]

    /// The retained `<base>/displays`: each saved display's settings with its `display` id, and
    /// how many the configuration has.
    public static let ofDisplays: [WireField] = [.displays, .display, .configured]

    /// A cue announced ahead on `<base>/cue_ahead` (`publish.cue_ahead`; `say` for a spoken cue).
    public static let ofCueAhead: [WireField] = [.timer, .cue, .dueMs, .durationMs, .leadMs, .say]

    /// A command's (`NodeCommand.json`, `CommandParser`), and a `start` with a preset carries the
    /// preset's own parameters beside them.
    public static let ofCommand: [WireField] = [
        .action, .id, .at, .ifRevision, .timer, .spec, .name, .restart, .startAt, .preset, .seconds, .rounds, .since, .limit,
        .workout, .athlete, .colour, .maxHR, .leaderboard, .muted, .volume, .display, .schedule,
    ]

    /// A reply's (docs/API.md, "Replies"), by what answers: every reply `id` and `ok`; a refusal
    /// `error` with `code` and `message`; a timer's command `timer`, `revision` and `state`;
    /// `delete` `deleted`; `list` `timers` (each a summary of a state: `id`, `name`, `kind`,
    /// `status`, `phase`, `remaining_ms`, `display`, `revision`); `time` `now` and `now_ms`;
    /// `history` `events`; the workouts' and athletes' commands `workout`, `athlete`, `saved`,
    /// `cleared` and `profile` (`id`, `name`, `colour`, `max_hr`); `<base>/athletes` `athletes`
    /// (each with `present`).
    public static let ofReply: [WireField] = [
        .id, .ok, .error, .code, .message, .timer, .revision, .state, .deleted, .timers, .now, .nowMs, .events,
        .workout, .athlete, .saved, .cleared, .profile, .name, .colour, .maxHR, .athletes, .present,
        .display, .schedule, .schedules, .classes, .skipped,
    ]

    /// The node's retained `info` (``NodeInfoDocument``); `storage` holds `ok`, `path` and `error`.
    public static let ofInfo: [WireField] = [
        .version, .node, .baseTopic, .timers, .capabilities, .presets, .heartRateSources, .startedAtMs, .clockSynchronized,
        .storage, .ok, .path, .error,
    ]

    /// How a rest that waits for recovery stands, on `<base>/timers/<id>/recovery`
    /// (`RecoveryProgress.json`; `needed`, `bpm` and `target_bpm` when they apply).
    public static let ofRecovery: [WireField] = [.who, .recovered, .counted, .needed, .stale, .bpm, .targetBpm]

    /// The members of a `list` reply's entry: a summary of the timer's state.
    public static let ofListEntry: [WireField] = [.id, .name, .kind, .status, .phase, .remainingMs, .display, .revision]
}

extension JSONValue {
    /// The member `field` of an object; nil when absent or not an object.
    public subscript(_ field: WireField) -> JSONValue? { self[field.rawValue] }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// The member `field`.
    public subscript(_ field: WireField) -> JSONValue? {
        get { self[field.rawValue] }
        set { self[field.rawValue] = newValue }
    }
}

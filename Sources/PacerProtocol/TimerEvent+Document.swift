public import PacerCore

extension TimerEvent {
    /// The type of the class heart-rate summary a `class_hr` timer's run ends with (docs/API.md,
    /// "Class summary"): published on the timer's `event` topic beside the core's event types.
    public static let classSummaryType = "class_summary"

    /// The event payload (docs/API.md, "Events"; the members of ``WireField/ofEvent``):
    /// `{"type","timer","revision","due_ms","at_ms", ...}` with only the fields that apply;
    /// `finished` has `finished_at` (ISO 8601) and `finished_at_ms`; `scheduled` has `start_at`
    /// and `start_at_ms`.
    public var json: JSONValue {
        var object = Self.envelope(type: type.rawValue, timer: timer, revision: revision, dueMs: dueMs, atMs: atMs)
        if let phase { object[.phase] = .string(phase.rawValue) }
        if let label { object[.label] = .string(label) }
        if let nextLabel { object[.nextLabel] = .string(nextLabel) }
        if let round { object[.round] = .int(round) }
        if let set { object[.set] = .int(set) }
        if let cue { object[.cue] = .int(cue) }
        if let lateMs { object[.lateMs] = .int(lateMs) }
        if let finishedAtMs {
            object[.finishedAt] = .string(iso8601(ms: finishedAtMs))
            object[.finishedAtMs] = .int(finishedAtMs)
        }
        if let seconds { object[.seconds] = .int(seconds) }
        if let rounds { object[.rounds] = .int(rounds) }
        if let reason { object[.reason] = .string(reason.rawValue) }
        if let startAtMs {
            object[.startAt] = .string(iso8601(ms: startAtMs))
            object[.startAtMs] = .int(startAtMs)
        }
        return .object(object)
    }

    /// The members every event carries: `type`, `timer`, `revision`, `due_ms`, `at_ms` (a class
    /// summary adds its own to them).
    public static func envelope(type: String, timer: String, revision: Int, dueMs: Millis, atMs: Millis) -> [String: JSONValue] {
        var object: [String: JSONValue] = [:]
        object[.type] = .string(type)
        object[.timer] = .string(timer)
        object[.revision] = .int(revision)
        object[.dueMs] = .int(dueMs)
        object[.atMs] = .int(atMs)
        return object
    }

    /// Reads an event payload (`<base>/timers/<id>/event`), the inverse of `json`: nil when
    /// it is not an event this client knows (no `type`, `timer`, `revision`, `due_ms` and
    /// `at_ms`, or a type it does not know). A field it cannot read is left out.
    public init?(event json: JSONValue) {
        guard let type = json[.type]?.string.flatMap(EventType.init(rawValue:)),
              let timer = json[.timer]?.string,
              let revision = json[.revision]?.int,
              let dueMs = json[.dueMs]?.int64,
              let atMs = json[.atMs]?.int64
        else { return nil }
        self.init(
            type: type, timer: timer, revision: revision, dueMs: dueMs, atMs: atMs,
            phase: json[.phase]?.string.flatMap(Phase.init(rawValue:)),
            label: json[.label]?.string,
            round: json[.round]?.int,
            set: json[.set]?.int,
            cue: json[.cue]?.int,
            lateMs: json[.lateMs]?.int64,
            finishedAtMs: json[.finishedAtMs]?.int64,
            seconds: json[.seconds]?.int,
            reason: json[.reason]?.string.flatMap(FinishReason.init(rawValue:)),
            startAtMs: json[.startAtMs]?.int64,
            nextLabel: json[.nextLabel]?.string,
            rounds: json[.rounds]?.int
        )
    }
}

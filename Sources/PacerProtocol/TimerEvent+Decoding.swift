public import PacerCore

extension TimerEvent {
    /// Reads an event payload (`<base>/timers/<id>/event`), the inverse of `json`: nil when
    /// it is not an event this client knows (no `type`, `timer`, `revision`, `due_ms` and
    /// `at_ms`, or a type it does not know). A field it cannot read is left out.
    public init?(event json: JSONValue) {
        guard let type = json["type"]?.string.flatMap(EventType.init(rawValue:)),
              let timer = json["timer"]?.string,
              let revision = json["revision"]?.int,
              let dueMs = json["due_ms"]?.int64,
              let atMs = json["at_ms"]?.int64
        else { return nil }
        self.init(
            type: type, timer: timer, revision: revision, dueMs: dueMs, atMs: atMs,
            phase: json["phase"]?.string.flatMap(Phase.init(rawValue:)),
            label: json["label"]?.string,
            round: json["round"]?.int,
            set: json["set"]?.int,
            cue: json["cue"]?.int,
            lateMs: json["late_ms"]?.int64,
            finishedAtMs: json["finished_at_ms"]?.int64,
            seconds: json["seconds"]?.int,
            reason: json["reason"]?.string.flatMap(FinishReason.init(rawValue:)),
            startAtMs: json["start_at_ms"]?.int64,
            nextLabel: json["next_label"]?.string
        )
    }
}

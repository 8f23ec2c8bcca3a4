public import PacerCore

/// A spoken cue as the node publishes it on `<base>/timers/<id>/say` (docs/API.md, "Spoken
/// cues"), not retained, when the event it speaks for is published: what a page or Home
/// Assistant says at `due_ms`.
public struct SpokenCue: Sendable, Equatable {
    public var timer: String
    /// The type of the event it speaks for (`phase`, `finished`, ...).
    public var event: String
    public var text: String
    public var dueMs: Millis
    public var atMs: Millis
    /// The phrase table's language (`sound.speech.language`).
    public var lang: String
    /// The node's own clip's length, when it is rendered.
    public var durationMs: Int?

    public init(timer: String, event: String, text: String, dueMs: Millis, atMs: Millis, lang: String, durationMs: Int? = nil) {
        self.timer = timer
        self.event = event
        self.text = text
        self.dueMs = dueMs
        self.atMs = atMs
        self.lang = lang
        self.durationMs = durationMs
    }

    /// The document: the members of ``WireField/ofSay``.
    public var json: JSONValue {
        var o: [String: JSONValue] = [:]
        o[.timer] = .string(timer)
        o[.event] = .string(event)
        o[.text] = .string(text)
        o[.dueMs] = .int(dueMs)
        o[.atMs] = .int(atMs)
        o[.lang] = .string(lang)
        if let durationMs { o[.durationMs] = .int(durationMs) }
        return .object(o)
    }

    /// Reads the document; nil without `timer`, `event`, `text`, `due_ms` and `at_ms`.
    public init?(json: JSONValue) {
        guard let timer = json[.timer]?.string, let event = json[.event]?.string, let text = json[.text]?.string,
              let dueMs = json[.dueMs]?.int64, let atMs = json[.atMs]?.int64 else { return nil }
        self.init(timer: timer, event: event, text: text, dueMs: dueMs, atMs: atMs, lang: json[.lang]?.string ?? "en",
                  durationMs: json[.durationMs]?.int)
    }
}

/// `sound.speech:`: spoken cues on the node's speaker (docs/sound.md, "Speech").
public struct SpeechSettings: Sendable, Equatable {
    /// The program that turns text into speech.
    public enum Engine: String, Sendable, CaseIterable {
        /// espeak-ng (Debian's `espeak-ng`): always there, robotic but clear.
        case espeak
        /// Piper (`piper-tts` from PyPI) with a voice model file: a natural voice.
        case piper

        /// The executable looked for on PATH when `command` is not set.
        public var defaultCommand: String {
            switch self {
            case .espeak: "espeak-ng"
            case .piper: "piper"
            }
        }
    }

    public var engine = Engine.espeak
    /// espeak-ng: a voice name (`espeak-ng --voices`), default the phrase table's `espeak_voice`.
    /// Piper: the absolute path of a voice model (`….onnx`, with its `….onnx.json` beside it).
    public var voice: String?
    /// The engine's executable, when it is not on PATH (a Piper in a virtualenv).
    public var command: String?
    /// The phrase table's language: `<language>.json` (PhraseTable.swift).
    public var language = "en"
    /// A directory searched first for the phrase table.
    public var phrasesDirectory: String?
    /// Where rendered clips are kept; nil: `speech` in the node's data directory.
    public var cacheDirectory: String?
    /// At most this many clips on disk (the least recently used go first).
    public var cacheMaxClips = 500
    /// At most this many bytes of clips on disk.
    public var cacheMaxBytes = 50_000_000
    /// The volume of speech, 0...1 (times the master volume).
    public var volume = 1.0

    // What is said (SpeechPlanner.swift).
    /// The segment's label (or its phase) when it starts: "Work: burpees".
    public var labels = true
    /// The next exercise when a rest (or prepare) starts: "Next: swings".
    public var next = true
    /// The round when its first work segment starts: "Round 3 of 8".
    public var rounds = false
    /// "Last round" when the last round's first work segment starts.
    public var lastRound = false
    /// "Halfway" through a work segment.
    public var halfway = false
    /// The end: "Done" (and "Time is up" for an expired timer, "Target reached" for a stopwatch).
    public var done = true
    /// Time left in a segment, said at these whole seconds ("10 seconds", "1 minute"); empty: none.
    public var marks: [Int] = []

    public init() {}
}

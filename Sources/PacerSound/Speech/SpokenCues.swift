public import Logging
public import PacerCore

/// Spoken cues as `sound.speech` configures them: what is said (`planner`) and the clips that
/// say it (`cache`). Made once when the node starts; hand `cache` to the `SoundPlayer`.
public struct SpokenCues: Sendable {
    public let planner: SpeechPlanner
    public let cache: SpeechCache

    /// Loads the phrase table and opens the cache (its directory is indexed on the cache's queue).
    /// - Throws: `SoundError` when the phrase table is missing or broken (the configuration
    ///   check reports it first).
    public init(settings: SpeechSettings, cacheDirectory: String, logger: Logger) throws(SoundError) {
        let table = try PhraseTable.load(language: settings.language,
                                         directories: PhraseTable.searchPath(configured: settings.phrasesDirectory))
        planner = SpeechPlanner(settings: settings, phrases: table)
        let renderer = SpeechRenderer(settings: settings, defaultVoice: table.espeakVoice)
        cache = SpeechCache(directory: cacheDirectory, renderer: renderer,
                            limits: .init(maxClips: settings.cacheMaxClips, maxBytes: settings.cacheMaxBytes), logger: logger)
    }

    /// Renders ahead, in the background, every phrase a run of `program` can say (a timer
    /// created, started or saved).
    public func prepare(_ program: Program, ack: Bool = false) {
        cache.prepare(planner.texts(for: program, ack: ack))
    }

    /// What `event` says, whether its clip is ready or not (the `say` topic's text); nil: nothing.
    public func text(for event: TimerEvent, context: SpeechPlanner.Context = .init()) -> String? {
        planner.utterance(for: event, context: context)?.text
    }
}

import PacerCore
import PacerProtocol
import PacerSound

/// Where a timer's cue announcements stand: the revision they were scheduled for and the
/// due instant of the last cue announced.
struct CueAheadMark: Equatable {
    var revision: Int
    var announcedThrough: Millis
}

/// The node's sound as the machine keeps it: the speaker as commanded (`sound`: written, then
/// published on `<base>/sound` and handed to the player) and the cue-ahead signal.
///
/// The cue-ahead signal (`publish.cue_ahead`, docs/sound.md "Music"): each cue the timers will
/// sound is announced on `<base>/cue_ahead` that long before its due instant, so another player (a
/// Home Assistant media player, a jukebox) can lower its music before the beep rather than after
/// it. The instants come from the timing model: a copy of the timer's machine is advanced to its
/// next event (`TimerMachine.nextEventDue`, `eventsDue`), nothing else. The node's own music
/// ducking (`sound.music`, PacerSound's MusicDucker) is told of each cue the same way
/// (`EngineEffect.expectCue`), so it lowers the music its full `lead` ahead of every cue.
///
/// A command that moves a timer (pause, adjust, skip) schedules its announcements again; a
/// cue announced before a pause does not sound then (a duck for nothing, documented).
struct SoundPart {
    /// Whether the node has a speaker (`sound:` in its configuration).
    let hasSound: Bool
    let soundTopic: String
    let cueAheadTopic: String
    /// `publish.cue_ahead` (nil: not announced on MQTT).
    let announceMs: Millis?
    /// `sound.music`: the node ducks music itself.
    let ducksMusic: Bool
    /// How long before each cue the machine looks at it: the longer of `publish.cue_ahead` and
    /// the music's lead with 100 ms to spare (the ducker takes it from there); nil: neither.
    let leadMs: Millis?
    private(set) var speaker = Staged(Speaker())
    /// Per timer, the revision its cue-ahead deadline was set at and the last cue announced.
    private var marks: [String: CueAheadMark] = [:]
    /// What is said at cues (`sound.speech`); nil: the node only beeps.
    let speech: SpeechPlanner?
    /// The spoken clips' real lengths, by text, as the speech cache reports them ready.
    private var clipMs: [String: Int] = [:]

    init(configuration: NodeConfiguration, topics: Topics, hasSound: Bool, speech: SpeechPlanner? = nil) {
        self.speech = speech
        self.hasSound = hasSound
        soundTopic = topics.sound
        cueAheadTopic = topics.cueAhead
        announceMs = configuration.cueAheadMs
        ducksMusic = configuration.sound?.music != nil
        let music = configuration.sound?.music.map { Millis($0.leadMs) + 100 }
        switch (configuration.cueAheadMs, music) {
        case (nil, nil): leadMs = nil
        case (let a?, let b?): leadMs = max(a, b)
        case (let a?, nil): leadMs = a
        case (nil, let b?): leadMs = b
        }
    }

    // MARK: - Speech

    /// The text `event` says (its timer's `program` gives the round it is in), nil: none.
    func say(_ event: TimerEvent, program: Program?) -> String? {
        guard let speech else { return nil }
        return speech.utterance(for: event, context: program.map { Self.context(of: event, in: $0) } ?? .init())?.text
    }

    /// The round context of an event: the program's rounds, and whether the event enters the
    /// first work segment of its round (the round is said there, not at every station).
    static func context(of event: TimerEvent, in program: Program) -> SpeechPlanner.Context {
        let first = program.segments.first { $0.kind == .work && $0.round == event.round && $0.set == event.set }
        return SpeechPlanner.Context(rounds: program.rounds, startsRound: event.phase == .work && first?.label == event.label)
    }

    /// Every phrase a run of `program` can say, rendered ahead by the shell (a timer created,
    /// started, extended or restored; a workout saved): at the cue only a ready clip plays.
    func prepare(_ program: Program, ack: Bool, into out: inout EffectSink) {
        guard let speech else { return }
        let texts = speech.texts(for: program, ack: ack)
        if !texts.isEmpty { out.emit(.prepareSpeech(texts)) }
    }

    /// The speech cache has `text`'s clip ready, `durationMs` long.
    mutating func clipReady(_ text: String, durationMs: Int) {
        if clipMs.count >= Self.maxKnownClips && clipMs[text] == nil { clipMs.removeAll() }  // bounded; relearned as clips load
        clipMs[text] = durationMs
    }

    /// How many clip lengths are kept (more than the cache's default 500 clips).
    static let maxKnownClips = 2_000

    /// The length of `text`'s clip, when the cache said it is ready.
    func clipDurationMs(_ text: String) -> Int? { clipMs[text] }

    // MARK: - The speaker

    /// `sound`: the node's speaker muted, unmuted or set to a volume; neither given: what it is now.
    mutating func set(muted: Bool?, volume: Int?) -> Result<CommandResult, ReplyError> {
        if muted != nil || volume != nil {
            guard hasSound else {
                return .failure(.init(.invalidState, "this node has no speaker: add sound: {device: default} to its configuration (docs/sound.md); nothing changed"))
            }
            var next = speaker.value
            if let muted { next.muted = muted }
            if let volume { next.volume = volume }
            if next != speaker.value { speaker.change { $0 = next } }
        }
        return .success(CommandResult(members: speaker.value.members(available: hasSound)))
    }

    /// The stored document at start (the `meta` row); the player is set to it.
    mutating func load(_ document: String?, into out: inout EffectSink) {
        if let document { speaker.load(Speaker(json: JSONCoding.decode(Array(document.utf8)))) }
        out.emit(.speaker(muted: speaker.value.muted, volume: speaker.value.volume))
    }

    /// The write of an input that changed it: the document for `meta`.
    var changedDocument: String? {
        speaker.isChanged ? String(decoding: speaker.value.document, as: UTF8.self) : nil
    }

    /// After the write: the change stands (published when `publish`, handed to the player), or
    /// a failed write puts it back.
    mutating func written(ok: Bool, publish: Bool, into out: inout EffectSink) {
        guard speaker.isChanged else { return }
        guard ok else { return speaker.undo() }
        speaker.settle()
        if publish { self.publish(into: &out) }
        out.emit(.speaker(muted: speaker.value.muted, volume: speaker.value.volume))
    }

    /// The retained `<base>/sound`: the speaker as commanded (`available: false` without one).
    func publish(into out: inout EffectSink) {
        out.publish(to: soundTopic, JSONValue.object(speaker.value.members(available: hasSound)).jsonBytes, retain: true)
    }

    // MARK: - Cue-ahead

    /// How many event instants without a sound are skipped looking for the next cue (a
    /// halfway cue, say); beyond them the search goes on at the last one's deadline.
    static let searchSteps = 16

    /// Sets the timer's `.cueAhead` deadline `lead` before its next sounding event, when the
    /// timer changed since it was last set (not at every displayed second).
    /// - Parameter keepingAnnounced: the change was time's own (a transition): the cues
    ///   announced are still due where they were, and are not announced again. After a command
    ///   the search starts from now (what was announced may have moved).
    mutating func schedule(_ id: String, now: Millis, force: Bool = false, keepingAnnounced: Bool = false, on board: inout Board) {
        guard let lead = leadMs else { return }
        guard let revision = board.timers.read(id, { $0.machine.revision }) else {
            marks[id] = nil
            board.deadlines.set(.cueAhead(id), at: nil)
            return
        }
        if !force, let mark = marks[id], mark.revision == revision { return }
        let kept = force || keepingAnnounced ? marks[id]?.announcedThrough : nil
        var mark = CueAheadMark(revision: revision, announcedThrough: kept ?? now)
        let next = Self.nextSounding(id, after: max(now, mark.announcedThrough), in: board.timers)
        mark.announcedThrough = max(mark.announcedThrough, now)
        marks[id] = mark
        // A search that ran out of steps goes on at the last instant it reached (no lead).
        board.deadlines.set(.cueAhead(id), at: next.map { max(now, $0.cues.isEmpty ? $0.due : $0.due - lead) })
    }

    /// The `.cueAhead` deadline: announces the cues due up to `now + lead`, then sets the next.
    /// - Parameter linkUp: the broker connection is up (the MQTT announcement needs it).
    mutating func announce(_ id: String, now: Millis, linkUp: Bool, on board: inout Board) {
        guard let lead = leadMs, var mark = marks[id] else { return }
        var from = max(mark.announcedThrough, now - 1)
        while let next = Self.nextSounding(id, after: from, in: board.timers), next.due <= now + lead {
            for (event, cue) in next.cues {
                if ducksMusic { board.out.emit(.expectCue(dueMs: event.dueMs, cue: cue)) }
                guard announceMs != nil, linkUp else { continue }
                // A spoken cue says its text and lasts its clip (the beep's length until the clip is ready).
                let text = say(event, program: board.timers.read(id) { $0.machine.program })
                var body: [String: JSONValue] = [:]
                body[.durationMs] = .int(text.flatMap(clipDurationMs) ?? cue.durationMs)
                body[.leadMs] = .int(event.dueMs - now)
                body[.timer] = .string(id)
                body[.cue] = .string(cue.rawValue)
                body[.dueMs] = .int(event.dueMs)
                if let text { body[.say] = .string(text) }
                board.out.publish(to: cueAheadTopic, JSONValue.object(body).jsonBytes, retain: false)
            }
            from = next.due
        }
        mark.announcedThrough = max(from, mark.announcedThrough)
        marks[id] = mark
        schedule(id, now: now, force: true, on: &board)
    }

    /// The timer's next instant after `after` with events that sound (`SoundCue`), and those
    /// cues; after `searchSteps` instants without one, the last of them with no cues (the
    /// search goes on from there at that deadline).
    private static func nextSounding(_ id: String, after: Millis, in timers: TimerTable) -> (due: Millis, cues: [(TimerEvent, SoundCue)])? {
        timers.read(id) { entry -> (due: Millis, cues: [(TimerEvent, SoundCue)])? in
            var at = after
            for _ in 0..<searchSteps {
                guard let due = entry.machine.nextEventDue(after: at) else { return nil }
                let cues = entry.machine.eventsDue(at: due).compactMap { event in SoundCue.cue(for: event).map { (event, $0) } }
                if !cues.isEmpty { return (due, cues) }
                at = due
            }
            return at > after ? (at, []) : nil
        } ?? nil
    }
}

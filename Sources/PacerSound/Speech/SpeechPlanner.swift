public import PacerCore

/// What is said for a timer event: the words of a `PhraseTable`, the cues `SpeechSettings` turn
/// on. Pure: no I/O, no clock (docs/sound.md, "Speech").
///
/// One event gives at most one utterance (its parts joined by the table's separator), played as
/// one clip at the event's due instant in place of its beep:
///
/// | event | said (English) | setting |
/// |---|---|---|
/// | a segment starts (`started`, `phase`, `skipped`, `rewound`) | "Work: burpees", "Rest", "Get ready" | `labels` |
/// | … a rest, set rest or prepare with an exercise after it | "Next: swings" | `next` |
/// | … the first work segment of a round (of more than one) | "Round 3 of 8" | `rounds` |
/// | … the first work segment of the last round | "Last round" (in place of the number) | `lastRound` |
/// | `halfway` | "Halfway" | `halfway` |
/// | `countdown` at a mark | "10 seconds", "1 minute", "1 minute 30 seconds" | `marks` |
/// | `finished` (completed), `expired`, a stopwatch's `overtime` | "Done", "Time is up", "Target reached" | `done` |
public struct SpeechPlanner: Sendable {
    public let settings: SpeechSettings
    public let phrases: PhraseTable

    public init(settings: SpeechSettings, phrases: PhraseTable) {
        self.settings = settings
        self.phrases = phrases
    }

    /// What an event needs beyond its own fields, from the timer's program.
    public struct Context: Sendable, Equatable {
        /// The program's number of rounds (the event carries only its round); nil: unknown,
        /// no round phrase.
        public var rounds: Int?
        /// Whether the segment the event enters is the first work segment of its round (the
        /// round is said then, not at every station of a circuit).
        public var startsRound: Bool
        /// The next exercise, when the event does not carry it (`next_label`).
        public var nextLabel: String?

        public init(rounds: Int? = nil, startsRound: Bool = false, nextLabel: String? = nil) {
            self.rounds = rounds
            self.startsRound = startsRound
            self.nextLabel = nextLabel
        }

        /// The context of segment `index` (0-based) of `program`.
        public init(program: Program, segment index: Int) {
            let segments = program.segments
            guard segments.indices.contains(index) else {
                self.init(rounds: program.rounds)
                return
            }
            let segment = segments[index]
            let earlier = segments[..<index].contains { $0.kind == .work && $0.round == segment.round && $0.set == segment.set }
            self.init(rounds: program.rounds, startsRound: segment.kind == .work && !earlier,
                      nextLabel: program.nextLabel(after: index))
        }
    }

    /// One part of an utterance, for tests and logs.
    public struct Part: Sendable, Equatable {
        public enum Kind: String, Sendable {
            case entry, next, round, lastRound = "last_round", halfway, timeLeft = "time_left", done
        }
        public var kind: Kind
        public var text: String
    }

    /// What is said for one event.
    public struct Utterance: Sendable, Equatable {
        /// The whole text, as rendered and cached.
        public var text: String
        public var parts: [Part]
    }

    /// The utterance for `event`, or nil when nothing is said (its beep plays as before).
    public func utterance(for event: TimerEvent, context: Context = Context()) -> Utterance? {
        var parts: [Part] = []
        switch event.type {
        case .started, .phase, .skipped, .rewound:
            guard let phase = event.phase else { return nil }
            if phase == .overtime {
                if settings.done { parts.append(Part(kind: .done, text: phrases.text("overtime"))) }
                break
            }
            guard let key = Self.phaseKey(phase) else { return nil }
            if phase == .work, context.startsRound, let rounds = context.rounds, rounds > 1, let round = event.round {
                if round == rounds, settings.lastRound {
                    parts.append(Part(kind: .lastRound, text: phrases.text("last_round")))
                } else if settings.rounds {
                    parts.append(Part(kind: .round, text: phrases.text("round", ["round": "\(round)", "rounds": "\(rounds)"])))
                }
            }
            if settings.labels {
                let name = phrases.text(key)
                let text = event.label.map { phrases.text("labelled", ["phase": name, "label": $0]) } ?? name
                parts.append(Part(kind: .entry, text: text))
            }
            if settings.next, phase == .rest || phase == .setRest || phase == .prepare,
               let next = event.nextLabel ?? context.nextLabel {
                parts.append(Part(kind: .next, text: phrases.text("next", ["label": next])))
            }
        case .halfway:
            if settings.halfway { parts.append(Part(kind: .halfway, text: phrases.text("halfway"))) }
        case .countdown:
            if let seconds = event.cue, settings.marks.contains(seconds) {
                parts.append(Part(kind: .timeLeft, text: timeLeft(seconds)))
            }
        case .finished:
            switch event.reason {
            case .completed?, .finished?, .skipped?:
                if settings.done { parts.append(Part(kind: .done, text: phrases.text("done"))) }
            case .acknowledged?, .autoDismissed?, nil:
                break
            }
        case .expired:
            if settings.done { parts.append(Part(kind: .done, text: phrases.text("expired"))) }
        default:
            break  // nothing said (any other event, also a type this version does not know)
        }
        guard !parts.isEmpty else { return nil }
        return Utterance(text: parts.map(\.text).joined(separator: phrases.separator), parts: parts)
    }

    /// Every text a run of `program` can say: what to render ahead when a timer is created or
    /// started (SpeechCache.prepare). In the order they come, without repeats.
    public func texts(for program: Program, ack: Bool = false) -> [String] {
        var texts: [String] = []
        func add(_ event: TimerEvent, _ context: Context = Context()) {
            if let text = utterance(for: event, context: context)?.text, !texts.contains(text) { texts.append(text) }
        }
        for (index, segment) in program.segments.enumerated() {
            let context = Context(program: program, segment: index)
            add(TimerEvent(type: .phase, timer: "", revision: 0, dueMs: 0, atMs: 0, phase: segment.kind.phase,
                           label: segment.label, round: segment.round, set: segment.set, nextLabel: context.nextLabel), context)
            if segment.kind.hasHalfway { add(TimerEvent(type: .halfway, timer: "", revision: 0, dueMs: 0, atMs: 0)) }
            for mark in settings.marks where (segment.durationMs ?? 0) > Millis(mark) * 1000 {
                add(TimerEvent(type: .countdown, timer: "", revision: 0, dueMs: 0, atMs: 0, cue: mark))
            }
        }
        if program.countsUp {
            add(TimerEvent(type: .phase, timer: "", revision: 0, dueMs: 0, atMs: 0, phase: .overtime))
        } else if ack {
            add(TimerEvent(type: .expired, timer: "", revision: 0, dueMs: 0, atMs: 0))
        }
        add(TimerEvent(type: .finished, timer: "", revision: 0, dueMs: 0, atMs: 0, reason: .completed))
        return texts
    }

    /// "10 seconds", "1 minute", "1 minute 30 seconds".
    func timeLeft(_ seconds: Int) -> String {
        func unit(_ n: Int, _ one: String, _ many: String) -> String { phrases.text(n == 1 ? one : many, ["n": "\(n)"]) }
        let (m, s) = seconds.quotientAndRemainder(dividingBy: 60)
        if m == 0 { return unit(s, "second", "seconds") }
        if s == 0 { return unit(m, "minute", "minutes") }
        return phrases.text("minutes_seconds", ["minutes": unit(m, "minute", "minutes"), "seconds": unit(s, "second", "seconds")])
    }

    /// The table's key of a segment's phase; nil for the phases no segment has.
    static func phaseKey(_ phase: Phase) -> String? {
        switch phase {
        case .prepare: "prepare"
        case .work: "work"
        case .rest: "rest"
        case .setRest: "set_rest"
        case .cooldown: "cooldown"
        case .countdown: "countdown"
        case .session: "session"
        case .idle, .scheduled, .overtime, .paused, .expired, .finished, .cancelled: nil
        }
    }
}

import Foundation
import PacerCore
@testable import PacerSound
import Testing

/// The English table of the source tree (share/phrases/en.json).
func englishTable() throws -> PhraseTable {
    try PhraseTable.load(language: "en", directories: [PhraseTable.sourceDirectory])
}

func spoken(_ type: EventType, phase: Phase? = nil, label: String? = nil, next: String? = nil, round: Int? = nil,
            cue: Int? = nil, reason: FinishReason? = nil, due: Millis = 0) -> TimerEvent {
    TimerEvent(type: type, timer: "t", revision: 1, dueMs: due, atMs: due, phase: phase, label: label, round: round,
               cue: cue, reason: reason, nextLabel: next)
}

@Suite("Speech: what is said")
struct SpeechPlannerTests {
    func planner(_ configure: (inout SpeechSettings) -> Void = { _ in }) throws -> SpeechPlanner {
        var settings = SpeechSettings()
        configure(&settings)
        return SpeechPlanner(settings: settings, phrases: try englishTable())
    }

    func say(_ planner: SpeechPlanner, _ event: TimerEvent, _ context: SpeechPlanner.Context = .init()) -> String? {
        planner.utterance(for: event, context: context)?.text
    }

    @Test("defaults: the label on entry, the next exercise in rest, done; no numbers, no halfway, no marks")
    func defaults() throws {
        let p = try planner()
        let round3 = SpeechPlanner.Context(rounds: 8, startsRound: true)
        #expect(say(p, spoken(.phase, phase: .work, label: "Burpees", round: 3), round3) == "Work: Burpees")
        #expect(say(p, spoken(.started, phase: .work, round: 1), round3) == "Work")
        #expect(say(p, spoken(.phase, phase: .rest, next: "Kettlebell swings")) == "Rest. Next: Kettlebell swings")
        #expect(say(p, spoken(.phase, phase: .rest)) == "Rest")
        #expect(say(p, spoken(.started, phase: .prepare, next: "Burpees")) == "Get ready. Next: Burpees")
        #expect(say(p, spoken(.phase, phase: .setRest, next: "Squats")) == "Set rest. Next: Squats")
        #expect(say(p, spoken(.phase, phase: .cooldown)) == "Cool down")
        #expect(say(p, spoken(.skipped, phase: .work, label: "Row")) == "Work: Row")
        #expect(say(p, spoken(.rewound, phase: .rest, next: "Row")) == "Rest. Next: Row")
        #expect(say(p, spoken(.halfway)) == nil)
        #expect(say(p, spoken(.countdown, cue: 10)) == nil)
        #expect(say(p, spoken(.finished, reason: .completed)) == "Done")
        #expect(say(p, spoken(.expired)) == "Time is up")
        #expect(say(p, spoken(.phase, phase: .overtime)) == "Target reached")
        let parts = try #require(p.utterance(for: spoken(.phase, phase: .rest, next: "Row"))).parts.map(\.kind)
        #expect(parts == [.entry, .next])
    }

    @Test("the next exercise comes from the context when the event lacks it; never during work")
    func nextFromContext() throws {
        let p = try planner()
        #expect(say(p, spoken(.phase, phase: .rest), .init(nextLabel: "Lunges")) == "Rest. Next: Lunges")
        #expect(say(p, spoken(.phase, phase: .rest, next: "Row"), .init(nextLabel: "Lunges")) == "Rest. Next: Row")
        #expect(say(p, spoken(.phase, phase: .work, label: "Row", next: "Lunges")) == "Work: Row")
    }

    @Test("round numbers: at the first work segment of a round, the last round in place of its number")
    func rounds() throws {
        let p = try planner { $0.rounds = true }
        #expect(say(p, spoken(.phase, phase: .work, label: "Burpees", round: 3), .init(rounds: 8, startsRound: true))
                == "Round 3 of 8. Work: Burpees")
        #expect(say(p, spoken(.phase, phase: .work, label: "Swings", round: 3), .init(rounds: 8, startsRound: false))
                == "Work: Swings")
        #expect(say(p, spoken(.phase, phase: .work, round: 8), .init(rounds: 8, startsRound: true)) == "Round 8 of 8. Work")
        #expect(say(p, spoken(.phase, phase: .work, round: 1), .init(rounds: 1, startsRound: true)) == "Work")
        #expect(say(p, spoken(.phase, phase: .work, round: 2), .init(rounds: nil, startsRound: true)) == "Work")
        let last = try planner { $0.rounds = true; $0.lastRound = true }
        #expect(say(last, spoken(.phase, phase: .work, round: 8), .init(rounds: 8, startsRound: true)) == "Last round. Work")
        #expect(say(last, spoken(.phase, phase: .work, round: 7), .init(rounds: 8, startsRound: true)) == "Round 7 of 8. Work")
        let lastOnly = try planner { $0.lastRound = true }
        #expect(say(lastOnly, spoken(.phase, phase: .work, round: 8), .init(rounds: 8, startsRound: true)) == "Last round. Work")
        #expect(say(lastOnly, spoken(.phase, phase: .work, round: 7), .init(rounds: 8, startsRound: true)) == "Work")
    }

    @Test("halfway and the time-left marks when on; minutes and seconds in words")
    func halfwayAndMarks() throws {
        let p = try planner { $0.halfway = true; $0.marks = [90, 60, 10, 1, 120] }
        #expect(say(p, spoken(.halfway)) == "Halfway")
        #expect(say(p, spoken(.countdown, cue: 10)) == "10 seconds")
        #expect(say(p, spoken(.countdown, cue: 1)) == "1 second")
        #expect(say(p, spoken(.countdown, cue: 60)) == "1 minute")
        #expect(say(p, spoken(.countdown, cue: 120)) == "2 minutes")
        #expect(say(p, spoken(.countdown, cue: 90)) == "1 minute 30 seconds")
        #expect(say(p, spoken(.countdown, cue: 3)) == nil, "a countdown cue that is not a mark beeps")
    }

    @Test("each switch off silences its part; all off says nothing (the beeps play)")
    func switches() throws {
        let none = try planner { $0.labels = false; $0.next = false; $0.done = false }
        #expect(say(none, spoken(.phase, phase: .work, label: "Row", round: 8), .init(rounds: 8, startsRound: true)) == nil)
        #expect(say(none, spoken(.phase, phase: .rest, next: "Row")) == nil)
        #expect(say(none, spoken(.finished, reason: .completed)) == nil)
        #expect(say(none, spoken(.expired)) == nil)
        #expect(say(none, spoken(.phase, phase: .overtime)) == nil)
        let nextOnly = try planner { $0.labels = false }
        #expect(say(nextOnly, spoken(.phase, phase: .rest, next: "Row")) == "Next: Row")
        #expect(say(nextOnly, spoken(.phase, phase: .work, label: "Row")) == nil)
    }

    @Test("events a person caused or that end nothing are silent")
    func silent() throws {
        let p = try planner { $0.halfway = true; $0.rounds = true; $0.marks = [10] }
        for type in [EventType.paused, .resumed, .adjusted, .acknowledged, .cancelled, .scheduled, .reset, .snoozed, .alert] {
            #expect(say(p, spoken(type, phase: .work, label: "Row")) == nil, "\(type)")
        }
        #expect(say(p, spoken(.finished, reason: .acknowledged)) == nil)
        #expect(say(p, spoken(.finished, reason: .autoDismissed)) == nil)
        #expect(say(p, spoken(.finished, reason: .skipped)) == "Done")
        #expect(say(p, spoken(.phase, phase: .paused)) == nil)
    }

    @Test("a program's texts: every entry, halfway, marks that fit a segment and the end, once each")
    func programTexts() throws {
        let p = try planner { $0.rounds = true; $0.halfway = true; $0.marks = [10, 60] }
        let program = Program(segments: [
            Segment(kind: .prepare, durationMs: 10_000),
            Segment(kind: .work, durationMs: 40_000, label: "Burpees", round: 1),
            Segment(kind: .rest, durationMs: 20_000, round: 1),
            Segment(kind: .work, durationMs: 40_000, label: "Swings", round: 1),
            Segment(kind: .rest, durationMs: 20_000, round: 1),
            Segment(kind: .work, durationMs: 40_000, label: "Burpees", round: 2),
            Segment(kind: .rest, durationMs: 20_000, round: 2),
            Segment(kind: .work, durationMs: 40_000, label: "Swings", round: 2),
        ])
        let texts = p.texts(for: program)
        #expect(texts == ["Get ready. Next: Burpees", "Round 1 of 2. Work: Burpees", "Halfway", "10 seconds",
                          "Rest. Next: Swings", "Work: Swings", "Rest. Next: Burpees", "Round 2 of 2. Work: Burpees", "Done"])
        // The context of a segment: its round's first work segment, the rounds, the next label.
        let context = SpeechPlanner.Context(program: program, segment: 3)
        #expect(context == .init(rounds: 2, startsRound: false, nextLabel: "Burpees"))
        #expect(SpeechPlanner.Context(program: program, segment: 5).startsRound)
    }
}

@Suite("Speech: phrase tables")
struct PhraseTableTests {
    func write(_ text: String, language: String = "xx") throws -> String {
        let directory = try temporaryDirectory()
        try text.write(to: directory.appendingPathComponent("\(language).json"), atomically: true, encoding: .utf8)
        return directory.path
    }

    @Test("English is a file with every key; looked for in the configured directory first")
    func lookup() throws {
        let english = try englishTable()
        #expect(english.language == "en" && english.espeakVoice == "en" && english.separator == ". ")
        #expect(english.path == PhraseTable.sourceDirectory + "/en.json")
        #expect(PhraseTable.searchPath(configured: "/etc/pacer/phrases")
                == ["/etc/pacer/phrases", "/usr/share/pacer/phrases", PhraseTable.sourceDirectory])
        // An owner's own English in the configured directory wins over the shipped one.
        var text = try String(contentsOfFile: english.path, encoding: .utf8)
        text = text.replacingOccurrences(of: "\"Done\"", with: "\"Well done\"")
        let mine = try write(text, language: "en")
        let table = try PhraseTable.load(language: "en", directories: PhraseTable.searchPath(configured: mine))
        #expect(table.text("done") == "Well done")
        #expect(table.path == mine + "/en.json")
    }

    @Test("another language is a file: a German table works without code")
    func anotherLanguage() throws {
        var text = try String(contentsOfFile: try englishTable().path, encoding: .utf8)
        for (en, de) in [("\"language\": \"en\"", "\"language\": \"de\""), ("\"espeak_voice\": \"en\"", "\"espeak_voice\": \"de\""),
                         ("\"Work\"", "\"Arbeit\""), ("\"Next: {label}\"", "\"Als Nächstes: {label}\""),
                         ("\"Round {round} of {rounds}\"", "\"Runde {round} von {rounds}\"")] {
            text = text.replacingOccurrences(of: en, with: de)
        }
        let table = try PhraseTable.load(language: "de", directories: [try write(text, language: "de")])
        var settings = SpeechSettings()
        settings.rounds = true
        let planner = SpeechPlanner(settings: settings, phrases: table)
        #expect(table.espeakVoice == "de")
        #expect(planner.utterance(for: spoken(.phase, phase: .work, label: "Kniebeugen", round: 2),
                                  context: .init(rounds: 4, startsRound: true))?.text == "Runde 2 von 4. Arbeit: Kniebeugen")
        #expect(planner.utterance(for: spoken(.phase, phase: .rest, next: "Rudern"))?.text == "Rest. Als Nächstes: Rudern")
    }

    @Test("a missing table, a missing key, an unknown placeholder and bad JSON are errors that name the file and key")
    func errors() throws {
        let directory = try temporaryDirectory().path
        #expect(throws: SoundError.self) { try PhraseTable.load(language: "zz", directories: [directory]) }
        do {
            _ = try PhraseTable.load(language: "zz", directories: [directory, "/nowhere"])
        } catch {
            #expect(error.description == "no phrase table zz.json in \(directory), /nowhere")
        }
        let english = try String(contentsOfFile: try englishTable().path, encoding: .utf8)
        let cases: [(String, String)] = [
            (english.replacingOccurrences(of: "\"halfway\": \"Halfway\",", with: ""), "has no text for \"halfway\""),
            (english.replacingOccurrences(of: "\"Halfway\"", with: "\"Half {label}\""), "\"halfway\" uses {label}; it may use none"),
            (english.replacingOccurrences(of: "Next: {label}", with: "Next: {lable}"), "\"next\" uses {lable}; it may use {label}"),
            ("{\"language\": \"xx\", \"phrases\": ", "not valid JSON"),
            ("{\"phrases\": {}}", "has no \"language\""),
        ]
        for (text, reason) in cases {
            let dir = try write(text)
            do {
                _ = try PhraseTable.load(language: "xx", directories: [dir])
                Issue.record("accepted: \(reason)")
            } catch {
                #expect(error.description.contains(reason) && error.description.contains(dir + "/xx.json"), "\(error)")
            }
        }
        #expect(throws: SoundError.self) { try PhraseTable.load(language: "../etc/passwd", directories: [directory]) }
        #expect(PhraseTable.isValidLanguage("pt-BR") && PhraseTable.isValidLanguage("de") && !PhraseTable.isValidLanguage("EN"))
    }

    @Test("a label with braces is said as written")
    func braces() throws {
        let table = try englishTable()
        #expect(table.text("labelled", ["phase": "Work", "label": "{round} {phase}"]) == "Work: {round} {phase}")
    }
}

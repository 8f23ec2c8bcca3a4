import PacerCore
import Testing

/// Expects `body` to throw a SpecError with exactly `message`.
func expectSpecError(_ message: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected SpecError: \(message)", sourceLocation: sourceLocation)
    } catch let error as SpecError {
        #expect(error.message == message, sourceLocation: sourceLocation)
    } catch {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
    }
}

func kinds(_ program: Program) -> [SegmentKind] { program.segments.map(\.kind) }

@Suite("Specs, presets and compilation")
struct SpecTests {
    @Test func intervalCompilesWorkRestRounds() throws {
        let spec = try TimerSpec(json: ["kind": "interval", "work": "40s", "rest": "20s", "rounds": 3])
        let program = try spec.compile()
        #expect(kinds(program) == [.work, .rest, .work, .rest, .work])   // no rest after the very last work
        #expect(program.segments.map(\.round) == [1, 1, 2, 2, 3])
        #expect(program.segments.map(\.durationMs) == [40_000, 20_000, 40_000, 20_000, 40_000])
        #expect(program.rounds == 3 && program.sets == 1)
        #expect(program.totalMs == 160_000)
        #expect(program.prefixMs == [0, 40_000, 60_000, 100_000, 120_000, 160_000])
    }

    @Test func intervalWithLastRestWhenAsked() throws {
        let spec = try TimerSpec(json: ["kind": "interval", "work": 40, "rest": 20, "rounds": 2, "skip_last_rest": false])
        #expect(kinds(try spec.compile()) == [.work, .rest, .work, .rest])
    }

    @Test func circuitWithStationsSetsPrepareAndCooldown() throws {
        let spec = try TimerSpec(json: [
            "kind": "interval", "prepare": "10s", "work": "30s", "rest": "15s", "rounds": 2, "sets": 2,
            "set_rest": "1m", "exercises": ["Squat", "Push-up"], "cooldown": "2m",
        ])
        let program = try spec.compile()
        #expect(kinds(program) == [
            .prepare,
            .work, .rest, .work, .rest,      // set 1 round 1
            .work, .rest, .work, .setRest,   // set 1 round 2, then set rest
            .work, .rest, .work, .rest,      // set 2 round 1
            .work, .rest, .work,             // set 2 round 2, no last rest
            .cooldown,
        ])
        let works = program.segments.filter { $0.kind == .work }
        #expect(works.map(\.label) == ["Squat", "Push-up", "Squat", "Push-up", "Squat", "Push-up", "Squat", "Push-up"])
        #expect(works.map(\.set) == [1, 1, 1, 1, 2, 2, 2, 2])
        #expect(works.map(\.round) == [1, 1, 2, 2, 1, 1, 2, 2])
        #expect(program.sets == 2 && program.rounds == 2)
        // next labels: the prepare shows the first exercise, a rest the upcoming one
        #expect(program.nextLabel(after: 0) == "Squat")
        #expect(program.nextLabel(after: 1) == "Push-up")
        #expect(program.nextLabel(after: 2) == "Push-up")
        #expect(program.nextLabel(after: program.count - 1) == nil)
    }

    @Test func zeroLengthSegmentsAreDropped() throws {
        let spec = try TimerSpec(json: ["kind": "interval", "work": "20s", "rest": 0, "rounds": 3, "prepare": "0s", "cooldown": 0])
        #expect(kinds(try spec.compile()) == [.work, .work, .work])
        let program = try TimerSpec(json: ["kind": "program", "segments": [
            ["kind": "prepare", "duration": 0], ["kind": "work", "duration": "5s"], ["kind": "rest", "duration": "0s"],
        ]]).compile()
        #expect(kinds(program) == [.work])
    }

    @Test func setRestFallsBackToRest() throws {
        let spec = try TimerSpec(json: ["kind": "interval", "work": "20s", "rest": "10s", "rounds": 1, "sets": 2])
        #expect(kinds(try spec.compile()) == [.work, .rest, .work])
    }

    @Test func restCountdownStopwatchProgram() throws {
        let rest = try TimerSpec(json: ["kind": "rest", "exercise": "Bench", "next": "Row"])
        #expect(rest.ack == true)
        let restProgram = try rest.compile()
        #expect(restProgram.segments == [Segment(kind: .rest, durationMs: 90_000, label: "Bench")])
        #expect(restProgram.nextLabel(after: 0) == "Row")

        let countdown = try TimerSpec(json: ["kind": "countdown", "duration": "00:10:00", "label": "Pasta"])
        #expect(countdown.ack == false)
        #expect(try countdown.compile().segments == [Segment(kind: .countdown, durationMs: 600_000, label: "Pasta")])

        let stopwatch = try TimerSpec(json: ["kind": "stopwatch", "target": "20m"])
        let watch = try stopwatch.compile()
        #expect(watch.countsUp)
        #expect(watch.segments == [Segment(kind: .session, durationMs: 1_200_000)])
        #expect(try TimerSpec(json: ["kind": "stopwatch"]).compile().segments[0].isOpenEnded)

        let program = try TimerSpec(json: ["kind": "program", "segments": [
            ["kind": "prepare", "duration": "10s"],
            ["kind": "work", "duration": "1m", "label": "Row", "round": 1],
            ["kind": "session", "label": "Free"],
            ["kind": "cooldown", "duration": "5m", "round": 2, "set": 3],
        ]]).compile()
        #expect(kinds(program) == [.prepare, .work, .session, .cooldown])
        #expect(program.segments[2].isOpenEnded)
        #expect(program.totalMs == nil)
        #expect(program.rounds == 2 && program.sets == 3)
        #expect(program.firstOpenIndex(after: 0) == 2)
        #expect(program.firstOpenIndex(after: 2) == nil)
        #expect(program.remainingAfter(0) == nil)
        #expect(program.remainingAfter(2) == 300_000)
    }

    @Test func builtInPresets() throws {
        #expect(Presets.builtInNames == ["tabata", "emom", "amrap", "for_time"])
        let tabata = try TimerSpec(json: ["preset": "tabata"])
        #expect(tabata.preset == "tabata")
        let program = try tabata.compile()
        #expect(program.count == 1 + 8 + 7)
        #expect(program.segments.filter { $0.kind == .work }.allSatisfy { $0.durationMs == 20_000 })
        #expect(program.segments.filter { $0.kind == .rest }.allSatisfy { $0.durationMs == 10_000 })
        #expect(program.totalMs == 240_000)   // 10 s + 8 × 20 s + 7 × 10 s

        let emom = try TimerSpec(json: ["preset": "emom", "rounds": 12]).compile()
        #expect(kinds(emom) == [.prepare] + Array(repeating: .work, count: 12))
        #expect(emom.segments[1].durationMs == 60_000)

        let amrap = try TimerSpec(json: ["preset": "amrap", "duration": "15m"]).compile()
        #expect(kinds(amrap) == [.prepare, .work])
        #expect(amrap.segments[1].durationMs == 900_000)

        let forTime = try TimerSpec(json: ["preset": "for_time", "cap": "12m"])
        #expect(forTime.kind == .stopwatch && forTime.targetMs == 720_000)
        #expect(try TimerSpec(json: ["preset": "for_time"]).targetMs == 1_200_000)
    }

    @Test func userPresetsAndPrecedence() throws {
        let presets: [String: JSONValue] = [
            "legs": ["kind": "interval", "work": "45s", "rest": "15s", "rounds": 4, "exercises": ["Squat", "Lunge"]],
            "tabata": ["kind": "interval", "work": "20s", "rest": "10s", "rounds": 4],
        ]
        let legs = try TimerSpec(json: ["preset": "legs", "rounds": 2], presets: presets)
        #expect(legs.rounds == 2 && legs.exercises == ["Squat", "Lunge"] && legs.preset == "legs")
        let tabata = try TimerSpec(json: ["preset": "tabata"], presets: presets)
        #expect(tabata.rounds == 4 && tabata.prepareMs == nil)   // user preset wins over the built-in
        expectSpecError("unknown preset 'nope'; known presets: amrap, emom, for_time, legs, tabata") {
            _ = try TimerSpec(json: ["preset": "nope"], presets: presets)
        }
        expectSpecError("preset 'loop' must not itself use a preset (it refers to \"tabata\")") {
            _ = try TimerSpec(json: ["preset": "loop"], presets: ["loop": ["preset": "tabata"]])
        }
    }

    @Test func validationMessages() {
        expectSpecError("rest must be between 0 s and 7 days, got -5 s") {
            _ = try TimerSpec(json: ["kind": "interval", "work": "20s", "rest": -5])
        }
        expectSpecError("work must be between 1 s and 7 days, got 500 ms") {
            _ = try TimerSpec(json: ["kind": "interval", "work": "500ms"])
        }
        expectSpecError("work must be between 1 s and 7 days, got 8 days") {
            _ = try TimerSpec(json: ["kind": "interval", "work": "8d"])
        }
        expectSpecError("rounds must be between 1 and 1,000, got 0") {
            _ = try TimerSpec(json: ["kind": "interval", "work": "20s", "rounds": 0])
        }
        expectSpecError("rounds must be between 1 and 1,000, got 1,001") {
            _ = try TimerSpec(json: ["kind": "interval", "work": "20s", "rounds": 1001])
        }
        expectSpecError("sets must be between 1 and 100, got 101") {
            _ = try TimerSpec(json: ["kind": "interval", "work": "20s", "sets": 101])
        }
        expectSpecError("rounds must be a whole number, got 2.5") {
            _ = try TimerSpec(json: ["kind": "interval", "work": "20s", "rounds": 2.5])
        }
        expectSpecError("the program would have 20,000 segments; at most 10,000 are allowed (lower rounds, sets or exercises)") {
            _ = try TimerSpec(json: ["kind": "interval", "work": "20s", "rest": "10s", "rounds": 1000, "sets": 10, "skip_last_rest": false])
        }
        expectSpecError("duration must be between 1 s and 7 days, got 0 s") {
            _ = try TimerSpec(json: ["kind": "countdown", "duration": 0])
        }
        expectSpecError("duration is required for a countdown timer (like \"10m\" or \"00:10:00\")") {
            _ = try TimerSpec(json: ["kind": "countdown"])
        }
        expectSpecError("work is required for an interval timer (like \"40s\")") {
            _ = try TimerSpec(json: ["kind": "interval", "rest": "10s"])
        }
        expectSpecError("label must be at most 100 characters, got 101") {
            _ = try TimerSpec(json: ["kind": "countdown", "duration": 10, "label": .string(String(repeating: "x", count: 101))])
        }
        expectSpecError("exercise must not contain control characters or line breaks (newlines, tabs, U+2028, ...)") {
            _ = try TimerSpec(json: ["kind": "rest", "exercise": "a\nb"])
        }
        expectSpecError("unknown key 'wrok' in an interval spec; allowed keys: ack, after_ack, alert_interval, auto_dismiss, class_hr, cooldown, cues, exercises, hr_source, kind, prepare, preset, rest, rounds, set_rest, sets, skip_last_rest, work") {
            _ = try TimerSpec(json: ["kind": "interval", "wrok": "20s"])
        }
        expectSpecError("kind must be one of interval, rest, countdown, stopwatch, program, got \"timer\"") {
            _ = try TimerSpec(json: ["kind": "timer"])
        }
        expectSpecError("kind is required (one of interval, rest, countdown, stopwatch, program), or give a preset") {
            _ = try TimerSpec(json: ["work": "20s"])
        }
        expectSpecError("spec must be a JSON object, got [1]") {
            _ = try TimerSpec(json: [1])
        }
        expectSpecError("segments[1].duration must be between 1 s and 7 days, got 0 s") {
            _ = try TimerSpec(json: ["kind": "program", "segments": [["kind": "rest", "duration": 5], ["kind": "work", "duration": 0]]])
        }
        expectSpecError("segments[0].kind must be one of prepare, work, rest, set_rest, cooldown, countdown, session, got \"run\"") {
            _ = try TimerSpec(json: ["kind": "program", "segments": [["kind": "run", "duration": 5]]])
        }
        expectSpecError("unknown key 'lenght' in segments[0]; allowed keys: duration, kind, label, round, set") {
            _ = try TimerSpec(json: ["kind": "program", "segments": [["kind": "work", "lenght": 5]]])
        }
        expectSpecError("segments must have at most 10,000 entries, got 10,001") {
            let many = JSONValue.array(Array(repeating: ["kind": "work", "duration": 1], count: 10_001))
            _ = try TimerSpec(json: ["kind": "program", "segments": many])
        }
        expectSpecError("segments must contain at least one segment longer than 0 s") {
            _ = try TimerSpec(json: ["kind": "program", "segments": [["kind": "rest", "duration": 0]]])
        }
        expectSpecError("cues[0] must be between 1 and 3,600, got 0") {
            _ = try TimerSpec(json: ["kind": "countdown", "duration": 10, "cues": [0]])
        }
        expectSpecError("alert_interval must be between 1 s and 1 h, got 500 ms") {
            _ = try TimerSpec(json: ["kind": "countdown", "duration": 10, "alert_interval": "500ms"])
        }
        expectSpecError("ack must be true or false, got \"yes\"") {
            _ = try TimerSpec(json: ["kind": "countdown", "duration": 10, "ack": "yes"])
        }
        expectSpecError("unknown key 'ack' in a stopwatch spec; allowed keys: class_hr, cues, hr_source, kind, label, preset, target") {
            _ = try TimerSpec(json: ["kind": "stopwatch", "ack": true])
        }
        expectSpecError("exercises[1] must not be empty") {
            _ = try TimerSpec(json: ["kind": "interval", "work": 20, "exercises": ["a", ""]])
        }
    }

    @Test func limitsAreInclusive() throws {
        _ = try TimerSpec(json: ["kind": "interval", "work": "1s", "rounds": 1000]).compile()
        _ = try TimerSpec(json: ["kind": "interval", "work": "7d", "rest": "7d", "rounds": 2]).compile()
        _ = try TimerSpec(json: ["kind": "interval", "work": "1s", "rest": "1s", "rounds": 1000, "sets": 5]).compile()  // 9,999 segments
        _ = try TimerSpec(json: ["kind": "countdown", "duration": .string(String(repeating: "x", count: 0) + "7d"), "label": .string(String(repeating: "é", count: 100))]).compile()
        let many = JSONValue.array(Array(repeating: ["kind": "work", "duration": 1], count: 10_000))
        #expect(try TimerSpec(json: ["kind": "program", "segments": many]).compile().count == 10_000)
    }

    @Test func canonicalJSONRoundTrips() throws {
        let inputs: [JSONValue] = [
            ["kind": "interval", "work": "40s", "rest": "20s", "rounds": 8],
            ["kind": "interval", "prepare": 10, "work": 30.5, "rest": "15s", "rounds": 2, "sets": 3, "set_rest": "1m",
             "exercises": ["A", "B"], "cooldown": "2m", "skip_last_rest": false, "ack": true, "cues": [5, 1],
             "alert_interval": "30s", "auto_dismiss": "10m", "hr_source": "strap"],
            ["kind": "rest"],
            ["kind": "rest", "duration": "2m", "exercise": "Bench", "next": "Row", "ack": false],
            ["kind": "countdown", "duration": "01:30:00", "label": "Roast"],
            ["kind": "stopwatch"],
            ["kind": "stopwatch", "target": "20m", "label": "Sit"],
            ["kind": "stopwatch", "class_hr": true],
            ["kind": "interval", "work": "20s", "rest": "10s", "rounds": 3, "class_hr": true],
            ["kind": "interval", "work": "20s", "rest": "10s", "rounds": 3, "class_hr": false],
            ["kind": "program", "segments": [["kind": "work", "duration": "1m", "label": "Row"], ["kind": "session"]]],
            ["preset": "tabata"],
            ["preset": "emom", "rounds": 12],
            ["preset": "for_time", "cap": "15m"],
        ]
        for input in inputs {
            let spec = try TimerSpec(json: input)
            let again = try TimerSpec(json: spec.json)
            #expect(again == spec, "\(input) -> \(spec.json)")
            #expect(again.json == spec.json)
        }
        let tabata = try TimerSpec(json: ["preset": "tabata"]).json
        #expect(tabata == ["kind": "interval", "preset": "tabata", "prepare": "10s", "work": "20s", "rest": "10s", "rounds": 8, "skip_last_rest": true, "ack": false])
    }

    @Test func factoriesMatchJSON() throws {
        #expect(try TimerSpec(json: ["kind": "countdown", "duration": "5m"]) == .countdown(durationMs: 300_000))
        #expect(try TimerSpec(json: ["kind": "rest"]) == .rest())
        #expect(try TimerSpec(json: ["kind": "stopwatch", "target": 60]) == .stopwatch(targetMs: 60_000))
        var interval = TimerSpec.interval(workMs: 20_000, restMs: 10_000, rounds: 8)
        #expect(try TimerSpec(json: ["kind": "interval", "work": 20, "rest": 10, "rounds": 8]) == interval)
        interval.ack = true
        #expect(throws: SpecError.self) { try TimerSpec.stopwatch().with { $0.ack = true }.compile() }
    }
}

extension TimerSpec {
    func with(_ change: (inout TimerSpec) -> Void) -> TimerSpec {
        var copy = self
        change(&copy)
        return copy
    }
}

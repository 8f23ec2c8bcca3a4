import Foundation
import PacerCore
import PacerProtocol
import PropertyBased
import Testing

// The documents the protocol writes for the core's values: a timer's retained `state`
// (`TimerSnapshot.jsonBytes`) and its events (`TimerEvent.json`), and the plain words of a
// timer's `cmd` topic (`TimerOperation(word:)`).

/// 2026-11-22T04:00:00Z.
private let t0: Millis = 1_795_320_000_000
private let startNow = TimerOperation.start(spec: nil, startAt: nil, restart: false)

private func machine(_ spec: TimerSpec) throws -> TimerMachine {
    try TimerMachine(id: "t1", name: "Timer t1", spec: spec)
}

@Suite("State and event documents")
struct DocumentTests {
    @Test func snapshotJSONHasEverySpecField() throws {
        var m = try machine(.interval(workMs: 20_000, restMs: 10_000, rounds: 8, exercises: ["Squat"]))
        _ = m.handle(TimerCommand(startNow), now: t0)
        var running = m.snapshot(at: t0 + 1_500)
        running.hr = 142
        let json = running.json
        for key in ["id", "name", "kind", "status", "phase", "label", "next_label", "round", "rounds", "set", "sets", "segment",
                    "segments", "segment_duration_ms", "remaining_ms", "elapsed_ms", "total_remaining_ms", "progress",
                    "ends_at", "ends_at_ms", "started_at_ms", "hr", "hr_age_ms", "revision", "as_of_ms", "remaining", "display"] {
            #expect(json[key] != nil, "missing \(key)")
        }
        #expect(json["ends_at"]?.string == iso8601(ms: t0 + 20_000))
        #expect(json["ends_at_ms"]?.int64 == t0 + 20_000)
        #expect(json["hr"]?.int == 142 && json["hr_age_ms"]?.isNull == true)
        #expect(json["segment"]?.int == 1 && json["segments"]?.int == 15)
        #expect(json["remaining"]?.int == 19 && json["display"]?.string == "0:19")
        #expect(json["label"]?.string == "Squat" && json["next_label"]?.string == "Squat")
        #expect(json["progress"]?.double == 0.075)
        _ = m.handle(TimerCommand(.pause), now: t0 + 2_000)
        let paused = m.snapshot(at: t0 + 3_000).json
        #expect(paused["ends_at"] == nil && paused["ends_at_ms"] == nil)
        #expect(paused["hr"]?.isNull == true)
        let text = String(decoding: try JSONEncoder().encode(paused), as: UTF8.self)
        #expect(text.contains("\"remaining_ms\":18000"))
    }

    @Test("a rest that ends on recovery: the state says so, waiting and recovered; the event reads back")
    func recoveryDocuments() throws {
        var m = try machine(.interval(workMs: 20_000, rounds: 2,
                                      restUntilHR: RecoveryRule(threshold: .percentOfMax(65), who: .classMedian, minMs: 20_000, maxMs: 90_000)))
        _ = m.handle(TimerCommand(startNow), now: t0)
        _ = m.advance(to: t0 + 20_000)
        let waiting = m.snapshot(at: t0 + 30_000)
        let text = String(decoding: waiting.jsonBytes, as: UTF8.self)
        #expect(text.contains("\"rest_max_ms\":90000,\"rest_min_ms\":20000,\"revision\""))
        #expect(text.hasSuffix("\"until_hr\":{\"below_pct_max\":65,\"max\":\"1m30s\",\"min\":\"20s\",\"who\":\"class_median\"}}"))
        #expect(waiting.json["ends_at_ms"]?.int64 == t0 + 110_000 && waiting.json["recovered_at_ms"] == nil)
        let state = try #require(TimerState(state: waiting.json))
        #expect(state.waitsForRecovery && state.untilHR == waiting.untilHR && state.restMaxMs == 90_000 && state.restMinMs == 20_000)
        let events = try m.recovered(at: t0 + 35_000, now: t0 + 35_000).get()
        #expect(events.map(\.type) == [.recovered])
        #expect(events[0].json == ["type": "recovered", "timer": "t1", "revision": .int(m.revision), "due_ms": .int(t0 + 35_000),
                                   "at_ms": .int(t0 + 35_000), "phase": "rest", "round": 1, "set": 1])
        #expect(TimerEvent(event: events[0].json) == events[0])
        let recovered = try #require(TimerState(state: m.snapshot(at: t0 + 36_000).json))
        #expect(!recovered.waitsForRecovery && recovered.recoveredAtMs == t0 + 35_000 && recovered.endsAtMs == t0 + 40_000)
        #expect(recovered.restMaxMs == nil && recovered.untilHR != nil)
        let work = try #require(TimerState(state: m.snapshot(at: t0 + 41_000).json))
        #expect(work.untilHR == nil && work.recoveredAtMs == nil && work.phase == .work)
    }

    @Test func eventJSON() throws {
        let event = TimerEvent(type: .phase, timer: "t1", revision: 7, dueMs: 1000, atMs: 1002, phase: .rest, label: nil, round: 3)
        #expect(event.json == ["type": "phase", "timer": "t1", "revision": 7, "due_ms": 1000, "at_ms": 1002, "phase": "rest", "round": 3])
        let finished = TimerEvent(type: .finished, timer: "t1", revision: 8, dueMs: 0, atMs: 5000, lateMs: 5000, finishedAtMs: 0, reason: .completed)
        #expect(finished.json["finished_at"]?.string == "1970-01-01T00:00:00.000Z")
        #expect(finished.json["late_ms"]?.int == 5000 && finished.json["reason"]?.string == "completed")
    }

    @Test("a state carries the members of WireField.ofState and no other; an event those of WireField.ofEvent")
    func documentsCarryTheirListedMembers() throws {
        var m = try machine(.interval(workMs: 20_000, restMs: 10_000, rounds: 2, exercises: ["Squat"]))
        var seen: Set<String> = []
        _ = m.handle(TimerCommand(.start(spec: nil, startAt: t0 + 5_000, restart: false)), now: t0)
        seen.formUnion(m.snapshot(at: t0).json.object!.keys)  // scheduled: start_at
        _ = m.advance(to: t0 + 6_000)
        seen.formUnion(m.snapshot(at: t0 + 6_000).json.object!.keys)  // running: ends_at, next_phase, segment_started_at_ms
        var rest = try machine(.rest(untilHR: RecoveryRule(threshold: .bpm(120), minMs: 20_000, maxMs: 90_000)))
        _ = rest.handle(TimerCommand(startNow), now: t0)
        seen.formUnion(rest.snapshot(at: t0).json.object!.keys)  // waiting: until_hr, rest_max_ms, rest_min_ms
        _ = rest.recovered(at: t0 + 10_000, now: t0 + 10_000)
        seen.formUnion(rest.snapshot(at: t0 + 10_000).json.object!.keys)  // recovered before its min: recovered_at_ms
        #expect(seen == Set(WireField.ofState.map(\.rawValue)))
        #expect(m.snapshot(at: t0).listEntry.object.map { Set($0.keys) } == Set(WireField.ofListEntry.map(\.rawValue)))
        let every = TimerEvent(type: .finished, timer: "t1", revision: 1, dueMs: 0, atMs: 1, phase: .work, label: "a", round: 1, set: 1,
                               cue: 3, lateMs: 1, finishedAtMs: 0, seconds: 5, reason: .completed, startAtMs: 0, nextLabel: "b", rounds: 8)
        #expect(Set(every.json.object!.keys) == Set(WireField.ofEvent.map(\.rawValue)))
        #expect(TimerEvent(event: every.json) == every)
    }

    @Test("a state snapshot's direct writer gives exactly its JSON value's bytes, on 2,000 random snapshots")
    func snapshotWriterMatchesValue() async throws {
        let specs: [JSONValue] = [
            ["kind": "countdown", "duration": "10m"],
            ["kind": "interval", "work": "40s", "rest": "20s", "rounds": 3, "exercises": ["Squat \"deep\"", "Row \\ 2"]],
            ["kind": "stopwatch", "target": "5s"],
            ["kind": "interval", "work": "40s", "rest": ["until_hr": ["below_pct_max": 65, "who": "class_80pct", "max": "2m"]], "rounds": 3],
        ]
        let machines = try specs.map { try TimerMachine(id: "t1", name: "Timer t1", spec: TimerSpec(json: $0)) }
        await propertyCheck(count: 2_000, input: Gen.uint64().array(of: 1...60)) { choices in
            var random = Choices(choices)
            var machine = machines[Int(random.next() % UInt64(machines.count))]
            let start: Millis = 1_790_000_000_000
            _ = machine.handle(TimerCommand(operation: .start(spec: nil, startAt: nil, restart: false), at: nil, ifRevision: nil), now: start)
            let at = start + Millis(random.next() % 4_000_000)
            _ = machine.advance(to: at)
            var snap = machine.snapshot(at: at)
            func maybe<T>(_ value: T) -> T? { random.next() % 2 == 0 ? value : nil }
            let texts = ["", "Row", "a\"b", "\\", "line\nbreak", "\u{1}", "日本", "🏋️"]
            func text() -> String { texts[Int(random.next() % UInt64(texts.count))] }
            let numbers: [Double] = [0, 1, 0.5, 1.0 / 3, 1e-7, 0.999_999_999]
            func number() -> Double { numbers[Int(random.next() % UInt64(numbers.count))] }
            if random.next() % 2 == 0 {
                snap.name = text()
                snap.label = maybe(text())
                snap.nextLabel = maybe(text())
                snap.preset = maybe(text())
                snap.hr = maybe(Int(random.next() % 220))
                snap.hrAgeMs = maybe(Millis(random.next() % 100_000))
                snap.hrZone = maybe(Int(random.next() % 6))
                snap.progress = number()
                snap.totalProgress = maybe(number())
                snap.endsAtMs = maybe(at + Millis(random.next() % 100_000))
                snap.startAtMs = maybe(at + Millis(random.next() % 100_000))
                snap.segmentStartedAtMs = maybe(at - Millis(random.next() % 100_000))
                snap.startedAtMs = maybe(at - Millis(random.next() % 100_000))
                snap.remainingMs = maybe(Millis(random.next() % 100_000))
                snap.nextPhase = maybe(Phase.allCases[Int(random.next() % UInt64(Phase.allCases.count))])
                snap.overtime = random.next() % 2 == 0
                snap.ack = random.next() % 2 == 0
                snap.untilHR = maybe(RecoveryRule(threshold: .bpm(120), who: .athlete("a\(random.next() % 9)"), maxMs: 60_000))
                snap.restMaxMs = maybe(Millis(random.next() % 100_000))
                snap.restMinMs = maybe(Millis(random.next() % 100_000))
                snap.recoveredAtMs = maybe(at - Millis(random.next() % 100_000))
            }
            #expect(String(decoding: snap.jsonBytes, as: UTF8.self) == String(decoding: snap.json.jsonBytes, as: UTF8.self))
        }
    }

}

@Suite("Plain words")
struct PlainWordTests {
    @Test func plainWords() {
        #expect(TimerOperation(word: "start") == .start(spec: nil, startAt: nil, restart: false))
        #expect(TimerOperation(word: " Pause\n") == .pause)
        #expect(TimerOperation(word: "+30") == .adjust(seconds: 30))
        #expect(TimerOperation(word: "-10") == .adjust(seconds: -10))
        #expect(TimerOperation(word: "snooze") == .snooze(seconds: 60))
        #expect(TimerOperation(word: "snooze 120") == .snooze(seconds: 120))
        #expect(TimerOperation(word: "explode") == nil)
        #expect(TimerOperation(word: "+") == nil)
        #expect(TimerOperation.ack.action == .ack && TimerAction.ack.rawValue == "ack")
    }

    /// ASCII words take a byte path; the rest the Unicode one. The same word with a non-ASCII
    /// space added (U+00A0, removed as white space by both) must read the same either way.
    @Test func asciiAndUnicodeWordsReadAlike() {
        let words = ["TOGGLE", "\tpause\u{0B}", "Snooze\u{0C}90", "  adjust -15 ", "+5\r\n", "ReStart", "ack\u{1F}", "snooze\t\t30", "sk ip"]
        for word in words {
            #expect(TimerOperation(word: word) == TimerOperation(word: word + "\u{00A0}"), "\(word.debugDescription)")
        }
        #expect(TimerOperation(word: "TOGGLE") == .toggle)
        #expect(TimerOperation(word: "ack\u{1F}") == nil)  // U+001F is not white space
        #expect(TimerOperation(word: "Snooze\u{0C}90") == nil)  // a form feed is dropped, not a separator
        #expect(TimerOperation(word: "snooze\t\t30") == nil)
        #expect(TimerOperation(word: "  adjust -15 ") == .adjust(seconds: -15))
        // Spaces around and between the words count once; a word split by one is no word.
        #expect(TimerOperation(word: "   snooze    120   ") == .snooze(seconds: 120))
        #expect(TimerOperation(word: "\u{00A0} + 30 ") == nil)
        #expect(TimerOperation(word: " \u{00A0}toggle\u{00A0}  ") == .toggle)
        #expect(TimerOperation(word: "to ggle") == nil)
        #expect(TimerOperation(word: "snooze 120 5") == nil)
    }

}

/// A generator's random choices, read one after the other (0 once they run out).
private struct Choices {
    private var iterator: IndexingIterator<[UInt64]>
    init(_ choices: [UInt64]) { iterator = choices.makeIterator() }
    mutating func next() -> UInt64 { iterator.next() ?? 0 }
}

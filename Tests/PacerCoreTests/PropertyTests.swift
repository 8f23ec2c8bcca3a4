import Foundation
import PacerCore
import PropertyBased
import Testing

/// One step of a random scenario: time passes, then maybe a command arrives, or the node
/// declares that the current rest recovered.
struct Step: Sendable, CustomStringConvertible {
    var gapMs: Millis
    var operation: TimerOperation?
    /// The node's `recovered(at:now:)` instead of a command.
    var recovers = false
    var description: String { "+\(gapMs)ms \(recovers ? "recovered" : operation.map { "\($0)" } ?? "-")" }
}

extension TimerMachine {
    /// The step's command or recovery at `now` (as of `at`); nil when the step has neither.
    mutating func take(_ step: Step, now: Millis, at: Millis? = nil) -> Result<[TimerEvent], CommandError>? {
        if step.recovers { return recovered(at: at ?? now, now: now) }
        guard let operation = step.operation else { return nil }
        return handle(TimerCommand(operation, at: at), now: now)
    }
}

/// A random timer and a random life for it.
struct Scenario: Sendable, CustomStringConvertible {
    var spec: TimerSpec
    var steps: [Step]
    var description: String { "\(spec.json) \(steps)" }
}

/// Settings with short alert and dismiss times so random runs reach them.
let propertySettings = TimerSettings(cues: [3, 2, 1], alertIntervalMs: 3_000, autoDismissMs: 20_000)

enum Generators {
    /// Program segments of every kind, 1...25 s (sometimes with ms), sometimes open-ended.
    /// Some rests end on recovery (max the duration, min 0 to 4 s).
    static let segment = zip(Gen.int(in: 0...6), Gen.int(in: 1...25), Gen.int(in: 0...999), Gen.int(in: 0...19)).map { raw -> Segment in
        let kind = SegmentKind.allCases[raw.0]
        let duration = Millis(raw.1) * 1000 + (raw.3 < 6 ? Millis(raw.2) : 0)
        let rule = kind == .rest && raw.3 >= 14 ? recoveryRule(minMs: min(duration, Millis(raw.2 % 5) * 1000), maxMs: duration) : nil
        return Segment(kind: kind, durationMs: raw.3 == 0 ? nil : duration, label: raw.3 % 2 == 0 ? "L\(raw.1)" : nil,
                       round: 1 + raw.2 % 3, set: 1, untilHR: rule)
    }

    static func recoveryRule(minMs: Millis, maxMs: Millis) -> RecoveryRule {
        RecoveryRule(threshold: maxMs % 2 == 0 ? .bpm(120) : .percentOfMax(65), who: maxMs % 3 == 0 ? .athlete("alice") : .classAll,
                     minMs: minMs, maxMs: maxMs)
    }

    /// Mostly explicit programs; sometimes a stopwatch, an interval or a countdown.
    static let spec = zip(segment.array(of: 1...8), Gen.int(in: 0...9), Gen.bool, Gen.int(in: 1...30)).map { raw -> TimerSpec in
        let (segments, selector, ack, seconds) = raw
        switch selector {
        case 0: return .stopwatch(targetMs: seconds % 3 == 0 ? nil : Millis(seconds) * 1000)
        case 1: return .interval(workMs: Millis(seconds) * 1000, restMs: Millis(seconds % 7) * 1000, rounds: 1 + seconds % 4,
                                 prepareMs: seconds % 2 == 0 ? 5_000 : nil, ack: ack)
        case 3:
            return .interval(workMs: Millis(seconds) * 1000, rounds: 1 + seconds % 4, ack: ack,
                             restUntilHR: recoveryRule(minMs: Millis(seconds % 5) * 1000, maxMs: Millis(5 + seconds % 7) * 1000))
        case 4:
            return .rest(exercise: "Bench", ack: ack, untilHR: recoveryRule(minMs: Millis(seconds % 3) * 1000, maxMs: Millis(seconds) * 1000 + 500))
        case 2:
            // Some acknowledged countdowns come back ready after the ack or the dismiss.
            var spec = TimerSpec.countdown(durationMs: Millis(seconds) * 1000 + 250, ack: ack)
            if ack && seconds % 2 == 1 { spec.afterAck = .ready }
            return spec
        default: return .program(segments, ack: ack)
        }
    }

    static func operation(_ code: Int, _ argument: Int) -> TimerOperation? {
        switch code {
        case 0: .start(spec: nil, startAt: nil, restart: false)
        case 1: .pause
        case 2: .resume
        case 3: .toggle
        case 4: .cancel
        case 5: .reset
        case 6: .finish
        case 7: .skip
        case 8: .back
        case 9: .ack
        case 10: .adjust(seconds: argument == 0 ? 1 : argument)
        case 11: .snooze(seconds: abs(argument) + 1)
        case 12: .start(spec: nil, startAt: nil, restart: true)
        default: nil
        }
    }

    /// Gaps are mostly short (under the lag window), sometimes long (a restore).
    static let step = zip(Gen.int(in: 0...24), Gen.int(in: 0...5), Gen.int(in: 0...4_000), Gen.int(in: -40...40)).map { raw -> Step in
        let gap = raw.1 == 0 ? Millis(raw.2) * 25 : Millis(raw.2)
        return Step(gapMs: gap, operation: operation(raw.0, raw.3), recovers: raw.0 == 13 || raw.0 == 14)
    }

    static let scenario = zip(spec, step.array(of: 1...40)).map { raw in Scenario(spec: raw.0, steps: raw.1) }
}

/// Events are identified by what and when; the same event twice is a bug.
struct EventKey: Hashable {
    var type: EventType
    var due: Millis
    var revision: Int
    var cue: Int?
    init(_ event: TimerEvent) {
        (type, due, revision, cue) = (event.type, event.dueMs, event.revision, event.cue)
    }
}

func checkSnapshotInvariants(_ s: TimerSnapshot, sourceLocation: SourceLocation = #_sourceLocation) {
    if let remaining = s.remainingMs {
        #expect(remaining >= 0, "remaining negative: \(s)", sourceLocation: sourceLocation)
        if let duration = s.segmentDurationMs {
            #expect(remaining <= duration, "remaining above the segment: \(s)", sourceLocation: sourceLocation)
        }
        if let total = s.totalRemainingMs {
            #expect(total >= remaining, sourceLocation: sourceLocation)
        }
    }
    #expect(s.remainingSeconds >= 0, sourceLocation: sourceLocation)
    #expect(s.progress >= 0 && s.progress <= 1, sourceLocation: sourceLocation)
    #expect(s.elapsedMs >= 0 && s.segmentElapsedMs >= 0, "\(s)", sourceLocation: sourceLocation)
    #expect(s.segment >= 1 && s.segment <= s.segments, sourceLocation: sourceLocation)
    #expect(s.display == Durations.display(seconds: s.remainingSeconds), sourceLocation: sourceLocation)
    if s.status != .running { #expect(s.endsAtMs == nil, sourceLocation: sourceLocation) }
}

@Suite("Properties over random programs and commands")
struct PropertyTests {
    @Test("remaining stays within the segment; events come once, in due order; elapsed = wall time - paused time")
    func invariantsUnderRandomCommands() async {
        await propertyCheck(count: 200, input: Generators.scenario) { scenario in
            var m = try makeMachine(scenario.spec, settings: propertySettings)
            var now = t0
            var seen = Set<EventKey>()
            var lastDue = Millis.min
            var previous = m.snapshot(at: now)
            func take(_ events: [TimerEvent]) {
                for event in events {
                    #expect(event.dueMs >= lastDue, "out of order: \(event) after \(lastDue)")
                    #expect(event.dueMs <= now, "from the future: \(event)")
                    #expect(seen.insert(EventKey(event)).inserted, "emitted twice: \(event)")
                    lastDue = max(lastDue, event.dueMs)
                }
            }
            for step in scenario.steps {
                now += step.gapMs
                // The projection (snapshot without advancing) is what advancing gives.
                let projected = m.snapshot(at: now)
                take(m.advance(to: now))
                let current = m.snapshot(at: now)
                #expect(projected == current)
                checkSnapshotInvariants(current)
                // With no command in between, a running timer's elapsed time grows by the wall time,
                // a paused one's not at all.
                if previous.status == .running && current.status == .running && previous.startedAtMs == current.startedAtMs {
                    #expect(current.elapsedMs - previous.elapsedMs == step.gapMs)
                }
                if previous.status == .paused && current.status == .paused {
                    #expect(current.elapsedMs == previous.elapsedMs && current.remainingMs == previous.remainingMs)
                }
                let before = m
                switch m.take(step, now: now) {
                case .success(let events)?:
                    take(events)
                case .failure?:
                    #expect(m == before)
                case nil:
                    break
                }
                previous = m.snapshot(at: now)
                checkSnapshotInvariants(previous)
            }
        }
    }

    @Test("backdated commands (at within or beyond the lag window) keep every invariant")
    func backdatedCommands() async {
        await propertyCheck(count: 200, input: Generators.scenario, Gen.int64(in: -4_000...1_000).array(of: 40)) { scenario, offsets in
            var m = try makeMachine(scenario.spec, settings: propertySettings)
            var now = t0
            for (index, step) in scenario.steps.enumerated() {
                now += step.gapMs
                if index % 3 == 0 { _ = m.advance(to: now) }   // the node does not always wake up in between
                guard step.operation != nil || step.recovers else { continue }
                let before = m
                // The instant of a command without a start_at, which `recovered` takes too.
                let command = TimerCommand(step.recovers ? .pause : step.operation!, at: now + offsets[index])
                let instant = m.effectiveInstant(of: command, now: now)
                #expect(instant >= now - propertySettings.lagWindowMs && instant >= before.lastChangeMs)
                #expect(instant <= max(now, before.lastChangeMs))
                if before.lastChangeMs <= now + offsets[index] && offsets[index] >= -propertySettings.lagWindowMs && offsets[index] <= 0 {
                    #expect(instant == now + offsets[index])   // within the window: exactly `at`
                }
                switch m.take(step, now: now, at: now + offsets[index]) {
                case .success(let events)?:
                    #expect(events.map(\.dueMs) == events.map(\.dueMs).sorted(), "events out of order: \(events)")
                    #expect(events.allSatisfy { $0.atMs == now })
                    if !events.isEmpty { #expect(m.revision > before.revision) }
                    #expect(m.advancedToMs >= now)
                    if step.recovers, let recovered = events.first(where: { $0.type == .recovered }) { #expect(recovered.dueMs == instant) }
                case .failure?, nil:
                    #expect(m == before)
                }
                let s = m.snapshot(at: now)
                checkSnapshotInvariants(s)
                var copy = m
                _ = copy.advance(to: now)
                #expect(copy.snapshot(at: now) == s)
            }
        }
    }

    @Test("pause then resume leaves the remaining time unchanged")
    func pauseResume() async {
        await propertyCheck(count: 200, input: Generators.spec, Gen.int64(in: 0...120_000), Gen.int64(in: 0...3_600_000)) { spec, runFor, pauseFor in
            var m = try makeMachine(spec, settings: propertySettings)
            try m.send(startNow, now: t0)
            let pausedAt = t0 + runFor
            _ = m.advance(to: pausedAt)
            let before = m.snapshot(at: pausedAt)
            guard before.status == .running else { return }
            try m.send(.pause, now: pausedAt)
            #expect(m.snapshot(at: pausedAt + pauseFor).remainingMs == before.remainingMs)
            try m.send(.resume, now: pausedAt + pauseFor)
            let after = m.snapshot(at: pausedAt + pauseFor)
            #expect(after.remainingMs == before.remainingMs)
            #expect(after.segment == before.segment && after.phase == before.phase)
            #expect(after.elapsedMs == before.elapsedMs)
            #expect(after.segmentElapsedMs == before.segmentElapsedMs)
            #expect(after.endsAtMs == before.endsAtMs.map { $0 + pauseFor })
            #expect(after.totalRemainingMs == before.totalRemainingMs)
        }
    }

    @Test("one evaluation after a gap equals advancing step by step, up to the documented collapsing")
    func gapEqualsSteps() async {
        await propertyCheck(count: 150, input: Generators.scenario) { scenario in
            let lag = propertySettings.lagWindowMs
            var fine = try makeMachine(scenario.spec, settings: propertySettings)
            var coarse = fine
            var now = t0
            var pending: [TimerEvent] = []
            for step in scenario.steps {
                let target = now + step.gapMs
                var t = now
                while t + 700 < target {
                    t += 700
                    pending += fine.advance(to: t)
                }
                let coarseEvents: [TimerEvent]
                if step.operation != nil || step.recovers, let a = fine.take(step, now: target), let b = coarse.take(step, now: target) {
                    switch (a, b) {
                    case (.success(let fineEvents), .success(let events)):
                        pending += fineEvents
                        coarseEvents = events
                    case (.failure(let e1), .failure(let e2)):
                        #expect(e1 == e2)
                        now = target
                        continue
                    default:
                        Issue.record("one accepted, one refused: \(a) vs \(b)")
                        return
                    }
                } else {
                    pending += fine.advance(to: target)
                    coarseEvents = coarse.advance(to: target)
                }
                let expected = TimerEvent.collapsingStale(pending, now: target, lagWindowMs: lag)
                #expect(coarseEvents == expected)
                pending = []
                #expect(fine.snapshot(at: target) == coarse.snapshot(at: target))
                #expect(fine.revision == coarse.revision)
                #expect(fine.nextDeadline(after: target) == coarse.nextDeadline(after: target))
                now = target
            }
        }
    }

    @Test("deadlines fall exactly where the display flips or an event is due, and nothing happens before them")
    func deadlinesAreExact() async {
        await propertyCheck(count: 150, input: Generators.spec, Gen.int64(in: 0...999), Gen.int64(in: 0...30_000), Gen.int(in: -20...20)) { spec, offset, adjustAt, adjustBy in
            var m = try makeMachine(spec, settings: propertySettings)
            var now = t0 + offset
            try m.send(startNow, now: now)
            var adjusted = false
            for _ in 0..<400 {
                guard let deadline = m.nextDeadline(after: now) else { break }
                #expect(deadline > now)
                // Nothing visible changes in [now, deadline): compare its two ends. (Not
                // now + 1: when the next flip is 1 ms away, that is the deadline itself.)
                let early = m.snapshot(at: now)
                let last = m.snapshot(at: deadline - 1)
                #expect(early.display == last.display && early.phase == last.phase && early.segment == last.segment && early.status == last.status)
                var probe = m
                #expect(probe.advance(to: deadline - 1).isEmpty, "an event before the deadline \(deadline)")
                let events = m.advance(to: deadline)
                let at = m.snapshot(at: deadline)
                let changed = at.display != last.display || at.phase != last.phase || at.segment != last.segment || at.status != last.status
                #expect(changed || !events.isEmpty, "nothing happened at the deadline \(deadline - t0)")
                if at.status == .running && !at.countsUp, let endsAt = at.endsAtMs, at.display != last.display && at.segment == last.segment {
                    #expect((endsAt - deadline) % 1000 == 0, "a flip not aligned to the segment end")
                }
                now = deadline
                if !adjusted && now >= t0 + adjustAt && adjustBy != 0 {
                    adjusted = true
                    _ = m.handle(TimerCommand(.adjust(seconds: adjustBy)), now: now)
                }
                if m.status == .expired { _ = m.handle(TimerCommand(.ack), now: now) }
            }
        }
    }

    @Test("shifting the anchors keeps what is left, and ends_at moves by the shift")
    func shiftAnchors() async {
        await propertyCheck(count: 150, input: Generators.scenario, Gen.int64(in: -1_000_000_000...1_000_000_000)) { scenario, delta in
            var m = try makeMachine(scenario.spec, settings: propertySettings)
            var now = t0
            for step in scenario.steps {
                now += step.gapMs
                _ = m.advance(to: now)
                _ = m.take(step, now: now)
            }
            let before = m.snapshot(at: now)
            m.shiftAnchors(by: delta)
            let after = m.snapshot(at: now + delta)
            #expect(after.remainingMs == before.remainingMs && after.elapsedMs == before.elapsedMs)
            #expect(after.display == before.display && after.phase == before.phase && after.segment == before.segment)
            #expect(after.status == before.status && after.totalRemainingMs == before.totalRemainingMs)
            #expect(after.endsAtMs == before.endsAtMs.map { $0 + delta })
            #expect(m.advance(to: now + delta).isEmpty)
        }
    }

    @Test("the persisted form round-trips exactly in any state, through Codable and without it")
    func codableRoundTrip() async {
        await propertyCheck(count: 100, input: Generators.scenario) { scenario in
            var m = try makeMachine(scenario.spec, settings: propertySettings)
            var now = t0
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            for step in scenario.steps {
                now += step.gapMs
                _ = m.advance(to: now)
                _ = m.take(step, now: now)
                let data = try encoder.encode(m)
                let back = try JSONDecoder().decode(TimerMachine.self, from: data)
                #expect(back == m)
                #expect(try encoder.encode(back) == data)
                try expectPersistedFormsAgree(m)  // and read and written without Codable
            }
        }
    }

    @Test("specs read from JSON round-trip through their canonical JSON")
    func specJSONRoundTrip() async {
        await propertyCheck(count: 200, input: Generators.spec) { spec in
            let parsed = try TimerSpec(json: spec.json)
            #expect(parsed == spec)
        }
    }

    @Test("durations round-trip through compact text, and display rounds up")
    func durationText() async {
        await propertyCheck(count: 300, input: Gen.int64(in: 0...604_800_000)) { (ms: Int64) throws in
            #expect(try Durations.parse(Durations.compact(ms)) == ms)
            let seconds = Durations.ceilSeconds(ms)
            #expect(seconds * 1000 >= ms && (seconds - 1) * 1000 < ms || ms == 0)
        }
    }
}

/// The reader without `Codable` gives back the machine `JSONEncoder` wrote, as `init(from:)`
/// does; the writer without `Codable` writes `JSONEncoder`'s bytes (sorted keys, slashes not
/// escaped), and `JSONDecoder` reads them back to the machine.
func expectPersistedFormsAgree(_ m: TimerMachine, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    let codable = try encoder.encode(m)
    let value = try JSONDecoder().decode(JSONValue.self, from: codable)
    #expect(try TimerMachine(persisted: value) == m, sourceLocation: sourceLocation)
    #expect(String(decoding: m.persistedBytes, as: UTF8.self) == String(decoding: codable, as: UTF8.self), sourceLocation: sourceLocation)
    #expect(try JSONDecoder().decode(TimerMachine.self, from: Data(m.persistedBytes)) == m, sourceLocation: sourceLocation)
}

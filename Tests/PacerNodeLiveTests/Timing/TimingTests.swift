import Foundation
import PacerCore
import PacerTestSupport
import Testing

/// Real time: a whole interval run, the lag window of `at`, simultaneous deadlines.
///
/// Bounds are one-sided where it matters: the node must never emit an event before it is due,
/// and due instants are exact (anchored timing), so those are compared to the millisecond.
/// How late the node handled an event is its own `at_ms - due_ms`, bounded tightly; only the
/// instant a message reached the probe is bounded loosely (see `arrivalBound`).
@Suite("Timing against the real clock")
struct TimingTests {
    /// How late the node may emit an event after it was due (`at_ms - due_ms`, node-side).
    static let nodeLateBound: Int64 = 1_000
    /// How late a message may reach the probe after it was due. The probe stamps arrival on the
    /// shared cooperative pool, which tests blocking elsewhere in the process can stall for
    /// seconds on a loaded 2-core machine.
    static let arrivalBound: Int64 = 5_000

    @Test("a Tabata-style interval run, phase by phase, from the event and phase topics")
    func tabataRun() async throws {
        try await withNode { node in
            let spec: JSONValue = ["kind": "interval", "prepare": "2s", "work": "2s", "rest": "1s", "rounds": 3, "exercises": ["Burpee"]]
            let created = try await node.send(["action": "create", "timer": "tabata", "spec": spec])
            try #require(created.ok, "\(created)")
            #expect(created.state?["segments"]?.int == 6, "prepare, then work/rest × 3 without the last rest")
            let start = node.probe.count
            let started = try await node.send(["action": "start"], timer: "tabata")
            let t0 = try #require(started.state?["started_at_ms"]?.int64)
            #expect(started.state?["phase"] == "prepare")
            #expect(started.state?["total_remaining_ms"]?.int64 == 10_000 - (started.state?["elapsed_ms"]?.int64 ?? 0))

            let finished = try await node.waitForEvent("tabata", "finished", from: start, timeout: .seconds(30))
            try await node.barrier()

            let received = node.probe.messages(on: node.topic("tabata", "event"), from: start)
            let events = received.compactMap(\.json)
            for (item, event) in zip(received, events) {
                let due = try #require(event["due_ms"]?.int64)
                let at = try #require(event["at_ms"]?.int64)
                #expect(at >= due, "\(event["type"] ?? nil) was emitted \(due - at) ms before it was due")
                #expect(at - due <= Self.nodeLateBound, "\(event["type"] ?? nil) was emitted \(at - due) ms late")
                #expect(item.wallMs - due <= Self.arrivalBound, "\(event["type"] ?? nil) arrived \(item.wallMs - due) ms late")
                #expect(event["timer"] == "tabata")
            }

            // Transitions: exact due instants, anchored on the start (no drift).
            struct Transition: Equatable, CustomStringConvertible {
                var type: String, phase: String?, round: Int?, due: Int64
                var description: String { "\(type) \(phase ?? "-") r\(round.map(String.init) ?? "-") @+\(due)" }
            }
            let transitions = events.filter { !["countdown", "halfway"].contains($0["type"]?.string ?? "") }.map {
                Transition(type: $0["type"]?.string ?? "?", phase: $0["phase"]?.string, round: $0["round"]?.int, due: ($0["due_ms"]?.int64 ?? 0) - t0)
            }
            #expect(transitions == [
                Transition(type: "started", phase: "prepare", round: 1, due: 0),
                Transition(type: "phase", phase: "work", round: 1, due: 2_000),
                Transition(type: "phase", phase: "rest", round: 1, due: 4_000),
                Transition(type: "phase", phase: "work", round: 2, due: 5_000),
                Transition(type: "phase", phase: "rest", round: 2, due: 7_000),
                Transition(type: "phase", phase: "work", round: 3, due: 8_000),
                Transition(type: "finished", phase: "finished", round: 3, due: 10_000),
            ])
            #expect(events.filter { $0["type"] == "phase" && $0["phase"] == "work" }.allSatisfy { $0["label"] == "Burpee" })
            #expect(finished.json?["reason"] == "completed")
            #expect(finished.json?["finished_at_ms"]?.int64 == t0 + 10_000)
            // Revisions grow by one per transition.
            let revisions = events.filter { $0["type"] != "countdown" }.compactMap { $0["revision"]?.int }
            #expect(revisions == Array(revisions.first!..<(revisions.first! + revisions.count)))

            // Countdown cues: 1 s before the end of each 2 s segment (3 s and 2 s do not fit in 2 s;
            // none in the 1 s rests).
            let cues = events.filter { $0["type"] == "countdown" }.map { ($0["cue"]?.int ?? -1, ($0["due_ms"]?.int64 ?? 0) - t0) }
            #expect(cues.map(\.0) == [1, 1, 1, 1])
            #expect(cues.map(\.1) == [1_000, 3_000, 6_000, 9_000])

            // The plain phase and round topics, each change once and in order.
            #expect(node.probe.messages(on: node.topic("tabata", "phase"), from: start).map(\.text)
                    == ["prepare", "work", "rest", "work", "rest", "work", "finished"])
            #expect(node.probe.messages(on: node.topic("tabata", "round"), from: start).map(\.text) == ["2", "3"])
            // Each phase flip (in the order checked above) reaches the probe not before its instant,
            // and within the arrival bound.
            let phaseDues: [Int64] = [2_000, 4_000, 5_000, 7_000, 8_000, 10_000]
            for (item, offset) in zip(node.probe.messages(on: node.topic("tabata", "phase"), from: start).dropFirst(), phaseDues) {
                let due = t0 + offset
                #expect(item.wallMs >= due - 30 && item.wallMs - due <= Self.arrivalBound, "\(item.text) due at +\(offset) arrived at +\(item.wallMs - t0) ms")
            }
            let final = try #require(node.state("tabata"))
            #expect(final["status"] == "finished")
            #expect(final["elapsed_ms"]?.int == 10_000)
            #expect(final["remaining_ms"]?.int == 0)
            #expect(node.plain("tabata", "remaining") == "0")
        }
    }

    @Test("`at` inside the lag window takes effect as of `at`; older is clamped to the window, future to now")
    func lagWindow() async throws {
        // A 10 s lag window (the default is 2 s): an `at` a second old must still be inside it
        // when the node handles the command, however long the test was descheduled in between.
        try await withNode(.init(config: "timing: {lag_window: 10s}\n")) { node in
            // A start as of 30 s ago is clamped to the window: the timer started 10 s before the
            // node's now. (It is the timer the older `at` below is tried on: an `at` is never
            // taken before the timer's last change, so that timer must be older than the window.)
            let oldStarted = try await node.send(["action": "start", "start_at": .int(wallNowMs() - 30_000), "spec": ["kind": "countdown", "duration": "60s"]], timer: "old")
            let tOld = try #require(oldStarted.state?["started_at_ms"]?.int64, "\(oldStarted)")
            #expect(oldStarted.status == "running", "\(oldStarted)")
            #expect(tOld == (oldStarted.state?["as_of_ms"]?.int64 ?? 0) - 10_000, "a start_at 30 s ago is not clamped to now - 10 s: \(oldStarted)")

            let started = try await node.send(["action": "start", "spec": ["kind": "countdown", "duration": "60s"]], timer: "lag")
            let t0 = try #require(started.state?["started_at_ms"]?.int64)
            try await Task.sleep(until: waitTarget(t0 + 1_500))

            // Inside the window: pause as of 1 s ago, exactly.
            var start = node.probe.count
            let at1 = wallNowMs() - 1_000
            let paused = try await node.send(["action": "pause", "at": .int(at1)], timer: "lag")
            #expect(paused.state?["remaining_ms"]?.int64 == 60_000 - (at1 - t0), "\(paused)")
            let pausedEvent = try #require(try await node.waitForEvent("lag", "paused", from: start).json)
            #expect(pausedEvent["due_ms"]?.int64 == at1)

            // Resume as of half a second ago: the segment ends exactly remaining after `at`.
            start = node.probe.count
            let remaining = try #require(paused.state?["remaining_ms"]?.int64)
            let at2 = wallNowMs() - 500
            let resumed = try await node.send(["action": "resume", "at": .int(at2)], timer: "lag")
            #expect(resumed.state?["ends_at_ms"]?.int64 == at2 + remaining, "\(resumed)")
            #expect(try await node.waitForEvent("lag", "resumed", from: start).json?["due_ms"]?.int64 == at2)

            // Outside the window (30 s ago): clamped to now - 10 s.
            start = node.probe.count
            let sent = wallNowMs()
            let old = try await node.send(["action": "pause", "at": .int(sent - 30_000)], timer: "old")
            let answered = wallNowMs()
            let oldEvent = try #require(try await node.waitForEvent("old", "paused", from: start).json)
            let due = try #require(oldEvent["due_ms"]?.int64)
            let at = try #require(oldEvent["at_ms"]?.int64)
            #expect(at - due == 10_000, "effective instant \(due) is not the node's now \(at) - 10 s")
            #expect(due >= sent - 10_000 - 5 && due <= answered - 10_000 + 5)
            #expect(old.state?["remaining_ms"]?.int64 == 60_000 - (due - tOld), "\(old)")

            // In the future: clamped to now.
            start = node.probe.count
            _ = try await node.send(["action": "resume", "at": .int(wallNowMs() + 10_000)], timer: "old")
            let futureEvent = try #require(try await node.waitForEvent("old", "resumed", from: start).json)
            #expect(futureEvent["due_ms"]?.int64 == futureEvent["at_ms"]?.int64)

            // finish and skip take effect as of `at` too.
            let resumedAt = try #require(futureEvent["due_ms"]?.int64)
            try await Task.sleep(until: waitTarget(resumedAt + 1_000))
            start = node.probe.count
            let at3 = wallNowMs() - 700
            let finished = try await node.send(["action": "finish", "at": .int(at3)], timer: "old")
            #expect(finished.status == "finished", "\(finished)")
            let finishedEvent = try #require(try await node.waitForEvent("old", "finished", from: start).json)
            #expect(finishedEvent["finished_at_ms"]?.int64 == at3)
            #expect(finishedEvent["reason"] == "finished")

            let interval = try await node.send(["action": "start", "spec": ["kind": "interval", "work": "30s", "rest": "10s", "rounds": 2]], timer: "skip")
            let t1 = try #require(interval.state?["started_at_ms"]?.int64)
            try await Task.sleep(until: waitTarget(t1 + 1_500))
            let at4 = wallNowMs() - 1_000
            let skipped = try await node.send(["action": "skip", "at": .int(at4)], timer: "skip")
            #expect(skipped.state?["phase"] == "rest", "\(skipped)")
            #expect(skipped.state?["ends_at_ms"]?.int64 == at4 + 10_000, "the rest starts as of at")
        }
    }

    @Test("cues and expiry: halfway, countdown 3-2-1, expired, alert every interval, auto-dismiss")
    func cuesAndExpiry() async throws {
        try await withNode { node in
            let spec: JSONValue = ["kind": "countdown", "duration": "10s", "ack": true, "alert_interval": "1s", "auto_dismiss": "3s"]
            let start = node.probe.count
            let started = try await node.send(["action": "start", "spec": spec], timer: "oven")
            let t0 = try #require(started.state?["started_at_ms"]?.int64)
            let finished = try await node.waitForEvent("oven", "finished", from: start, timeout: .seconds(30))
            #expect(finished.json?["reason"] == "auto_dismissed")
            try await node.barrier()

            let received = node.probe.messages(on: node.topic("oven", "event"), from: start)
            let timeline = received.compactMap(\.json).map { event -> String in
                let cue = event["cue"]?.int.map { " \($0)" } ?? ""
                return "\(event["type"]?.string ?? "?")\(cue) @\((event["due_ms"]?.int64 ?? 0) - t0)"
            }
            #expect(timeline == [
                "started @0", "halfway @5000", "countdown 3 @7000", "countdown 2 @8000", "countdown 1 @9000",
                "expired @10000", "alert @11000", "alert @12000", "finished @13000",
            ])
            for item in received {
                let due = try #require(item.json?["due_ms"]?.int64)
                let at = try #require(item.json?["at_ms"]?.int64)
                #expect(at >= due, "emitted before due: \(item.text)")
                #expect(at - due <= Self.nodeLateBound, "emitted \(at - due) ms late: \(item.text)")
                #expect(item.wallMs - due <= Self.arrivalBound, "\(item.text) arrived \(item.wallMs - due) ms late")
            }
            #expect(node.probe.messages(on: node.topic("oven", "phase"), from: start).map(\.text) == ["countdown", "expired", "finished"])
        }
    }

    @Test("two timers finishing at the same instant both finish, from one deadline")
    func twoTimersSameInstant() async throws {
        try await withNode { node in
            _ = try await node.send(["action": "create", "timer": "long", "spec": ["kind": "countdown", "duration": "3s"]])
            _ = try await node.send(["action": "create", "timer": "short", "spec": ["kind": "countdown", "duration": "2s"]])
            let start = node.probe.count
            // Synchronised starts one second apart: both end at s + 3 s. (s is far enough ahead for
            // both starts to be handled before it, even on a loaded machine.)
            let s = wallNowMs() + 5_000
            let long = try await node.send(["action": "start", "start_at": .int(s)], timer: "long")
            let short = try await node.send(["action": "start", "start_at": .int(s + 1_000)], timer: "short")
            #expect(long.status == "scheduled" && short.status == "scheduled", "\(long) \(short)")
            #expect(long.state?["start_at_ms"]?.int64 == s)
            try await node.probe.waitFor(node.topic("long", "phase"), from: start) { $0.text == "scheduled" }
            #expect(try await node.waitForEvent("short", "scheduled", from: start).json?["start_at_ms"]?.int64 == s + 1_000)

            let a = try await node.waitForEvent("long", "finished", from: start, timeout: .seconds(20))
            let b = try await node.waitForEvent("short", "finished", from: start, timeout: .seconds(20))
            for (item, id, startAt) in [(a, "long", s), (b, "short", s + 1_000)] {
                let event = try #require(item.json)
                #expect(event["due_ms"]?.int64 == s + 3_000, "\(id): \(event)")
                #expect(event["finished_at_ms"]?.int64 == s + 3_000)
                #expect(event["reason"] == "completed")
                let at = try #require(event["at_ms"]?.int64)
                #expect(at >= s + 3_000 && at - (s + 3_000) <= Self.nodeLateBound, "\(id): \(event)")
                #expect(item.wallMs - (s + 3_000) <= Self.arrivalBound, "\(id): arrived \(item.wallMs - (s + 3_000)) ms late")
                let started = try #require(try await node.waitForEvent(id, "started", from: start).json)
                #expect(started["due_ms"]?.int64 == startAt)
                // The event goes out before the retained topics: wait for the phase, don't race it.
                try await node.probe.waitFor(node.topic(id, "phase"), from: start) { $0.text == "finished" }
            }
            // One scheduler: the shared deadline is handled once, for both timers at the same instant.
            #expect(a.json?["at_ms"] == b.json?["at_ms"])
        }
    }
}

/// A `ContinuousClock` instant for the wall-clock epoch ms `target` (now if it has passed).
func waitTarget(_ targetMs: Int64) -> ContinuousClock.Instant {
    .now + .milliseconds(max(0, targetMs - wallNowMs()))
}

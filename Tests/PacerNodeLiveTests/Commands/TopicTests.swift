import Foundation
import PacerCore
import PacerTestSupport
import Testing
import PacerProtocol

/// Every topic and payload the node publishes (docs/API.md).
@Suite("Topics and payloads")
struct TopicTests {
    /// The fields docs/API.md gives every state snapshot (ends_at/ends_at_ms only while running).
    static let requiredStateFields = [
        "id", "name", "kind", "status", "phase", "label", "next_label", "round", "rounds", "set", "sets",
        "segment", "segments", "segment_duration_ms", "remaining_ms", "elapsed_ms", "total_remaining_ms",
        "progress", "started_at_ms", "hr", "hr_age_ms", "revision", "as_of_ms",
    ]

    @Test("status is a retained online, info lists version, node, timers and capabilities")
    func statusAndInfo() async throws {
        let config = """
            timers:
              - id: wall
                name: Wall clock
                spec: {kind: countdown, duration: "1:02:03"}
            """
        try await withNode(.init(config: config)) { node in
            let retained = try await node.retained([node.topic("status"), node.topic("info")])
            #expect(retained[node.topic("status")].map { String(decoding: $0, as: UTF8.self) } == "online")
            let info = try #require(retained[node.topic("info")].flatMap(decodeJSON))
            let version = try #require(info["version"]?.string)
            #expect(version.split(separator: ".").count >= 2, "version '\(version)' is not like 0.1.0")
            #expect(info["node"]?.string == node.nodeID)
            #expect(info["timers"] == [["id": "wall", "name": "Wall clock"]])
            let capabilities = (info["capabilities"]?.array ?? []).compactMap { $0.string }
            #expect(capabilities.contains("time_sync"))
            #expect(capabilities.contains("mqtt5_response_topic"))

            // A new timer is announced in info.
            let before = node.probe.count
            let created = try await node.send(["action": "create", "timer": "kitchen", "name": "Kitchen", "spec": ["kind": "countdown", "duration": "12m"]])
            #expect(created.ok, "\(created)")
            let updated = try await node.probe.waitFor(node.topic("info"), from: before)
            #expect(updated.message.qos == .atLeastOnce)
            #expect(updated.json?["timers"] == [["id": "kitchen", "name": "Kitchen"], ["id": "wall", "name": "Wall clock"]])
        }
    }

    @Test("an idle timer's retained topics: state JSON with every field, remaining, display, phase, round, rounds")
    func idleTimerTopics() async throws {
        let config = """
            timers:
              - id: wall
                name: Wall clock
                spec: {kind: countdown, duration: "1:02:03"}
            """
        try await withNode(.init(config: config)) { node in
            let t = { (name: String) in node.topic("wall", name) }
            let retained = try await node.retained([node.topic("timers/wall/#")])
            func text(_ name: String) -> String? { retained[t(name)].map { String(decoding: $0, as: UTF8.self) } }
            #expect(text("remaining") == "3723")
            #expect(text("display") == "1:02:03")
            #expect(text("phase") == "idle")
            #expect(text("round") == "1")
            #expect(text("rounds") == "1")
            // No heart rate is known: hr is empty, which a late subscriber sees as no retained message.
            #expect(text("hr") == nil || text("hr") == "")

            let state = try #require(retained[t("state")].flatMap(decodeJSON))
            for field in Self.requiredStateFields {
                #expect(state[field] != nil, "the state has no \"\(field)\": \(state)")
            }
            #expect(state["id"] == "wall")
            #expect(state["name"] == "Wall clock")
            #expect(state["kind"] == "countdown")
            #expect(state["status"] == "idle")
            #expect(state["phase"] == "idle")
            #expect(state["segment_duration_ms"]?.int == 3_723_000)
            #expect(state["remaining_ms"]?.int == 3_723_000)
            #expect(state["total_remaining_ms"]?.int == 3_723_000)
            #expect(state["elapsed_ms"]?.int == 0)
            #expect(state["progress"]?.double == 0)
            #expect(state["started_at_ms"]?.isNull == true)
            #expect(state["hr"]?.isNull == true)
            #expect(state["ends_at"] == nil, "ends_at must be absent when not running")
            #expect(state["ends_at_ms"] == nil, "ends_at_ms must be absent when not running")
            let asOf = try #require(state["as_of_ms"]?.int64)
            #expect(abs(asOf - wallNowMs()) < 60_000, "as_of_ms \(asOf) is not the node's clock")
        }
    }

    // The display text formats are checked in-process (Engine/EngineTopicTests.swift).

    @Test("a running timer's state: ends_at ISO 8601 UTC with ms, ends_at_ms, progress, revision")
    func runningState() async throws {
        try await withNode { node in
            let created = try await node.send(["action": "create", "timer": "run", "name": "Run", "spec": ["kind": "interval", "work": "20s", "rest": "10s", "rounds": 4, "exercises": ["Squat"]]])
            let r0 = try #require(created.revision)
            let start = node.probe.count
            let sentAt = wallNowMs()
            let started = try await node.send(["action": "start"], timer: "run")
            let repliedAt = wallNowMs()
            #expect(started.ok, "\(started)")
            #expect(started.json["timer"] == "run")
            #expect(started.revision == r0 + 1)
            let state = try #require(started.state)
            #expect(state["status"] == "running")
            #expect(state["phase"] == "work")
            #expect(state["label"] == "Squat")
            #expect(state["round"]?.int == 1)
            #expect(state["rounds"]?.int == 4)
            #expect(state["segment"]?.int == 1)
            #expect(state["segments"]?.int == 7)
            let endsAtMs = try #require(state["ends_at_ms"]?.int64)
            let startedAtMs = try #require(state["started_at_ms"]?.int64)
            let asOf = try #require(state["as_of_ms"]?.int64)
            #expect(startedAtMs >= sentAt - 5 && startedAtMs <= repliedAt + 5)
            #expect(endsAtMs == startedAtMs + 20_000)
            #expect(state["remaining_ms"]?.int64 == endsAtMs - asOf)
            // 4 × 20 s work with 3 rests of 10 s between them (no rest after the last work).
            #expect(state["total_remaining_ms"]?.int64 == 4 * 20_000 + 3 * 10_000 - (asOf - startedAtMs))
            let progress = try #require(state["progress"]?.double)
            #expect(progress >= 0 && progress <= 1)
            let endsAt = try #require(state["ends_at"]?.string)
            #expect(endsAt.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/) != nil, "ends_at '\(endsAt)' is not ISO 8601 UTC with ms")
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let date = try #require(formatter.date(from: endsAt))
            #expect(Int64((date.timeIntervalSince1970 * 1000).rounded()) == endsAtMs)

            // The retained state, phase and round follow.
            let retainedState = try await node.waitForState("run", from: start) { $0["status"] == "running" }
            #expect(retainedState["ends_at_ms"]?.int64 == endsAtMs)
            #expect(try await node.probe.waitFor(node.topic("run", "phase"), from: start).text == "work")

            // The `started` event: timer, revision, due_ms, at_ms and the first segment.
            let event = try #require(try await node.waitForEvent("run", "started", from: start).json)
            #expect(event["timer"] == "run")
            #expect(event["revision"]?.int == r0 + 1)
            #expect(event["due_ms"]?.int64 == startedAtMs)
            #expect(try #require(event["at_ms"]?.int64) >= startedAtMs)
            #expect(event["phase"] == "work")
            #expect(event["round"]?.int == 1)
            #expect(node.probe.messages(on: node.topic("run", "event"), from: start).allSatisfy { $0.message.qos == .atLeastOnce })

            // Paused: ends_at disappears, phase shows paused.
            let paused = try await node.send(["action": "pause"], timer: "run")
            #expect(paused.state?["ends_at"] == nil)
            #expect(paused.state?["ends_at_ms"] == nil)
            #expect(paused.state?["phase"] == "paused")
            #expect(try await node.probe.waitFor(node.topic("run", "phase"), from: start) { $0.text == "paused" }.text == "paused")
        }
    }

    /// How late a message may reach the probe after the instant it shows. The probe stamps
    /// arrival on the shared cooperative pool, which tests blocking elsewhere in the process
    /// can stall for seconds: only this bound is loose; what the node itself published (the
    /// values in order, the finish's state) is checked exactly.
    static let arrivalBound: Int64 = 3_000

    /// `display` for a whole number of seconds under an hour: 0:07, 1:05.
    static func clockText(_ seconds: Int64) -> String {
        String(format: "%d:%02d", Int(seconds / 60), Int(seconds % 60))
    }

    /// One value of a plain `remaining` topic with the last state the node published before it
    /// (`state` goes out on changes only: the start's while running; the finish's comes in the
    /// same commit as the last value).
    struct Flip {
        var value: Int64
        var state: JSONValue
        var received: Received
        var asOf: Int64 { state["as_of_ms"]?.int64 ?? .min }
    }

    /// Every value of `timer`'s `remaining` topic from record index `start` on, each with the
    /// state published before it.
    ///
    /// The plain topics have a connection of their own (`publish.plain_connection: separate`),
    /// so a value published with a change (the 0 with the finish) may arrive just before the
    /// `state` of that change: a flip whose value the next state (arriving within 500 ms) shows,
    /// and the state before it does not, is paired with that next state.
    static func flips(_ node: TestNode, _ timer: String, from start: Int) throws -> [Flip] {
        let stateTopic = node.topic(timer, "state"), remainingTopic = node.topic(timer, "remaining")
        let items = Array(node.probe.all[start...])
        var lastState: JSONValue?
        var flips: [Flip] = []
        for (index, item) in items.enumerated() {
            if item.topic == stateTopic {
                lastState = item.json
            } else if item.topic == remainingTopic {
                let value = try #require(Int64(item.text), "remaining '\(item.text)' is not a whole number")
                let next = items[(index + 1)...].first { $0.topic == stateTopic && $0.wallMs - item.wallMs <= 500 }?.json
                if let next, next["remaining"]?.int64 == value, lastState?["remaining"]?.int64 != value {
                    flips.append(Flip(value: value, state: next, received: item))
                    continue
                }
                let state = try #require(lastState, "remaining \(value) came without a state before it")
                flips.append(Flip(value: value, state: state, received: item))
            }
        }
        return flips
    }

    /// Checks that every displayed second the node handled on time was shown, and that a
    /// skipped one is explained by the node waking more than a second late for it (a loaded
    /// machine), though within the lag window (2 s): `previous` is the value shown before
    /// `next`, `flipAt(v)` the instant the display was due to show `v`.
    static func expectSkipsExplained(_ previous: (value: Int64, asOf: Int64), _ next: Flip, step: Int64, flipAt: (Int64) -> Int64) {
        let skipped = previous.value + step
        guard skipped != next.value else { return }
        let late = next.received.wallMs - flipAt(skipped)  // arrival: no earlier than the node took it
        #expect(late < 2_000, "\(skipped) was never shown: the node showed \(next.value) \(late) ms after \(skipped) was due (more than one second skipped, or the flip was not scheduled)")
    }

    @Test("remaining and display flip when the displayed second changes; unchanged plain topics are not republished")
    func secondFlips() async throws {
        try await withNode { node in
            let created = try await node.send(["action": "create", "timer": "egg", "spec": ["kind": "countdown", "duration": "4s"]])
            #expect(created.ok)
            try await node.probe.waitFor(node.topic("egg", "rounds"))
            let start = node.probe.count
            let started = try await node.send(["action": "start"], timer: "egg")
            let endsAt = try #require(started.state?["ends_at_ms"]?.int64)
            let startedAsOf = try #require(started.state?["as_of_ms"]?.int64)
            #expect(started.state?["remaining"]?.int64 == 4, "\(started)")
            try await node.waitForEvent("egg", "finished", from: start, timeout: .seconds(15))
            try await node.barrier()

            // Each displayed second at most once, in order, down to 0. (The 4 of the start was
            // on the topic already: not republished.)
            let flips = try Self.flips(node, "egg", from: start)
            let values = flips.map(\.value)
            #expect(values.last == 0, "\(values)")
            #expect(zip(values, values.dropFirst()).allSatisfy { $0 > $1 } && values.allSatisfy { (0...3).contains($0) },
                    "each displayed second once, in order: \(values)")
            var previous = (value: Int64(4), asOf: startedAsOf)
            for flip in flips {
                let due = endsAt - flip.value * 1000
                let state = flip.state
                // The state goes out on changes only: a running flip follows the
                // start's state, whose ends_at_ms gives every flip's instant; the 0 comes with
                // the finish's state.
                if flip.value > 0 {
                    #expect(state["status"] == "running" && state["ends_at_ms"]?.int64 == endsAt, "\(state)")
                } else {
                    #expect(state["status"] == "finished", "\(state)")
                    #expect(state["remaining_ms"]?.int64 == 0 && state["remaining"]?.int64 == 0, "\(state)")
                }
                Self.expectSkipsExplained(previous, flip, step: -1) { endsAt - $0 * 1000 }
                previous = (flip.value, flip.received.wallMs)
                // At the probe: never before its second, and not unreasonably late.
                #expect(flip.received.wallMs >= due - 30, "remaining \(flip.value) arrived \(due - flip.received.wallMs) ms before its second began")
                #expect(flip.received.wallMs - due <= Self.arrivalBound, "remaining \(flip.value) arrived \(flip.received.wallMs - due) ms after its second began")
            }
            // display changes with remaining, in the same commits.
            let display = node.probe.messages(on: node.topic("egg", "display"), from: start).map(\.text)
            #expect(display == values.map(Self.clockText), "\(display) for \(values)")
            // rounds and round never changed: not republished. phase: countdown, then finished.
            #expect(node.probe.messages(on: node.topic("egg", "rounds"), from: start).isEmpty)
            #expect(node.probe.messages(on: node.topic("egg", "round"), from: start).isEmpty)
            #expect(node.probe.messages(on: node.topic("egg", "phase"), from: start).map(\.text) == ["countdown", "finished"])
            // The state is published on changes only: the start's, then the finish's.
            let states = node.probe.messages(on: node.topic("egg", "state"), from: start).compactMap(\.json)
            #expect(states.compactMap { $0["status"]?.string } == ["running", "finished"], "\(states)")
            #expect(states.last?["remaining_ms"]?.int == 0)
        }
    }

    @Test("a stopwatch counts up on remaining/display, and passes its target into overtime")
    func stopwatch() async throws {
        try await withNode { node in
            let created = try await node.send(["action": "create", "timer": "sw", "name": "Zazen 🧘", "spec": ["kind": "stopwatch", "target": "2s"]])
            #expect(created.state?["name"] == "Zazen 🧘")
            // Every plain topic of the new timer is in before the start is marked: `rounds` is
            // the last of them (its phase `idle` came after `remaining`, once, and was counted).
            try await node.probe.waitFor(node.topic("sw", "rounds"))
            let start = node.probe.count
            let started = try await node.send(["action": "start"], timer: "sw")
            let t0 = try #require(started.state?["started_at_ms"]?.int64)
            #expect(started.state?["phase"] == "session")
            #expect(started.state?["counts_up"] == true)
            #expect(started.state?["remaining"]?.int64 == 0, "\(started)")
            let overtime = try await node.waitForEvent("sw", "phase", from: start) { $0["phase"] == "overtime" }
            #expect(overtime.json?["due_ms"]?.int64 == t0 + 2_000)
            try await node.probe.waitFor(node.topic("sw", "remaining"), from: start, timeout: .seconds(10)) { $0.text == "3" }
            let stopped = try await node.send(["action": "finish"], timer: "sw")
            #expect(stopped.status == "finished", "\(stopped)")
            try await node.barrier()

            // Counting up, each second at most once and in order, through 3 (waited for above).
            let flips = try Self.flips(node, "sw", from: start)
            let values = flips.map(\.value)
            #expect(values.contains(3) && zip(values, values.dropFirst()).allSatisfy { $0 < $1 } && (values.first ?? 0) >= 1,
                    "\(values)")
            var previous = (value: Int64(0), asOf: try #require(started.state?["as_of_ms"]?.int64))
            for flip in flips {
                let state = flip.state
                guard state["status"] == "running" else {
                    // The finish's own state: the count where it stopped.
                    let elapsed = try #require(state["segment_elapsed_ms"]?.int64, "\(state)")
                    #expect(state["remaining"]?.int64 == flip.value, "\(state)")
                    #expect(elapsed / 1000 == flip.value, "\(flip.value) published with segment_elapsed_ms \(elapsed)")
                    #expect(state["status"] == "finished" && flip.value == values.last, "\(state)")
                    continue
                }
                // A flip: inside its second, counted from the start (the state goes out on
                // changes only: this one is the start's or the overtime's).
                let due = t0 + flip.value * 1000
                #expect(state["started_at_ms"]?.int64 == t0, "\(state)")
                Self.expectSkipsExplained(previous, flip, step: 1) { t0 + $0 * 1000 }
                previous = (flip.value, flip.received.wallMs)
                #expect(flip.received.wallMs >= due - 30 && flip.received.wallMs - due <= Self.arrivalBound,
                        "\(flip.value) arrived at +\(flip.received.wallMs - t0) ms")
            }
            #expect(node.probe.messages(on: node.topic("sw", "display"), from: start).map(\.text) == values.map(Self.clockText))
            #expect(node.probe.messages(on: node.topic("sw", "phase"), from: start).map(\.text) == ["session", "overtime", "finished"])
            let info = try await node.retained([node.topic("info")])
            #expect(info[node.topic("info")].flatMap(decodeJSON)?["timers"] == [["id": "sw", "name": "Zazen 🧘"]])
        }
    }

    @Test("a schedule removed from the configuration file while the node was off: its timer's retained next is cleared at the restart")
    func removedScheduleNextCleared() async throws {
        let yaml = "time_zone: UTC\nschedules:\n  - {id: spin, timer: bike, preset: tabata, weekly: [{days: daily, at: [\"06:00\"]}]}\n"
        try await withNode(.init(config: yaml)) { node in
            let next = node.topic("bike", "next")
            _ = try await node.probe.waitFor(next) { $0.json?["schedule"] == "spin" }
            await node.terminate()
            try "".write(to: node.configFile, atomically: false, encoding: .utf8)
            let start = node.probe.count
            try await node.launch()
            // A timeout here: the class that never comes stayed on the timer.
            _ = try await node.probe.waitFor(next, from: start) { $0.message.payload.isEmpty }
            let after = try await node.retained([node.topic("timers/bike/#")])
            #expect(after[next] == nil, "still retained: \(after.keys.sorted())")
        }
    }

    @Test("a deleted timer's retained topics are cleared: a late subscriber gets nothing")
    func deleteClearsRetained() async throws {
        try await withNode { node in
            for id in ["gone", "kept"] {
                let reply = try await node.send(["action": "start", "spec": ["kind": "countdown", "duration": "5m"]], timer: id)
                #expect(reply.ok, "\(reply)")
            }
            let before = try await node.retained([node.topic("timers/#")])
            let names = ["state", "remaining", "display", "phase", "round", "rounds"]
            for name in names {
                #expect(before[node.topic("gone", name)] != nil, "\(name) was not retained before the delete")
            }

            let start = node.probe.count
            let deleted = try await node.send(["action": "delete", "timer": "gone"])
            #expect(deleted.ok, "\(deleted)")
            #expect(deleted.json["deleted"] == true)
            // Both timers run, so a per-second value can land before the delete: wait for the
            // empty payload (a timeout here means the topic was never cleared).
            for name in names + ["hr"] {
                _ = try await node.probe.waitFor(node.topic("gone", name), from: start) { $0.message.payload.isEmpty }
            }
            // `info` is throttled: the one deferred from the second start may still go out
            // after `start`, listing both. The node's next one lists `kept` alone (a timeout: never).
            let onlyKept: JSONValue = [["id": "kept", "name": "kept"]]
            let info = try await node.probe.waitFor(node.topic("info"), from: start) { $0.json?["timers"] == onlyKept }
            #expect(info.json?["timers"] == onlyKept)

            // The deleted timer was running: its per-second publishing must stop with it, or the
            // ghost comes back. Give it more than a second to show up, then look.
            let cleared = node.probe.count
            try await Task.sleep(for: .milliseconds(1_500))
            try await node.barrier()
            #expect(node.probe.all[cleared...].filter { $0.topic.contains("/timers/gone/") }.isEmpty,
                    "a deleted timer published again: \(node.probe.all[cleared...].filter { $0.topic.contains("/timers/gone/") }.map(\.topic))")

            let after = try await node.retained([node.topic("gone/#"), node.topic("timers/gone/#"), node.topic("timers/kept/#")])
            #expect(after.keys.filter { $0.contains("/timers/gone/") }.isEmpty, "ghost topics: \(after.keys.sorted())")
            #expect(after[node.topic("kept", "state")] != nil, "the other timer lost its state")

            // And a plain-word delete does the same.
            let start2 = node.probe.count
            let word = try await node.word("delete", timer: "kept")
            #expect(word.ok, "\(word)")
            // ("kept" may be running: a per-second state can land before the delete; wait for the clear.)
            _ = try await node.probe.waitFor(node.topic("kept", "state"), from: start2) { $0.message.payload.isEmpty }
            #expect(try await node.retained([node.topic("timers/#")]).isEmpty)
        }
    }
}

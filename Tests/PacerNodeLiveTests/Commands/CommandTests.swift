import Foundation
import PacerCore
import PacerTestSupport
import Testing

/// How a timer command is sent: a JSON object or a plain word on the timer's `cmd` topic.
enum CommandForm: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case json, word
    var testDescription: String { rawValue }
}

/// One timer command and what it must do.
private struct Step {
    var word: String
    var json: JSONValue
    var timer: String
    var status: String
    /// The value the `phase` topic must show afterwards.
    var phase: String
    /// The event the command must raise (with the reply's revision).
    var event: String
}

/// Commands (docs/API.md): every timer command, as JSON and as a plain word, and every node
/// command.
@Suite("Commands")
struct CommandTests {
    @Test("every timer command works as JSON and as a plain word", arguments: CommandForm.allCases)
    func everyTimerCommand(form: CommandForm) async throws {
        // A 30 s back window (the default is 3 s): `back` right after `skip` must find the rest
        // younger than the window however long the test was descheduled in between.
        try await withNode(.init(config: "timing: {back_window: 30s}\n")) { node in
            for (id, spec) in [
                ("cd", ["kind": "countdown", "duration": "60s"] as JSONValue),
                ("iv", ["kind": "interval", "work": "30s", "rest": "10s", "rounds": 3]),
                ("ex", ["kind": "countdown", "duration": "1s", "ack": true]),
            ] {
                let created = try await node.send(["action": "create", "timer": .string(id), "spec": spec])
                try #require(created.ok, "\(created)")
            }

            /// The phase topic's value as of the commit that first published `timer`'s state at
            /// `revision`: a commit publishes the state, then the plain topics that changed, so it
            /// is the last phase the probe got before the timer's next state (or the end).
            func phase(ofCommitOf timer: String, revision: Int) -> String? {
                let records = node.probe.all
                let stateTopic = node.topic(timer, "state"), phaseTopic = node.topic(timer, "phase")
                guard let at = records.firstIndex(where: { $0.topic == stateTopic && $0.json?["revision"]?.int == revision }) else { return nil }
                let next = records[(at + 1)...].firstIndex { $0.topic == stateTopic } ?? records.endIndex
                return records[..<next].last { $0.topic == phaseTopic }?.text
            }

            /// Sends the step in the form under test, checks the reply, the event and the phase topic.
            @discardableResult
            func perform(_ step: Step) async throws -> Reply {
                let start = node.probe.count
                let before = node.state(step.timer)?["revision"]?.int
                let reply: Reply
                switch form {
                case .json: reply = try await node.send(step.json, timer: step.timer)
                case .word:
                    reply = try await node.word(step.word, timer: step.timer)
                    #expect(reply.id == .null, "a plain word has no request id: \(reply)")
                }
                try #require(reply.ok, "\(step.word): \(reply)")
                #expect(reply.json["timer"]?.string == step.timer)
                #expect(reply.status == step.status, "\(step.word): \(reply)")
                let revision = try #require(reply.revision)
                if let before { #expect(revision > before, "\(step.word) did not move the revision") }
                #expect(reply.state?["revision"]?.int == revision)
                let event = try await node.waitForEvent(step.timer, step.event, from: start) { $0["revision"]?.int == revision }
                #expect(event.json?["timer"]?.string == step.timer)
                try await node.waitForState(step.timer, from: start) { $0["revision"]?.int == revision && $0["status"]?.string == step.status }
                // The phase topic showed the new phase with that state (republished only when it
                // changed). Judged as of the command's own commit, not as of now: a timer may have
                // moved on since (the 1 s countdown `ex` expires on its own).
                try await node.barrier()
                let shown = phase(ofCommitOf: step.timer, revision: revision)
                #expect(shown == step.phase, "\(step.word): the phase topic showed \(shown ?? "nothing") with revision \(revision), not \(step.phase)")
                return reply
            }
            func step(_ word: String, _ json: JSONValue, _ timer: String, _ status: String, _ phase: String, _ event: String) -> Step {
                Step(word: word, json: json, timer: timer, status: status, phase: phase, event: event)
            }

            try await perform(step("start", ["action": "start"], "cd", "running", "countdown", "started"))
            try await perform(step("pause", ["action": "pause"], "cd", "paused", "paused", "paused"))
            try await perform(step("resume", ["action": "resume"], "cd", "running", "countdown", "resumed"))
            try await perform(step("toggle", ["action": "toggle"], "cd", "paused", "paused", "paused"))
            let running = try await perform(step("toggle", ["action": "toggle"], "cd", "running", "countdown", "resumed"))

            // adjust moves the remaining time by exactly its seconds, on top of what ran (node-side:
            // remaining_ms at each reply's as_of_ms, the timer running in between).
            func remaining(_ reply: Reply) throws -> (ms: Int64, asOf: Int64) {
                (try #require(reply.state?["remaining_ms"]?.int64, "\(reply)"), try #require(reply.state?["as_of_ms"]?.int64, "\(reply)"))
            }
            let beforePlus = try remaining(running)
            let plus = try await perform(step("+30", ["action": "adjust", "seconds": 30], "cd", "running", "countdown", "adjusted"))
            let afterPlus = try remaining(plus)
            #expect(afterPlus.ms == beforePlus.ms - (afterPlus.asOf - beforePlus.asOf) + 30_000, "\(beforePlus) + 30 s → \(afterPlus)")
            #expect(afterPlus.ms > 30_000 && afterPlus.ms <= 90_000, "60 s + 30 s, after the start: \(afterPlus.ms) ms")
            #expect(node.events("cd").last { $0["type"] == "adjusted" }?["seconds"]?.int == 30)
            let minus = try await perform(step("-10", ["action": "adjust", "seconds": -10], "cd", "running", "countdown", "adjusted"))
            let afterMinus = try remaining(minus)
            #expect(afterMinus.ms == afterPlus.ms - (afterMinus.asOf - afterPlus.asOf) - 10_000, "\(afterPlus) - 10 s → \(afterMinus)")
            #expect(node.events("cd").last { $0["type"] == "adjusted" }?["seconds"]?.int == -10)

            try await perform(step("finish", ["action": "finish"], "cd", "finished", "finished", "finished"))
            #expect(node.events("cd").last { $0["type"] == "finished" }?["reason"] == "finished")
            try await perform(step("reset", ["action": "reset"], "cd", "idle", "idle", "reset"))
            try await perform(step("start", ["action": "start"], "cd", "running", "countdown", "started"))
            try await perform(step("cancel", ["action": "cancel"], "cd", "cancelled", "cancelled", "cancelled"))

            // skip and back on an interval timer.
            try await perform(step("start", ["action": "start"], "iv", "running", "work", "started"))
            let skipped = try await perform(step("skip", ["action": "skip"], "iv", "running", "rest", "skipped"))
            #expect(skipped.state?["segment"]?.int == 2)
            #expect(skipped.state?["remaining_ms"]?.int ?? 0 > 8_000)
            // Within the back window of the rest's start, back goes to the previous segment (the work).
            let back = try await perform(step("back", ["action": "back"], "iv", "running", "work", "rewound"))
            #expect(back.state?["segment"]?.int == 1)
            #expect(back.state?["remaining_ms"]?.int ?? 0 > 28_000)

            // ack and snooze need an expired timer (countdown 1 s with ack).
            let s0 = node.probe.count
            try await perform(step("start", ["action": "start"], "ex", "running", "countdown", "started"))
            try await node.waitForEvent("ex", "expired", from: s0, timeout: .seconds(10))
            try await node.probe.waitFor(node.topic("ex", "phase"), from: s0) { $0.text == "expired" }
            let snoozed = try await perform(step("snooze", ["action": "snooze"], "ex", "running", "countdown", "snoozed"))
            #expect(node.events("ex").last { $0["type"] == "snoozed" }?["seconds"]?.int == 60)
            let snoozeLeft = try #require(snoozed.state?["remaining_ms"]?.int)
            #expect(snoozeLeft > 55_000 && snoozeLeft <= 60_000)
            try await perform(step("finish", ["action": "finish"], "ex", "finished", "finished", "finished"))
            let s1 = node.probe.count
            try await perform(step("start", ["action": "start"], "ex", "running", "countdown", "started"))
            try await node.waitForEvent("ex", "expired", from: s1, timeout: .seconds(10))
            let acked = try await perform(step("ack", ["action": "ack"], "ex", "finished", "finished", "acknowledged"))
            let finished = try await node.waitForEvent("ex", "finished", from: s1) { $0["revision"]?.int == acked.revision }
            #expect(finished.json?["reason"] == "acknowledged")

            // delete on the timer's own topic.
            let s2 = node.probe.count
            let deleted = form == .json ? try await node.send(["action": "delete"], timer: "cd") : try await node.word("delete", timer: "cd")
            #expect(deleted.ok, "\(deleted)")
            #expect(try await node.probe.waitFor(node.topic("cd", "state"), from: s2).message.payload.isEmpty)
        }
    }

    @Test("node commands on <base>/cmd: create, start with a timer id, list, time, history, delete")
    func nodeCommands() async throws {
        try await withNode { node in
            let infoStart = node.probe.count
            let created = try await node.send(["action": "create", "timer": "kitchen", "name": "Kitchen", "spec": ["kind": "countdown", "duration": "12m"]])
            try #require(created.ok, "\(created)")
            #expect(created.json["timer"] == "kitchen")
            #expect(created.status == "idle")
            #expect(created.state?["name"] == "Kitchen")
            #expect(created.state?["remaining_ms"]?.int == 720_000)
            try await node.probe.waitFor(node.topic("info"), from: infoStart) { $0.json?["timers"]?.array?.count == 1 }

            let again = try await node.send(["action": "create", "timer": "kitchen", "spec": ["kind": "countdown", "duration": "1m"]])
            #expect(!again.ok)
            #expect(again.code == "timer_exists")
            #expect(node.state("kitchen")?["remaining_ms"]?.int == 720_000, "a refused create replaced the timer's spec")

            let started = try await node.send(["action": "start", "timer": "kitchen"])
            #expect(started.status == "running", "\(started)")
            let paused = try await node.send(["action": "pause", "timer": "kitchen"])
            #expect(paused.status == "paused", "\(paused)")
            _ = try await node.send(["action": "create", "timer": "laundry", "spec": ["kind": "stopwatch"]])

            let list = try await node.send(["action": "list"])
            #expect(list.ok)
            let timers = try #require(list.json["timers"]?.array)
            #expect(timers.compactMap { $0["id"]?.string } == ["kitchen", "laundry"])
            #expect(timers.first?["status"] == "paused")
            #expect(timers.first?["name"] == "Kitchen")
            #expect(timers.first?["revision"]?.int == paused.revision)
            #expect(timers.last?["kind"] == "stopwatch")

            let sent = wallNowMs()
            let time = try await node.send(["action": "time"])
            let received = wallNowMs()
            let now = try #require(time.json["now_ms"]?.int64)
            #expect(now >= sent - 5 && now <= received + 5, "now_ms \(now) is not between \(sent) and \(received)")
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let text = try #require(time.json["now"]?.string)
            #expect(formatter.date(from: text).map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) } == now)

            let history = try await node.send(["action": "history", "timer": "kitchen"])
            #expect(history.ok, "\(history)")
            let events = try #require(history.json["events"]?.array)
            #expect(events.compactMap { $0["type"]?.string } == ["paused", "started"], "newest first: \(events)")
            #expect(events.allSatisfy { $0["timer"] == "kitchen" })
            let limited = try await node.send(["action": "history", "limit": 1])
            #expect(limited.json["events"]?.array?.count == 1)

            let deleted = try await node.send(["action": "delete", "timer": "kitchen"])
            #expect(deleted.ok && deleted.json["deleted"] == true, "\(deleted)")
            let listAfter = try await node.send(["action": "list"])
            #expect(listAfter.json["timers"]?.array?.compactMap { $0["id"]?.string } == ["laundry"])
            let deleteAgain = try await node.send(["action": "delete", "timer": "kitchen"])
            #expect(deleteAgain.code == "unknown_timer", "\(deleteAgain)")
            #expect(deleteAgain.message?.contains("kitchen") == true)
        }
    }

    @Test("start with a spec creates the timer; with a preset; with nothing restarts the current spec")
    func startVariants() async throws {
        try await withNode(.init(config: "presets:\n  quick: {kind: interval, work: 45s, rest: 15s, rounds: 10}\n")) { node in
            let infoStart = node.probe.count
            let bench = try await node.send(["action": "start", "name": "Bench", "spec": ["kind": "rest", "duration": "90s", "exercise": "Bench press"]], timer: "bench")
            try #require(bench.ok, "\(bench)")
            #expect(bench.status == "running")
            #expect(bench.state?["kind"] == "rest")
            #expect(bench.state?["label"] == "Bench press")
            #expect(bench.state?["name"] == "Bench")
            try await node.probe.waitFor(node.topic("info"), from: infoStart) { $0.json?["timers"] == [["id": "bench", "name": "Bench"]] }

            let tabata = try await node.send(["action": "start", "timer": "tb", "preset": "tabata"])
            try #require(tabata.ok, "\(tabata)")
            let state = try #require(tabata.state)
            #expect(state["preset"] == "tabata")
            #expect(state["phase"] == "prepare")
            #expect(state["rounds"]?.int == 8)
            #expect(state["segments"]?.int == 16)
            #expect(state["segment_duration_ms"]?.int == 10_000)
            let elapsed = try #require(state["elapsed_ms"]?.int)
            #expect(state["total_remaining_ms"]?.int == 240_000 - elapsed, "10 s + 8 × 20 s + 7 × 10 s")

            let emom = try await node.send(["action": "start", "preset": "emom", "rounds": 12], timer: "em")
            #expect(emom.state?["rounds"]?.int == 12, "\(emom)")
            let custom = try await node.send(["action": "start", "preset": "quick"], timer: "qk")
            #expect(custom.state?["rounds"]?.int == 10, "\(custom)")
            #expect(custom.state?["segment_duration_ms"]?.int == 45_000)

            // Starting a running timer again needs restart: true.
            let twice = try await node.send(["action": "start"], timer: "tb")
            #expect(twice.code == "invalid_state", "\(twice)")
            let cancelled = try await node.send(["action": "cancel"], timer: "tb")
            #expect(cancelled.status == "cancelled")
            let restarted = try await node.send(["action": "start"], timer: "tb")
            #expect(restarted.status == "running")
            #expect(restarted.state?["preset"] == "tabata")
            #expect(restarted.state?["segment"]?.int == 1)
            let replaced = try await node.send(["action": "start", "restart": true, "spec": ["kind": "countdown", "duration": "5m"]], timer: "tb")
            #expect(replaced.state?["kind"] == "countdown", "\(replaced)")
            #expect(replaced.state?["segment_duration_ms"]?.int == 300_000)
        }
    }
}

import Foundation
import PacerCore
import PacerTestSupport
import Testing

/// Durability and restore (docs/architecture.md): a real broker and a real `pacer run`, a scripted
/// workout on several timers, SIGKILL at random moments, restart, and after every restart: the
/// state equals what the core predicts, no acknowledged command is lost, request ids are still
/// known, no `finished`/`expired` is published twice, and the retained topics match the state.
///
/// How it judges:
/// - A model per timer (`TimerModel`, a `TimerMachine` of PacerCore) holds every command the
///   node accepted, applied at the instant the node applied it: its reply's `state.as_of_ms`
///   (commands are sent without `at`). Every state the node publishes or replies (thousands
///   per run) is compared with the model at the state's `as_of_ms` and revision.
/// - A command whose reply never came (killed while it was in flight, or sent while the node
///   was down and kept by the broker in the node's persistent session) is resolved after the
///   restart: a late reply, or the same request id sent again, whose reply is the first one if
///   the node had applied it, or applies it now. Either way the reply's `as_of_ms` says when.
/// - A few request ids answered before are sent again after each restart: the reply must be
///   the first reply, and the model (which does not apply them again) must still agree.
/// - Every `finished`/`expired` the probe sees is counted by (timer, type, revision). A second
///   copy fails the test unless it is the one repeat MQTT cannot rule out (the very same
///   payload, republished from the outbox after a kill that struck between the event and the
///   state proving it reached the broker; see docs/architecture.md): those are counted and
///   printed. At the end every `finished`/`expired` the core predicts has been published.
///
/// Knobs (environment):
/// - `PACER_CRASH_ITERATIONS` (default 30, about 70 s): how many times the node is killed
///   mid-workout (each restart is then checked). About 2.3 s each; a longer run, e.g. before a
///   release: `PACER_CRASH_ITERATIONS=300 PACER_CRASH_SEED=random swift test --filter CrashRestartTests`
///   (about 12 min).
/// - `PACER_CRASH_SEED`: repeat a run's random choices (the seed is printed at the start); without
///   it seed 1, the same choices on every machine; `random` for a new one.
///   Real time is not replayed, so a seed makes a failure likely, not certain, to recur.
///   A failed run keeps the node's directory (log of every start, database) and the broker's.
@Suite("Crash and restart with real processes", .serialized)
struct CrashRestartTests {
    /// The workout: a short interval (2 s work / 1 s rest × 4), a countdown that finishes, a
    /// rest timer with `ack` that expires, and a stopwatch with a target (overtime).
    static let timers: [(id: String, name: String, spec: JSONValue)] = [
        ("circuit", "Circuit", ["kind": "interval", "work": "2s", "rest": "1s", "rounds": 4]),
        ("egg", "Egg", ["kind": "countdown", "duration": "4s"]),
        ("rest", "Rest", ["kind": "rest", "duration": "3s", "ack": true]),
        ("watch", "Watch", ["kind": "stopwatch", "target": "5s"]),
    ]
    /// Alerts every 2 s and auto-dismiss after 8 s, so an expired rest timer that is not
    /// acknowledged in time also finishes by itself (sometimes while the node is down).
    static let settings = TimerSettings(alertIntervalMs: 2_000, autoDismissMs: 8_000)

    static var config: String {
        var lines = ["timing:", "  alert_interval: 2s", "  auto_dismiss: 8s", "timers:"]
        for timer in timers {
            lines.append("  - {id: \(timer.id), name: \(timer.name), spec: \(timer.spec.description)}")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    @Test("SIGKILL mid-workout at random moments, restart, and check state, commands, events and retained topics")
    func killedAtRandomMoments() async throws {
        let seed = environmentSeed("PACER_CRASH_SEED", fixed: 1)
        let iterations = max(1, environmentInteger("PACER_CRASH_ITERATIONS", default: 30))
        print("CrashRestartTests: seed \(seed), \(iterations) kills (repeat with PACER_CRASH_SEED=\(seed), change the count with PACER_CRASH_ITERATIONS)")

        // A broker of our own: hundreds of restarts and every retained topic stay out of the
        // shared broker, and nothing else loads this one.
        let broker = try await TestBroker.start()
        let node: TestNode
        do {
            node = try await TestNode.start(.init(config: Self.config, brokerPort: broker.port))
        } catch {
            await broker.stop()
            throw error
        }
        let run = try CrashRun(node: node, seed: seed)
        do {
            try await run.execute(iterations: iterations)
            await node.stop(clearRetained: false)
            await broker.stop()
        } catch {
            await node.stop(clearRetained: false)
            await broker.stop()
            run.problems += 1
            Issue.record(error, "[seed \(seed)] the crash run stopped")
        }
        if run.problems > 0 {
            // Kept for a post-mortem: the node's log (every start), its database, the broker's log.
            print("--- CrashRestartTests seed \(seed) failed; the node's files (log, data) stay in \(node.directory.path), the broker's in \(broker.directory.path); the end of the node's log: ---\n\(node.log.suffix(20_000))")
        } else {
            try? FileManager.default.removeItem(at: node.directory)
            broker.removeDirectory()
        }
    }
}

/// One crash run: the node, the models, and everything observed. Used by one task only.
final class CrashRun {
    let node: TestNode
    var rng: SeededGenerator
    let seed: UInt64
    var models: [String: TimerModel] = [:]
    let timerIDs: [String]

    /// Commands published whose outcome is not known yet (the node was killed before replying).
    var pending: [SentCommand] = []
    /// The first reply to every request id whose outcome is known.
    var firstReplies: [String: JSONValue] = [:]
    var resolvedOrder: [String] = []
    /// When each request id got its first reply (wall clock): only ids well inside the node's
    /// dedup window (`limits.dedup_window`, 10 min) are sent again; an older id is a new
    /// request by design, which a run longer than the window would otherwise count as a bug.
    var resolvedAtMs: [String: Millis] = [:]
    static let resendableAgeMs: Millis = 540_000
    var resolved: [String: SentCommand] = [:]
    /// When the node was last killed mid-workout (wall clock).
    var lastKillWallMs: Millis = 0
    /// Every kill (wall clock), for diagnosing a lost event.
    var killTimes: [Millis] = []
    /// Probe record index up to which states and events were checked.
    var checkedIndex = 0
    /// finished/expired events seen, by "timer/type/revision", with their payloads.
    var terminalEvents: [String: [JSONValue]] = [:]
    /// Their probe record indices.
    var terminalIndices: [String: [Int]] = [:]
    /// Duplicates that only a kill between an event and the state proving it can cause.
    var unprovenRepublishes = 0
    var problems = 0
    var commandCounter = 0
    /// The suite's name in what the run prints.
    var name = "CrashRestartTests"
    /// Runs after every kill, before the node is launched again; `startup`: a launch that
    /// will be killed during start-up (PowerCutTests: the power cut of its filesystem, checks
    /// of what the last start left, an exact cut armed in the start-up).
    var beforeRelaunch: ((_ startup: Bool) async throws -> Void)?
    /// Runs before each iteration drives the workout, the node running (PowerCutTests: an
    /// exact cut armed at a checkpoint or a commit).
    var beforeDrive: (() async throws -> Void)?

    // Statistics printed at the end.
    var kills = 0, startupKills = 0, sent = 0, sentWhileDown = 0, accepted = 0, refused = 0
    var lateReplies = 0, appliedBeforeKill = 0, appliedAfterRestart = 0, notApplied = 0, dedupChecks = 0, statesChecked = 0

    init(node: TestNode, seed: UInt64) throws {
        self.node = node
        self.seed = seed
        rng = SeededGenerator(seed: seed)
        timerIDs = CrashRestartTests.timers.map(\.id)
        for timer in CrashRestartTests.timers {
            models[timer.id] = try TimerModel(id: timer.id, name: timer.name, spec: timer.spec, settings: CrashRestartTests.settings)
        }
    }

    /// Records a failure (at most 40 are reported in full; the count is kept).
    func problem(_ text: String, _ location: SourceLocation = #_sourceLocation) {
        problems += 1
        if problems <= 40 { Issue.record(Comment(rawValue: "[seed \(seed)] \(text)"), sourceLocation: location) }
    }

    var alive: Bool { node.process?.isRunning ?? false }

    func execute(iterations: Int) async throws {
        let began = ContinuousClock.now
        try await afterRestart(from: 0, label: "first start")
        for iteration in 1...iterations {
            // Drive the workout until the node is killed: at a random moment (a killer task),
            // or a few milliseconds after a command went out (while the node receives, writes
            // or answers it).
            let node = self.node
            try await beforeDrive?()
            if rng.chance(0.4) {
                try await drive(iteration: iteration, killAfterCommand: Int.random(in: 1...4, using: &rng))
            } else {
                let delay = rng.milliseconds(150...2_500)
                let killer = Task { try? await Task.sleep(for: delay); await node.kill() }
                try await drive(iteration: iteration, killAfterCommand: nil)
                await killer.value
            }
            lastKillWallMs = wallNowMs()
            killTimes.append(lastKillWallMs)
            kills += 1
            // Sometimes a command is sent while the node is down (the broker keeps it in the
            // node's persistent session).
            if rng.chance(0.2), let (timer, operation) = pickCommand() {
                pending.append(try await publish(operation, to: timer))
                sentWhileDown += 1
            }
            // Sometimes also kill it while it starts: restoring, connecting, settling the outbox.
            // Half of those strike the moment it says `online`: restored, publishing its retained
            // topics, the outbox (late finished/expired) not yet settled.
            if rng.chance(0.25) {
                let launched = node.probe.count
                try await beforeRelaunch?(true)
                try await node.launch(waitOnline: false)
                if rng.chance(0.5) {
                    try await Task.sleep(for: rng.milliseconds(0...700))
                } else {
                    let deadline = ContinuousClock.now + .seconds(20)
                    while !node.probe.messages(on: node.topic("status"), from: launched).contains(where: { $0.text == "online" }),
                          ContinuousClock.now < deadline, alive {
                        try await Task.sleep(for: .milliseconds(1))
                    }
                }
                await node.kill()
                killTimes.append(wallNowMs())
                startupKills += 1
            }
            let restartIndex = node.probe.count
            try await beforeRelaunch?(false)
            try await node.launch()
            try await afterRestart(from: restartIndex, label: "restart \(iteration)")
            if problems > 40 { break }
        }
        // The end: one more kill and restart, let the outbox settle, and check that every
        // finished/expired the core predicts was published exactly once.
        await node.kill()
        lastKillWallMs = wallNowMs()
        let restartIndex = node.probe.count
        try await beforeRelaunch?(false)
        try await node.launch()
        try await afterRestart(from: restartIndex, label: "final restart")
        try await Task.sleep(for: .seconds(3))
        let end = try await node.send(["action": "time"])
        try await sweep(label: "final")
        try finalEventCheck(endMs: try #require(end.json["now_ms"]?.int64))
        let refusals = timerIDs.flatMap { models[$0]!.divergences() }
        for refusal in refusals { problem("the core disagrees with the node: \(refusal)") }
        print("""
            \(name): seed \(seed): \(kills) kills mid-workout and \(startupKills) during start-up in \(ContinuousClock.now - began); \
            \(sent) commands (\(sentWhileDown) while it was down): \(accepted) accepted, \(refused) refused; of those in flight at a kill: \(lateReplies) answered after the restart, \
            \(appliedBeforeKill) found applied before the kill, \(appliedAfterRestart) applied after the restart, \(notApplied) not applied; \
            \(dedupChecks) request ids re-sent across restarts; \(statesChecked) state messages checked against the core; \
            \(terminalEvents.count) finished/expired events (\(unprovenRepublishes) published again after a kill between an event and its proving state); \(problems) problems
            """)
        #expect(problems == 0, "[seed \(seed)] \(problems) problems (the first 40 are reported above)")
    }

    // MARK: Driving the workout

    /// Sends commands to random timers (what a coach would press, judged from the model)
    /// until the node is killed.
    func drive(iteration: Int, killAfterCommand: Int?) async throws {
        var count = 0
        while alive {
            guard let (timer, operation) = pickCommand() else {
                try await Task.sleep(for: rng.milliseconds(20...200))
                continue
            }
            let command = try await publish(operation, to: timer)
            count += 1
            if count == killAfterCommand {
                try await Task.sleep(for: .microseconds(Int.random(in: 0...8_000, using: &rng)))
                await node.kill()
                if let reply = await node.awaitReply(to: command, timeout: .milliseconds(300)) {
                    record(reply, for: command, context: "iteration \(iteration)")
                } else {
                    pending.append(command)
                }
                return
            }
            let node = self.node
            if let reply = await node.awaitReply(to: command, timeout: .seconds(5), alive: { node.process?.isRunning ?? false }) {
                record(reply, for: command, context: "iteration \(iteration)")
            } else {
                if alive { problem("no reply within 5 s from a running node to \(command.json) on \(timer)") }
                pending.append(command)
            }
            try await Task.sleep(for: rng.milliseconds(30...400))
        }
    }

    /// Publishes `operation` on the timer's `cmd` topic with a new request id.
    func publish(_ operation: TimerOperation, to timer: String) async throws -> SentCommand {
        commandCounter += 1
        var json: JSONValue = ["action": .string(operation.action.rawValue), "id": .string("crash-\(seed)-\(commandCounter)")]
        switch operation {
        case .adjust(let seconds), .snooze(let seconds): json = json.adding("seconds", .int(seconds))
        default: break
        }
        sent += 1
        return try await node.publishCommand(json, timer: timer, operation: operation)
    }

    /// The next command: chosen from what the model says the timer is doing now.
    func pickCommand() -> (String, TimerOperation)? {
        let timer = timerIDs.randomElement(using: &rng)!
        let snapshot = models[timer]!.latest().snapshot(at: wallNowMs())
        func one(_ choices: [TimerOperation?]) -> TimerOperation? { choices.randomElement(using: &rng)! }
        let operation: TimerOperation?
        switch snapshot.status {
        case .idle, .finished, .cancelled:
            operation = rng.chance(0.7) ? .start(spec: nil, startAt: nil, restart: false) : nil
        case .expired:
            operation = one([.ack, .ack, .ack, .snooze(seconds: 2), nil])
        case .paused:
            operation = timer == "circuit" ? one([.resume, .resume, .skip, .adjust(seconds: 2), .back]) : one([.resume, .resume, .adjust(seconds: 1)])
        case .running:
            switch timer {
            case "circuit": operation = one([.pause, .skip, .adjust(seconds: 1), .adjust(seconds: -1), .back, nil, nil])
            case "egg": operation = one([.pause, .adjust(seconds: 2), nil, nil])
            case "rest": operation = one([.adjust(seconds: 1), nil, nil, nil])
            default: operation = snapshot.elapsedMs > 6_000 ? one([.finish, .skip, .pause, nil]) : one([.pause, nil, nil])
            }
        case .scheduled:
            operation = nil
        }
        guard var operation else { return nil }
        // A paused stopwatch cannot be adjusted.
        if case .adjust = operation, timer == "watch" { operation = .resume }
        return (timer, operation)
    }

    /// Takes a reply in: the first reply of its request id; an accepted command joins the
    /// model at the instant the node applied it, and its reply's state is checked.
    func record(_ reply: Reply, for command: SentCommand, context: String, check checkNow: Bool = true) {
        if let first = firstReplies[command.requestID] {
            if first != reply.json { problem("\(context): request \(command.requestID) got two different replies: \(first) then \(reply.json)") }
            return
        }
        firstReplies[command.requestID] = reply.json
        resolvedOrder.append(command.requestID)
        resolvedAtMs[command.requestID] = wallNowMs()
        resolved[command.requestID] = command
        guard reply.ok else {
            refused += 1
            if reply.code != "invalid_state" && reply.code != "invalid_argument" {
                problem("\(context): \(command.json) on \(command.timer) was refused unexpectedly: \(reply.json)")
            }
            return
        }
        accepted += 1
        guard let state = reply.state, let asOf = state["as_of_ms"]?.int64, let revision = reply.revision else {
            problem("\(context): an accepted reply without state, as_of_ms or revision: \(reply.json)")
            return
        }
        models[command.timer]!.add(AcceptedCommand(requestID: command.requestID, operation: command.operation, asOfMs: asOf, revision: revision))
        if checkNow { check(state: state, timer: command.timer, context: "\(context): the reply to \(command.operation.action) (\(command.requestID))") }
    }

    /// Compares one state the node published (or replied) with the model at its instant.
    func check(state: JSONValue, timer: String, context: String) {
        guard let asOf = state["as_of_ms"]?.int64, let revision = state["revision"]?.int else {
            problem("\(context): a state without as_of_ms/revision: \(state)")
            return
        }
        statesChecked += 1
        let expected = models[timer]!.snapshot(asOfMs: asOf, revision: revision)
        let differences = stateDifferences(node: state, model: expected)
        if !differences.isEmpty {
            problem("\(context): \(timer) at \(asOf) (revision \(revision)) differs from the core: \(differences.joined(separator: "; ")). Node: \(state). Core: \(expected.json)")
        }
    }

    // MARK: After a restart

    func afterRestart(from restartIndex: Int, label: String) async throws {
        let restartWallMs = lastKillWallMs

        // 1. Commands in flight at the kill: a reply may still come (the broker kept the
        //    command in the node's persistent session); else re-send the same request id:
        //    the node answers with the first reply if it had applied it, else applies it now.
        //    Every outcome is taken in first, then the replies are checked: the node may have
        //    applied them in another order than they were sent (one queued in the session
        //    while another was lost in the kill and re-sent).
        if !pending.isEmpty {
            try await Task.sleep(for: .milliseconds(400))
            var outcomes: [(SentCommand, Reply, String)] = []
            for command in pending {
                if let late = node.reply(to: command) {
                    lateReplies += 1
                    outcomes.append((command, late, "\(label), late reply"))
                    continue
                }
                let again = try await node.publishCommand(command.json, timer: command.timer, operation: command.operation)
                guard let reply = await node.awaitReply(to: again, timeout: .seconds(10)) else {
                    problem("\(label): no reply to the re-sent request \(command.requestID)")
                    continue
                }
                outcomes.append((command, reply, "\(label), re-sent"))
            }
            for (command, reply, context) in outcomes {
                classify(reply, restartWallMs: restartWallMs)
                record(reply, for: command, context: context, check: false)
            }
            for (command, reply, context) in outcomes where reply.ok {
                if let state = reply.state { check(state: state, timer: command.timer, context: "\(context): the reply to \(command.operation.action) (\(command.requestID))") }
            }
            pending.removeAll()
        }

        // 2. Request ids answered before are still recognised: the first reply, nothing applied.
        let now = wallNowMs()
        let recent = resolvedOrder.filter { now - (resolvedAtMs[$0] ?? 0) < Self.resendableAgeMs }
        for id in recent.shuffled(using: &rng).prefix(3) {
            guard let first = firstReplies[id], let command = resolved[id] else { continue }
            let again = try await node.publishCommand(command.json, timer: command.timer, operation: command.operation)
            guard let reply = await node.awaitReply(to: again, timeout: .seconds(10)) else {
                problem("\(label): no reply to the repeated request \(id)")
                continue
            }
            dedupChecks += 1
            if reply.json != first {
                problem("\(label): the repeated request \(id) (\(command.json)) was not answered with its first reply across the restart: first \(first), now \(reply.json)")
            }
        }

        // 3. Everything the node published so far matches the model.
        try await node.barrier()
        try await sweep(label: label)

        // 4. The restored state was published for every timer, and lost nothing acknowledged.
        for timer in timerIDs {
            let states = node.probe.messages(on: node.topic(timer, "state"), from: restartIndex).compactMap(\.json)
            guard let restored = states.first else {
                problem("\(label): no state of \(timer) was published after the restart")
                continue
            }
            let acknowledged = models[timer]!.accepted.filter { $0.asOfMs < restartWallMs }.map(\.revision).max() ?? 0
            if let revision = restored["revision"]?.int, revision < acknowledged {
                problem("\(label): \(timer) restored at revision \(revision), but revision \(acknowledged) had been acknowledged")
            }
        }

        // 5. The retained topics, as a new subscriber gets them, match the state.
        try await checkRetained(label: label)
    }

    func classify(_ reply: Reply, restartWallMs: Millis) {
        guard reply.ok, let asOf = reply.state?["as_of_ms"]?.int64 else {
            notApplied += 1
            return
        }
        if asOf < restartWallMs { appliedBeforeKill += 1 } else { appliedAfterRestart += 1 }
    }

    /// Checks every state and event the probe received since the last sweep.
    func sweep(label: String) async throws {
        let records = node.probe.all
        let prefix = node.base + "/timers/"
        for index in min(checkedIndex, records.count)..<records.count where records[index].topic.hasPrefix(prefix) {
            let item = records[index]
            let parts = item.topic.dropFirst(prefix.count).split(separator: "/")
            guard parts.count == 2, let json = item.json else { continue }
            let timer = String(parts[0])
            guard models[timer] != nil else { continue }
            switch parts[1] {
            case "state":
                check(state: json, timer: timer, context: label)
            case "event":
                guard let type = json["type"]?.string, type == "finished" || type == "expired" else { continue }
                let key = "\(timer)/\(type)/\(json["revision"]?.int ?? -1)"
                terminalEvents[key, default: []].append(json)
                terminalIndices[key, default: []].append(index)
                if let first = terminalIndices[key]?.first, first != index {
                    // A second copy. Only one kind is beyond any publisher over MQTT (see
                    // isUnprovenRepublish): noted, not failed. Anything else is a bug.
                    if isUnprovenRepublish(records, first: first, second: index, stateTopic: node.topic(timer, "state"), statusTopic: node.topic("status")) {
                        unprovenRepublishes += 1
                        print("\(name): note: \(key) was published again after a kill that struck between it and the state proving it (\(label))")
                    } else {
                        problem("\(label): \(type) of \(timer) at revision \(json["revision"]?.int ?? -1) was published twice: \(terminalEvents[key]!)")
                    }
                }
                if let at = json["at_ms"]?.int64, let due = json["due_ms"]?.int64 {
                    let late = json["late_ms"]?.int64
                    if at - due > 2_000 && late != at - due {
                        problem("\(label): a \(type) published \(at - due) ms after it was due has late_ms \(late.map(String.init) ?? "absent"): \(json)")
                    }
                    if at - due <= 2_000 && late != nil {
                        problem("\(label): a \(type) on time carries late_ms: \(json)")
                    }
                }
            default:
                continue
            }
        }
        checkedIndex = records.count
    }

    /// What a new subscriber gets: for each timer a state the model agrees with, and plain
    /// topics that show that state. Retried a few times: a retained read can fall between a
    /// state and its plain topics (they are published one after the other).
    func checkRetained(label: String) async throws {
        var last: [String] = []
        for attempt in 1...6 {
            let retained = try await node.retained([node.topic("timers/#")])
            func text(_ timer: String, _ name: String) -> String? { retained[node.topic(timer, name)].map { String(decoding: $0, as: UTF8.self) } }
            var mismatches: [String] = []
            var states: [(String, JSONValue)] = []
            for timer in timerIDs {
                guard let state = retained[node.topic(timer, "state")].flatMap(decodeJSON) else {
                    mismatches.append("\(timer): no retained state")
                    continue
                }
                states.append((timer, state))
                var expectations: [(String, String?)] = [
                    ("phase", state["phase"]?.string), ("round", state["round"]?.int.map { String($0) }),
                    ("rounds", state["rounds"]?.int.map { String($0) }),
                ]
                // `state` goes out on changes only: while running, remaining and
                // display flip every second after it; otherwise they are the state's.
                if state["status"] != "running" {
                    expectations += [("remaining", state["remaining"]?.int64.map { String($0) }), ("display", state["display"]?.string)]
                }
                for (name, expected) in expectations where text(timer, name) != expected {
                    mismatches.append("\(timer): retained \(name) '\(text(timer, name) ?? "none")', the retained state says '\(expected ?? "none")' (state \(state))")
                }
            }
            if mismatches.isEmpty {
                for (timer, state) in states { check(state: state, timer: timer, context: "\(label), retained") }
                return
            }
            last = mismatches
            if attempt < 6 { try await Task.sleep(for: .milliseconds(150)) }
        }
        problem("\(label): the retained topics do not match the retained state: \(last.joined(separator: "; "))")
    }

    /// Every finished/expired the core predicts up to shortly before `endMs` was published
    /// exactly once (same due instant), and none was published that the core does not predict.
    func finalEventCheck(endMs: Millis) throws {
        // The sweep ran after `endMs` was read: an event due in between may be among those
        // seen, so the core's predictions must reach as far as the latest one seen.
        let lastSeenDue = terminalEvents.values.flatMap { $0 }.compactMap { $0["due_ms"]?.int64 }.max() ?? endMs
        var predicted: [String: TimerEvent] = [:]
        for timer in timerIDs {
            for event in models[timer]!.events(through: max(endMs, lastSeenDue)) where event.type == .finished || event.type == .expired {
                predicted["\(timer)/\(event.type.rawValue)/\(event.revision)"] = event
            }
        }
        for (key, event) in predicted.sorted(by: { $0.key < $1.key }) where event.dueMs <= endMs - 1_500 {
            // Duplicates were judged as they came (sweep); here: never lost.
            let published = terminalEvents[key] ?? []
            if published.isEmpty {
                let kills = killTimes.filter { abs($0 - event.dueMs) < 15_000 }.map { "\($0 - event.dueMs)" }
                let states = node.probe.messages(on: node.topic(event.timer, "state"))
                    .compactMap(\.json).filter { abs(($0["as_of_ms"]?.int64 ?? 0) - event.dueMs) < 5_000 }
                    .map { "\($0["as_of_ms"]?.int64.map { $0 - event.dueMs } ?? 0): \($0["status"]?.string ?? "?") r\($0["revision"]?.int ?? -1)" }
                problem("the core predicts \(key) due at \(event.dueMs); it was never published. Kills near it (ms after due): \(kills); states near it (ms after due: status revision): \(states)")
            } else if published[0]["due_ms"]?.int64 != event.dueMs {
                problem("\(key) was published with due_ms \(published[0]["due_ms"]?.description ?? "none"), the core says \(event.dueMs)")
            }
        }
        for (key, published) in terminalEvents.sorted(by: { $0.key < $1.key }) {
            guard let event = predicted[key] else {
                problem("\(key) was published but the core does not predict it: \(published)")
                continue
            }
            // Also the ones due too recently to be required: when published, at their instant.
            if event.dueMs > endMs - 1_500, published[0]["due_ms"]?.int64 != event.dueMs {
                problem("\(key) was published with due_ms \(published[0]["due_ms"]?.description ?? "none"), the core says \(event.dueMs)")
            }
        }
        if predicted.isEmpty { problem("the workout produced no finished/expired event at all; the test drove nothing") }
    }
}

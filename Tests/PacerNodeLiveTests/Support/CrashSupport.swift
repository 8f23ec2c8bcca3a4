import Foundation
import Mosquitto
import PacerCore
import PacerTestSupport
#if canImport(Glibc)
import Glibc
#endif

// Helpers of the crash and storage-recovery tests (CrashRestartTests, StorageRecoveryTests):
// a seeded random generator, commands sent without waiting for their reply (the node may be
// killed before it answers), and a model of each timer built from the core.


/// An integer from the environment, or `fallback`.
func environmentInteger(_ name: String, default fallback: Int) -> Int {
    ProcessInfo.processInfo.environment[name].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? fallback
}

/// The seed of a suite's random choices: the environment's `name` (a number, or `random` for a
/// new one each run, as the long runs of docs/RELIABILITY.md use), else `fixed`. The test
/// command sets none, so it makes the same choices on every machine.
func environmentSeed(_ name: String, fixed: UInt64) -> UInt64 {
    let value = ProcessInfo.processInfo.environment[name]?.trimmingCharacters(in: .whitespaces)
    if value == "random" { return UInt64.random(in: 1...UInt64(UInt32.max)) }
    return value.flatMap { UInt64($0) } ?? fixed
}

// MARK: - Commands whose reply may never come

/// A command published with the probe's response topic; its reply (if any) is found in the
/// probe's record by correlation data.
struct SentCommand: Sendable {
    var timer: String
    var requestID: String
    var json: JSONValue
    var operation: TimerOperation
    var correlation: [UInt8]
    /// Probe record index before it was published.
    var index: Int
}

extension TestNode {
    /// Publishes `command` (which must carry its request `id`) on the timer's `cmd` topic
    /// with the probe's response topic and a fresh correlation, and returns at once.
    func publishCommand(_ command: JSONValue, timer: String, operation: TimerOperation) async throws -> SentCommand {
        let correlation = Array(UUID().uuidString.utf8)
        let index = probe.count
        try await probe.publish(topic(timer, "cmd"), command.bytes,
                                properties: MQTTProperties(responseTopic: probe.replyTopic, correlationData: correlation))
        return SentCommand(timer: timer, requestID: command["id"]?.string ?? "", json: command, operation: operation,
                           correlation: correlation, index: index)
    }

    /// The reply to `sent` if the probe has received it.
    func reply(to sent: SentCommand) -> Reply? {
        probe.messages(on: probe.replyTopic, from: sent.index)
            .first { $0.message.properties.correlationData == sent.correlation }
            .flatMap { received in received.json.map { Reply(received: received, json: $0) } }
    }

    /// Waits up to `timeout` for the reply to `sent`; gives up early (after a short grace for
    /// replies already on their way) when `alive()` turns false.
    func awaitReply(to sent: SentCommand, timeout: Duration, alive: () -> Bool = { true }) async -> Reply? {
        let deadline = ContinuousClock.now + timeout
        var deadSince: ContinuousClock.Instant?
        while ContinuousClock.now < deadline {
            if let reply = reply(to: sent) { return reply }
            if !alive() {
                if let since = deadSince {
                    if ContinuousClock.now - since > .milliseconds(150) { return nil }
                } else {
                    deadSince = .now
                }
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return reply(to: sent)
    }

    /// SIGKILLs the running process (no clean shutdown) and waits until it is gone.
    func kill() async {
        await process?.kill()
    }
}

// MARK: - The model

/// A command the node accepted (`ok: true`), at the instant it applied it (`state.as_of_ms`
/// of its reply) and with the revision of its reply.
struct AcceptedCommand: Sendable {
    var requestID: String
    var operation: TimerOperation
    var asOfMs: Millis
    var revision: Int
}

/// What the core predicts for one timer: a fresh `TimerMachine` with every accepted command
/// applied at the instant the node applied it, in the node's order (by instant, then by
/// revision). `machine(at:revision:)` answers "which state should a snapshot at this instant
/// with this revision show", including the commands handled at that same millisecond when
/// the snapshot's revision shows them.
struct TimerModel {
    let id: String
    let initial: TimerMachine
    private(set) var accepted: [AcceptedCommand] = []
    /// `cache[k]`: the machine after the first k accepted commands.
    private var cache: [TimerMachine]
    /// Events each step produced: `steps[k-1]` from applying command k.
    private var steps: [[TimerEvent]] = []
    init(id: String, name: String, spec: JSONValue, settings: TimerSettings) throws {
        self.id = id
        let parsed = try TimerSpec(json: spec)
        initial = try TimerMachine(id: id, name: name, spec: parsed, settings: settings)
        cache = [initial]
    }

    /// Adds an accepted command in the node's order. Returns false when it was known already.
    @discardableResult
    mutating func add(_ command: AcceptedCommand) -> Bool {
        if accepted.contains(where: { $0.requestID == command.requestID }) { return false }
        let position = accepted.firstIndex { ($0.asOfMs, $0.revision) > (command.asOfMs, command.revision) } ?? accepted.count
        accepted.insert(command, at: position)
        if cache.count > position + 1 { cache.removeSubrange((position + 1)...) }
        if steps.count > position { steps.removeSubrange(position...) }
        return true
    }

    /// The machine after the first `count` accepted commands.
    mutating func machine(after count: Int) -> TimerMachine {
        while cache.count <= count {
            let k = cache.count - 1
            var machine = cache[k]
            let command = accepted[k]
            switch machine.handle(TimerCommand(operation: command.operation, requestID: command.requestID), now: command.asOfMs) {
            case .success(let events): steps.append(events)
            case .failure: steps.append([])
            }
            cache.append(machine)
        }
        return cache[count]
    }

    /// Where the core disagrees with the node's replies, replaying every accepted command in
    /// order: a command the core refuses, or a revision other than the node's reply.
    func divergences() -> [String] {
        var machine = initial
        var found: [String] = []
        for command in accepted {
            if case .failure(let error) = machine.handle(TimerCommand(operation: command.operation, requestID: command.requestID), now: command.asOfMs) {
                found.append("\(id): the node accepted \(command.operation.action) (\(command.requestID)) at \(command.asOfMs) but the core refuses it: \(error)")
            }
            if machine.revision != command.revision {
                found.append("\(id): after \(command.operation.action) (\(command.requestID)) at \(command.asOfMs) the node replied revision \(command.revision), the core has \(machine.revision)")
            }
        }
        return found
    }

    /// How many accepted commands a snapshot at `asOfMs` with `revision` includes.
    func includedCount(asOfMs: Millis, revision: Int) -> Int {
        accepted.prefix { $0.asOfMs < asOfMs || ($0.asOfMs == asOfMs && $0.revision <= revision) }.count
    }

    /// The model's snapshot for the node's state observed at `asOfMs` with `revision`.
    mutating func snapshot(asOfMs: Millis, revision: Int) -> TimerSnapshot {
        var machine = machine(after: includedCount(asOfMs: asOfMs, revision: revision))
        _ = machine.advance(to: asOfMs)
        return machine.snapshot(at: asOfMs)
    }

    /// The latest machine (every accepted command), for choosing the next command.
    mutating func latest() -> TimerMachine { machine(after: accepted.count) }

    /// Every event the model produces from the start up to `endMs`, in order.
    mutating func events(through endMs: Millis) -> [TimerEvent] {
        var machine = self.machine(after: accepted.count)
        var all = steps.flatMap { $0 }
        all += machine.advance(to: endMs)
        return all
    }
}

// MARK: - Comparing a node state with the model

/// Differences between a node's state JSON and the model's snapshot at the same instant.
/// Milliseconds fields may differ by `toleranceMs`; `remaining`/`display` must agree with
/// the node's own `remaining_ms` (they are derived from it).
func stateDifferences(node: JSONValue, model: TimerSnapshot, toleranceMs: Int64 = 50) -> [String] {
    var problems: [String] = []
    let expected = model.json
    for key in ["status", "phase", "segment", "round", "set", "revision", "label", "segments", "overtime"]
    where node[key] != expected[key] {
        problems.append("\(key): node \(node[key]?.description ?? "absent"), model \(expected[key]?.description ?? "absent")")
    }
    for key in ["remaining_ms", "ends_at_ms", "elapsed_ms", "segment_duration_ms", "total_remaining_ms", "started_at_ms"] {
        let a = node[key], b = expected[key]
        let aNull = a == nil || a?.isNull == true, bNull = b == nil || b?.isNull == true
        if aNull != bNull {
            problems.append("\(key): node \(a?.description ?? "absent"), model \(b?.description ?? "absent")")
        } else if !aNull, let x = a?.int64, let y = b?.int64, abs(x - y) > toleranceMs {
            problems.append("\(key): node \(x), model \(y) (differ by \(x - y) ms)")
        }
    }
    problems += internalInconsistencies(node)
    return problems
}

/// `remaining` and `display` must be what `remaining_ms` (or the elapsed time, counting up) shows.
func internalInconsistencies(_ state: JSONValue) -> [String] {
    guard let remaining = state["remaining"]?.int64, let display = state["display"]?.string else {
        return ["the state has no remaining/display: \(state)"]
    }
    var problems: [String] = []
    let countsUp = state["counts_up"]?.bool == true
    let expectedSeconds: Int64? = if countsUp {
        state["segment_elapsed_ms"]?.int64.map { $0 >= 0 ? $0 / 1000 : 0 }
    } else {
        state["remaining_ms"]?.int64.map { ($0 + 999) / 1000 } ?? 0
    }
    if let expectedSeconds, remaining != expectedSeconds {
        problems.append("remaining \(remaining) does not show remaining_ms/segment_elapsed_ms (\(expectedSeconds) s)")
    }
    if display != Durations.display(seconds: remaining) {
        problems.append("display '\(display)' is not remaining \(remaining) as text ('\(Durations.display(seconds: remaining))')")
    }
    return problems
}

// MARK: - The one duplicate MQTT cannot rule out

/// Whether the second copy of an event (at `records[second]`, the first at `records[first]`)
/// is the one duplicate that a publisher crash can cause over MQTT: the node was killed after
/// the event reached the broker but before the retained state that proves it did (they are
/// two publishes), so the next start could not know and published it again from its outbox.
///
/// True only when both copies are byte for byte the same (the stored outbox payload, not an
/// event generated twice), the node went `online` again in between (a restart), and no state
/// of the timer with the event's revision or later reached the broker in between (had one,
/// the restarted node had its proof and must not have published the event again).
func isUnprovenRepublish(_ records: [Received], first: Int, second: Int, stateTopic: String, statusTopic: String) -> Bool {
    guard records[first].message.payload == records[second].message.payload,
          let revision = records[first].json?["revision"]?.int
    else { return false }
    let between = records[(first + 1)..<second]
    let restarted = between.contains { $0.topic == statusTopic && $0.text == "online" }
    let proven = between.contains { $0.topic == stateTopic && ($0.json?["revision"]?.int ?? -1) >= revision }
    return restarted && !proven
}

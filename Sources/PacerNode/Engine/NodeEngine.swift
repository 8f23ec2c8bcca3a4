import Foundation
import Logging
import Mosquitto
import PacerCore
import PacerStore
import Synchronization

/// What the engine loop handles, one at a time, in arrival order.
enum EngineInput: Sendable {
    case message(MQTTMessage)
    case connection(MQTTConnectionEvent)
    /// The deadline alarm fired.
    case deadline
    /// The broker acknowledged a tracked publish (an event from the outbox).
    case delivered(MQTTDeliveryReport)
}

/// The one owner of all timers (SPEC §3, issue 4).
///
/// Commands, deadlines and connection changes arrive on one stream and are handled strictly
/// in order by `run()`, so a command and a deadline never race. Everything the engine decides
/// to write or publish goes through `commit(_:)` (NodeEngine+Output.swift): the store first
/// (durable), then the broker.
actor NodeEngine {
    struct TimerEntry {
        var machine: TimerMachine
        var restore: RestorePolicy
        /// The revision last written to the store.
        var persistedRevision: Int
        /// Last value published on each plain retained topic (only changes are republished).
        var lastPlain: [String: String] = [:]
    }

    let configuration: NodeConfiguration
    let topics: Topics
    let transport: any EngineTransport
    let store: (any EngineStore)?
    let logger: Logger
    let version: String
    let parser: CommandParser

    var clock: NodeClock
    var timers: [String: TimerEntry] = [:]
    var ledger: RequestLedger
    var heartRate: HeartRateMonitor
    var deadlines = DeadlineQueue()
    /// Sources whose out-of-range readings were logged already (logged once each).
    var loggedHeartRateProblems: Set<String> = []
    var startedAtMs: Millis
    var clockSynchronized: Bool?
    /// Why the node runs without a database (reported in `info`), or nil.
    let storageProblem: String?
    /// The event outbox: the link as the engine took it, the check after a connect, the
    /// delivery tokens and marks (EventOutbox.swift).
    var outbox = EventOutbox()
    /// Timers whose last write failed: written with the next write, changed or not (their
    /// `persistedRevision` was already moved when the failed batch was built).
    var unwrittenTimers: Set<String> = []
    /// When the history was last pruned (pruned at most hourly, after a write).
    var lastPruneMs: Millis?
    /// A wall-clock jump not yet applied to the stored request ids (rides on the next
    /// successful write; see `StoreBatch.shiftRequestsMs`).
    var unstoredRequestShiftMs: Millis = 0

    /// Set by `finish()` (from any thread): the loop ends after the input in hand.
    let stopRequested = Atomic<Bool>(false)
    let inputs: AsyncStream<EngineInput>
    let inputContinuation: AsyncStream<EngineInput>.Continuation

    /// Wakes the loop at the earliest deadline; nil when a test drives time by hand.
    let alarm: DeadlineAlarm?

    /// - Parameters:
    ///   - transport: the broker side (`MQTTTransport` over the client, or a recording one).
    ///   - store: the database, or nil when the node runs without one.
    ///   - clock: the node's timeline (wall + monotonic, both injectable).
    ///   - usesAlarm: false when a test feeds `.deadline` inputs itself (virtual time).
    init(configuration: NodeConfiguration, transport: any EngineTransport, store: (any EngineStore)?, logger: Logger,
         storageProblem: String? = nil, clock: NodeClock = NodeClock(), version: String = PacerVersion.current,
         usesAlarm: Bool = true) {
        self.storageProblem = storageProblem
        self.configuration = configuration
        self.topics = Topics(base: configuration.baseTopic)
        self.transport = transport
        self.store = store
        self.logger = logger
        self.version = version
        self.clock = clock
        self.parser = CommandParser(maxPayloadBytes: configuration.limits.maxPayloadBytes)
        self.ledger = RequestLedger(windowMs: configuration.limits.dedupWindowMs)
        self.heartRate = HeartRateMonitor(settings: configuration.heartRate)
        self.startedAtMs = clock.now()
        let (stream, continuation) = AsyncStream<EngineInput>.makeStream()
        self.inputs = stream
        self.inputContinuation = continuation
        self.alarm = usesAlarm ? DeadlineAlarm { continuation.yield(.deadline) } : nil
    }

    /// Hands an input to the loop (safe from any task or thread).
    nonisolated func submit(_ input: EngineInput) {
        inputContinuation.yield(input)
    }

    /// Ends the loop after the input in hand; inputs still queued are dropped (a command among
    /// them was never answered, so nothing acknowledged is lost), so a shutdown does not wait
    /// for a burst of queued commands to be written one by one.
    nonisolated func finish() {
        stopRequested.store(true, ordering: .releasing)
        inputContinuation.finish()
    }

    /// The loop: handles every input in order until `finish()`.
    func run() async {
        rescheduleAll()
        for await input in inputs {
            if stopRequested.load(ordering: .acquiring) { break }
            await handle(input)
        }
        alarm?.cancel()
    }

    /// Handles one input: decide, then `commit` (write, then publish). The loop calls it for
    /// each input in order; the in-process tests call it directly.
    func handle(_ input: EngineInput) async {
        var output = EngineOutput()
        checkClock(&output)
        let now = clock.now()
        switch input {
        case .message(let message):
            route(message, now: now, into: &output)
        case .delivered(let report):
            await deliveryReported(report, now: now)
        case .connection(let event):
            connectionChanged(event, now: now, into: &output)
        case .deadline:
            for owner in deadlines.popDue(now: now) {
                switch owner {
                case .timer(let id): advanceTimer(id, now: now, into: &output)
                case .heartRate(let source): heartRateWentStale(source, now: now, into: &output)
                case .outbox: output.settleOutbox = true
                case .marks: output.flushMarks = true
                }
            }
        }
        await commit(output, now: now)
        armAlarm()
    }

    // MARK: - Routing

    private func route(_ message: MQTTMessage, now: Millis, into output: inout EngineOutput) {
        if message.topic == topics.command || topics.timerID(ofCommandTopic: message.topic) != nil {
            if message.retain {
                // Never replay a stale command that a client left retained on a command topic.
                logger.notice("ignored a retained command", metadata: ["topic": "\(message.topic)"])
                return
            }
            command(message, now: now, into: &output)
        } else if let id = topics.timerID(ofStateTopic: message.topic) {
            retainedState(message, timer: id, now: now, into: &output)
        } else {
            heartRateMessage(message, now: now, into: &output)
        }
    }

    // MARK: - Deadlines

    func advanceTimer(_ id: String, now: Millis, into output: inout EngineOutput) {
        guard var entry = timers[id] else { return }
        let events = entry.machine.advance(to: now)
        timers[id] = entry
        output.timerChanged(id, events: events)
        schedule(id)
    }

    /// Sets the timer's one deadline from the core's `nextDeadline`.
    ///
    /// Asked from the instant the machine was last advanced to, not from now: a transition
    /// that fell due since then (while the node was starting, or the loop was busy) is then due
    /// at once, instead of being skipped and its events never emitted.
    func schedule(_ id: String) {
        guard let entry = timers[id] else {
            deadlines.set(.timer(id), at: nil)
            return
        }
        let after = min(clock.now(), entry.machine.advancedToMs)
        deadlines.set(.timer(id), at: entry.machine.nextDeadline(after: after))
    }

    func rescheduleAll() {
        for id in timers.keys { schedule(id) }
    }

    /// The earliest deadline the engine waits for (the in-process tests advance to it).
    func nextDeadline() -> Millis? { deadlines.earliest() }

    private func armAlarm() {
        guard let alarm else { return }
        let earliest = deadlines.earliest()
        alarm.arm(at: earliest, after: earliest.map { clock.delay(until: $0) } ?? .zero)
    }

    /// Detects a wall-clock step and moves every running timer's anchors with it.
    private func checkClock(_ output: inout EngineOutput) {
        guard let delta = clock.checkForJump() else { return }
        logger.warning("the wall clock jumped; running timers keep their remaining time and ends_at moves with the clock",
                       metadata: ["jump_ms": "\(delta)"])
        for id in timers.keys {
            timers[id]!.machine.shiftAnchors(by: delta)
            output.timerChanged(id, events: [], forcePersist: true)
        }
        // Everything else held in timeline instants moves too: what was 1 min ago still was.
        ledger.shiftTimes(by: delta)  // a retried request id stays a duplicate
        unstoredRequestShiftMs = unstoredRequestShiftMs.saturatingAdd(delta)  // ... also after a restart
        heartRate.shiftTimes(by: delta)  // a reading stays fresh as long as before
        lastPruneMs = lastPruneMs.map { $0.saturatingAdd(delta) }
        deadlines.shift(by: delta)  // heart-rate staleness, the outbox check's window
        rescheduleAll()
    }
}

/// The version of Pacer, reported in `info` and `pacer --version`.
public enum PacerVersion {
    public static let current = "0.1.0"
}

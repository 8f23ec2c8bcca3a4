import Foundation
import Logging
import Mosquitto
import PacerCore
import PacerSound
import PacerStore
import Synchronization
import PacerProtocol

/// What the engine loop handles, one at a time, in arrival order.
enum EngineInput: Sendable {
    case message(MQTTMessage)
    case connection(MQTTConnectionEvent)
    /// The plain topics' own connection (`publish.plain_connection: separate`) changed.
    case plainLink(MQTTConnectionEvent)
    /// The deadline alarm fired.
    case deadline
    /// The broker acknowledged a tracked publish (an event from the outbox).
    case delivered(MQTTDeliveryReport)
}

/// The one owner of all timers (SPEC §3, issue 4).
///
/// Commands, deadlines and connection changes arrive in one queue and are handled strictly
/// in order by `run()`, so a command and a deadline never race. Everything the engine decides
/// to write or publish goes through `commit(_:now:)` (NodeEngine+Commit.swift): the store first
/// (durable), then the broker.
actor NodeEngine {
    let configuration: NodeConfiguration
    let topics: Topics
    let transport: any EngineTransport
    let store: (any EngineStore)?
    let logger: Logger
    let parser: CommandParser

    // The state, each part a type that owns its rules:
    var clock: NodeClock
    /// Every timer, with what the store and the broker last got of it (TimerTable.swift).
    var timers = TimerTable()
    /// Request ids answered in the dedup window, with their replies (PacerCore).
    var ledger: RequestLedger
    /// Heart-rate readings and their staleness (HeartRateMonitor.swift).
    var heartRate: HeartRateMonitor
    /// One deadline per timer, heart-rate source, outbox window and marks (DeadlineQueue.swift).
    var deadlines = DeadlineQueue()
    /// The link, the outbox check, delivery tokens and marks (EventOutbox.swift).
    var outbox = EventOutbox()
    /// The broker's refusal last logged (logged once until the next accepted connection).
    var loggedRefusal: String?
    /// The plain topics' own connection, as the engine took it (NodeEngine+PlainLink.swift).
    var plainLink = PlainLink()
    /// A connect's states on their way: the plain topics' republish waits for them.
    var plainHold = PlainRepublishHold()
    /// What the retained `info` says (NodeInfo.swift).
    var info: NodeInfo
    /// The saved workouts (SavedWorkouts.swift).
    var workouts = SavedWorkouts(json: nil)
    /// Store work that rides on the next write or happens after one (pruning).
    var upkeep = StoreUpkeep()
    /// Home Assistant discovery: what was published (nil when `home_assistant.enabled` is false).
    var homeAssistant: HomeAssistantPublisher?
    /// The optional command rate limit (`limits.command_rate`; nil: off). CommandRateLimiter.swift.
    lazy var rateLimiter: CommandRateLimiter? = configuration.limits.commandRate.map(CommandRateLimiter.init)
    /// The speaker's cues (PacerSound): the engine only hands events over; nil without `sound:`.
    let sound: SoundPlayer?

    /// Set by `finish()` (from any thread): when the loop must stop handling queued inputs
    /// (nil while running).
    let stopDeadline = Mutex<ContinuousClock.Instant?>(nil)
    /// The engine's own thread: this actor's executor, its input queue and its alarm clock
    /// (Scheduling/EngineThread.swift). Everything the engine does runs there, the store's
    /// writes included.
    let thread: EngineThread<EngineInput>
    /// Whether the thread's alarm delivers `.deadline` (false when a test drives time by hand).
    let usesAlarm: Bool

    nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }

    /// - Parameters:
    ///   - transport: the broker side (`MQTTTransport` over the client, or a recording one).
    ///   - store: the database, or nil when the node runs without one.
    ///   - clock: the node's timeline (wall + monotonic, both injectable).
    ///   - usesAlarm: false when a test feeds `.deadline` inputs itself (virtual time).
    ///   - sound: the speaker's player, handed the events of every commit (nil: no sound).
    init(configuration: NodeConfiguration, transport: any EngineTransport, store: (any EngineStore)?, logger: Logger,
         storageProblem: String? = nil, clock: NodeClock = NodeClock(), version: String = PacerVersion.current,
         usesAlarm: Bool = true, sound: SoundPlayer? = nil) {
        self.configuration = configuration
        self.sound = sound
        self.topics = Topics(base: configuration.baseTopic)
        self.transport = transport
        self.store = store
        self.logger = logger
        self.clock = clock
        self.parser = CommandParser(maxPayloadBytes: configuration.limits.maxPayloadBytes)
        self.ledger = RequestLedger(windowMs: configuration.limits.dedupWindowMs)
        self.heartRate = HeartRateMonitor(settings: configuration.heartRate)
        self.info = NodeInfo(
            version: version, nodeID: configuration.nodeID, baseTopic: configuration.baseTopic, startedAtMs: clock.now(),
            clockSynchronized: nil, presets: Set(Presets.builtInNames).union(configuration.presets.keys).sorted(),
            heartRateSources: configuration.heartRate.sources.map(\.name), storagePath: store?.path, storageProblem: storageProblem)
        self.thread = EngineThread(name: "pacer-engine", deadlineInput: .deadline)
        self.usesAlarm = usesAlarm
        if configuration.homeAssistant.enabled {
            self.homeAssistant = HomeAssistantPublisher(discovery: HomeAssistantDiscovery(
                settings: configuration.homeAssistant, nodeID: configuration.nodeID, topics: Topics(base: configuration.baseTopic),
                version: version, hasHeartRate: !configuration.heartRate.sources.isEmpty))
        }
    }

    /// The thread ends with the engine (its queued jobs run first).
    deinit {
        thread.stop()
    }

    /// Hands an input to the loop (safe from any task or thread).
    nonisolated func submit(_ input: EngineInput) {
        thread.submit(input)
    }

    /// Feeds one of the client's streams into the input queue until it ends, from the
    /// engine's own thread: the stream's consumer resumes here when the network thread yields
    /// (`for await` keeps this actor's isolation), not on one of Swift's pool threads, so a
    /// command reaches the engine with one thread switch instead of two.
    func forward<Stream: AsyncSequence & Sendable>(_ stream: Stream, as input: @Sendable (Stream.Element) -> EngineInput) async
        where Stream.Failure == Never {
        await withTaskExecutorPreference(thread) {
            for await element in stream { submit(input(element)) }
        }
    }

    /// How long the loop goes on handling inputs that were queued before `finish()`.
    static let drainBudget = Duration.milliseconds(500)

    /// Ends the loop: inputs queued before the call are still handled for up to `drainBudget`
    /// (a command that arrived just before a restart is applied and answered, not dropped after
    /// libmosquitto acknowledged it to the broker); what is still queued after that is dropped
    /// unanswered (never acknowledged by the node, so its sender retries), so a shutdown never
    /// waits for a long burst to be written one by one.
    nonisolated func finish() {
        stopDeadline.withLock { deadline in
            if deadline == nil { deadline = ContinuousClock.now.advanced(by: Self.drainBudget) }
        }
        thread.finishInputs()
    }

    /// `finish()` was called and its `drainBudget` has run out: what is still queued is dropped.
    nonisolated var drainBudgetSpent: Bool {
        stopDeadline.withLock { $0 }.map { ContinuousClock.now >= $0 } ?? false
    }

    /// A deadline has fallen due (its input may not be queued yet: the engine was busy).
    var hasDueDeadline: Bool {
        deadlines.earliest().map { $0 <= clock.now() } ?? false
    }

    /// The loop: handles every input in order until `finish()`.
    func run() async {
        rescheduleAll()
        armAlarm()
        // Resumed on the engine thread when an input comes (not via Swift's pool).
        await withTaskExecutorPreference(thread) {
            while let input = await thread.next() {
                if drainBudgetSpent { break }
                if case .message(let message) = input, isCommand(message) {
                    await handleCommands(first: message)  // with the commands queued behind it: one write
                } else {
                    await handle(input)
                }
            }
        }
        thread.arm(atMonotonicNs: nil)
    }

    /// Handles one input: decide, then `commit` (write, then publish). The loop calls it for
    /// each input in order; the in-process tests call it directly.
    func handle(_ input: EngineInput) async {
        // Deadlines that fell due while inputs queued up (a burst of commands, each written
        // before it is answered) are served first, as if their wake-up had come first: a
        // running timer's flips stay on time under a command storm instead of waiting
        // behind every queued command.
        if case .deadline = input {} else if hasDueDeadline {
            await handle(.deadline)
        }
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
        case .plainLink(let event):
            plainLinkChanged(event, now: now, into: &output)
        case .deadline:
            output.onlyTimePassed = true
            for owner in deadlines.popDue(now: now) {
                switch owner {
                case .timer(let id): advanceTimer(id, now: now, into: &output)
                case .heartRate(let source): heartRateWentStale(source, now: now, into: &output)
                case .outbox: output.settleOutbox = true
                case .marks: output.flushMarks = true
                case .info: output.infoChanged = true
                case .discovery: break  // commit's publishDiscovery sends the next chunk
                case .plainFallback: plainLinkStayedDown(into: &output)
                case .plainHold: output.republishPlain = plainHold.release() || output.republishPlain
                }
            }
        }
        await commit(output, now: now)
        armAlarm()
    }

    // MARK: - Routing

    func route(_ message: MQTTMessage, now: Millis, into output: inout EngineOutput) {
        if message.topic == topics.command || topics.timerID(ofCommandTopic: message.topic) != nil {
            if message.retain {
                // Never replay a stale command that a client left retained on a command topic.
                logger.notice("ignored a retained command", metadata: ["topic": "\(printable(message.topic, limit: 200))"])
                return
            }
            command(message, now: now, into: &output)
        } else if message.topic == topics.time {
            if !message.retain { timeRequest(message, now: now, into: &output) }  // a retained one is stale
        } else if let homeAssistant, message.topic == homeAssistant.discovery.statusTopic {
            homeAssistantStatus(message, into: &output)  // NodeEngine+HomeAssistant.swift
        } else if let id = topics.timerID(ofStateTopic: message.topic) {
            retainedState(message, timer: id, now: now, into: &output)
        } else {
            heartRateMessage(message, now: now, into: &output)
        }
    }

    // MARK: - Deadlines

    func advanceTimer(_ id: String, now: Millis, into output: inout EngineOutput) {
        guard let events = timers.update(id, { $0.advance(to: now) }) else { return }
        output.timerAdvanced(id, events: events)
        schedule(id)
    }

    /// Sets the timer's one deadline (none once it is gone).
    func schedule(_ id: String) {
        deadlines.set(.timer(id), at: timers.nextDeadline(of: id, now: clock.now()))
    }

    func rescheduleAll() {
        for id in timers.ids { schedule(id) }
    }

    /// The earliest deadline the engine waits for (the in-process tests advance to it).
    func nextDeadline() -> Millis? { deadlines.earliest() }

    /// Arms the thread's alarm for the earliest deadline (none when nothing waits: an idle
    /// node does not wake up).
    func armAlarm() {
        guard usesAlarm else { return }
        thread.arm(atMonotonicNs: deadlines.earliest().map { clock.monotonicNs(at: $0) })
    }

    /// Detects a wall-clock step and moves every running timer's anchors with it.
    func checkClock(_ output: inout EngineOutput) {
        guard let delta = clock.checkForJump() else { return }
        logger.warning("the wall clock jumped; running timers keep their remaining time and ends_at moves with the clock",
                       metadata: ["jump_ms": "\(delta)"])
        timers.shiftAnchors(by: delta)
        for id in timers.ids { output.timerChanged(id, events: [], forcePersist: true) }
        // Everything else held in timeline instants moves too: what was 1 min ago still was.
        ledger.shiftTimes(by: delta)  // a retried request id stays a duplicate
        upkeep.shiftTimes(by: delta)  // ... also after a restart
        heartRate.shiftTimes(by: delta)  // a reading stays fresh as long as before
        deadlines.shift(by: delta)  // heart-rate staleness, the outbox check's window
        info.publishedAtMs = info.publishedAtMs.map { $0.saturatingAdd(delta) }  // its throttle
        rescheduleAll()
    }
}

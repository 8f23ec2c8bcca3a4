import Logging
import Mosquitto
import PacerCore
import PacerProtocol
import PacerStore

/// What the engine handles, one at a time, in arrival order.
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

/// The node's decisions, as one value (docs/architecture.md, "The engine"): every timer, the
/// outbox, the plain link, the deadlines, the request ledger, heart rate, `info`, the saved
/// workouts and Home Assistant's discovery. It does no I/O and reads no clock: it is handed each
/// input with the instant it happened at, and answers with what to write (a `StoreBatch`) and what
/// to publish (`EngineEffect`s). `NodeEngine` (Shell/) is the thin shell that performs them.
///
/// One input goes through three steps, each a call:
/// 1. `decide(_:now:)` (or `route` for each command of a group): the timers change and an
///    `EngineOutput` records what they decided;
/// 2. `batch(for:now:)`: the store writes of that output; the shell writes them;
/// 3. `afterWrite(_:batch:result:context:)`: what the write allows (or the rollback of a
///    failed one), as effects in order: publishes, marks, sound, prune.
/// The in-process tests drive it with no store and no transport (EngineMachineTests).
struct EngineMachine {
    let configuration: NodeConfiguration
    let topics: Topics
    let logger: Logger
    let parser: CommandParser
    /// Whether the node has a database (history reads, restores).
    let hasStore: Bool
    /// Whether the plain topics have a connection of their own (`publish.plain_connection: separate`).
    let hasPlainConnection: Bool
    /// Whether the node has a speaker (`sound:` in its configuration).
    let hasSound: Bool

    // The state, each part a type that owns its rules:
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
    /// The plain topics' own connection, as the engine took it (PlainLink.swift).
    var plainLink = PlainLink()
    /// A connect's states on their way: the plain topics' republish waits for them.
    var plainHold = PlainRepublishHold()
    /// What the retained `info` says (NodeInfo.swift).
    var info: NodeInfo
    /// A class's athletes (AthleteRoster.swift; nil without `heart_rate.athletes`).
    var athletes: AthleteRoster?
    /// The runs of `class_hr` timers being recorded, by timer (ClassRecorder.swift).
    var classRuns: [String: ClassRecorder] = [:]
    /// Class summaries written by the current input, published after its write.
    var pendingSummaries: [(timer: String, payload: [UInt8])] = []
    /// The saved workouts (SavedWorkouts.swift).
    var workouts = SavedWorkouts(json: nil)
    /// The node's speaker as commanded (Speaker.swift).
    var speaker = Speaker()
    /// Store work that rides on the next write or happens after one (pruning).
    var upkeep = StoreUpkeep()
    /// Per timer, the revision its cue-ahead deadline was set at and the last cue announced
    /// (EngineMachine+CueAhead.swift; empty without `publish.cue_ahead`).
    var cueAhead: [String: CueAheadMark] = [:]
    /// Home Assistant discovery: what was published (nil when `home_assistant.enabled` is false).
    var homeAssistant: HomeAssistantPublisher?
    /// The optional command rate limit (`limits.command_rate`; nil: off). CommandRateLimiter.swift.
    var rateLimiter: CommandRateLimiter?
    /// The effects decided so far and not yet taken by the shell (`takeEffects`).
    private(set) var effects: [EngineEffect] = []
    /// The machine's own delivery tokens: a tracked publish gets one when it is decided, and
    /// the shell maps the client's token to it (the machine never waits for the client).
    private var lastToken: UInt64 = 0
    /// The broker reads slower than the node publishes (per-second values are shed): set by
    /// the shell from the transport before each input.
    var backlogged = false
    var plainBacklogged = false

    /// - Parameters:
    ///   - startedAtMs: the instant the node started (`info`).
    ///   - hasStore: whether a database backs the node.
    ///   - hasPlainConnection: whether the plain topics have a connection of their own.
    init(configuration: NodeConfiguration, logger: Logger, startedAtMs: Millis, version: String = PacerVersion.current,
         hasStore: Bool, storagePath: String? = nil, storageProblem: String? = nil, hasPlainConnection: Bool = false, hasSound: Bool = false) {
        self.configuration = configuration
        self.topics = Topics(base: configuration.baseTopic)
        self.logger = logger
        self.hasStore = hasStore
        self.hasPlainConnection = hasPlainConnection
        self.hasSound = hasSound
        self.parser = CommandParser(maxPayloadBytes: configuration.limits.maxPayloadBytes)
        self.ledger = RequestLedger(windowMs: configuration.limits.dedupWindowMs)
        self.heartRate = HeartRateMonitor(settings: configuration.heartRate)
        self.rateLimiter = configuration.limits.commandRate.map(CommandRateLimiter.init)
        self.athletes = configuration.heartRate.athletes.map {
            AthleteRoster(settings: $0, staleAfterMs: configuration.heartRate.staleAfterMs, defaultMaxHR: configuration.heartRate.maxHR)
        }
        self.info = NodeInfo(
            version: version, nodeID: configuration.nodeID, baseTopic: configuration.baseTopic, startedAtMs: startedAtMs,
            clockSynchronized: nil, presets: Set(Presets.builtInNames).union(configuration.presets.keys).sorted(),
            heartRateSources: configuration.heartRate.sources.map(\.name), storagePath: storagePath, storageProblem: storageProblem)
        self.info.announcesCues = configuration.cueAheadMs != nil
        if configuration.homeAssistant.enabled {
            self.homeAssistant = HomeAssistantPublisher(discovery: HomeAssistantDiscovery(
                settings: configuration.homeAssistant, nodeID: configuration.nodeID, topics: Topics(base: configuration.baseTopic),
                version: version, hasHeartRate: !configuration.heartRate.sources.isEmpty))
        }
    }

    // MARK: - Effects

    mutating func emit(_ effect: EngineEffect) { effects.append(effect) }

    /// The effects decided since the last call, in order (the shell performs them).
    mutating func takeEffects() -> [EngineEffect] {
        defer { effects = [] }
        return effects
    }

    /// A new delivery token of the machine's own, for a tracked publish.
    mutating func nextToken() -> MQTTDeliveryToken {
        lastToken += 1
        return MQTTDeliveryToken(rawValue: lastToken)
    }

    // MARK: - Deciding

    /// A deadline has fallen due (its input may not be queued yet: the engine was busy).
    mutating func hasDueDeadline(now: Millis) -> Bool {
        deadlines.earliest().map { $0 <= now } ?? false
    }

    /// Step 1 for one input (a delivery report is not an input of this kind: `delivered`).
    mutating func decide(_ input: EngineInput, now: Millis, into output: inout EngineOutput) {
        switch input {
        case .message(let message):
            route(message, now: now, into: &output)
        case .delivered(let report):
            delivered(report, now: now)
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
                case .athlete(let id): athleteDeadline(id, now: now)
                case .outbox: output.settleOutbox = true
                case .marks: output.flushMarks = true
                case .info: output.infoChanged = true
                case .discovery: break  // afterWrite's publishDiscovery sends the next chunk
                case .plainFallback: plainLinkStayedDown(into: &output)
                case .plainHold: output.republishPlain = plainHold.release() || output.republishPlain
                case .cueAhead(let id): announceCues(id, now: now)
                }
            }
        }
    }

    mutating func route(_ message: MQTTMessage, now: Millis, into output: inout EngineOutput) {
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
            homeAssistantStatus(message, into: &output)  // EngineMachine+HomeAssistant.swift
        } else if let id = topics.timerID(ofStateTopic: message.topic) {
            retainedState(message, timer: id, now: now, into: &output)
        } else {
            heartRateMessage(message, now: now, into: &output)
        }
    }

    // MARK: - Deadlines

    mutating func advanceTimer(_ id: String, now: Millis, into output: inout EngineOutput) {
        guard let events = timers.update(id, { $0.advance(to: now) }) else { return }
        output.timerAdvanced(id, events: events)
        schedule(id, now: now, byTime: true)
    }

    /// Sets the timer's one deadline (none once it is gone), and its cue-ahead one when the
    /// timer changed (EngineMachine+CueAhead.swift).
    /// - Parameter byTime: the timer moved on by the passage of time only (its cues stay where
    ///   the timing model put them, so what was announced stays announced).
    mutating func schedule(_ id: String, now: Millis, byTime: Bool = false) {
        deadlines.set(.timer(id), at: timers.nextDeadline(of: id, now: now))
        if cueAheadLeadMs != nil { scheduleCueAhead(id, now: now, keepingAnnounced: byTime) }
    }

    mutating func rescheduleAll(now: Millis) {
        for id in timers.ids { schedule(id, now: now) }
    }

    /// The earliest deadline the machine waits for (the shell's alarm; the tests advance to it).
    mutating func nextDeadline() -> Millis? { deadlines.earliest() }

    /// A wall-clock step (`NodeClock.checkForJump`): every running timer's anchors move with it.
    mutating func clockJumped(by delta: Millis, now: Millis, into output: inout EngineOutput) {
        logger.warning("the wall clock jumped; running timers keep their remaining time and ends_at moves with the clock",
                       metadata: ["jump_ms": "\(delta)"])
        timers.shiftAnchors(by: delta)
        for id in timers.ids { output.timerChanged(id, events: [], forcePersist: true) }
        // Everything else held in timeline instants moves too: what was 1 min ago still was.
        ledger.shiftTimes(by: delta)  // a retried request id stays a duplicate
        upkeep.shiftTimes(by: delta)  // ... also after a restart
        heartRate.shiftTimes(by: delta)  // a reading stays fresh as long as before
        athletes?.shiftTimes(by: delta)  // ... an athlete's too
        for id in classRuns.keys { classRuns[id]!.shiftTimes(by: delta) }
        deadlines.shift(by: delta)  // heart-rate staleness, the outbox check's window
        info.publishedAtMs = info.publishedAtMs.map { $0.saturatingAdd(delta) }  // its throttle
        rescheduleAll(now: now)
    }
}

import Logging
import PacerCore
import PacerProtocol
import PacerStore

/// The node's decisions, as one value (docs/architecture.md, "The engine"): every timer, the
/// outbox, the plain link, the deadlines, the request ledger, heart rate, `info`, the saved
/// workouts and Home Assistant's discovery. It does no I/O and reads no clock: it is handed each
/// input with the instant it happened at, and answers with what to write (a `StoreBatch`) and what
/// to publish (`EngineEffect`s). `NodeEngine` (Shell/) is the thin shell that performs them.
///
/// One input is one call: `step(_:at:)` returns the effects to carry out, in order. When the
/// input changed something the store keeps, the last effect is `.write(batch)`: the shell
/// writes it and hands the result back as the input `.written`, whose step returns what the
/// write allows (publishes, marks, sound) or undoes a failed one. Nothing is published or
/// acknowledged before it is durable.
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
    /// The effects decided so far and not yet returned by `step`.
    private var effects: [EngineEffect] = []
    /// The output whose write the last step asked for (`.write`), until `.written`.
    private var pendingWrite: PendingWrite?
    /// Commands of a group that follow a deletion: handled once its write is done.
    private var queuedCommands: ArraySlice<InboundMessage> = []
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

    /// The effects decided since the last call, in order.
    private mutating func takeEffects() -> [EngineEffect] {
        defer { effects = [] }
        return effects
    }

    /// A new delivery token of the machine's own, for a tracked publish.
    mutating func nextToken() -> PublishToken {
        lastToken += 1
        return PublishToken(rawValue: lastToken)
    }

    // MARK: - Deciding

    /// A deadline has fallen due (its input may not be queued yet: the engine was busy).
    mutating func hasDueDeadline(now: Millis) -> Bool {
        deadlines.earliest().map { $0 <= now } ?? false
    }

    /// Handles one input at `moment` and returns the effects to carry out, in order (see the
    /// type's comment for `.write` and `.written`).
    mutating func step(_ input: EngineInput, at moment: Moment) -> [EngineEffect] {
        backlogged = moment.backlogged
        plainBacklogged = moment.plainBacklogged
        let now = moment.now
        if case .written(let result, let unpublished) = input {
            return written(result, unpublished: unpublished)
        }
        var output = EngineOutput()
        if let jump = moment.clockJumpMs { clockJumped(by: jump, now: now, into: &output) }
        switch input {
        case .written:
            return []  // handled above
        case .commands(let messages):
            return commands(messages[...], now: now, into: output)
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
        return commit(output, now: now)
    }

    /// Start-up, before any input: brings back the saved timers (`saved`, what the shell read
    /// from the store) and creates the declared ones. Returns the effects, like `step`: the
    /// restore's `.write`, whose `.written` keeps the events for the first connect.
    mutating func restore(_ saved: RestoredState, clockSynchronized: Bool?, at now: Millis) -> [EngineEffect] {
        var output = EngineOutput()
        restoreState(saved, clockSynchronized: clockSynchronized, now: now, into: &output)
        return commit(output, now: now, restoring: true)
    }

    /// Commands queued one behind another, handled in order into one output and one write. A
    /// deletion ends the group (the store deletes after it upserts, so a timer deleted and
    /// created again must not share a write): the rest follow once its write is done.
    private mutating func commands(_ messages: ArraySlice<InboundMessage>, now: Millis, into output: EngineOutput) -> [EngineEffect] {
        var output = output
        var rest = messages
        while let message = rest.popFirst() {
            var one = EngineOutput()
            route(message, now: now, into: &one)
            output.absorb(one)
            if !one.deletedTimers.isEmpty { break }
        }
        queuedCommands = rest
        return commit(output, now: now)
    }

    /// Asks for the output's write (a shell without a store answers nil), or, with nothing to
    /// write, carries on at once.
    private mutating func commit(_ output: EngineOutput, now: Millis, restoring: Bool = false) -> [EngineEffect] {
        let batch = batch(for: output, now: now)
        if !batch.isEmpty || (hasStore && output.republishAll) {
            pendingWrite = PendingWrite(output: output, batch: batch, now: now, restoring: restoring)
            return [.write(batch, readOutbox: output.republishAll && !restoring)]  // the effects so far follow the write
        }
        pendingWrite = PendingWrite(output: output, batch: batch, now: now, restoring: restoring)
        return written(nil, unpublished: [])
    }

    /// The write of the pending output is done (`result`; nil: none was made).
    private mutating func written(_ result: WriteResult, unpublished: [EventRecord]) -> [EngineEffect] {
        guard let pending = pendingWrite else { return takeEffects() }
        pendingWrite = nil
        if pending.restoring {
            restoreWritten(pending.output, batch: pending.batch, result: result)
        } else {
            afterWrite(pending.output, batch: pending.batch, result: result, outboxPending: unpublished, now: pending.now)
        }
        if !queuedCommands.isEmpty {
            let rest = queuedCommands
            queuedCommands = []
            let effects = takeEffects()
            return effects + commands(rest, now: pending.now, into: EngineOutput())
        }
        return takeEffects()
    }

    private mutating func route(_ message: InboundMessage, now: Millis, into output: inout EngineOutput) {
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

/// An output waiting for its write (`EngineEffect.write`).
struct PendingWrite {
    var output: EngineOutput
    var batch: StoreBatch
    /// The instant of the input it came from (its publishes are snapshots at it).
    var now: Millis
    /// A start-up's write (`EngineMachine.restore`): its events wait for the first connect.
    var restoring: Bool
}

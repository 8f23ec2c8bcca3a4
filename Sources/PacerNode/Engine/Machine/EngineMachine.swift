import Logging
import PacerCore
import PacerProtocol
import PacerSound
import PacerStore

/// The node's decisions, as one value (docs/architecture.md, "The engine"). It does no I/O and
/// reads no clock: it is handed each input with the instant it happened at, and answers with
/// the effects to carry out. `NodeEngine` (Shell/) is the thin shell that performs them.
///
/// One input is one call: `step(_:at:)` returns the effects to carry out, in order. When the
/// input changed something the store keeps, the last effect is `.write(batch)`: the shell
/// writes it and hands the result back as the input `.written`, whose step returns what the
/// write allows (publishes, marks, sound) or undoes a failed one. Nothing is published or
/// acknowledged before it is durable.
///
/// The machine is small parts, each owning its state and rules, composed here:
/// - `board`: the timers, the deadlines and the effects decided so far (Board.swift);
/// - `gate`: parsing, rate limit and dedup of commands (CommandGate.swift);
/// - `link`: the connections, the event outbox and each timer's topics (BrokerLink.swift);
/// - `heart`: heart-rate sources, athletes and class runs (HeartRatePart.swift);
/// - `library`: the saved workouts (SavedWorkouts.swift); `sound`: the speaker and the
///   cue-ahead signal (SoundPart.swift); `discovery`: Home Assistant (DiscoveryPart.swift);
///   `info`: the retained `info` (NodeInfo.swift); `writes`: the write in flight (StoreUpkeep.swift);
///   `displays`: the AWTRIX clocks and WLED lights (DisplayPart.swift); `schedules`: the timetable
///   (SchedulePart.swift)
/// The tests drive it alone with an injected clock (EngineMachineTests and the engine harness).
struct EngineMachine {
    /// The configuration, its topics and the log: what every step reads.
    let context: EngineContext
    var configuration: NodeConfiguration { context.configuration }
    var topics: Topics { context.topics }
    var logger: Logger { context.logger }
    /// The timers, the deadlines and the effects decided so far.
    var board = Board()
    var gate: CommandGate
    var link: BrokerLink
    var heart: HeartRatePart
    var library: WorkoutLibrary
    var sound: SoundPart
    var discovery: DiscoveryPart
    /// What the retained `info` says.
    var info: NodeInfo
    var writes = WritePlan()
    /// The AWTRIX clocks and WLED lights it drives (DisplayPart.swift).
    var displays: DisplayPart
    /// The gym's timetable (SchedulePart.swift).
    var schedules: SchedulePart

    /// - Parameters:
    ///   - startedAtMs: the instant the node started (`info`).
    ///   - hasStore: whether a database backs the node.
    ///   - hasPlainConnection: whether the plain topics have a connection of their own.
    ///   - hasSound: whether the node has a speaker (`sound:` in its configuration).
    ///   - speech: what the node says at cues (`sound.speech`; its phrase table read by the shell).
    init(configuration: NodeConfiguration, logger: Logger, startedAtMs: Millis, version: String = PacerVersion.current,
         hasStore: Bool, storagePath: String? = nil, storageProblem: String? = nil, hasPlainConnection: Bool = false, hasSound: Bool = false,
         speech: SpeechPlanner? = nil) {
        let topics = Topics(base: configuration.baseTopic)
        context = EngineContext(configuration: configuration, topics: topics, logger: logger)
        gate = CommandGate(configuration: configuration, topics: topics, logger: logger)
        link = BrokerLink(configuration: configuration, topics: topics, hasStore: hasStore, hasPlainConnection: hasPlainConnection, logger: logger)
        heart = HeartRatePart(configuration: configuration, topics: topics, logger: logger)
        library = WorkoutLibrary(configured: configuration.presets, topic: topics.workouts)
        sound = SoundPart(configuration: configuration, topics: topics, hasSound: hasSound, speech: speech)
        discovery = DiscoveryPart(configuration: configuration, topics: topics, version: version, hasSound: hasSound, logger: logger)
        info = NodeInfo(
            version: version, nodeID: configuration.nodeID, baseTopic: configuration.baseTopic, startedAtMs: startedAtMs,
            clockSynchronized: nil, presets: Set(Presets.builtInNames).union(configuration.presets.keys).sorted(),
            heartRateSources: configuration.heartRate.sources.map(\.name), storagePath: storagePath, storageProblem: storageProblem)
        info.announcesCues = configuration.cueAheadMs != nil
        displays = DisplayPart(configuration.displays, topic: topics.displays, logger: logger)
        schedules = SchedulePart(configuration: configuration, topics: topics, logger: logger)
    }

    // MARK: - Stepping

    /// Handles one input at `moment` and returns the effects to carry out, in order (see the
    /// type's comment for `.write` and `.written`).
    mutating func step(_ input: EngineInput, at moment: Moment) -> [EngineEffect] {
        link.backlogged = moment.backlogged
        link.plainBacklogged = moment.plainBacklogged
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
            link.delivered(report, now: now, heart: heart, on: &board)
        case .connection(let event):
            connectionChanged(event, now: now, into: &output)
        case .plainLink(let event):
            if link.plainLinkChanged(event, now: now, on: &board) { output.follow.insert(.republishPlain) }
        case .deadline:
            deadlinesFell(now: now, into: &output)
        case .speechReady(let text, let durationMs):
            sound.clipReady(text, durationMs: durationMs)
        }
        return commit(output, now: now)
    }

    /// Whether the last step's effects have parts still to come: a republish of more timers
    /// than one chunk (`BrokerLink.republishTimers`). The shell takes them with `nextPart(at:)`
    /// before its next input, so no other input comes between the parts.
    var hasMoreOutput: Bool { link.isRepublishing }

    /// The next part of the last step's effects (`hasMoreOutput`), at the step's `moment`.
    mutating func nextPart(at moment: Moment) -> [EngineEffect] {
        link.backlogged = moment.backlogged
        link.plainBacklogged = moment.plainBacklogged
        link.republishNext(now: moment.now, heart: heart, on: &board)
        return board.out.take()
    }

    /// What follows effects carried out (the shell's loop, `EffectPerformer.perform`): the
    /// step on a write's result (`written`, at the input's own instant), or else the step's next
    /// part; nil when the step is done.
    mutating func following(_ written: EngineInput?, at moment: Moment) -> [EngineEffect]? {
        if let written { return step(written, at: moment) }
        return hasMoreOutput ? nextPart(at: moment) : nil
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
            if !one.changes.deleted.isEmpty { break }
        }
        writes.queuedCommands = rest
        return commit(output, now: now)
    }

    /// Asks for the output's write (a shell without a store answers nil), or, with nothing to
    /// write, carries on at once.
    private mutating func commit(_ output: EngineOutput, now: Millis, restoring: Bool = false) -> [EngineEffect] {
        let batch = batch(for: output, now: now)
        writes.pending = PendingWrite(output: output, batch: batch, now: now, restoring: restoring)
        if !batch.isEmpty || (link.hasStore && output.follow.contains(.republishAll)) {
            // The effects decided so far follow the write.
            return [.write(batch, readOutbox: output.follow.contains(.republishAll) && !restoring)]
        }
        return written(nil, unpublished: [])
    }

    /// The write of the pending output is done (`result`; nil: none was made).
    private mutating func written(_ result: WriteResult, unpublished: [EventRecord]) -> [EngineEffect] {
        guard let pending = writes.pending else { return board.out.take() }
        writes.pending = nil
        if pending.restoring {
            restoreWritten(pending.output, batch: pending.batch, result: result)
        } else {
            afterWrite(pending.output, batch: pending.batch, result: result, outboxPending: unpublished, now: pending.now)
        }
        guard !writes.queuedCommands.isEmpty else { return board.out.take() }
        // The commands' write must come after every effect decided before it.
        while link.republishNext(now: pending.now, heart: heart, on: &board) {}
        let rest = writes.queuedCommands
        writes.queuedCommands = []
        let effects = board.out.take()
        return effects + commands(rest, now: pending.now, into: EngineOutput())
    }

    // MARK: - Routing

    private mutating func route(_ message: InboundMessage, now: Millis, into output: inout EngineOutput) {
        if message.topic == topics.command || topics.timerID(ofCommandTopic: message.topic) != nil {
            if message.retain {
                // Never replay a stale command that a client left retained on a command topic.
                logger.notice("ignored a retained command", metadata: ["topic": "\(printable(message.topic, limit: 200))"])
                return
            }
            command(message, now: now, into: &output)
        } else if message.topic == topics.time {
            if !message.retain { output.replies.append(gate.timeRequest(message, now: now)) }  // a retained one is stale
        } else if message.topic == discovery.statusTopic {
            if discovery.status(message) { output.follow.insert(.republishDiscovery) }
        } else if let id = topics.timerID(ofStateTopic: message.topic) {
            if link.retainedState(message, timer: id) { output.follow.insert(.settleOutbox) }
        } else if let id = topics.timerID(ofNextTopic: message.topic) {
            schedules.nextSeen(id, message, linkUp: link.linkUp, into: &board.out)
        } else {
            for id in heart.message(message, now: now, linkUp: link.linkUp, on: &board) { output.changes.timerChanged(id, events: []) }
            checkRecovery(now: now, into: &output)  // a reading may end a rest that waits for recovery
        }
    }

    // MARK: - Deadlines

    /// The deadlines due at `now`, each handed to its owner.
    private mutating func deadlinesFell(now: Millis, into output: inout EngineOutput) {
        output.follow.insert(.onlyTimePassed)
        for owner in board.deadlines.popDue(now: now) {
            switch owner {
            case .timer(let id): advanceTimer(id, now: now, into: &output)
            case .heartRate(let source):
                for id in heart.sourceDeadline(source, now: now, on: &board) { output.changes.timerChanged(id, events: []) }
                checkRecovery(now: now, into: &output)  // a single strap's rest: its reading no longer counts
            case .athlete(let id):
                heart.athleteDeadline(id, now: now, linkUp: link.linkUp, on: &board)
                checkRecovery(now: now, into: &output)  // a stale or gone strap no longer counts
            case .outbox: output.follow.insert(.settleOutbox)
            case .marks: output.follow.insert(.flushMarks)
            case .info: output.follow.insert(.infoChanged)
            case .discovery: break  // afterWrite's discovery publish sends the next chunk
            case .plainFallback: if link.plainLinkStayedDown() { output.follow.insert(.republishPlain) }
            case .plainHold: if link.plainHoldExpired() { output.follow.insert(.republishPlain) }
            case .cueAhead(let id): sound.announce(id, now: now, linkUp: link.linkUp, on: &board)
            case .display(let id): displays.fell(id)
            case .schedule: startClasses(now: now, into: &output)
            case .recovery: checkRecovery(now: now, into: &output)
            }
        }
    }

    /// A deadline has fallen due (its input may not be queued yet: the engine was busy).
    mutating func hasDueDeadline(now: Millis) -> Bool {
        board.deadlines.earliest().map { $0 <= now } ?? false
    }

    /// The earliest deadline the machine waits for (the shell's alarm; the tests advance to it).
    mutating func nextDeadline() -> Millis? { board.deadlines.earliest() }

    private mutating func advanceTimer(_ id: String, now: Millis, into output: inout EngineOutput) {
        guard let events = board.timers.update(id, { $0.advance(to: now) }) else { return }
        output.changes.timerAdvanced(id, events: events)
        schedule(id, now: now, byTime: true)
    }

    /// Sets the timer's one deadline (none once it is gone), and its cue-ahead one when the
    /// timer changed (SoundPart.swift).
    /// - Parameter byTime: the timer moved on by the passage of time only (its cues stay where
    ///   the timing model put them, so what was announced stays announced).
    mutating func schedule(_ id: String, now: Millis, byTime: Bool = false) {
        board.deadlines.set(.timer(id), at: board.timers.nextDeadline(of: id, now: now))
        if sound.leadMs != nil { sound.schedule(id, now: now, keepingAnnounced: byTime, on: &board) }
    }

    mutating func rescheduleAll(now: Millis) {
        for id in board.timers.ids { schedule(id, now: now) }
    }

    /// A wall-clock step (`NodeClock.checkForJump`): every running timer's anchors move with it.
    private mutating func clockJumped(by delta: Millis, now: Millis, into output: inout EngineOutput) {
        logger.warning("the wall clock jumped; running timers keep their remaining time and ends_at moves with the clock",
                       metadata: ["jump_ms": "\(delta)"])
        board.timers.shiftAnchors(by: delta)
        for id in board.timers.ids { output.changes.timerChanged(id, events: [], forcePersist: true) }
        // Everything else held in timeline instants moves too: what was 1 min ago still was.
        gate.shiftTimes(by: delta)  // a retried request id stays a duplicate
        writes.upkeep.shiftTimes(by: delta)  // ... also after a restart
        heart.shiftTimes(by: delta)  // a reading stays fresh as long as before
        board.deadlines.shift(by: delta)  // heart-rate staleness, the outbox check's window
        info.publishedAtMs = info.publishedAtMs.map { $0.saturatingAdd(delta) }  // its throttle
        schedules.shiftTimes(by: delta)  // a class's run is known by its start, which moved
        if !schedules.isEmpty { board.deadlines.set(.schedule, at: now) }  // the timetable planned again
        rescheduleAll(now: now)
    }
}

/// What every step of the machine reads and never changes.
struct EngineContext {
    let configuration: NodeConfiguration
    let topics: Topics
    let logger: Logger
}

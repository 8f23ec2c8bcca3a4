import Foundation
import Logging
import Mosquitto
import PacerCore
import PacerProtocol
import PacerSound
import PacerStore
import Synchronization

/// What the shell's queue holds: the MQTT client's messages and events as it gave them, and
/// the alarm. `NodeEngine.handle` copies each into the machine's own input (`EngineInput`).
enum NodeInput: Sendable {
    case message(MQTTMessage)
    case connection(MQTTConnectionEvent)
    /// The plain topics' own connection (`publish.plain_connection: separate`) changed.
    case plainLink(MQTTConnectionEvent)
    /// The deadline alarm fired.
    case deadline
    /// The broker acknowledged a tracked publish.
    case delivered(MQTTDeliveryReport)
    /// The speech cache has a spoken cue's clip ready (`SpeechCache.observe`).
    case speechReady(text: String, durationMs: Int)
}

/// The thin shell around the node's one machine (`EngineMachine`): it owns the
/// engine's thread, the clock, the store and the transport, and does nothing but hand each
/// input to the machine and carry out what it answers — write first (durable), then publish.
///
/// Commands, deadlines and connection changes arrive in one queue and are handled strictly
/// in order by `run()`, so a command and a deadline never race. `commit(_:now:)` is the one
/// place where the node writes and publishes (`perform`).
actor NodeEngine {
    /// Every decision and all the node's state (Machine/).
    var machine: EngineMachine
    let transport: any EngineTransport
    let store: (any EngineStore)?
    let logger: Logger
    var clock: NodeClock
    /// The speaker's cues (PacerSound): the engine only hands events over; nil without `sound:`.
    let sound: SoundPlayer?
    /// Spoken cues (`sound.speech`): the clips rendered ahead; nil without speech.
    let speech: SpokenCues?
    /// The topics, for `isCommand` from any thread (the thread's queue asks it).
    nonisolated let topics: Topics
    /// The client's delivery tokens of the tracked publishes in flight, each with the
    /// machine's own token for it (`EngineEffect.publishTracked`). Kept across a reconnect,
    /// like the outbox's own: a resent publish's PUBACK still marks its event.
    var tokens: [MQTTDeliveryToken: PublishToken] = [:]

    /// Set by `finish()` (from any thread): when the loop must stop handling queued inputs
    /// (nil while running).
    let stopDeadline = Mutex<ContinuousClock.Instant?>(nil)
    /// The engine's own thread: this actor's executor, its input queue and its alarm clock
    /// (Scheduling/EngineThread.swift). Everything the engine does runs there, the store's
    /// writes included.
    let thread: EngineThread<NodeInput>
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
         usesAlarm: Bool = true, sound: SoundPlayer? = nil, speech: SpokenCues? = nil) {
        self.machine = EngineMachine(configuration: configuration, logger: logger, startedAtMs: clock.now(), version: version,
                                     hasStore: store != nil, storagePath: store?.path, storageProblem: storageProblem,
                                     hasPlainConnection: transport.plainTopics != nil, hasSound: sound != nil,
                                     speech: sound == nil ? nil : speech?.planner)
        self.speech = sound == nil ? nil : speech
        self.topics = Topics(base: configuration.baseTopic)
        self.sound = sound
        self.transport = transport
        self.store = store
        self.logger = logger
        self.clock = clock
        self.thread = EngineThread(name: "pacer-engine", deadlineInput: .deadline)
        self.usesAlarm = usesAlarm
    }

    /// The thread ends with the engine (its queued jobs run first).
    deinit {
        thread.stop()
    }

    /// Hands an input to the loop (safe from any task or thread).
    nonisolated func submit(_ input: NodeInput) {
        thread.submit(input)
    }

    /// Feeds one of the client's streams into the input queue until it ends, from the
    /// engine's own thread: the stream's consumer resumes here when the network thread yields
    /// (`for await` keeps this actor's isolation), not on one of Swift's pool threads, so a
    /// command reaches the engine with one thread switch instead of two.
    func forward<Stream: AsyncSequence & Sendable>(_ stream: Stream, as input: @Sendable (Stream.Element) -> NodeInput) async
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
    var hasDueDeadline: Bool { machine.hasDueDeadline(now: clock.now()) }

    /// A message the engine handles as a command (what the machine's `route` sends to `command`).
    nonisolated func isCommand(_ message: MQTTMessage) -> Bool {
        !message.retain && (message.topic == topics.command || topics.timerID(ofCommandTopic: message.topic) != nil)
    }

    /// The loop: handles every input in order until `finish()`.
    func run() async {
        machine.rescheduleAll(now: clock.now())
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

    /// Handles one input: the machine's step, then its effects (`perform`: write first, then
    /// publish). The loop calls it for each input in order; the in-process tests call it directly.
    func handle(_ input: NodeInput) async {
        // Deadlines that fell due while inputs queued up (a burst of commands, each written
        // before it is answered) are served first, as if their wake-up had come first: a
        // running timer's flips stay on time under a command storm instead of waiting
        // behind every queued command.
        if case .deadline = input {} else if hasDueDeadline {
            await handle(.deadline)
        }
        let moment = moment()
        if let input = machineInput(input) {
            await perform(machine.step(input, at: moment), now: moment.now)
        }
        armAlarm()
    }

    /// The machine's copy of an input; nil for an acknowledgement of a publish it did not track.
    func machineInput(_ input: NodeInput) -> EngineInput? {
        switch input {
        case .message(let message): .message(Self.inbound(message))
        case .connection(let event): .connection(linkEvent(event))
        case .plainLink(let event): .plainLink(linkEvent(event))
        case .deadline: .deadline
        case .speechReady(let text, let durationMs): .speechReady(text: text, durationMs: durationMs)
        case .delivered(let report):
            // The client's token to the machine's (an unknown one was never the machine's).
            tokens.removeValue(forKey: report.token).map { .delivered(PublishAck(token: $0, reasonCode: report.reasonCode)) }
        }
    }

    static func inbound(_ message: MQTTMessage) -> InboundMessage {
        InboundMessage(topic: message.topic, payload: message.payload, retain: message.retain,
                       responseTopic: message.properties.responseTopic, correlationData: message.properties.correlationData)
    }

    func linkEvent(_ event: MQTTConnectionEvent) -> LinkEvent {
        switch event {
        // The version is settled by the time a connection is accepted; `info` says it.
        case .connected(let sessionPresent): .connected(sessionPresent: sessionPresent, mqtt5: transport.speaksMQTT5)
        case .disconnected(let reason): .disconnected(reason: reason)
        case .refused(let error): .refused(error.description)
        case .loopExited(let error): .loopExited(error.description)
        }
    }

    /// Before each input: the instant, a wall-clock step (the machine moves its anchors with
    /// it) and the transport's backlog, read once.
    func moment() -> Moment {
        let jump = clock.checkForJump()
        return Moment(now: clock.now(), clockJumpMs: jump, backlogged: transport.isBacklogged,
                      plainBacklogged: transport.plainTopics?.isBacklogged ?? false)
    }

    /// The earliest deadline the engine waits for (the in-process tests advance to it).
    func nextDeadline() -> Millis? { machine.nextDeadline() }

    /// Arms the thread's alarm for the earliest deadline (none when nothing waits: an idle
    /// node does not wake up).
    func armAlarm() {
        guard usesAlarm else { return }
        thread.arm(atMonotonicNs: machine.nextDeadline().map { clock.monotonicNs(at: $0) })
    }

    // MARK: - Writing and publishing

    /// Carries out the machine's effects, in order, handed to the network thread with one
    /// wake-up (`beginBatch`/`endBatch`, and at each `.flush`). A `.write` is the last effect of
    /// a step: it is written (store first: nothing is published or acknowledged before it is
    /// durable) and its result goes back to the machine, whose next effects follow.
    /// - Parameter now: the instant the input was handled at.
    func perform(_ effects: [EngineEffect], now: Millis) async {
        var effects = effects
        while !effects.isEmpty {
            var write: (StoreBatch, Bool)?
            if case .write(let batch, let readOutbox) = effects.last {
                write = (batch, readOutbox)
                effects.removeLast()
            }
            await publish(effects, now: now)
            guard let (batch, readOutbox) = write else { return }
            effects = machine.step(await self.write(batch, readOutbox: readOutbox), at: moment(keeping: now))
        }
    }

    /// The write a step asked for, as the machine's next input.
    private func write(_ batch: StoreBatch, readOutbox: Bool) async -> EngineInput {
        var result: WriteResult = nil
        if let store, !batch.isEmpty {
            do { result = .success(try await store.commit(batch)) } catch { result = .failure(error) }
        }
        var pending: [EventRecord] = []
        if readOutbox, let store {
            // The outbox check of a (re)connect: read after the acknowledged events were marked.
            do { pending = try store.unpublishedEvents() } catch {
                logger.error("could not read the event outbox", metadata: ["error": "\(error)"])
            }
        }
        return .written(result, unpublished: pending)
    }

    /// The moment a `.written` is handed back at: the input's own instant (the machine keeps it).
    private func moment(keeping now: Millis) -> Moment {
        Moment(now: now, backlogged: transport.isBacklogged, plainBacklogged: transport.plainTopics?.isBacklogged ?? false)
    }

    /// The effects other than a write, in order.
    private func publish(_ effects: [EngineEffect], now: Millis) async {
        guard !effects.isEmpty else { return }
        transport.beginBatch()
        defer { transport.endBatch() }
        for effect in effects {
            switch effect {
            case .write:
                continue  // `perform` takes it
            case .publish(let topic, let payload, let retain, let correlation):
                var properties = MQTTProperties.none
                if let correlation { properties.correlationData = correlation }
                do { try await transport.publish(to: topic, payload: payload, retain: retain, properties: properties) } catch {
                    publishFailed(topic, error, linkUp: machine.link.linkUp)
                }
            case .publishSuperseding(let topic, let payload):
                do { try await transport.publishSuperseding(to: topic, payload: payload) } catch {
                    publishFailed(topic, error, linkUp: machine.link.linkUp)
                }
            case .publishPlain(let topic, let payload, let confirmed):
                guard let lane = transport.plainTopics else { continue }
                do { try await lane.publish(to: topic, payload: payload, qos: confirmed ? .atLeastOnce : .atMostOnce) } catch {
                    publishFailed(topic, error, linkUp: machine.link.plainLink.isUp)
                }
            case .publishTracked(let topic, let payload, let retain, let token):
                do { tokens[try await transport.publishTracked(to: topic, payload: payload, retain: retain)] = token } catch {
                    publishFailed(topic, error, linkUp: machine.link.linkUp)
                }
            case .flush:
                transport.endBatch()
                transport.beginBatch()
            case .subscribe(let filter):
                do { try await transport.subscribe(to: filter, qos: .atMostOnce) } catch {
                    logger.warning("could not read back the retained states; publishing the outbox as is", metadata: ["error": "\(error)"])
                }
            case .unsubscribe(let filter):
                do { try await transport.unsubscribe(from: filter) } catch {
                    logger.debug("unsubscribe failed", metadata: ["error": "\(error)"])
                }
            case .writeMarks(let seqs):
                if let store { await writeMarks(seqs, to: store) }
            case .history(let query, let reply):
                guard let store else { continue }
                let records: Result<[EventRecord], StoreError>
                do { records = .success(try store.history(query)) } catch { records = .failure(error) }
                var properties = MQTTProperties.none
                if let correlation = reply.correlationData { properties.correlationData = correlation }
                let payload = CommandGate.historyReply(records, id: reply.id)
                do { try await transport.publish(to: reply.topic, payload: payload, retain: false, properties: properties) } catch {
                    publishFailed(reply.topic, error, linkUp: machine.link.linkUp)
                }
            case .sound(let events, let said):
                // Each cue is placed on its due_ms relative to this instant (the write before
                // it may have taken a while).
                if said.isEmpty {
                    sound?.submit(events, nowMs: clock.now())
                } else {
                    sound?.submit(events, nowMs: clock.now(), say: { said[EventKey($0)] })
                }
            case .prepareSpeech(let texts):
                speech?.cache.prepare(texts)
            case .expectCue(let dueMs, let cue):
                sound?.expect(dueMs: dueMs, kinds: [cue], nowMs: clock.now())
            case .speaker(let muted, let volume):
                sound?.setSpeaker(muted: muted, volume: Double(volume) / 100)
            case .prune(let policy):
                guard let store else { continue }
                do { _ = try await store.prune(policy, nowMs: now) } catch {
                    logger.warning("could not prune the history", metadata: ["error": "\(error)"])
                }
            case .trimHeap:
                HeapTrim.later()
            }
        }
    }

    /// Marks events published in a write of their own.
    private func writeMarks(_ seqs: [Int64], to store: any EngineStore) async {
        guard !seqs.isEmpty else { return }
        var marks = StoreBatch()
        marks.markPublished = seqs
        do { _ = try await store.commit(marks) } catch {
            logger.error("could not mark events as published", metadata: ["error": "\(error)"])
        }
    }

    /// A failed publish: expected while the link is down (retained topics are republished on
    /// connect); otherwise a message was lost (e.g. the client's offline queue is full): said.
    func publishFailed(_ topic: String, _ error: MQTTError, linkUp: Bool) {
        logger.log(level: linkUp ? .warning : .debug, "publish failed", metadata: ["topic": "\(topic)", "error": "\(error)"])
    }
}

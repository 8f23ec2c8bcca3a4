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
/// in order by `run()`, so a command and a deadline never race. `perform` is the one place
/// where the node writes and publishes (through its `EffectPerformer`).
actor NodeEngine {
    /// Every decision and all the node's state (Machine/).
    var machine: EngineMachine
    let logger: Logger
    var clock: NodeClock
    /// The topics, for `isCommand` from any thread (the thread's queue asks it).
    nonisolated let topics: Topics
    /// The client's messages into the machine's words, its effects onto the transport, the
    /// store and the speaker (EffectPerformer.swift): the shell's only hold on them.
    let performer: EffectPerformer

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
        self.performer = EffectPerformer(transport: transport, store: store, logger: logger, sound: sound, speech: sound == nil ? nil : speech)
        self.topics = Topics(base: configuration.baseTopic)
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
        if let input = performer.machineInput(input) {
            await perform(machine.step(input, at: moment), now: moment.now)
        }
        armAlarm()
    }

    /// Before each input: the instant, a wall-clock step (the machine moves its anchors with
    /// it) and the transport's backlog, read once.
    func moment() -> Moment {
        let jump = clock.checkForJump()
        return performer.moment(now: clock.now(), clockJumpMs: jump)
    }

    /// The ids of the timers the engine holds, sorted (a restart's check in the engine's fuzz target).
    func timerIDs() -> [String] { machine.board.timers.ids }

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
    /// durable) and its result goes back to the machine, whose next effects follow. A step's
    /// effects in parts (`EngineMachine.hasMoreOutput`: a connect's republish of 10,000 timers)
    /// are taken and carried out one part after another, before the next input.
    /// - Parameter now: the instant the input was handled at.
    func perform(_ effects: [EngineEffect], now: Millis) async {
        // The input's own instant: the machine keeps it for what follows the write.
        await performer.perform(effects, now: now, clockNow: { clock.now() }, links: { (machine.link.linkUp, machine.link.plainLink.isUp) },
                                next: { machine.following($0, at: performer.moment(now: now)) })
    }
}

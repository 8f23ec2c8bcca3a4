import Foundation
import Logging
import Mosquitto
import PacerCore
@testable import PacerNode
import PacerSound
import PacerStore

/// What the in-process tests drive: the machine alone (`MachineDriver`), or the shell around it
/// (`NodeEngine`, for what only the shell does: its loop, group commit, draining at shutdown).
protocol DrivenEngine: Actor {
    /// Handles one input at the virtual clock's instant (a deadline due first, as the shell does).
    func handle(_ input: NodeInput) async
    /// The earliest deadline the machine waits for.
    func nextDeadline() -> Millis?
    /// Start-up: what the store kept, handed to the machine and written.
    func restore() async
}

extension NodeEngine: DrivenEngine {}

/// The engine's machine driven alone: each input is one `EngineMachine.step` at the virtual
/// clock's instant, and its effects are carried out by the shell's `EffectPerformer` (the write
/// to the real SQLite file, whose result goes back as `.written`; the publishes to the recording
/// transport). No thread, no queue, no alarm: the test decides when each input comes.
actor MachineDriver: DrivenEngine {
    var machine: EngineMachine
    let performer: EffectPerformer
    var clock: NodeClock
    let store: (any EngineStore)?
    let logger: Logger

    init(configuration: NodeConfiguration, transport: any EngineTransport, store: (any EngineStore)?, logger: Logger,
         clock: NodeClock, sound: SoundPlayer? = nil) {
        machine = EngineMachine(configuration: configuration, logger: logger, startedAtMs: clock.now(), hasStore: store != nil,
                                storagePath: store?.path, hasPlainConnection: transport.plainTopics != nil, hasSound: sound != nil)
        performer = EffectPerformer(transport: transport, store: store, logger: logger, sound: sound, speech: nil)
        self.clock = clock
        self.store = store
        self.logger = logger
    }

    func handle(_ input: NodeInput) async {
        if case .deadline = input {} else if machine.hasDueDeadline(now: clock.now()) {
            await handle(.deadline)
        }
        let jump = clock.checkForJump()
        let now = clock.now()
        if let input = performer.machineInput(input) {
            await perform(machine.step(input, at: performer.moment(now: now, clockJumpMs: jump)), now: now)
        }
    }

    func nextDeadline() -> Millis? { machine.nextDeadline() }

    func restore() async {
        let now = clock.now()
        let saved = await NodeEngine.readSaved(store, configuration: machine.configuration, now: now, logger: logger)
        await perform(machine.restore(saved, clockSynchronized: true, at: now), now: now)
    }

    /// The effects in order, each `.write` written and its result handed back as the next input.
    /// The effects in order, each `.write` written and its result handed back, then a step's
    /// later parts, as the shell does (`EffectPerformer.perform`).
    private func perform(_ effects: [EngineEffect], now: Millis) async {
        let clock = clock
        await performer.perform(effects, now: now, clockNow: { clock.now() }, links: { (machine.link.linkUp, machine.link.plainLink.isUp) },
                                next: { machine.following($0, at: performer.moment(now: now)) })
    }
}

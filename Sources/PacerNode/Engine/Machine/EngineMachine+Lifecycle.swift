import Logging
import PacerCore
import PacerStore

/// What the shell read from the store at start-up, for `EngineMachine.restore`.
struct RestoredState {
    /// The saved timers, each with its machine as read (or why it could not be read).
    var timers: [(record: TimerRecord, machine: Result<TimerMachine, any Error>)] = []
    /// The saved workouts' document (`meta`), if any.
    var workoutsDocument: String?
    /// The athletes' profiles document (`meta`), if any.
    var athletesDocument: String?
    /// The speaker's document (`meta`), if any.
    var speakerDocument: String?
    /// The displays saved by command (`meta`), if any.
    var displaysDocument: String?
    /// The timetable's records: the classes decided (`meta`), if any.
    var schedulesDocument: String?
    /// The schedules saved by command (`meta`), if any.
    var savedSchedulesDocument: String?
    /// Request ids answered within the dedup window.
    var requests: [RequestRecord] = []
}

extension EngineMachine {
    /// Brings back every saved timer and creates the declared ones, before anything is published
    /// (docs/architecture.md, "Durability and restore"). Events that fell due while the node was
    /// down are published once (the terminal one with `late_ms`); cues are not replayed. Returns
    /// what to write (`.write`, then `restoreWritten`).
    mutating func restoreState(_ saved: RestoredState, clockSynchronized: Bool?, now: Millis, into output: inout EngineOutput) {
        info.clockSynchronized = clockSynchronized
        if clockSynchronized == false {
            logger.warning("the system clock is not synchronised yet; restored timers are evaluated against it as it is (see docs/deployment.md for ordering after time-sync.target)")
        }
        let declared = Dictionary(configuration.timers.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        board.timers.reserveCapacity(board.timers.count + saved.timers.count + configuration.timers.count)
        for (record, machine) in saved.timers {
            restoreTimer(record, machine, declared: declared[record.id], now: now, into: &output)
        }
        library.load(saved.workoutsDocument)
        displays.load(saved.displaysDocument)
        schedules.load(saved.schedulesDocument, saved: saved.savedSchedulesDocument, presets: library.presets, now: now, on: &board)
        gate.restore(saved.requests)
        for timer in configuration.timers where !board.timers.contains(timer.id) {
            do {
                let spec = try TimerSpec(json: timer.spec, presets: configuration.presets)
                let machine = try TimerMachine(id: timer.id, name: timer.name, spec: spec, settings: configuration.timerSettings)
                board.timers.set(timer.id, .init(machine: machine, restore: timer.restore))
                output.changes.timerChanged(timer.id, events: [])
            } catch {
                // The configuration was validated at load; this cannot happen unless it changed.
                logger.error("declared timer is invalid", metadata: ["timer": "\(timer.id)", "error": "\(error)"])
            }
        }
        rescheduleAll(now: now)
        for id in board.timers.ids {
            // The phrases of the runs under way (and due) are rendered again if the cache lost them.
            guard let (active, program, ack) = board.timers.read(id, { ([.running, .paused, .scheduled].contains($0.machine.status),
                                                                         $0.machine.program, $0.machine.spec.ack) }), active else { continue }
            sound.prepare(program, ack: ack, into: &board.out)
        }
        heart.restoreProfiles(saved.athletesDocument)
        noteRecoveryWaits(of: board.timers.ids, now: now)  // a rest that waited for recovery waits again
        heart.resumeClassRuns(now: now, timers: board.timers)
        // The speaker as it was left (muted for the night stays muted after a power cut).
        sound.load(saved.speakerDocument, into: &board.out)
    }

    /// The restore's write is done (`failed`: it could not be made). Its events wait for the
    /// first connect: derived ones (the phase a timer reached while the node was down) and,
    /// after a failed write, the written ones too are published from memory, before the
    /// states; written ones go out through the outbox check.
    mutating func restoreWritten(_ output: EngineOutput, batch: StoreBatch, result: WriteResult) {
        link.keepUnwritten(output.changes.events.filter { !$0.isCue && !output.changes.writes($0) })
        if case .failure(let error) = result {
            logger.error("could not write the restored state; its events go out at the first connect", metadata: ["error": "\(error)"])
            // Written again with the next write.
            board.timers.writeFailed(batch.upsertTimers.map(\.id))
            link.keepUnwritten(output.changes.events.filter(output.changes.writes))
        } else {
            schedules.restoreWritten()  // a loop's run that ended while the node was down: its next class is planned
        }
    }

    private mutating func restoreTimer(_ record: TimerRecord, _ decoded: Result<TimerMachine, any Error>, declared: TimerDeclaration?, now: Millis,
                              into output: inout EngineOutput) {
        var machine: TimerMachine
        do {
            machine = try decoded.get()
        } catch {
            logger.error("a saved timer could not be read and is dropped", metadata: ["timer": "\(record.id)", "error": "\(error)"])
            output.changes.deleted.append(record.id)
            return
        }
        machine.settings = configuration.timerSettings
        let policy = declared?.restore ?? record.restorePolicy.flatMap(RestorePolicy.init(rawValue:)) ?? .resume
        let age = now - record.updatedAtMs
        var events: [TimerEvent] = []
        /// Whether the restore decided something (a reset, a pause): written; otherwise the timer
        /// only went on through the outage, which its written state and the timing model give.
        var decided = false
        if age > configuration.retention.restoreMaxAgeMs || policy == .discard {
            if machine.status != .idle {
                let reason = policy == .discard ? "its restore policy is discard" : "it is older than restore.max_age (\(Durations.describe(configuration.retention.restoreMaxAgeMs)))"
                logger.notice("saved state discarded: \(reason)", metadata: ["timer": "\(record.id)", "age_ms": "\(age)"])
                if case .success(let e) = machine.handle(TimerCommand(operation: .reset, at: nil, ifRevision: nil), now: now) { events += e }
                decided = true
            }
        } else if policy == .pause, machine.status == .running {
            // Paused with the remaining time it had at the last write.
            let lastWrite = max(record.updatedAtMs, 0)
            events += machine.advance(to: lastWrite)
            if machine.status == .running,
               case .success(let e) = machine.handle(TimerCommand(operation: .pause, at: nil, ifRevision: nil), now: lastWrite) {
                events += e
                decided = true
            }
            events += machine.advance(to: now)
        } else {
            events += machine.advance(to: now)
        }
        // An event the store already holds is ignored by its unique index, and restored events
        // reach the broker only through the outbox, so none is published twice.
        board.timers.set(record.id, .init(machine: machine, restore: policy, persistedRevision: record.revision))
        if decided {
            output.changes.timerChanged(record.id, events: events)
        } else {
            output.changes.timerAdvanced(record.id, events: events)
        }
        if !events.isEmpty {
            logger.info("restored timer caught up", metadata: ["timer": "\(record.id)", "status": "\(machine.status.rawValue)", "events": "\(events.map(\.type.rawValue))"])
        }
    }

    mutating func connectionChanged(_ event: LinkEvent, now: Millis, into output: inout EngineOutput) {
        if case .connected(_, let mqtt5) = event { info.speaksMQTT5 = mqtt5 }  // settled by the time a connection is accepted
        let (up, actions) = link.connectionChanged(event, url: configuration.broker.url, now: now, on: &board)
        // A new connection whose predecessor's end went unseen is handled by the outbox too.
        if up { output.follow.insert(.republishAll) }
        output.linkActions += actions
    }
}

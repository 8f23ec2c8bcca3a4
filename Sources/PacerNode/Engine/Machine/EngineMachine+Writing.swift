import Logging
import PacerCore
import PacerStore
import PacerProtocol

/// The two halves of an input around its write: `batch` (what to write) and `afterWrite`
/// (what the write allows, or the undoing of a failed one).
extension EngineMachine {
    /// The store writes of an output: changed timers (when their revision moved), outcome
    /// events into the outbox, deletions, request ids and the documents commands changed.
    mutating func batch(for output: EngineOutput, now: Millis) -> StoreBatch {
        var batch = StoreBatch()
        // Timers that only time moved on are not written: the timing model derives where they are
        // from their last written state, and an SD card lives longer without a write per
        // transition.
        batch.upsertTimers = board.timers.records(changed: output.changes.writtenTimers, force: output.changes.forcePersist, now: now)
        // Cues (countdown, halfway, alert) and derived events (a transition's phase) are
        // published but not written: they would wear the SD card, and a restore recomputes them.
        batch.appendEvents = output.changes.events.filter(output.changes.writes).map { event in
            EventRecord(seq: nil, timer: event.timer, type: event.type.rawValue, revision: event.revision,
                        dueMs: event.dueMs, atMs: event.atMs, payload: JSONCoding.encode(event.json), published: false)
        }
        batch.deleteTimers = output.changes.deleted
        heart.classRunEvents(output.changes, timers: board.timers, into: &batch)  // a class_hr run's summary, once, at its end
        batch.meta[AthleteRoster.metaKey] = heart.changedDocument
        batch.meta[SavedWorkouts.metaKey] = library.changedDocument
        batch.meta[Speaker.metaKey] = sound.changedDocument
        batch.meta[DisplayPart.metaKey] = displays.changedDocument
        // A scheduled class's timer that ended its run (an `after` loop plans from it; a class
        // that waited for the timer may start): decided in this write too.
        for event in output.changes.events where [.finished, .cancelled, .reset].contains(event.type) {
            schedules.runEnded(event.timer, at: event.dueMs, now: now, on: &board)
        }
        for id in output.changes.deleted { schedules.runEnded(id, at: now, now: now, on: &board) }
        batch.meta[SchedulePart.metaKey] = schedules.changedDocument
        batch.meta[SchedulePart.savedKey] = schedules.changedSavedDocument
        batch.shiftRequestsMs = writes.upkeep.requestShiftMs
        batch.requests = output.requests
        // A connect's outbox check reads the store after this write: what the broker acknowledged
        // is marked in it first, so the check never publishes it again.
        if !batch.isEmpty || output.follow.contains(.flushMarks) || output.follow.contains(.republishAll) {
            batch.markPublished = link.takeMarks(on: &board)
        }
        return batch
    }

    /// What one input may publish once its write is done (store first: nothing is published
    /// or acknowledged before it is durable), or the rollback of a failed write.
    /// - Parameters:
    ///   - now: the instant the input was handled at; snapshots are taken at it.
    ///   - outboxPending: on a (re)connect, the store's unpublished events, read after this
    ///     write, which marked the acknowledged ones.
    mutating func afterWrite(_ output: EngineOutput, batch: StoreBatch, result: WriteResult, outboxPending: [EventRecord] = [], now: Millis) {
        var output = output
        /// Events the store already held (a replay): never published a second time.
        var duplicates: Set<EventKey> = []
        /// Events written to the outbox by this commit, with their seqs.
        var written: [EventKey: EventRecord] = [:]
        var ok = true
        switch result {
        case nil:
            break
        case .success(let result):
            writes.upkeep.requestShiftWritten(batch.shiftRequestsMs)
            board.timers.written(batch.upsertTimers.map(\.id))
            duplicates = Set(result.duplicates.map(EventKey.init))
            for record in result.appended { written[EventKey(record)] = record }
        case .failure(let error):
            ok = false
            logger.error("could not write to the database; the change is not applied", metadata: ["error": "\(error)"])
            // The marks it carried wait for the next write.
            link.marksNotWritten(batch.markPublished, now: now, heart: heart, on: &board)
            // A command's change is undone (its timer, the ledger) and refused. Everything
            // else the input changed did happen (a transition on the clock, anchors moved
            // by a clock jump): it stays, is published, and is written with the next write.
            // A group of commands (one write) is undone last first, each one refused.
            let rollbacks = output.rollbacks
            let rolledBack = Set(rollbacks.flatMap(\.timers.keys))
            if !rollbacks.isEmpty {
                for rollback in rollbacks.reversed() {
                    for (id, entry) in rollback.timers { board.timers.set(id, entry) }
                    if let id = rollback.requestID { gate.forget(id) }
                }
                for id in rolledBack { schedule(id, now: now) }
                output.refuse(rolledBack, ReplyError(.storageFailure, "the node could not save the command (\(error)); nothing changed, try again"))
            }
            board.timers.writeFailed(batch.upsertTimers.map(\.id).filter { !rolledBack.contains($0) })
        }
        let republishAll = output.follow.contains(.republishAll)
        let workoutsChanged = library.saved.isChanged
        if ok { library.settle() } else { library.undo() }

        // Everything this input publishes goes to the network thread with one wake-up (the
        // shell brackets the effects).
        link.perform(output.linkActions, now: now, heart: heart, on: &board)
        if republishAll { republishEverything(pending: outboxPending, now: now) }
        // While disconnected, events are not handed to the client's in-memory queue, where a
        // crash during a long outage would lose them: the written ones stay in the outbox,
        // whose check publishes them on the next connect; cues are for a moment that passes
        // (a beep due now), so they are dropped. Only a transition that could not be written
        // is queued in memory, its best remaining chance.
        let connected = link.linkUp
        /// What the events say (`sound.speech`), for the speaker and the `say` topic.
        var said: [EventKey: String] = [:]
        for event in output.changes.events {
            let key = EventKey(event)
            if duplicates.contains(key) { continue }
            if sound.speech != nil, let text = sound.say(event, program: board.timers.read(event.timer) { $0.machine.program }) {
                said[key] = text
            }
            if let record = written[key] {
                link.written(record, now: now, heart: heart, on: &board)
            } else if connected || !event.isCue {
                link.publishEvent(event, into: &board.out)
            }
            // A spoken cue's text, for pages and Home Assistant to say at its due instant.
            if connected, let text = said[key] {
                let cue = SpokenCue(timer: event.timer, event: event.type.rawValue, text: text, dueMs: event.dueMs, atMs: now,
                                    lang: configuration.sound?.speech?.language ?? "en", durationMs: sound.clipDurationMs(text))
                board.out.publish(to: topics.timer(event.timer).say, cue.json.jsonBytes, retain: false)
            }
        }
        // Sound: the speaker's cues, also while disconnected (PacerSound; never blocks).
        let sounding = duplicates.isEmpty ? output.changes.events : output.changes.events.filter { !duplicates.contains(EventKey($0)) }
        if !sounding.isEmpty { board.out.emit(.sound(sounding, say: said)) }
        // Home Assistant: a deleted timer's device goes before its topics are cleared (its
        // sensors would read the empty values).
        discovery.publish(output, workouts: library.saved.value.ids, workoutsChanged: workoutsChanged && ok, linkUp: link.linkUp,
                          backlogged: link.backlogged, now: now, on: &board)
        for id in output.changes.deleted { link.clearRetainedTopics(of: id, into: &board.out) }
        if output.follow.contains(.republishPlain) { link.republishPlainTopics(now: now, heart: heart, on: &board) }
        if !republishAll {
            for id in output.changes.timers where !link.isHolding(id) { link.publishTimer(id, now: now, force: false, heart: heart, on: &board) }
            if output.follow.contains(.infoChanged) { info.publishThrottled(to: topics.info, now: now, linkUp: link.linkUp, on: &board) }
            if workoutsChanged && ok { library.publish(into: &board.out) }
        }
        noteRecoveryWaits(output.changes, now: now)
        displays.written(ok: ok, linkUp: link.linkUp && !republishAll, on: &board)
        schedules.written(ok: ok, linkUp: link.linkUp && !republishAll, now: now, presets: library.presets, changes: output.changes, on: &board)
        if !republishAll {
            displays.publish(output.changes, linkUp: link.linkUp, backlogged: link.backlogged, now: now, heart: heart, on: &board)
        }
        heart.profilesWritten(ok: ok, publish: !republishAll && link.linkUp, now: now, into: &board.out)
        sound.written(ok: ok, publish: !republishAll, into: &board.out)
        for reply in output.replies {
            if let query = reply.history {
                board.out.emit(.history(query, reply: reply))
                continue
            }
            board.out.emit(.publish(topic: reply.topic, payload: reply.payload, retain: false, correlation: reply.correlationData))
        }
        heart.publishClassSummaries(now: now, linkUp: link.linkUp, into: &board.out)
        if output.follow.contains(.settleOutbox) { link.settleOutbox(now: now, heart: heart, on: &board) }
        if link.hasStore && !batch.isEmpty { pruneIfDue(now: now) }
    }

    /// Publishes `status`, `info` and every retained topic — on every (re)connect — and starts
    /// the outbox check for events written but not yet published (`pending`).
    private mutating func republishEverything(pending: [EventRecord], now: Millis) {
        // Subscribe before republishing: the broker then sends the retained states of the
        // previous run before our new ones replace them.
        link.beginOutboxCheck(pending: pending, now: now, heart: heart, on: &board)
        board.out.publish(to: topics.status, NodeStatus.online.payload, retain: true)
        info.publish(to: topics.info, now: now, linkUp: link.linkUp, on: &board)
        library.publish(into: &board.out)
        heart.republishAthletes(now: now, into: &board.out)
        heart.republishRecovery(into: &board.out)
        sound.publish(into: &board.out)
        displays.publishList(into: &board.out)
        schedules.publishNext(now: now, into: &board.out)
        schedules.publishCurrent(into: &board.out)
        for event in link.takeUnwritten() { link.publishEvent(event, into: &board.out) }
        link.republishTimers(now: now, heart: heart, on: &board)
        displays.reconnected(now: now, heart: heart, on: &board)
    }

    /// Prunes old history and request ids, at most once an hour and only after a write (so an
    /// idle node never wakes up for it).
    private mutating func pruneIfDue(now: Millis) {
        guard writes.upkeep.pruneIsDue(now: now) else { return }
        var policy = RetentionPolicy()
        policy.maxAgeMs = configuration.retention.historyMaxAgeMs
        policy.maxEvents = configuration.retention.historyMaxEvents
        policy.requestWindowMs = configuration.limits.dedupWindowMs
        board.out.emit(.prune(policy))
    }
}

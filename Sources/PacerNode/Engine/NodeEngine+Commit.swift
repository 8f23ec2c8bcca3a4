import Foundation
import Logging
import Mosquitto
import PacerCore
import PacerStore
import PacerProtocol

extension NodeEngine {
    /// Writes, then publishes, what one input decided (store first: nothing is published or
    /// acknowledged before it is durable).
    /// - Parameter now: the instant the input was handled at; snapshots are taken at it.
    func commit(_ output: EngineOutput, now: Millis) async {
        var output = output
        let batch = makeBatch(output, now: now)

        /// Events the store already held (a replay): never published a second time.
        var duplicates: Set<EventKey> = []
        /// Events written to the outbox by this commit, with their seqs.
        var written: [EventKey: EventRecord] = [:]
        if let store, !batch.isEmpty {
            do {
                let result = try await store.commit(batch)
                upkeep.requestShiftWritten(batch.shiftRequestsMs)
                timers.written(batch.upsertTimers.map(\.id))
                duplicates = Set(result.duplicates.map(EventKey.init))
                for record in result.appended { written[EventKey(record)] = record }
            } catch {
                logger.error("could not write to the database; the change is not applied", metadata: ["error": "\(error)"])
                // The marks it carried wait for the next write.
                await perform(outbox.awaitMark(batch.markPublished, now: now), now: now)
                // A command's change is undone (its timer, the ledger) and refused. Everything
                // else the input changed did happen (a transition on the clock, anchors moved
                // by a clock jump): it stays, is published, and is written with the next write.
                // A group of commands (one write) is undone last first, each one refused.
                let rollbacks = output.rollbacks
                let rolledBack = Set(rollbacks.flatMap(\.timers.keys))
                if let before = output.workoutsBefore { workouts = before }
                if !rollbacks.isEmpty {
                    for rollback in rollbacks.reversed() {
                        for (id, entry) in rollback.timers { timers.set(id, entry) }
                        if let id = rollback.requestID { ledger.forget(id: id) }
                    }
                    for id in rolledBack { schedule(id) }
                    output.refuse(rolledBack, ReplyError(.storageFailure, "the node could not save the command (\(error)); nothing changed, try again"))
                }
                timers.writeFailed(batch.upsertTimers.map(\.id).filter { !rolledBack.contains($0) })
            }
        }

        // Everything this input publishes goes to the network thread with one wake-up.
        transport.beginBatch()
        defer { transport.endBatch() }
        await perform(output.linkActions, now: now)
        if output.republishAll { await publishEverything(now: now) }
        // While disconnected, events are not handed to the client's in-memory queue, where a
        // crash during a long outage would lose them: the written ones stay in the outbox,
        // whose check publishes them on the next connect; cues are for a moment that passes
        // (a beep due now), so they are dropped. Only a transition that could not be written
        // is queued in memory, its best remaining chance.
        let connected = linkUp
        for event in output.events {
            let key = EventKey(event)
            if duplicates.contains(key) { continue }
            if let record = written[key] {
                // Published now, or kept: in the store while disconnected, or behind its
                // timer's older pending events while the outbox check runs.
                if let publish = outbox.written(record) { await perform([publish], now: now) }
                continue
            }
            if !connected && event.isCue { continue }
            await publishEvent(event)
        }
        // Sound: the speaker's cues, also while disconnected (PacerSound; never blocks). The clock
        // is read again: the write above may have taken a while, and each cue is placed on its
        // due_ms relative to this instant.
        sound?.submit(output.events.filter { !duplicates.contains(EventKey($0)) }, nowMs: clock.now())
        // Home Assistant (NodeEngine+HomeAssistant.swift): a deleted timer's device goes before its
        // topics are cleared (its sensors would read the empty values).
        await publishDiscovery(output, now: now)
        for id in output.deletedTimers { await clearRetainedTopics(of: id) }
        if output.republishPlain { await republishPlainTopics(now: now) }
        if !output.republishAll {
            for id in output.changedTimers where !outbox.isHolding(id) { await publishTimer(id, now: now, force: false) }
            if output.infoChanged { await publishInfoThrottled(now: now) }
            if output.workoutsChanged { await publishWorkouts() }
        }
        for reply in output.replies {
            var properties = MQTTProperties.none
            if let correlation = reply.correlationData { properties.correlationData = correlation }
            await publish(to: reply.topic, reply.payload, retain: false, properties: properties)
        }
        if output.settleOutbox { await settleOutbox(now: now) }
        if !batch.isEmpty { await pruneIfDue(now: now) }
    }

    /// The store writes of an output: changed timers (when their revision moved), transition
    /// events into the outbox, deletions and request ids. Marks the timers as persisted.
    func makeBatch(_ output: EngineOutput, now: Millis) -> StoreBatch {
        var batch = StoreBatch()
        // Timers that only time moved on are not written: the timing model derives where they
        // are from their last written state (issue 26).
        batch.upsertTimers = timers.records(changed: output.writtenTimers, force: output.forcePersist, now: now)
        // Cues (countdown, halfway, alert) and derived events (a transition's phase) are
        // published but not written: they would wear the SD card, and a restore recomputes them.
        batch.appendEvents = output.events.filter(output.writes).map { event in
            EventRecord(seq: nil, timer: event.timer, type: event.type.rawValue, revision: event.revision,
                        dueMs: event.dueMs, atMs: event.atMs, payload: JSONCoding.encode(event.json), published: false)
        }
        batch.deleteTimers = output.deletedTimers
        if output.workoutsChanged {
            batch.meta[SavedWorkouts.metaKey] = String(decoding: workouts.document, as: UTF8.self)
        }
        batch.shiftRequestsMs = upkeep.requestShiftMs
        batch.requests = output.requests
        if !batch.isEmpty || output.flushMarks { batch.markPublished = takeMarks() }
        return batch
    }

    /// Publishes `status`, `info` and every timer's retained topics — on every (re)connect —
    /// and starts the outbox check for events written but not yet published.
    func publishEverything(now: Millis) async {
        // Subscribe before republishing: the broker then sends the retained states of the
        // previous run before our new ones replace them.
        await beginOutboxCheck(now: now)
        await publish(to: topics.status, Array("online".utf8), retain: true)
        await publishInfo(now: now)
        await publishWorkouts()
        for event in outbox.takeUnwritten() { await publishEvent(event) }
        // Timers with events in the outbox wait for the outbox check (see EventOutbox).
        // Every `state` first (it carries everything a dashboard shows), then the plain topics:
        // after a restart of 10,000 timers the states are back after 10,000 messages, not 70,000.
        // Handed to the network thread every `republishChunk` timers (this input's batch is
        // ended and begun again), so it writes while the rest is made, not after all of it.
        let ids = timers.ids.filter { !outbox.isHolding($0) }
        // With their own connection the plain topics wait for the last state (PlainRepublishHold).
        let holdPlain = plainLane != nil
        for (index, id) in ids.enumerated() {
            await publishTimer(id, now: now, force: true, plainTopics: false, holdingPlainTopics: holdPlain && index == ids.count - 1)
            if index % Self.republishChunk == Self.republishChunk - 1 { transport.endBatch(); transport.beginBatch() }
        }
        transport.endBatch(); transport.beginBatch()
        await republishPlainTopics(now: now)
    }

    /// How many timers' topics a connect hands to the network thread at a time.
    static let republishChunk = 500

    /// Prunes old history and request ids, at most once an hour and only after a write (so an
    /// idle node never wakes up for it).
    func pruneIfDue(now: Millis) async {
        guard let store else { return }
        guard upkeep.pruneIsDue(now: now) else { return }
        var policy = RetentionPolicy()
        policy.maxAgeMs = configuration.retention.historyMaxAgeMs
        policy.maxEvents = configuration.retention.historyMaxEvents
        policy.requestWindowMs = configuration.limits.dedupWindowMs
        do {
            _ = try await store.prune(policy, nowMs: now)
        } catch {
            logger.warning("could not prune the history", metadata: ["error": "\(error)"])
        }
    }

    /// The retained `state` JSON when it changed, and every plain topic whose value changed
    /// (all with `force`).
    ///
    /// `state` goes out on a change only (a transition, a command, heart rate, a clock jump,
    /// a reconnect): it carries `ends_at_ms`, so a per-second tick does not republish it.
    /// `remaining` and `display` flip on every displayed second when configured as per-second
    /// topics (`publish.per_second`), QoS 0; otherwise they follow `state`.
    ///
    /// Skipped while disconnected: every retained topic is republished on the next connect, so
    /// queueing a stale value per second would only fill the client's offline queue.
    /// - Parameter plainTopics: false: only `state` (a connect publishes every state first,
    ///   then every timer's plain topics with `publishPlainTopics`).
    /// - Parameter holdingPlainTopics: the last state of a connect, tracked: the plain topics'
    ///   own connection republishes once the broker has it (`PlainRepublishHold`).
    func publishTimer(_ id: String, now: Millis, force: Bool, plainTopics: Bool = true, holdingPlainTopics: Bool = false) async {
        // The plain topics may have a connection of their own, up while the main one is not.
        guard linkUp || (plainTopics && plainLinkUp),
              let (snap, revision) = timers.read(id, { (snapshot(of: $0, now: now), $0.machine.revision) }) else { return }
        // A transition fell due that the machine has not taken yet (its wake-up is queued
        // behind this input). A state showing it must not reach the broker before the
        // transition's events are written and published: the outbox takes a retained state as
        // proof of its events. Take it at once; the state goes out with its events then.
        guard snap.revision == revision else {
            deadlines.set(.timer(id), at: now)
            return
        }
        let t = topics.timer(id)
        // Noted as published also while the main link is down: a connect republishes it anyway.
        let stateChanged = timers.stateNeedsPublish(id, snap, force: force)
        if stateChanged && linkUp {
            if holdingPlainTopics {
                await publishStateHoldingPlainTopics(t.state, snap.jsonBytes, now: now)
            } else {
                await publish(to: t.state, snap.jsonBytes, retain: true)
            }
        }
        guard plainTopics else { return }
        await publishPlainTopics(id, snap, t, stateChanged: stateChanged, force: force)
    }

    /// Every plain topic of a timer whose `state` went out on its own (a connect), forced.
    func publishPlainTopics(_ id: String, now: Millis) async {
        guard plainLinkUp, let (snap, revision) = timers.read(id, { (snapshot(of: $0, now: now), $0.machine.revision) }) else { return }
        guard snap.revision == revision else { return }  // publishTimer set its deadline
        await publishPlainTopics(id, snap, topics.timer(id), stateChanged: true, force: true)
    }

    private func publishPlainTopics(_ id: String, _ snap: TimerSnapshot, _ t: TimerTopics, stateChanged: Bool, force: Bool) async {
        let perSecond = configuration.perSecondTopics
        if stateChanged || perSecond.contains(.remaining) {
            await publishPlain(id, .remaining, of: t, value: snap.plainValue(.remaining), force: force, superseding: !stateChanged)
        }
        if stateChanged || perSecond.contains(.display) {
            await publishPlain(id, .display, of: t, value: snap.plainValue(.display), force: force, superseding: !stateChanged)
        }
        guard stateChanged else { return }
        for leaf in [PlainLeaf.phase, .round, .rounds, .hr] {
            await publishPlain(id, leaf, of: t, value: snap.plainValue(leaf), force: force, superseding: false)
        }
    }

    /// - Parameter superseding: a per-second value the next second replaces (QoS 0; shed
    ///   while the transport is backlogged).
    ///
    /// With the plain topics' own connection (`publish.plain_connection: separate`) every
    /// value goes over it at QoS 0: a value lost with a dropped connection is republished
    /// when it comes back (`republishPlainTopics`).
    ///
    /// The topic's name is made only when the value goes out (most ticks change nothing but
    /// `remaining` and `display`, and those only once a second).
    func publishPlain(_ id: String, _ leaf: PlainLeaf, of t: TimerTopics, value: String, force: Bool, superseding: Bool) async {
        let lane = plainLane
        // Under overload (the broker reads slower than we publish), a per-second value is
        // dropped, not queued: the next second supersedes it. Commands, replies, events and
        // states are never dropped.
        if superseding && (lane?.isBacklogged ?? transport.isBacklogged) { return }
        // A connect's states are on their way (PlainRepublishHold): the republish that follows
        // them carries this timer's value, current then.
        if superseding && lane != nil && plainHold.isHolding { return }
        guard plainLinkUp, timers.plainNeedsPublish(id, leaf, value: value, force: force) else { return }
        let topic = t.plain(leaf)
        if let lane {
            do {
                try await lane.publish(to: topic, payload: Array(value.utf8), qos: .atMostOnce)
            } catch {
                publishFailed(topic, error, linkUp: plainLink.isUp)
            }
        } else if superseding {
            do {
                try await transport.publishSuperseding(to: topic, payload: Array(value.utf8))
            } catch {
                publishFailed(topic, error)
            }
        } else {
            await publish(to: topic, Array(value.utf8), retain: true)
        }
    }

    /// Publishes `info` now, or once `NodeInfo.minIntervalMs` has passed since the last one
    /// (a `.info` deadline; the list is built when it goes out, so it has every change).
    func publishInfoThrottled(now: Millis) async {
        if let last = info.publishedAtMs, now < last.saturatingAdd(NodeInfo.minIntervalMs) {
            deadlines.set(.info, at: last.saturatingAdd(NodeInfo.minIntervalMs))
            return
        }
        await publishInfo(now: now)
    }

    func publishInfo(now: Millis) async {
        guard linkUp else { return }  // republished on connect
        deadlines.set(.info, at: nil)
        info.publishedAtMs = now
        await publish(to: topics.info, JSONCoding.encode(infoBody()), retain: true)
    }

    func infoBody() -> JSONValue {
        info.json(timers: timers.ids.map { id in (id: id, name: timers.read(id) { $0.machine.name } ?? "") })
    }

    /// A snapshot with the node's heart-rate fields filled in.
    func snapshot(of entry: TimerTable.Entry, now: Millis) -> TimerSnapshot {
        var snap = entry.machine.snapshot(at: now)
        if let reading = heartRate.current(heartRate.sourceName(for: entry.machine.spec.hrSource), now: now) {
            snap.hr = reading.bpm
            snap.hrAgeMs = now - reading.atMs
            snap.hrZone = heartRate.zone(for: reading.bpm)
        }
        return snap
    }

    /// A timer event on its `event` topic (not retained).
    /// The retained `<base>/workouts`.
    func publishWorkouts() async {
        await publish(to: topics.workouts, workouts.document, retain: true)
    }

    func publishEvent(_ event: TimerEvent) async {
        await publish(to: topics.timer(event.timer).event, JSONCoding.encode(event.json), retain: false)
    }

    /// A written event (its outbox `seq`), published with a delivery token: the broker's
    /// acknowledgement marks it published (`deliveryReported`).
    func publishWrittenEvent(_ topic: String, _ payload: [UInt8], seq: Int64) async {
        do {
            let token = try await transport.publishTracked(to: topic, payload: payload, retain: false)
            outbox.sent(seq: seq, token: token)
        } catch {
            publishFailed(topic, error)
        }
    }

    /// One publish; failures are logged, never fatal (the client keeps QoS 1 publishes made
    /// while disconnected, and everything retained is republished on reconnect).
    func publish(to topic: String, _ payload: [UInt8], retain: Bool, properties: MQTTProperties = .none) async {
        do {
            try await transport.publish(to: topic, payload: payload, retain: retain, properties: properties)
        } catch {
            publishFailed(topic, error)
        }
    }

    /// - Parameter linkUp: whether the engine takes the publish's connection as up (default:
    ///   the main one).
    func publishFailed(_ topic: String, _ error: MQTTError, linkUp: Bool? = nil) {
        // Expected while the link is down (retained topics are republished on connect);
        // otherwise a message was lost (e.g. the client's offline queue is full): say so.
        let level: Logger.Level = (linkUp ?? self.linkUp) ? .warning : .debug
        logger.log(level: level, "publish failed", metadata: ["topic": "\(topic)", "error": "\(error)"])
    }

}


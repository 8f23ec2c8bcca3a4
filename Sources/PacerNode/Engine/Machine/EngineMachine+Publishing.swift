import Logging
import PacerCore
import PacerStore
import PacerProtocol

extension EngineMachine {
    /// Step 3: what one input may publish once its write is done (store first: nothing is
    /// published or acknowledged before it is durable), or the rollback of a failed write.
    /// Appends the effects in order (`step` returns them).
    /// - Parameters:
    ///   - now: the instant the input was handled at; snapshots are taken at it.
    ///   - outboxPending: on a (re)connect (`output.republishAll`), the store's unpublished
    ///     events, read after this write, which marked the acknowledged ones.
    mutating func afterWrite(_ output: EngineOutput, batch: StoreBatch, result: WriteResult, outboxPending: [EventRecord] = [], now: Millis) {
        var output = output
        /// Events the store already held (a replay): never published a second time.
        var duplicates: Set<EventKey> = []
        /// Events written to the outbox by this commit, with their seqs.
        var written: [EventKey: EventRecord] = [:]
        switch result {
        case nil:
            break
        case .success(let result):
            upkeep.requestShiftWritten(batch.shiftRequestsMs)
            timers.written(batch.upsertTimers.map(\.id))
            duplicates = Set(result.duplicates.map(EventKey.init))
            for record in result.appended { written[EventKey(record)] = record }
        case .failure(let error):
            logger.error("could not write to the database; the change is not applied", metadata: ["error": "\(error)"])
            // The marks it carried wait for the next write.
            perform(outbox.awaitMark(batch.markPublished, now: now), now: now)
            // A command's change is undone (its timer, the ledger) and refused. Everything
            // else the input changed did happen (a transition on the clock, anchors moved
            // by a clock jump): it stays, is published, and is written with the next write.
            // A group of commands (one write) is undone last first, each one refused.
            let rollbacks = output.rollbacks
            let rolledBack = Set(rollbacks.flatMap(\.timers.keys))
            if let before = output.workoutsBefore { workouts = before }
            if let before = output.athletesBefore { athletes = before }
            if let before = output.speakerBefore { speaker = before }
            if !rollbacks.isEmpty {
                for rollback in rollbacks.reversed() {
                    for (id, entry) in rollback.timers { timers.set(id, entry) }
                    if let id = rollback.requestID { ledger.forget(id: id) }
                }
                for id in rolledBack { schedule(id, now: now) }
                output.refuse(rolledBack, ReplyError(.storageFailure, "the node could not save the command (\(error)); nothing changed, try again"))
            }
            timers.writeFailed(batch.upsertTimers.map(\.id).filter { !rolledBack.contains($0) })
        }

        // Everything this input publishes goes to the network thread with one wake-up (the
        // shell brackets the effects).
        perform(output.linkActions, now: now)
        if output.republishAll { publishEverything(pending: outboxPending, now: now) }
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
                if let publish = outbox.written(record) { perform([publish], now: now) }
                continue
            }
            if !connected && event.isCue { continue }
            publishEvent(event)
        }
        // Sound: the speaker's cues, also while disconnected (PacerSound; never blocks).
        let sounding = duplicates.isEmpty ? output.events : output.events.filter { !duplicates.contains(EventKey($0)) }
        if !sounding.isEmpty { emit(.sound(sounding)) }
        // Home Assistant (EngineMachine+HomeAssistant.swift): a deleted timer's device goes before
        // its topics are cleared (its sensors would read the empty values).
        publishDiscovery(output, now: now)
        for id in output.deletedTimers { clearRetainedTopics(of: id) }
        if output.republishPlain { republishPlainTopics(now: now) }
        if !output.republishAll {
            for id in output.changedTimers where !outbox.isHolding(id) { publishTimer(id, now: now, force: false) }
            if output.infoChanged { publishInfoThrottled(now: now) }
            if output.workoutsChanged { publishWorkouts() }
            if !output.athletesChanged.isEmpty { publishAthleteProfiles(output.athletesChanged, now: now) }
            if output.speakerChanged { publishSpeaker() }
        }
        if output.speakerChanged { emit(.speaker(muted: speaker.muted, volume: speaker.volume)) }
        for reply in output.replies {
            if let query = reply.history {
                emit(.history(query, reply: reply))
                continue
            }
            emit(.publish(topic: reply.topic, payload: reply.payload, retain: false, correlation: reply.correlationData))
        }
        publishClassSummaries()  // EngineMachine+Athletes.swift
        if output.settleOutbox { settleOutbox(now: now) }
        if hasStore && !batch.isEmpty { pruneIfDue(now: now) }
    }

    /// Step 2: the store writes of an output: changed timers (when their revision moved),
    /// outcome events into the outbox, deletions and request ids. Marks the timers as persisted.
    mutating func batch(for output: EngineOutput, now: Millis) -> StoreBatch {
        var batch = StoreBatch()
        // Timers that only time moved on are not written: the timing model derives where they are
        // from their last written state, and an SD card lives longer without a write per
        // transition.
        batch.upsertTimers = timers.records(changed: output.writtenTimers, force: output.forcePersist, now: now)
        // Cues (countdown, halfway, alert) and derived events (a transition's phase) are
        // published but not written: they would wear the SD card, and a restore recomputes them.
        batch.appendEvents = output.events.filter(output.writes).map { event in
            EventRecord(seq: nil, timer: event.timer, type: event.type.rawValue, revision: event.revision,
                        dueMs: event.dueMs, atMs: event.atMs, payload: JSONCoding.encode(event.json), published: false)
        }
        batch.deleteTimers = output.deletedTimers
        classRunEvents(output, into: &batch)  // a class_hr run's summary, once, at its end
        if !output.athletesChanged.isEmpty, let athletes {
            batch.meta[AthleteRoster.metaKey] = String(decoding: athletes.document, as: UTF8.self)
        }
        if output.workoutsChanged {
            batch.meta[SavedWorkouts.metaKey] = String(decoding: workouts.document, as: UTF8.self)
        }
        if output.speakerChanged {
            batch.meta[Speaker.metaKey] = String(decoding: speaker.document, as: UTF8.self)
        }
        batch.shiftRequestsMs = upkeep.requestShiftMs
        batch.requests = output.requests
        // A connect's outbox check reads the store after this write: what the broker acknowledged is
        // marked in it first, so the check never publishes it again.
        if !batch.isEmpty || output.flushMarks || output.republishAll { batch.markPublished = takeMarks() }
        return batch
    }

    /// Publishes `status`, `info` and every timer's retained topics — on every (re)connect —
    /// and starts the outbox check for events written but not yet published (`pending`).
    mutating func publishEverything(pending: [EventRecord], now: Millis) {
        // Subscribe before republishing: the broker then sends the retained states of the
        // previous run before our new ones replace them.
        beginOutboxCheck(pending: pending, now: now)
        publish(to: topics.status, NodeStatus.online.payload, retain: true)
        publishInfo(now: now)
        publishWorkouts()
        republishAthletes(now: now)
        publishSpeaker()
        for event in outbox.takeUnwritten() { publishEvent(event) }
        // Timers with events in the outbox wait for the outbox check (see EventOutbox).
        // Every `state` first (it carries everything a dashboard shows), then the plain topics:
        // after a restart of 10,000 timers the states are back after 10,000 messages, not 70,000.
        // Handed to the network thread every `republishChunk` timers, so it writes while the
        // rest is made, not after all of it.
        let ids = timers.ids.filter { !outbox.isHolding($0) }
        // With their own connection the plain topics wait for the last state (PlainRepublishHold).
        let holdPlain = usesPlainLane
        for (index, id) in ids.enumerated() {
            publishTimer(id, now: now, force: true, plainTopics: false, holdingPlainTopics: holdPlain && index == ids.count - 1)
            if index % Self.republishChunk == Self.republishChunk - 1 { emit(.flush) }
        }
        emit(.flush)
        republishPlainTopics(now: now)
    }

    /// How many timers' topics a connect hands to the network thread at a time.
    static let republishChunk = 500

    /// Prunes old history and request ids, at most once an hour and only after a write (so an
    /// idle node never wakes up for it).
    mutating func pruneIfDue(now: Millis) {
        guard upkeep.pruneIsDue(now: now) else { return }
        var policy = RetentionPolicy()
        policy.maxAgeMs = configuration.retention.historyMaxAgeMs
        policy.maxEvents = configuration.retention.historyMaxEvents
        policy.requestWindowMs = configuration.limits.dedupWindowMs
        emit(.prune(policy))
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
    mutating func publishTimer(_ id: String, now: Millis, force: Bool, plainTopics: Bool = true, holdingPlainTopics: Bool = false) {
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
                publishStateHoldingPlainTopics(t.state, snap.jsonBytes, now: now)
            } else {
                publish(to: t.state, snap.jsonBytes, retain: true)
            }
        }
        guard plainTopics else { return }
        publishPlainTopics(id, snap, t, stateChanged: stateChanged, force: force)
    }

    /// Every plain topic of a timer whose `state` went out on its own (a connect), forced.
    mutating func publishPlainTopics(_ id: String, now: Millis) {
        guard plainLinkUp, let (snap, revision) = timers.read(id, { (snapshot(of: $0, now: now), $0.machine.revision) }) else { return }
        guard snap.revision == revision else { return }  // publishTimer set its deadline
        publishPlainTopics(id, snap, topics.timer(id), stateChanged: true, force: true)
    }

    private mutating func publishPlainTopics(_ id: String, _ snap: TimerSnapshot, _ t: TimerTopics, stateChanged: Bool, force: Bool) {
        let perSecond = configuration.perSecondTopics
        if stateChanged || perSecond.contains(.remaining) {
            publishPlain(id, .remaining, of: t, value: snap.plainValue(.remaining), force: force, superseding: !stateChanged)
        }
        if stateChanged || perSecond.contains(.display) {
            publishPlain(id, .display, of: t, value: snap.plainValue(.display), force: force, superseding: !stateChanged)
        }
        guard stateChanged else { return }
        for leaf in [PlainLeaf.phase, .round, .rounds, .hr] {
            publishPlain(id, leaf, of: t, value: snap.plainValue(leaf), force: force, superseding: false)
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
    mutating func publishPlain(_ id: String, _ leaf: PlainLeaf, of t: TimerTopics, value: String, force: Bool, superseding: Bool) {
        let lane = usesPlainLane
        // Under overload (the broker reads slower than we publish), a per-second value is
        // dropped, not queued: the next second supersedes it. Commands, replies, events and
        // states are never dropped.
        if superseding && (lane ? plainBacklogged : backlogged) { return }
        // A connect's states are on their way (PlainRepublishHold): the republish that follows
        // them carries this timer's value, current then.
        if superseding && lane && plainHold.isHolding { return }
        guard plainLinkUp, timers.plainNeedsPublish(id, leaf, value: value, force: force) else { return }
        let topic = t.plain(leaf)
        if lane {
            emit(.publishPlain(topic: topic, payload: Array(value.utf8), confirmed: false))
        } else if superseding {
            emit(.publishSuperseding(topic: topic, payload: Array(value.utf8)))
        } else {
            publish(to: topic, Array(value.utf8), retain: true)
        }
    }

    /// Publishes `info` now, or once `NodeInfo.minIntervalMs` has passed since the last one
    /// (a `.info` deadline; the list is built when it goes out, so it has every change).
    mutating func publishInfoThrottled(now: Millis) {
        if let last = info.publishedAtMs, now < last.saturatingAdd(NodeInfo.minIntervalMs) {
            deadlines.set(.info, at: last.saturatingAdd(NodeInfo.minIntervalMs))
            return
        }
        publishInfo(now: now)
    }

    mutating func publishInfo(now: Millis) {
        guard linkUp else { return }  // republished on connect
        deadlines.set(.info, at: nil)
        info.publishedAtMs = now
        publish(to: topics.info, JSONCoding.encode(infoBody()), retain: true)
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

    /// The retained `<base>/workouts`.
    mutating func publishWorkouts() {
        publish(to: topics.workouts, workouts.document, retain: true)
    }

    /// The retained `<base>/sound`: the speaker as commanded (`available: false` without one).
    mutating func publishSpeaker() {
        publish(to: topics.sound, JSONValue.object(speaker.members(available: hasSound)).jsonBytes, retain: true)
    }

    /// A timer event on its `event` topic (not retained).
    mutating func publishEvent(_ event: TimerEvent) {
        publish(to: topics.timer(event.timer).event, JSONCoding.encode(event.json), retain: false)
    }

    /// A written event (its outbox `seq`), published with a delivery token: the broker's
    /// acknowledgement marks it published (`delivered`).
    mutating func publishWrittenEvent(_ topic: String, _ payload: [UInt8], seq: Int64) {
        let token = nextToken()
        emit(.publishTracked(topic: topic, payload: payload, retain: false, token: token))
        outbox.sent(seq: seq, token: token)
    }

    /// One QoS 1 publish on the main connection. A failure is logged by the shell, never fatal
    /// (the client keeps QoS 1 publishes made while disconnected, and everything retained is
    /// republished on reconnect).
    mutating func publish(to topic: String, _ payload: [UInt8], retain: Bool) {
        emit(.publish(topic: topic, payload: payload, retain: retain))
    }
}

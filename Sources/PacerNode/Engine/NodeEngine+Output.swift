import Foundation
import Logging
import Mosquitto
import PacerCore
import PacerStore

/// What handling one input decided to write and publish. Built by the handlers, carried out
/// by `NodeEngine.commit(_:)` — the one place where the node writes and publishes.
struct EngineOutput {
    struct Reply {
        var topic: String
        var body: JSONValue
        var correlationData: [UInt8]?
    }

    /// Timers whose state may have changed, in first-touched order.
    private(set) var changedTimers: [String] = []
    private var changedSet: Set<String> = []
    /// Timers to write even without a new revision: a clock jump moves an idle timer's
    /// cursors without one. (A new timer needs no flag: it has never been written.)
    private(set) var forcePersist: Set<String> = []
    /// Events in the order they happened.
    private(set) var events: [TimerEvent] = []
    var deletedTimers: [String] = []
    var replies: [Reply] = []
    var requests: [RequestRecord] = []
    var infoChanged = false
    /// A (re)connect: publish every retained topic again.
    var republishAll = false
    /// The `.marks` deadline: write the acknowledged events' marks even without other writes.
    var flushMarks = false
    /// The outbox check can be decided (all retained states seen, or its window ended).
    var settleOutbox = false
    /// The outbox's actions for a link that went down (before anything else is published).
    var linkActions: [EventOutbox.Action] = []
    /// Undo information for a command: if its write fails, nothing it changed may stay.
    var rollback: (timers: [String: NodeEngine.TimerEntry?], ledger: RequestLedger)?

    mutating func timerChanged(_ id: String, events newEvents: [TimerEvent], forcePersist force: Bool = false) {
        if changedSet.insert(id).inserted { changedTimers.append(id) }
        if force { forcePersist.insert(id) }
        events += newEvents
    }

    /// A command whose write failed: what it changed (`timers`, its request id) is dropped
    /// and each reply becomes `error`; the rest of the input (a clock jump) stays.
    mutating func refuse(_ timers: Set<String>, _ error: ReplyError) {
        changedTimers.removeAll { timers.contains($0) }
        changedSet.subtract(timers)
        forcePersist.subtract(timers)
        events.removeAll { timers.contains($0.timer) }
        deletedTimers.removeAll { timers.contains($0) }
        requests = []
        replies = replies.map { reply in
            var reply = reply
            reply.body = NodeEngine.errorBody(id: reply.body.object?["id"] ?? .null, error)
            return reply
        }
    }
}

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
                let result = try store.commit(batch)
                unstoredRequestShiftMs -= batch.shiftRequestsMs
                unwrittenTimers.subtract(batch.upsertTimers.map(\.id))
                duplicates = Set(result.duplicates.map(EventKey.init))
                for record in result.appended { written[EventKey(record)] = record }
            } catch {
                logger.error("could not write to the database; the change is not applied", metadata: ["error": "\(error)"])
                // The marks it carried wait for the next write.
                await perform(outbox.awaitMark(batch.markPublished, now: now), now: now)
                // A command's change is undone (its timer, the ledger) and refused. Everything
                // else the input changed did happen (a transition on the clock, anchors moved
                // by a clock jump): it stays, is published, and is written with the next write.
                let rolledBack = Set(output.rollback?.timers.keys.map { $0 } ?? [])
                if let rollback = output.rollback {
                    for (id, entry) in rollback.timers { timers[id] = entry }
                    ledger = rollback.ledger
                    for id in rolledBack { schedule(id) }
                    output.refuse(rolledBack, ReplyError(.storageFailure, "the node could not save the command (\(error)); nothing changed, try again"))
                }
                unwrittenTimers.formUnion(batch.upsertTimers.map(\.id).filter { !rolledBack.contains($0) })
            }
        }

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
        for id in output.deletedTimers {
            for topic in topics.timer(id).retained { await publish(to: topic, [], retain: true) }
        }
        if !output.republishAll {
            for id in output.changedTimers where !outbox.isHolding(id) { await publishTimer(id, now: now, force: false) }
            if output.infoChanged { await publishInfo() }
        }
        for reply in output.replies {
            var properties = MQTTProperties.none
            if let correlation = reply.correlationData { properties.correlationData = correlation }
            await publish(to: reply.topic, JSONCoding.encode(reply.body), retain: false, properties: properties)
        }
        if output.settleOutbox { await settleOutbox(now: now) }
        if !batch.isEmpty { pruneIfDue(now: now) }
    }

    /// The store writes of an output: changed timers (when their revision moved), transition
    /// events into the outbox, deletions and request ids. Marks the timers as persisted.
    func makeBatch(_ output: EngineOutput, now: Millis) -> StoreBatch {
        var batch = StoreBatch()
        // Timers whose last write failed are written with this one, changed or not.
        let unwritten = unwrittenTimers.filter { !output.changedTimers.contains($0) }.sorted()
        for id in output.changedTimers + unwritten {
            guard var entry = timers[id] else { continue }
            if entry.machine.revision != entry.persistedRevision || output.forcePersist.contains(id) || unwrittenTimers.contains(id) {
                batch.upsertTimers.append(record(for: entry, now: now))
                entry.persistedRevision = entry.machine.revision
                timers[id] = entry
            }
        }
        // Cues (countdown, halfway, alert) are published but not written: they would wear the
        // SD card and are never replayed after a restart anyway.
        batch.appendEvents = output.events.filter { !$0.isCue }.map { event in
            EventRecord(seq: nil, timer: event.timer, type: event.type.rawValue, revision: event.revision,
                        dueMs: event.dueMs, atMs: event.atMs, payload: JSONCoding.encode(event.json), published: false)
        }
        batch.deleteTimers = output.deletedTimers
        batch.shiftRequestsMs = unstoredRequestShiftMs
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
        await publishInfo()
        for event in outbox.takeUnwritten() { await publishEvent(event) }
        // Timers with events in the outbox wait for the outbox check (see EventOutbox).
        for id in timers.keys.sorted() where !outbox.isHolding(id) { await publishTimer(id, now: now, force: true) }
    }

    /// Prunes old history and request ids, at most once an hour and only after a write (so an
    /// idle node never wakes up for it).
    func pruneIfDue(now: Millis) {
        guard let store else { return }
        if let last = lastPruneMs, now - last < 3_600_000 { return }
        lastPruneMs = now
        var policy = RetentionPolicy()
        policy.maxAgeMs = configuration.retention.historyMaxAgeMs
        policy.maxEvents = configuration.retention.historyMaxEvents
        policy.requestWindowMs = configuration.limits.dedupWindowMs
        do {
            _ = try store.prune(policy, nowMs: now)
        } catch {
            logger.warning("could not prune the history", metadata: ["error": "\(error)"])
        }
    }

    /// The retained `state` JSON and every plain topic whose value changed (all with `force`).
    ///
    /// Skipped while disconnected: every retained topic is republished on the next connect, so
    /// queueing a stale value per second would only fill the client's offline queue.
    func publishTimer(_ id: String, now: Millis, force: Bool) async {
        guard let entry = timers[id], linkUp else { return }
        let snap = snapshot(of: entry, now: now)
        // A transition fell due that the machine has not taken yet (its wake-up is queued
        // behind this input). A state showing it must not reach the broker before the
        // transition's events are written and published: the outbox takes a retained state as
        // proof of its events. Take it at once; the state goes out with its events then.
        guard snap.revision == entry.machine.revision else {
            deadlines.set(.timer(id), at: now)
            return
        }
        let t = topics.timer(id)
        if force { timers[id]?.lastPlain = [:] }
        await publish(to: t.state, JSONCoding.encode(snap.json), retain: true)
        let plain: [(String, String)] = [
            (t.remaining, String(snap.remainingSeconds)),
            (t.display, snap.display),
            (t.phase, snap.phase.rawValue),
            (t.round, String(snap.round)),
            (t.rounds, String(snap.rounds)),
            (t.hr, snap.hr.map(String.init) ?? ""),
        ]
        for (topic, value) in plain {
            await publishPlain(id, topic: topic, value: value, force: force)
        }
    }

    func publishPlain(_ id: String, topic: String, value: String, force: Bool) async {
        guard timers[id] != nil, linkUp else { return }
        if !force, timers[id]?.lastPlain[topic] == value { return }
        timers[id]?.lastPlain[topic] = value
        await publish(to: topic, Array(value.utf8), retain: true)
    }

    func publishInfo() async {
        guard linkUp else { return }  // republished on connect
        await publish(to: topics.info, JSONCoding.encode(infoBody()), retain: true)
    }

    func infoBody() -> JSONValue {
        let list: [JSONValue] = timers.keys.sorted().map { id in
            .object(["id": .string(id), "name": .string(timers[id]!.machine.name)])
        }
        var info: [String: JSONValue] = [
            "version": .string(version),
            "node": .string(configuration.nodeID),
            "base_topic": .string(topics.base),
            "timers": .array(list),
            "capabilities": .array([
                "interval", "rest", "countdown", "stopwatch", "program", "presets", "heart_rate",
                "time_sync", "dedup", "if_revision", "start_at", "history", "mqtt5_response_topic",
            ].map { .string($0) }),
            "presets": .array(Set(Presets.builtInNames).union(configuration.presets.keys).sorted().map { .string($0) }),
            "heart_rate_sources": .array(configuration.heartRate.sources.map { .string($0.name) }),
            "started_at_ms": .int(startedAtMs),
        ]
        if let synced = clockSynchronized { info["clock_synchronized"] = .bool(synced) }
        var storage: [String: JSONValue] = ["ok": .bool(store != nil)]
        if let store { storage["path"] = .string(store.path) }
        if let storageProblem { storage["error"] = .string(storageProblem) }
        info["storage"] = .object(storage)
        return .object(info)
    }

    /// A snapshot with the node's heart-rate fields filled in.
    func snapshot(of entry: TimerEntry, now: Millis) -> TimerSnapshot {
        var snap = entry.machine.snapshot(at: now)
        if let reading = heartRate.current(heartRate.sourceName(for: entry.machine.spec.hrSource), now: now) {
            snap.hr = reading.bpm
            snap.hrAgeMs = now - reading.atMs
            snap.hrZone = heartRate.zone(for: reading.bpm)
        }
        return snap
    }

    func record(for entry: TimerEntry, now: Millis) -> TimerRecord {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let blob = (try? Array(encoder.encode(entry.machine))) ?? []
        return TimerRecord(id: entry.machine.id, machine: blob, revision: entry.machine.revision,
                           restorePolicy: entry.restore.rawValue, updatedAtMs: now)
    }

    /// A timer event on its `event` topic (not retained).
    func publishEvent(_ event: TimerEvent) async {
        await publish(to: topics.timer(event.timer).event, JSONCoding.encode(event.json), retain: false)
    }

    /// A written event (its outbox `seq`), published with a delivery token: the broker's
    /// acknowledgement marks it published (`deliveryReported`).
    func publishWrittenEvent(_ topic: String, _ payload: [UInt8], seq: Int64) async {
        do {
            let token = try await transport.publishTracked(to: topic, payload: payload)
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

    private func publishFailed(_ topic: String, _ error: MQTTError) {
        // Expected while the link is down (retained topics are republished on connect);
        // otherwise a message was lost (e.g. the client's offline queue is full): say so.
        let level: Logger.Level = linkUp ? .warning : .debug
        logger.log(level: level, "publish failed", metadata: ["topic": "\(topic)", "error": "\(error)"])
    }

    static func errorBody(id: JSONValue, _ error: ReplyError) -> JSONValue {
        .object(["id": id, "ok": .bool(false), "error": .object(["code": .string(error.code.rawValue), "message": .string(error.message)])])
    }
}

/// The identity of an event in the store (its unique key).
struct EventKey: Hashable {
    var timer: String
    var type: String
    var revision: Int
    var dueMs: Millis
}

extension EventKey {
    init(_ event: TimerEvent) {
        self.init(timer: event.timer, type: event.type.rawValue, revision: event.revision, dueMs: event.dueMs)
    }

    init(_ record: EventRecord) {
        self.init(timer: record.timer, type: record.type, revision: record.revision, dueMs: record.dueMs)
    }
}

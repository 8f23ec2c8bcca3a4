import Foundation
import Logging
import Mosquitto
import PacerCore
import PacerStore

extension NodeEngine {
    /// Brings back every saved timer and creates the declared ones, before anything is
    /// published (SPEC §5). Events that fell due while the node was down are published once
    /// (the terminal one with `late_ms`); cues are not replayed.
    func restore() async {
        var output = EngineOutput()
        let now = clock.now()
        info.clockSynchronized = ClockSync.isSynchronized()
        if info.clockSynchronized == false {
            logger.warning("the system clock is not synchronised yet; restored timers are evaluated against it as it is (see docs/deployment.md for ordering after time-sync.target)")
        }
        let declared = Dictionary(configuration.timers.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        // Replies are kept as their JSON bytes and decoded only when a repeat asks for one.
        ledger.decoder = { JSONCoding.decode($0) }
        // How long each step took, in the `timers ready` line (a restart's cost, for operators).
        let began = ContinuousClock.now
        var steps: Logger.Metadata = [:]
        func step(_ name: String, since start: ContinuousClock.Instant) {
            let elapsed = ContinuousClock.now - start
            steps[name] = "\(elapsed.components.seconds * 1_000 + elapsed.components.attoseconds / 1_000_000_000_000_000)"
        }
        if let store {
            do {
                var mark = ContinuousClock.now
                let records = try store.loadTimers()
                step("load_ms", since: mark)
                mark = ContinuousClock.now
                let machines = await Self.decodeMachines(records, settings: configuration.timerSettings)
                step("decode_ms", since: mark)
                mark = ContinuousClock.now
                for (record, machine) in zip(records, machines) {
                    restoreTimer(record, machine, declared: declared[record.id], now: now, into: &output)
                }
                step("advance_ms", since: mark)
                if let document = try store.meta(SavedWorkouts.metaKey) {
                    workouts = SavedWorkouts(json: JSONCoding.decode(Array(document.utf8)))
                }
                for request in try store.loadRequests(sinceMs: now - configuration.limits.dedupWindowMs) {
                    ledger.record(id: request.id, encodedReply: request.reply, now: request.atMs)
                }
            } catch {
                logger.error("could not read the saved timers; starting without them", metadata: ["error": "\(error)"])
            }
        }
        for timer in configuration.timers where !timers.contains(timer.id) {
            do {
                let spec = try TimerSpec(json: timer.spec, presets: configuration.presets)
                let machine = try TimerMachine(id: timer.id, name: timer.name, spec: spec, settings: configuration.timerSettings)
                timers.set(timer.id, .init(machine: machine, restore: timer.restore))
                output.timerChanged(timer.id, events: [])
            } catch {
                // The configuration was validated at load; this cannot happen unless it changed.
                logger.error("declared timer is invalid", metadata: ["timer": "\(timer.id)", "error": "\(error)"])
            }
        }
        var mark = ContinuousClock.now
        rescheduleAll()
        step("schedule_ms", since: mark)
        // Written now; published when the broker connection comes up (the outbox check).
        mark = ContinuousClock.now
        await commitWithoutPublishing(output)
        step("write_ms", since: mark)
        step("took_ms", since: began)
        logger.info("timers ready", metadata: steps.merging(["count": "\(timers.count)"]) { $1 })
        // No prune here: it comes with the first write after the connect's republish (a
        // prune of a large history and the WAL checkpoint it triggers took 150 ms of a
        // restart of 10,000 timers before the first state went out).
        // The loaded records and the decoding's buffers are freed: give their pages back.
        HeapTrim.now()
    }

    /// Decodes the saved machines, on as many tasks as there are cores (decoding is most of a
    /// restore's own work), in the records' order. Their settings are not
    /// decoded: the configuration's replace them.
    private static func decodeMachines(_ records: [TimerRecord], settings: TimerSettings) async -> [Result<TimerMachine, any Error>] {
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 4, records.count / 500))
        let chunk = (records.count + workers - 1) / max(1, workers)
        func decode(_ slice: ArraySlice<TimerRecord>) -> [Result<TimerMachine, any Error>] {
            slice.map { record in
                // One reader of the one persisted format (TimerMachine+Persisted.swift), the
                // inverse of `persistedBytes`, which wrote it.
                do {
                    let json = try JSONValue.parse(record.machine)
                    return .success(try TimerMachine(persisted: json, settings: settings))
                } catch {
                    return .failure(error)
                }
            }
        }
        guard workers > 1 else { return decode(records[...]) }
        return await withTaskGroup(of: (Int, [Result<TimerMachine, any Error>]).self) { group in
            for start in stride(from: 0, to: records.count, by: chunk) {
                let slice = records[start..<min(start + chunk, records.count)]
                group.addTask { (start, decode(slice)) }
            }
            var parts: [(Int, [Result<TimerMachine, any Error>])] = []
            for await part in group { parts.append(part) }
            return parts.sorted { $0.0 < $1.0 }.flatMap(\.1)
        }
    }

    private func restoreTimer(_ record: TimerRecord, _ decoded: Result<TimerMachine, any Error>, declared: TimerDeclaration?, now: Millis,
                              into output: inout EngineOutput) {
        var machine: TimerMachine
        do {
            machine = try decoded.get()
        } catch {
            logger.error("a saved timer could not be read and is dropped", metadata: ["timer": "\(record.id)", "error": "\(error)"])
            output.deletedTimers.append(record.id)
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
        timers.set(record.id, .init(machine: machine, restore: policy, persistedRevision: record.revision))
        if decided {
            output.timerChanged(record.id, events: events)
        } else {
            output.timerAdvanced(record.id, events: events)
        }
        if !events.isEmpty {
            logger.info("restored timer caught up", metadata: ["timer": "\(record.id)", "status": "\(machine.status.rawValue)", "events": "\(events.map(\.type.rawValue))"])
        }
    }

    /// Writes the restore results and keeps their events in the outbox until connected.
    private func commitWithoutPublishing(_ output: EngineOutput) async {
        let batch = makeBatch(output, now: clock.now())
        // Derived events (the phase a timer reached while the node was down) are not written:
        // they are published from memory, before the states, at the first connect.
        outbox.keepUnwritten(output.events.filter { !$0.isCue && !output.writes($0) })
        guard let store, !batch.isEmpty else { return }
        do { _ = try await store.commit(batch) } catch {
            logger.error("could not write the restored state; its events go out at the first connect", metadata: ["error": "\(error)"])
            // Written again with the next write; the events, not in the outbox, are published
            // from memory (before the states) at the first connect.
            timers.writeFailed(batch.upsertTimers.map(\.id))
            outbox.keepUnwritten(output.events.filter(output.writes))
        }
    }

    func connectionChanged(_ event: MQTTConnectionEvent, now: Millis, into output: inout EngineOutput) {
        switch event {
        case .connected(let sessionPresent):
            logger.info("connected to the broker", metadata: ["broker": "\(configuration.broker.url)", "session_present": "\(sessionPresent)"])
            loggedRefusal = nil
            // A new connection whose predecessor's end went unseen is handled by the outbox too.
            output.republishAll = true
            armPlainFallback(now: now)
        case .disconnected(let reason):
            logger.warning("lost the broker connection; reconnecting", metadata: ["reason": "\(reason)"])
            output.linkActions += outbox.linkDown()
        case .refused(let error):
            // Once per refusal, not per retry: the client retries every 0.75 s at most.
            if loggedRefusal != error.description {
                loggedRefusal = error.description
                logger.error("the broker refused the connection; retrying quietly until it accepts", metadata: ["error": "\(error)"])
            } else {
                logger.debug("the broker refused the connection again", metadata: ["error": "\(error)"])
            }
            output.linkActions += outbox.linkDown()
        case .loopExited(let error):
            logger.critical("the MQTT network thread stopped", metadata: ["error": "\(error)"])
            output.linkActions += outbox.linkDown()
        }
    }
}

import Foundation
import Logging
import PacerCore
import PacerStore

/// The shell's start-up: the saved timers read and decoded, handed to the machine
/// (`EngineMachine.restore`), and what it decided written before anything is published.
extension NodeEngine {
    /// Reads the saved timers, hands them to the machine (`EngineMachine.restore`) and writes what
    /// it decided, before anything is published (docs/architecture.md, "Durability and restore").
    /// Their events wait for the first connect.
    func restore() async {
        let now = clock.now()
        let clockSynchronized = ClockSync.isSynchronized()
        // How long each step took, in the `timers ready` line (a restart's cost, for operators).
        let began = ContinuousClock.now
        var steps: Logger.Metadata = [:]
        func step(_ name: String, since start: ContinuousClock.Instant) {
            let elapsed = ContinuousClock.now - start
            steps[name] = "\(elapsed.components.seconds * 1_000 + elapsed.components.attoseconds / 1_000_000_000_000_000)"
        }
        var timing: [(String, Duration)] = []
        let saved = await Self.readSaved(performer.store, configuration: machine.configuration, now: now, logger: logger) { timing.append(($0, $1)) }
        for (name, elapsed) in timing {
            steps[name] = "\(elapsed.components.seconds * 1_000 + elapsed.components.attoseconds / 1_000_000_000_000_000)"
        }
        let mark = ContinuousClock.now
        // Written now; published when the broker connection comes up (the outbox check). The
        // speaker is set as it was left (muted for the night stays muted after a power cut).
        await perform(machine.restore(saved, clockSynchronized: clockSynchronized, at: now), now: now)
        step("write_ms", since: mark)
        step("took_ms", since: began)
        logger.info("timers ready", metadata: steps.merging(["count": "\(machine.board.timers.count)"]) { $1 })
        // No prune here: it comes with the first write after the connect's republish (a
        // prune of a large history and the WAL checkpoint it triggers took 150 ms of a
        // restart of 10,000 timers before the first state went out).
        // The loaded records and the decoding's buffers are freed: give their pages back.
        HeapTrim.now()
    }

    /// What the store kept for the machine's restore: the saved timers decoded, the workouts,
    /// athletes' and speaker's documents, the request ids within the dedup window. A store that
    /// cannot be read gives nothing (said in the log): the node starts without them.
    /// - Parameter timing: told how long loading and decoding took (`load_ms`, `decode_ms`).
    nonisolated(nonsending) static func readSaved(_ store: (any EngineStore)?, configuration: NodeConfiguration, now: Millis, logger: Logger,
                                                  timing: (String, Duration) -> Void = { _, _ in }) async -> RestoredState {
        var saved = RestoredState()
        guard let store else { return saved }
        do {
            var mark = ContinuousClock.now
            let records = try store.loadTimers()
            timing("load_ms", ContinuousClock.now - mark)
            mark = ContinuousClock.now
            let machines = await decodeMachines(records, settings: configuration.timerSettings)
            timing("decode_ms", ContinuousClock.now - mark)
            saved.timers = Array(zip(records, machines))
            saved.workoutsDocument = try store.meta(SavedWorkouts.metaKey)
            saved.athletesDocument = try store.meta(AthleteRoster.metaKey)
            saved.speakerDocument = try store.meta(Speaker.metaKey)
            saved.displaysDocument = try store.meta(DisplayPart.metaKey)
            saved.schedulesDocument = try store.meta(SchedulePart.metaKey)
            saved.savedSchedulesDocument = try store.meta(SchedulePart.savedKey)
            saved.requests = try store.loadRequests(sinceMs: now - configuration.limits.dedupWindowMs)
        } catch {
            logger.error("could not read the saved timers; starting without them", metadata: ["error": "\(error)"])
        }
        return saved
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
}

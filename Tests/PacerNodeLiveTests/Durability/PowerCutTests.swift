import Foundation
import PacerCore
import PacerTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A power cut loses nothing acknowledged (docs/storage.md, "Durability"): CrashRestartTests'
/// workout and checks, with the node's data directory on the lazy filesystem
/// (Tests/Fixtures/lazyfs/lazyfs.c), and every kill followed by a power cut of that filesystem
/// before the restart: every write the node had not fsynced is gone, as after a real power cut (a
/// SIGKILL alone keeps the page cache). Kills strike at random moments of the workout, a few
/// milliseconds after a command went out (in flight: received, being written, being answered),
/// during start-up (the restore, connecting, the outbox), and whatever SQLite was doing (a
/// transaction, an automatic WAL checkpoint).
///
/// Random moments rarely fall inside a checkpoint (a few milliseconds every few hundred
/// commits), so cuts are also armed at exact moments (`LazyFS.arm`): before most iterations,
/// at one of the next checkpoint's first six page writes to the database file (the WAL synced,
/// the database file partly written) or at the next WAL fsync (a commit written, not yet synced
/// nor acknowledged); before half the start-up kills, at the restore's first WAL fsync. The
/// filesystem then cuts at that very request and holds it while the node is SIGKILLed, so the
/// node dies without another instruction.
///
/// After every restart: the state equals the core's prediction, no acknowledged command is
/// lost, answered request ids still get their first reply, no `finished`/`expired` twice
/// (CrashRun). Besides: the database opened every time (the node never moved it aside as
/// corrupt, and never failed to start).
///
/// Knobs (environment):
/// - `PACER_POWERCUT_ITERATIONS` (default 30, about 70 s): kills mid-workout, each followed by
///   a cut (start-up kills add about a quarter more cuts). The long run of docs/RELIABILITY.md:
///   `PACER_POWERCUT_ITERATIONS=1000 PACER_POWERCUT_SEED=random swift test --filter PowerCutTests`
///   (about 35 min).
/// - `PACER_POWERCUT_SEED`: repeat a run's random choices (printed at the start); without it seed 1,
///   the same choices on every machine; `random` for a new one.
///   A failed run keeps the node's directory: `disk/` (what was synced at the last cut), the
///   node's log of every start, lazyfs's log.
@Suite(
    "Power cuts: SIGKILL plus the loss of every unsynced write, with real processes", .serialized,
    .disabled(if: LazyFS.unavailable != nil, Comment(rawValue: "skipped: \(LazyFS.unavailable ?? "")")))
struct PowerCutTests {
    @Test("power cut mid-workout at random moments, restart, and check state, commands, events, retained topics and that the database opens")
    func powerCutsAtRandomMoments() async throws {
        let seed = environmentSeed("PACER_POWERCUT_SEED", fixed: 1)
        let iterations = max(1, environmentInteger("PACER_POWERCUT_ITERATIONS", default: 30))
        print("PowerCutTests: seed \(seed), \(iterations) kills with power cuts (repeat with PACER_POWERCUT_SEED=\(seed), change the count with PACER_POWERCUT_ITERATIONS)")

        let broker = try await TestBroker.start()
        var options = NodeOptions(config: CrashRestartTests.config, brokerPort: broker.port)
        options.launch = false
        let node: TestNode
        do {
            node = try await TestNode.start(options)
        } catch {
            await broker.stop()
            throw error
        }
        // The node's --data-dir is the mount point; what survives a cut is in disk/ beside it.
        let fs: LazyFS
        do {
            fs = try await LazyFS.mount(in: node.directory, at: node.dataDirectory)
        } catch {
            await node.stop(clearRetained: false)
            await broker.stop()
            throw error
        }
        let run = try CrashRun(node: node, seed: seed)
        run.name = "PowerCutTests"
        let tally = PowerCutTally(seed: seed)
        run.beforeRelaunch = { [unowned run] startup in
            tally.checkStarts(node: node, fs: fs) { run.problem($0) }
            try await tally.cut(fs)
            if startup { try tally.armInStartup(fs) }
        }
        run.beforeDrive = { try tally.armInWorkout(fs) }
        // Kills the node the moment an armed cut fires, then lets the held request go.
        let watcher = Task { [node, fs] in
            while !Task.isCancelled {
                if fs.hasFired {
                    node.process?.send(SIGKILL)
                    fs.release()
                    await node.kill()
                    fs.clearFired()
                }
                try? await Task.sleep(for: .milliseconds(2))
            }
        }
        let began = ContinuousClock.now
        do {
            try await node.launch()
            try await run.execute(iterations: iterations)
            await node.stop(clearRetained: false)
        } catch {
            await node.stop(clearRetained: false)
            run.problems += 1
            Issue.record(error, "[seed \(seed)] the power-cut run stopped")
        }
        watcher.cancel()
        await watcher.value
        tally.checkStarts(node: node, fs: fs) { run.problem($0) }
        let totals = try? fs.counters()
        await fs.unmount()
        await broker.stop()
        if let totals { print(tally.summary(seed: seed, totals: totals, took: ContinuousClock.now - began)) }
        #expect(tally.cuts > iterations, "[seed \(seed)] \(tally.cuts) cuts for \(iterations) iterations")
        if run.problems > 0 {
            print("--- PowerCutTests seed \(seed) failed; the node's files (log, disk/ as synced at the last cut, lazyfs.log) stay in \(node.directory.path), the broker's in \(broker.directory.path); the end of the node's log: ---\n\(node.log.suffix(20_000))")
        } else {
            try? FileManager.default.removeItem(at: node.directory)
            broker.removeDirectory()
        }
    }
}

/// What the cuts struck, and the checks of every start. Used by one task only.
final class PowerCutTally {
    var rng: SeededGenerator
    var cuts = 0
    /// Armed cuts that fired, by where they were armed; the last one armed.
    var exactInCheckpoint = 0, exactBeforeCommitSync = 0, exactInRestore = 0
    var armed: String?
    var firedSoFar: UInt64 = 0

    init(seed: UInt64) {
        rng = SeededGenerator(seed: seed &+ 1)
    }

    /// Before an iteration: half the time a cut at the next checkpoint (if one comes), a fifth
    /// at the next commit's WAL fsync.
    func armInWorkout(_ fs: LazyFS) throws {
        let draw = Double.random(in: 0..<1, using: &rng)
        if draw < 0.5 {
            try fs.arm("write", "/pacer.sqlite", count: Int.random(in: 1...6, using: &rng))
            armed = "checkpoint"
        } else if draw < 0.7 {
            try fs.arm("fsync", "/pacer.sqlite-wal")
            armed = "commit"
        }
    }

    /// Before a launch killed during start-up: half the time a cut at the restore's first WAL fsync.
    func armInStartup(_ fs: LazyFS) throws {
        if rng.chance(0.5) {
            try fs.arm("fsync", "/pacer.sqlite-wal")
            armed = "restore"
        }
    }

    /// Cuts that dropped unsynced bytes of the WAL (a transaction written, not yet fsynced),
    /// of the database file (a checkpoint copying pages, not yet fsynced), of anything, and
    /// namespace operations not yet committed.
    var cutsInWAL = 0, cutsInCheckpoint = 0, cutsDroppingData = 0, cutsDroppingMetadata = 0
    var bytesDropped: UInt64 = 0
    /// Cuts that found a file still open (the kernel had not yet released the dead node's files).
    var cutsWithOpenFiles = 0
    var recoveriesSeen = 0

    func cut(_ fs: LazyFS) async throws {
        // The node is dead; its files' releases reach the filesystem asynchronously.
        let deadline = ContinuousClock.now + .seconds(2)
        while try fs.counters()["open_files"] > 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        let before = try fs.counters()
        let fired = before["armed_fired"] > firedSoFar
        if fired {
            // It fired: the cut was made then, at that request; this one drops nothing more.
            firedSoFar = before["armed_fired"]
            switch armed {
            case "checkpoint": exactInCheckpoint += 1
            case "commit": exactBeforeCommitSync += 1
            default: exactInRestore += 1
            }
        }
        armed = nil
        try fs.cut()
        // One power cut either way: a fired one made its cut at its request (and nothing was
        // written since: every operation failed), so its figures are those of that cut.
        let counters = fired ? before : try fs.counters()
        cuts += 1
        if counters["last_cut_open_files"] > 0 { cutsWithOpenFiles += 1 }
        if (counters.lastCutFiles["/pacer.sqlite-wal"] ?? 0) > 0 { cutsInWAL += 1 }
        if (counters.lastCutFiles["/pacer.sqlite"] ?? 0) > 0 { cutsInCheckpoint += 1 }
        if counters["last_cut_bytes_dropped"] > 0 { cutsDroppingData += 1 }
        if counters["last_cut_meta_dropped"] > 0 { cutsDroppingMetadata += 1 }
        bytesDropped += counters["last_cut_bytes_dropped"]
    }

    /// The database opened at every start so far: the node never moved it aside as corrupt
    /// (its log line, or a `.corrupt-` file in the data directory).
    func checkStarts(node: TestNode, fs: LazyFS, problem: (String) -> Void) {
        let recoveries = node.log.components(separatedBy: "could not be used").count - 1
        let moved = ((try? FileManager.default.contentsOfDirectory(atPath: fs.mountpoint.path)) ?? []).filter { $0.contains(".corrupt-") }
        if recoveries > recoveriesSeen || !moved.isEmpty {
            problem("after \(cuts) power cuts the node found its database unusable and moved it aside (\(moved)); the node's log says: \(node.log.components(separatedBy: "\n").filter { $0.contains("could not be used") }.suffix(2))")
        }
        recoveriesSeen = recoveries
        if fs.process.isRunning == false {
            problem("lazyfs ended (\(ProcessEnd(waitStatus: fs.process.terminationStatus))): \(fs.log.suffix(2_000))")
        }
    }

    func summary(seed: UInt64, totals: LazyFS.Counters, took: Duration) -> String {
        func file(_ name: String) -> String {
            guard let f = totals.files[name] else { return "\(name) none" }
            return "\(name) \(f.written) written, \(f.synced) synced, \(f.fsyncs) fsyncs"
        }
        return """
            PowerCutTests: seed \(seed): \(cuts) power cuts in \(took), \(exactInCheckpoint + exactBeforeCommitSync + exactInRestore) of them at an armed moment \
            (\(exactInCheckpoint) inside a checkpoint, at one of its first page writes to the database file, \(exactBeforeCommitSync) before a commit's WAL fsync mid-workout, \
            \(exactInRestore) before the restore's first WAL fsync); \(cutsDroppingData) dropped unsynced data (\(bytesDropped) bytes in all), of them \
            \(cutsInWAL) unsynced WAL bytes (a transaction not yet fsynced), \(cutsInCheckpoint) unsynced bytes of the database file (a checkpoint in progress), \
            \(cutsDroppingMetadata) uncommitted namespace operations; \(cutsWithOpenFiles) with a file still open (the armed ones: the node was alive); \
            the database opened every time: \(recoveriesSeen == 0 ? "yes" : "no, moved aside \(recoveriesSeen) times"); \
            lazyfs: \(totals["bytes_written"]) bytes written, \(totals["bytes_synced"]) synced, \(totals["fsyncs"]) fsyncs, \(totals["fdatasyncs"]) fdatasyncs, \
            \(totals["dir_fsyncs"]) directory fsyncs, \(totals["replay_errors"]) replay errors; \(file("/pacer.sqlite")); \(file("/pacer.sqlite-wal")); \(file("/pacer.sqlite-shm"))
            """
    }
}

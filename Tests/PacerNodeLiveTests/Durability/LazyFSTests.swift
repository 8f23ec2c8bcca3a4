import Foundation
import PacerCore
import PacerTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The lazy filesystem itself (Tests/Fixtures/lazyfs/lazyfs.c), before any node runs on it
/// (PowerCutTests): what a cut drops and what it keeps, file by file, then SQLite in WAL mode
/// with the node's settings on it. Each test mounts its own, under /tmp, and unmounts it.
@Suite(
    "The lazy filesystem: a power cut drops exactly what was not synced",
    .disabled(if: LazyFS.unavailable != nil, Comment(rawValue: "skipped: \(LazyFS.unavailable ?? "")")))
struct LazyFSTests {
    @Test("a write not fsynced is gone after a cut; fsync and fdatasync keep it; the counters count")
    func unsyncedWritesAreLost() async throws {
        try await withLazyFS { fs, m in
            try put(m, "lost.txt", "lost")                       // created and written, never synced
            try put(m, "kept.txt", "kept", sync: .fsync)
            try append(m, "kept.txt", "+more")                   // after the fsync: unsynced
            try put(m, "data.txt", "data", sync: .fdatasync)
            try put(m, "never.txt", "")                          // created after the last fsync
            #expect(try get(m, "lost.txt") == "lost")            // the page cache serves it
            #expect(try get(m, "kept.txt") == "kept+more")
            #expect(try get(fs.backing, "kept.txt") == "kept")   // the disk has the synced part only
            let before = try fs.counters()
            #expect(before["bytes_written"] == 17 && before["fsyncs"] == 1 && before["fdatasyncs"] == 1, "\(before.values)")
            #expect(before["bytes_synced"] == 8 && before["unsynced_bytes"] == 9, "\(before.values)")
            #expect(before.files["/kept.txt"] == .init(written: 9, synced: 4, fsyncs: 1), "\(before.files)")

            try fs.cut()
            // lost.txt's creation was committed by the next fsync (one journal), its data never.
            #expect(try get(m, "lost.txt") == "", "unsynced data survived the cut")
            #expect(!exists(m, "never.txt"), "a file created after the last fsync survived the cut")
            #expect(try get(m, "kept.txt") == "kept")
            #expect(try get(m, "data.txt") == "data")
            let after = try fs.counters()
            #expect(after["cuts"] == 1 && after["last_cut_bytes_dropped"] == 9 && after["unsynced_bytes"] == 0, "\(after.values)")
            #expect(after["last_cut_meta_dropped"] == 1, "the creation of never.txt: \(after.values)")
            #expect(after.lastCutFiles == ["/lost.txt": 4, "/kept.txt": 5], "\(after.lastCutFiles)")
        }
    }

    @Test("a file's size is data: a truncation is lost unless fsynced; shrink then grow reads zeros")
    func truncationIsData() async throws {
        try await withLazyFS { fs, m in
            try put(m, "t.bin", String(repeating: "x", count: 100), sync: .fsync)
            try truncate(m, "t.bin", to: 10)
            #expect(try size(m, "t.bin") == 10)
            try fs.cut()
            #expect(try get(m, "t.bin") == String(repeating: "x", count: 100), "an unsynced truncation survived the cut")

            try truncate(m, "t.bin", to: 10)
            try truncate(m, "t.bin", to: 50)
            try sync(m, "t.bin", .fsync)
            try fs.cut()
            let bytes = try Array(Data(contentsOf: m.appendingPathComponent("t.bin")))
            #expect(bytes == Array(repeating: UInt8(ascii: "x"), count: 10) + Array(repeating: 0, count: 40))
            #expect(try Array(Data(contentsOf: fs.backing.appendingPathComponent("t.bin"))) == bytes)
        }
    }

    @Test("namespace operations are lost without an fsync; any fsync commits them all, in order")
    func namespaceOperations() async throws {
        try await withLazyFS { fs, m in
            try put(m, "r.txt", "r", sync: .fsync)
            try rename(m, "r.txt", "s.txt")
            try fs.cut()
            #expect(exists(m, "r.txt") && !exists(m, "s.txt"), "an unsynced rename survived the cut")

            try rename(m, "r.txt", "s.txt")
            try syncDirectory(m)
            try fs.cut()
            let renamed = try get(m, "s.txt")
            #expect(!exists(m, "r.txt") && renamed == "r", "a rename did not survive its directory's fsync")

            try unlinkFile(m, "s.txt")
            try fs.cut()
            #expect(try get(m, "s.txt") == "r", "an unsynced unlink survived the cut")

            // A new directory and a file in it: the file's fsync commits the journal (mkdir,
            // create) before its data, as an ext4 journal commit does.
            try FileManager.default.createDirectory(at: m.appendingPathComponent("d"), withIntermediateDirectories: false)
            try put(m, "d/x.txt", "x", sync: .fsync)
            // A rename over an existing file, made durable by another file's fsync.
            try put(m, "u.txt", "u", sync: .fsync)
            try put(m, "v.txt", "v", sync: .fsync)
            try rename(m, "u.txt", "v.txt")
            try put(m, "w.txt", "w", sync: .fdatasync)
            try fs.cut()
            #expect(try get(m, "d/x.txt") == "x")
            let replaced = try get(m, "v.txt")
            #expect(!exists(m, "u.txt") && replaced == "u")
            #expect(try fs.counters()["replay_errors"] == 0)
        }
    }

    @Test("an armed cut fires at the exact request: the writer is held and killed, the power stays off until the next cut")
    func armedCut() async throws {
        try await withLazyFS { fs, m in
            try put(m, "a.txt", "a", sync: .fsync)
            try fs.arm("write", "/b.txt")
            // A writer of its own: it blocks in its write() until the test lets the request go.
            let code = "f = open('\(path(m, "b.txt"))', 'w'); f.write('b'); f.flush(); print('returned', flush=True)"
            let writer = try TestProcess.launch(try python3(), ["-c", code], outputFile: fs.backing.deletingLastPathComponent().appendingPathComponent("writer.log"))
            let deadline = ContinuousClock.now + .seconds(20)
            while !fs.hasFired, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            #expect(fs.hasFired, "the armed cut did not fire at the write to b.txt")
            writer.send(SIGKILL)
            fs.release()
            await writer.kill()
            fs.clearFired()
            #expect(!writer.output.contains("returned"), "the writer ran on after the cut: \(writer.output)")
            let counters = try fs.counters()
            #expect(counters["armed_fired"] == 1 && counters["dead"] == 1 && counters["cuts"] == 1, "\(counters.values)")
            // The power is off: every operation fails until the next cut.
            #expect(throws: (any Error).self) { try put(m, "c.txt", "c") }
            try fs.cut()
            #expect(try fs.counters()["dead"] == 0)
            #expect(try get(m, "a.txt") == "a")
            #expect(!exists(m, "b.txt"), "b.txt was created after the last fsync")
            try put(m, "c.txt", "c")  // the power is back
        }
    }

    @Test("SQLite in WAL mode (the node's settings): synchronous=FULL commits survive a cut, synchronous=OFF ones do not, and it opens")
    func sqliteSynchronousCommits() async throws {
        try await withLazyFS { fs, m in
            let database = m.appendingPathComponent("t.sqlite")
            let killed = try await python(["unsynced", database.path], directory: fs.backing.deletingLastPathComponent())
            #expect(killed == .signalled(SIGKILL), "the writer was to SIGKILL itself: \(killed)")
            try fs.cut()
            #expect(try fs.counters()["last_cut_bytes_dropped"] > 0)
            let check = try checkDatabase(database, directory: fs.backing.deletingLastPathComponent())
            #expect(check["integrity"] == ["ok"], "\(check)")
            #expect(check["count"]?.int == 20 && check["contiguous"]?.bool == true,
                    "rows 1-20 were committed with synchronous=FULL and 21-30 with OFF: \(check)")
        }
    }

    @Test("SQLite in WAL mode, cut at random moments of a writer and inside checkpoints: every acknowledged row is kept and the database opens every time")
    func sqliteCutsAtRandomMoments() async throws {
        let rounds = max(1, environmentInteger("PACER_LAZYFS_SQLITE_CUTS", default: 15))
        let seed = environmentSeed("PACER_LAZYFS_SEED", fixed: 1)
        var rng = SeededGenerator(seed: seed)
        try await withLazyFS { fs, m in
            let work = fs.backing.deletingLastPathComponent()
            let database = m.appendingPathComponent("w.sqlite")
            let script = LazyFS.source.deletingLastPathComponent().appendingPathComponent("sqlite-wal.py").path
            var acknowledgedTotal = 0, midCheckpoint = 0, midTransaction = 0, armedFired = 0
            for round in 1...rounds {
                // Half the rounds: a cut inside the next checkpoint, at one of its first page writes
                // to the database file (the WAL synced, the database file half written).
                if rng.chance(0.5) { try fs.arm("write", "/w.sqlite", count: Int.random(in: 1...6, using: &rng)) }
                let output = work.appendingPathComponent("writer-\(round).log")
                let writer = try TestProcess.launch(try python3(), [script, "writer", database.path], outputFile: output)
                // A quarter of the rounds: killed while it starts (creating the table, recovering
                // the WAL); the others once it has acknowledged a first row (a loaded machine
                // starts Python slowly), then at a random instant.
                if !rng.chance(0.25) {
                    let started = ContinuousClock.now + .seconds(20)
                    while ContinuousClock.now < started, !writer.output.contains("\n"), !fs.hasFired, writer.isRunning {
                        try await Task.sleep(for: .milliseconds(2))
                    }
                }
                let deadline = ContinuousClock.now + rng.milliseconds(0...500)
                while ContinuousClock.now < deadline, !fs.hasFired { try await Task.sleep(for: .milliseconds(2)) }
                let fired = fs.hasFired
                if fired {
                    writer.send(SIGKILL)
                    fs.release()
                    armedFired += 1
                }
                await writer.kill()
                fs.clearFired()
                let acknowledged = writer.output.split(separator: "\n").compactMap { Int($0) }.max() ?? 0
                // A fired cut was made at its request, and nothing written since: its figures count.
                let before = try fs.counters()
                try fs.cut()
                let counters = fired ? before : try fs.counters()
                if (counters.lastCutFiles["/w.sqlite"] ?? 0) > 0 { midCheckpoint += 1 }
                if (counters.lastCutFiles["/w.sqlite-wal"] ?? 0) > 0 { midTransaction += 1 }
                let check = try checkDatabase(database, directory: work)
                acknowledgedTotal = max(acknowledgedTotal, acknowledged)
                #expect(check["integrity"] == ["ok"], "[seed \(seed)] round \(round): \(check)")
                #expect((check["max"]?.int ?? 0) >= acknowledged && check["contiguous"]?.bool == true,
                        "[seed \(seed)] round \(round): row \(acknowledged) was acknowledged, after the cut: \(check)")
            }
            let totals = try fs.counters()
            print("LazyFSTests: seed \(seed): \(rounds) cuts of a SQLite writer (\(armedFired) inside a checkpoint), \(acknowledgedTotal) rows acknowledged in all, none lost; \(midTransaction) cuts dropped unsynced WAL bytes, \(midCheckpoint) cuts dropped unsynced bytes of the database file (a checkpoint in progress); \(totals["bytes_written"]) bytes written, \(totals["bytes_synced"]) synced, \(totals["bytes_dropped"]) dropped")
            #expect(acknowledgedTotal > 0, "the writer acknowledged nothing: the test drove nothing")
        }
    }

    // MARK: Helpers

    enum Sync { case none, fsync, fdatasync }

    /// Mounts a lazy filesystem under a new temporary directory, runs `body` with it and its
    /// mount point, and unmounts it and removes the directory on every path.
    func withLazyFS(_ body: (LazyFS, URL) async throws -> Void) async throws {
        let work = try makeTemporaryDirectory("pacer-lazyfs")
        let fs: LazyFS
        do {
            fs = try await LazyFS.mount(in: work, at: work.appendingPathComponent("mnt"))
        } catch {
            try? FileManager.default.removeItem(at: work)
            throw error
        }
        do {
            try await body(fs, fs.mountpoint)
        } catch {
            await fs.unmount()
            print("--- lazyfs log ---\n\(fs.log.suffix(4_000))")
            try? FileManager.default.removeItem(at: work)
            throw error
        }
        await fs.unmount()
        #expect(!fs.isMounted, "\(fs.mountpoint.path) is still mounted")
        try? FileManager.default.removeItem(at: work)
    }

    func path(_ base: URL, _ name: String) -> String { base.appendingPathComponent(name).path }

    func put(_ base: URL, _ name: String, _ text: String, sync: Sync = .none) throws {
        try writeBytes(path(base, name), Array(text.utf8), flags: O_WRONLY | O_CREAT | O_TRUNC, sync: sync)
    }

    func append(_ base: URL, _ name: String, _ text: String) throws {
        try writeBytes(path(base, name), Array(text.utf8), flags: O_WRONLY | O_APPEND, sync: .none)
    }

    func writeBytes(_ path: String, _ bytes: [UInt8], flags: Int32, sync: Sync) throws {
        let fd = open(path, flags | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw HarnessError("open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw HarnessError("write \(path): \(String(cString: strerror(errno)))") }
        try syncDescriptor(fd, sync, path)
    }

    func syncDescriptor(_ fd: Int32, _ sync: Sync, _ path: String) throws {
        let rc: Int32 = switch sync {
        case .none: 0
        case .fsync: fsync(fd)
        case .fdatasync: fdatasync(fd)
        }
        guard rc == 0 else { throw HarnessError("sync \(path): \(String(cString: strerror(errno)))") }
    }

    func sync(_ base: URL, _ name: String, _ sync: Sync) throws {
        let fd = open(path(base, name), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw HarnessError("open \(name): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        try syncDescriptor(fd, sync, name)
    }

    func syncDirectory(_ base: URL) throws {
        let fd = open(base.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0, fsync(fd) == 0 else { throw HarnessError("fsync of the directory \(base.path): \(String(cString: strerror(errno)))") }
        close(fd)
    }

    func get(_ base: URL, _ name: String) throws -> String {
        try String(contentsOfFile: path(base, name), encoding: .utf8)
    }

    func exists(_ base: URL, _ name: String) -> Bool {
        var st = stat()
        return lstat(path(base, name), &st) == 0
    }

    func size(_ base: URL, _ name: String) throws -> Int {
        var st = stat()
        guard stat(path(base, name), &st) == 0 else { throw HarnessError("stat \(name): \(String(cString: strerror(errno)))") }
        return Int(st.st_size)
    }

    func truncate(_ base: URL, _ name: String, to length: Int) throws {
        guard Glibc.truncate(path(base, name), off_t(length)) == 0 else { throw HarnessError("truncate \(name): \(String(cString: strerror(errno)))") }
    }

    func rename(_ base: URL, _ from: String, _ to: String) throws {
        guard Glibc.rename(path(base, from), path(base, to)) == 0 else { throw HarnessError("rename \(from): \(String(cString: strerror(errno)))") }
    }

    func unlinkFile(_ base: URL, _ name: String) throws {
        guard unlink(path(base, name)) == 0 else { throw HarnessError("unlink \(name): \(String(cString: strerror(errno)))") }
    }

    func python3() throws -> String {
        guard let python = LazyFS.executable("python3") else { throw HarnessError("python3 is needed for the SQLite checks (scripts/setup installs it)") }
        return python
    }

    /// Runs Tests/Fixtures/lazyfs/sqlite-wal.py with `arguments` to its end; returns how it ended.
    func python(_ arguments: [String], directory: URL) async throws -> ProcessEnd {
        let script = LazyFS.source.deletingLastPathComponent().appendingPathComponent("sqlite-wal.py").path
        let process = try TestProcess.launch(try python3(), [script] + arguments, outputFile: directory.appendingPathComponent("python.log"))
        guard await process.waitForExit(timeout: .seconds(60)) else {
            await process.kill()
            throw HarnessError("sqlite-wal.py \(arguments) did not finish within 60 s: \(process.output)")
        }
        await process.terminate()  // (it has ended: this only reaps its watchdog)
        return ProcessEnd(waitStatus: process.terminationStatus)
    }

    /// `sqlite-wal.py check`: the database opened (WAL recovery), its integrity and rows.
    func checkDatabase(_ database: URL, directory: URL) throws -> JSONValue {
        let script = LazyFS.source.deletingLastPathComponent().appendingPathComponent("sqlite-wal.py").path
        let output = try TestProcess.run(try python3(), [script, "check", database.path], in: directory)
        guard let line = output.split(separator: "\n").last, let json = decodeJSON(Array(line.utf8)) else {
            throw HarnessError("sqlite-wal.py check printed no JSON: \(output)")
        }
        return json
    }
}

import Foundation
import Testing
@testable import PacerStore

@Suite("Corruption and crash recovery")
struct RecoveryTests {
    /// `pacer.sqlite.corrupt-<yyyyMMdd>T<HHmmss>Z`
    static func isMovedName(_ name: String) -> Bool {
        name.wholeMatch(of: #/pacer\.sqlite\.corrupt-\d{8}T\d{6}Z/#) != nil
    }

    /// Checks a recovery: the message names both paths, the moved file holds the
    /// old bytes, and a fresh, working database is in place.
    func expectRecovered(
        _ directory: String, _ recovery: String?, _ database: PacerDatabase, original: Data,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let moved = contents(of: directory).filter { Self.isMovedName($0) }
        #expect(moved.count == 1, sourceLocation: sourceLocation)
        guard let name = moved.first, let recovery else {
            Issue.record("no recovery: \(String(describing: recovery)), files \(contents(of: directory))", sourceLocation: sourceLocation)
            return
        }
        let movedPath = directory + "/" + name
        #expect(recovery.contains(database.path), sourceLocation: sourceLocation)
        #expect(recovery.contains(movedPath), sourceLocation: sourceLocation)
        #expect(try Data(contentsOf: URL(fileURLWithPath: movedPath)) == original, sourceLocation: sourceLocation)
        #expect(try database.loadTimers().isEmpty, sourceLocation: sourceLocation)
        try database.apply(batch(upsert: [timer("fresh")]))
        #expect(try database.loadTimers().map(\.id) == ["fresh"], sourceLocation: sourceLocation)
        #expect(try database.pragma("journal_mode") == "wal", sourceLocation: sourceLocation)
    }

    @Test("a file of garbage is moved aside with a timestamped name and a fresh database is created")
    func garbageFile() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/pacer.sqlite"
            let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
            try garbage.write(to: URL(fileURLWithPath: path))
            let (database, recovery) = try PacerDatabase.open(directory: directory)
            try expectRecovered(directory, recovery, database, original: garbage)
            #expect(recovery?.contains("started with an empty database") == true)
        }
    }

    @Test("a text file in place of the database is moved aside")
    func textFile() throws {
        try withTemporaryDirectory { directory in
            let text = Data("timers: none\n".utf8)
            try text.write(to: URL(fileURLWithPath: directory + "/pacer.sqlite"))
            let (database, recovery) = try PacerDatabase.open(directory: directory)
            try expectRecovered(directory, recovery, database, original: text)
        }
    }

    @Test("its -wal and -shm files move with it, and names never collide")
    func companionsAndCollisions() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/pacer.sqlite"
            let instant = Date(timeIntervalSince1970: 1_790_000_000)  // 2026-09-21T14:13:20Z
            for round in 1...2 {
                try Data(repeating: 0xAB, count: 4096).write(to: URL(fileURLWithPath: path))
                try Data(repeating: 0xCD, count: 100).write(to: URL(fileURLWithPath: path + "-wal"))
                try Data(repeating: 0xEF, count: 100).write(to: URL(fileURLWithPath: path + "-shm"))
                let (database, recovery) = try PacerDatabase.open(directory: directory, extraMigrations: [], now: instant)
                let expected = path + ".corrupt-20260921T141320Z" + (round == 1 ? "" : "-2")
                #expect(recovery?.contains(expected) == true)
                #expect(try Data(contentsOf: URL(fileURLWithPath: expected)) == Data(repeating: 0xAB, count: 4096))
                #expect(try Data(contentsOf: URL(fileURLWithPath: expected + "-wal")) == Data(repeating: 0xCD, count: 100))
                // The -shm is an index SQLite rebuilds (the read-only check rewrites it): it moves, its bytes may change.
                #expect(fileExists(expected + "-shm"))
                #expect(try database.loadTimers().isEmpty)
                try database.close()
                // Make the live files unusable again for the next round.
                try? FileManager.default.removeItem(atPath: path + "-wal")
                try? FileManager.default.removeItem(atPath: path + "-shm")
            }
        }
    }

    @Test("a database with damaged pages fails its integrity check and is moved aside")
    func damagedPages() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/pacer.sqlite"
            do {
                let database = try openFresh(directory)
                let payload = [UInt8](repeating: 0x41, count: 300)
                for index in 0..<300 {
                    var record = event("t\(index % 7)", "phase", revision: index)
                    record.payload = payload
                    try database.apply(batch(upsert: [timer("t\(index % 7)", revision: index)], events: [record]))
                }
                try database.close()  // checkpoints: everything is in pacer.sqlite now
            }
            #expect(!fileExists(path + "-wal") || fileSize(path + "-wal") == 0)
            #expect(fileSize(path) > 40_960)
            try scribble(path, offset: 4096 * 3, count: 4096 * 6)
            let damaged = try Data(contentsOf: URL(fileURLWithPath: path))
            let (database, recovery) = try PacerDatabase.open(directory: directory)
            try expectRecovered(directory, recovery, database, original: damaged)
        }
    }

    @Test("a SQLite database that is not Pacer's is moved aside")
    func foreignDatabase() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/pacer.sqlite"
            try PacerDatabase.executeForTesting(
                databaseAt: path, "CREATE TABLE timers (name TEXT); INSERT INTO timers VALUES ('mine')")
            let original = try Data(contentsOf: URL(fileURLWithPath: path))
            let (database, recovery) = try PacerDatabase.open(directory: directory)
            try expectRecovered(directory, recovery, database, original: original)
            #expect(recovery?.contains("not a Pacer database: it has the tables timers and no Pacer schema") == true)
        }
    }

    @Test("a directory in place of the database file is moved aside")
    func directoryInPlace() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/pacer.sqlite"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            let (database, recovery) = try PacerDatabase.open(directory: directory)
            let moved = contents(of: directory).filter { Self.isMovedName($0) }
            #expect(moved.count == 1)
            #expect(recovery?.contains(path) == true)
            #expect(recovery?.contains("it is not a regular file") == true)
            try database.apply(batch(upsert: [timer("a")]))
            #expect(try database.loadTimers().count == 1)
        }
    }

    @Test("a WAL left without its database file is moved aside, not replayed into a new file")
    func orphanWAL() throws {
        try withTemporaryDirectory { root in
            let database = try openFresh(root + "/live")
            try database.apply(batch(upsert: [timer("a")]))
            try FileManager.default.createDirectory(atPath: root + "/orphan", withIntermediateDirectories: false)
            try FileManager.default.copyItem(atPath: database.path + "-wal", toPath: root + "/orphan/pacer.sqlite-wal")

            let (fresh, recovery) = try PacerDatabase.open(directory: root + "/orphan")
            #expect(recovery?.contains("its -wal file was left without the database file") == true)
            let moved = contents(of: root + "/orphan").filter { $0.hasPrefix("pacer.sqlite.corrupt-") }
            #expect(moved.count == 1)
            #expect(moved.first?.hasSuffix("-wal") == true)
            #expect(try fresh.loadTimers().isEmpty)
            try fresh.apply(batch(upsert: [timer("b")]))
            #expect(try fresh.loadTimers().map(\.id) == ["b"])
        }
    }

    @Test("an empty file is a valid empty database: no recovery")
    func emptyFile() throws {
        try withTemporaryDirectory { directory in
            #expect(FileManager.default.createFile(atPath: directory + "/pacer.sqlite", contents: Data()))
            let database = try openFresh(directory)
            try database.apply(batch(upsert: [timer("a")]))
            #expect(try database.loadTimers().count == 1)
        }
    }

    @Test("a garbage WAL file beside a good database is ignored: data intact, no recovery")
    func garbageWAL() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/pacer.sqlite"
            do {
                let database = try openFresh(directory)
                try database.apply(batch(upsert: [timer("a")], events: [event("a", "started")]))
                try database.close()
            }
            try Data((0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }).write(to: URL(fileURLWithPath: path + "-wal"))
            try Data(repeating: 0x55, count: 32_768).write(to: URL(fileURLWithPath: path + "-shm"))
            let database = try openFresh(directory)
            #expect(try database.loadTimers().map(\.id) == ["a"])
            #expect(try database.unpublishedEvents().map(\.type) == ["started"])
            try database.apply(batch(upsert: [timer("b")]))
            #expect(try database.loadTimers().map(\.id) == ["a", "b"])
        }
    }

    /// A crash (or power cut) is simulated by copying the database files while the
    /// writer is still open, without a checkpoint: what `apply` has returned for
    /// must be in those files.
    func crashCopy(from directory: String, to copy: String) throws {
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(atPath: directory + "/pacer.sqlite" + suffix, toPath: copy + "/pacer.sqlite" + suffix)
        }
    }

    @Test("after a crash, every applied batch is there")
    func crashKeepsCommits() throws {
        try withTemporaryDirectory { root in
            let database = try openFresh(root + "/live")
            try database.apply(batch(upsert: [timer("a")], events: [event("a", "started")]))
            try database.apply(batch(upsert: [timer("b")], requests: [RequestRecord(id: "r", reply: [], atMs: 1)]))
            #expect(fileSize(database.path + "-wal") > 0)
            try crashCopy(from: root + "/live", to: root + "/crashed")

            let restored = try openFresh(root + "/crashed")
            #expect(try restored.loadTimers().map(\.id) == ["a", "b"])
            #expect(try restored.unpublishedEvents().map(\.type) == ["started"])
            #expect(try restored.loadRequests(sinceMs: 0).map(\.id) == ["r"])
        }
    }

    @Test("a WAL torn in its last transaction loses only that transaction")
    func tornWAL() throws {
        try withTemporaryDirectory { root in
            let database = try openFresh(root + "/live")
            try database.apply(batch(upsert: [timer("a")], events: [event("a", "started")]))
            try database.apply(batch(upsert: [timer("b")], events: [event("b", "started")]))
            try crashCopy(from: root + "/live", to: root + "/crashed")
            let wal = root + "/crashed/pacer.sqlite-wal"
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: wal))
            try handle.truncate(atOffset: fileSize(wal) - 100)  // the last frame is incomplete
            try handle.close()

            let restored = try openFresh(root + "/crashed")
            #expect(try restored.loadTimers().map(\.id) == ["a"])
            #expect(try restored.unpublishedEvents().map(\.timer) == ["a"])
            // And it goes on normally.
            let seqs = try restored.apply(batch(upsert: [timer("c")], events: [event("c", "started")]))
            #expect(seqs.count == 1)
            #expect(try restored.loadTimers().map(\.id) == ["a", "c"])
        }
    }

    @Test("a WAL whose frames are scribbled over is cut at the first bad frame")
    func scribbledWAL() throws {
        try withTemporaryDirectory { root in
            let database = try openFresh(root + "/live")
            try database.apply(batch(upsert: [timer("a")]))
            let walBefore = fileSize(database.path + "-wal")
            try database.apply(batch(upsert: [timer("b")]))
            try crashCopy(from: root + "/live", to: root + "/crashed")
            // Damage the frames of the second transaction: checksums no longer match.
            try scribble(root + "/crashed/pacer.sqlite-wal", offset: walBefore + 8, count: 64)

            let restored = try openFresh(root + "/crashed")
            #expect(try restored.loadTimers().map(\.id) == ["a"])
        }
    }
}

import Foundation
import Testing
@testable import PacerStore

@Suite("Migrations")
struct MigrationTests {
    @Test("the first migration is v1")
    func identifiers() {
        #expect(Schema.migrationIdentifiers.first == "v1")
    }

    @Test("a database created with only the first schema opens, keeps its data and is migrated")
    func fromFirstSchema() throws {
        try withTemporaryDirectory { directory in
            try PacerDatabase.createForTesting(directory: directory, upTo: "v1", then: """
                INSERT INTO timers (id, machine, revision, restore_policy, updated_at_ms)
                    VALUES ('old', CAST('{"v":1}' AS BLOB), 4, 'pause', 77);
                INSERT INTO events (timer, type, revision, due_ms, at_ms, payload, published)
                    VALUES ('old', 'finished', 4, 70, 71, CAST('{}' AS BLOB), 0);
                INSERT INTO requests (id, reply, at_ms) VALUES ('r1', CAST('{"ok":true}' AS BLOB), 50);
                INSERT INTO meta (key, value) VALUES ('wall_clock_ms', '77');
                """)
            let database = try openFresh(directory)
            #expect(try database.appliedMigrations() == Schema.migrationIdentifiers)
            #expect(try database.loadTimers() == [
                TimerRecord(id: "old", machine: bytes(#"{"v":1}"#), revision: 4, restorePolicy: "pause", updatedAtMs: 77),
            ])
            #expect(try database.hasEvent(timer: "old", type: "finished", revision: 4))
            #expect(try database.unpublishedEvents().map(\.payload) == [bytes("{}")])
            #expect(try database.request(id: "r1")?.reply == bytes(#"{"ok":true}"#))
            #expect(try database.meta("wall_clock_ms") == "77")
            // New events continue after the old ones.
            let seqs = try database.apply(batch(events: [event("old", "started", revision: 5)]))
            #expect(seqs.first.map { $0 > 1 } == true)
        }
    }

    @Test("later migrations append: a v1 database with data upgrades through them")
    func appendedMigrations() throws {
        let later: [(id: String, sql: String)] = [
            (id: "v2-test", sql: "ALTER TABLE timers ADD COLUMN note TEXT NOT NULL DEFAULT 'none'"),
            (id: "v3-test", sql: "CREATE TABLE zones (id TEXT PRIMARY KEY, max_hr INTEGER)"),
        ]
        try withTemporaryDirectory { directory in
            do {
                let database = try openFresh(directory)
                try database.apply(batch(upsert: [timer("a", revision: 2)], events: [event("a", "started")]))
            }
            let (upgraded, recovery) = try PacerDatabase.open(directory: directory, extraMigrations: later)
            #expect(recovery == nil)
            #expect(try upgraded.appliedMigrations() == Schema.migrationIdentifiers + ["v2-test", "v3-test"])
            #expect(try upgraded.loadTimers() == [timer("a", revision: 2)])
            #expect(try upgraded.unpublishedEvents().map(\.type) == ["started"])
            try upgraded.apply(batch(upsert: [timer("b")]))
            #expect(try upgraded.loadTimers().map(\.id) == ["a", "b"])
        }
    }

    @Test("pages are 1 KiB (fewer bytes per command on an SD card): a new database has them, an older one with 4 KiB pages is converted once and keeps its data")
    func pageSize() throws {
        try withTemporaryDirectory { directory in
            do {
                let database = try openFresh(directory)
                #expect(try database.pragma("page_size") == "1024")
                try database.apply(batch(upsert: [timer("a", revision: 2)], events: [event("a", "started")]))
                try database.close()
            }
            // As an older node made it, with 4 KiB pages.
            try PacerDatabase.executeForTesting(databaseAt: directory + "/pacer.sqlite",
                                                "PRAGMA journal_mode = DELETE; PRAGMA page_size = 4096; VACUUM; PRAGMA journal_mode = WAL")
            do {
                let old = try PacerDatabase.openReadOnly(directory: directory)
                #expect(try old.pragma("page_size") == "4096")
            }
            let database = try openFresh(directory)
            #expect(try database.pragma("page_size") == "1024")
            #expect(try database.pragma("journal_mode") == "wal")
            #expect(try database.loadTimers() == [timer("a", revision: 2)])
            #expect(try database.unpublishedEvents().map(\.type) == ["started"])
        }
    }

    @Test("a database from a newer Pacer is refused with a clear error and left in place")
    func newerDatabase() throws {
        try withTemporaryDirectory { directory in
            do {
                let (database, _) = try PacerDatabase.open(
                    directory: directory, extraMigrations: [(id: "v99-future", sql: "CREATE TABLE future (x)")])
                try database.apply(batch(upsert: [timer("a")]))
            }
            let error = #expect(throws: StoreError.self) { try PacerDatabase.open(directory: directory) }
            #expect(error?.kind == .schema)
            #expect(error?.message.contains("newer version of Pacer") == true)
            #expect(error?.message.contains("v99-future") == true)
            #expect(contents(of: directory).allSatisfy { !$0.contains("corrupt") })
            // The lock was released: the newer schema can still be opened by the newer code.
            let (database, _) = try PacerDatabase.open(
                directory: directory, extraMigrations: [(id: "v99-future", sql: "CREATE TABLE future (x)")])
            #expect(try database.loadTimers().map(\.id) == ["a"])
            // And `pacer history` of this version can still read it.
            let reader = try PacerDatabase.openReadOnly(directory: directory)
            #expect(try reader.loadTimers().map(\.id) == ["a"])
        }
    }

    @Test("openReadOnly refuses a database that misses migrations")
    func readOnlyOlderSchema() throws {
        try withTemporaryDirectory { directory in
            try PacerDatabase.executeForTesting(databaseAt: directory + "/pacer.sqlite", "CREATE TABLE other (x)")
            let error = #expect(throws: StoreError.self) { try PacerDatabase.openReadOnly(directory: directory) }
            #expect(error?.kind == .schema)
            #expect(error?.message.contains("run the node") == true)
        }
    }
}

import GRDB

/// The database schema, as an append-only list of GRDB migrations.
///
/// Rules for later migrations: never edit or remove a registered migration
/// (shipped databases have already run it); append a new one with the next
/// identifier ("v2", "v3", ...) and a test that upgrades a "v1" database with
/// data in it.
enum Schema {
    /// Identifiers of all migrations, in order. The last one is the current schema.
    static var migrationIdentifiers: [String] { migrator().migrations }

    /// The migrator. `extra` appends test-only migrations (identifier, SQL) after
    /// the real ones, so that tests can exercise the append path.
    static func migrator(extra: [(id: String, sql: String)] = []) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: v1)
        }
        migrator.registerMigration("v2") { db in
            try db.execute(sql: v2)
        }
        for migration in extra {
            migrator.registerMigration(migration.id) { db in
                try db.execute(sql: migration.sql)
            }
        }
        return migrator
    }

    /// The first schema. Timestamps are epoch milliseconds (INTEGER); JSON is
    /// stored as BLOB, byte for byte.
    static let v1 = """
        CREATE TABLE timers (
            id TEXT NOT NULL PRIMARY KEY CHECK (length(id) > 0),
            machine BLOB NOT NULL,
            revision INTEGER NOT NULL,
            restore_policy TEXT CHECK (restore_policy IN ('resume', 'pause', 'discard')),
            updated_at_ms INTEGER NOT NULL
        );

        CREATE TABLE events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            timer TEXT NOT NULL CHECK (length(timer) > 0),
            type TEXT NOT NULL CHECK (length(type) > 0),
            revision INTEGER NOT NULL,
            due_ms INTEGER NOT NULL,
            at_ms INTEGER NOT NULL,
            payload BLOB NOT NULL,
            published INTEGER NOT NULL DEFAULT 0 CHECK (published IN (0, 1))
        );
        -- Exactly once: the same event is never stored (nor published) twice.
        CREATE UNIQUE INDEX events_identity ON events (timer, type, revision, due_ms);
        -- The outbox: unpublished events in seq order.
        CREATE INDEX events_outbox ON events (seq) WHERE published = 0;
        -- History per timer, newest first.
        CREATE INDEX events_timer ON events (timer, seq);
        -- History since an instant, and pruning by age.
        CREATE INDEX events_at ON events (at_ms);

        CREATE TABLE requests (
            id TEXT NOT NULL PRIMARY KEY CHECK (length(id) > 0),
            reply BLOB NOT NULL,
            at_ms INTEGER NOT NULL
        );
        CREATE INDEX requests_at ON requests (at_ms);

        CREATE TABLE meta (
            key TEXT NOT NULL PRIMARY KEY,
            value TEXT NOT NULL
        );
        """

    /// Fewer pages per write (a node on an SD card writes what a command changes and
    /// little more). Each index costs a page of every insert; these four served queries that
    /// run rarely and scan tables the retention keeps small: `history` by timer or instant,
    /// the hourly pruning by age, and the outbox's read of unpublished events at a connect.
    /// What stays: `events_identity`, the exactly-once rule.
    static let v2 = """
        DROP INDEX events_outbox;
        DROP INDEX events_timer;
        DROP INDEX events_at;
        DROP INDEX requests_at;
        """
}

import Foundation
import GRDB
import Synchronization

/// Pacer's SQLite database: `<data-dir>/pacer.sqlite`.
///
/// One writer per data directory (an `flock` on `<data-dir>/pacer.lock` enforces
/// it); any number of read-only handles (`openReadOnly`) may read at the same
/// time thanks to WAL. All methods are synchronous and thread-safe.
///
/// Durability: `journal_mode=WAL` with `synchronous=FULL`: a write returns only
/// after its transaction has been fsynced to the WAL, so an accepted command
/// survives a power cut once `apply` has returned. See docs/storage.md.
public final class PacerDatabase: Sendable {
    /// The path of the database file.
    public let path: String
    /// True for handles from `openReadOnly`: writes throw `StoreError.Kind.readOnly`.
    public let isReadOnly: Bool

    private let pool: DatabasePool
    private let state: Mutex<State>

    private struct State {
        var lockDescriptor: Int32?
        var closed = false
    }

    private init(path: String, pool: DatabasePool, readOnly: Bool, lockDescriptor: Int32?) {
        self.path = path
        self.pool = pool
        self.isReadOnly = readOnly
        self.state = Mutex(State(lockDescriptor: lockDescriptor))
    }

    deinit {
        // Close the connections before releasing the single-writer lock.
        state.withLock { state in
            if !state.closed {
                checkpoint()
                try? pool.close()
            }
            if let fd = state.lockDescriptor { DataDirectory.unlock(fd) }
        }
    }

    // MARK: - Opening

    /// Opens (creating the directory and file if needed) `<directory>/pacer.sqlite`
    /// in WAL mode with `synchronous=FULL`, and runs the migrations.
    ///
    /// If the file cannot be opened, is not a database, fails `PRAGMA quick_check`,
    /// or holds a schema that is not Pacer's, it is moved aside to
    /// `pacer.sqlite.corrupt-<UTC timestamp>` (with its `-wal`/`-shm`) and a fresh
    /// database is created; `recovery` then says what happened, naming both
    /// paths (the node logs it). Nothing is ever deleted.
    ///
    /// Throws (nothing is moved aside) when the directory cannot be created or is
    /// read-only (`.directory`), the file or its `-wal`/`-shm` cannot be written by
    /// this user (`.readOnly`), another process writes to it (`.locked`), the
    /// file was written by a newer Pacer (`.schema`), the disk is full or on I/O
    /// errors; each message says what to do.
    public static func open(directory: String) throws(StoreError) -> (database: PacerDatabase, recovery: String?) {
        try open(directory: directory, migrator: Schema.migrator(), now: Date())
    }

    /// `open(directory:)` with test hooks: the migrator and the clock naming moved-aside files.
    static func open(
        directory: String, migrator: DatabaseMigrator, now: @autoclosure () -> Date
    ) throws(StoreError) -> (database: PacerDatabase, recovery: String?) {
        let directory = try DataDirectory.prepare(directory)
        let lock = try DataDirectory.lock(directory)
        let path = DataDirectory.databasePath(in: directory)
        let pool: DatabasePool
        let recovery: String?
        do throws(StoreError) {
            try DataDirectory.checkFileAccess(path)
            (pool, recovery) = try openOrRecover(path: path, migrator: migrator, now: now())
        } catch {
            DataDirectory.unlock(lock)
            throw error
        }
        // Make the creation of pacer.sqlite (and its WAL) itself durable.
        DataDirectory.syncDirectory(directory)
        return (PacerDatabase(path: path, pool: pool, readOnly: false, lockDescriptor: lock), recovery)
    }

    /// Read-only open for `pacer history` while the node runs (WAL allows readers
    /// beside the writer; they see every committed transaction). Takes no lock,
    /// checks nothing but the schema, never moves anything.
    public static func openReadOnly(directory: String) throws(StoreError) -> PacerDatabase {
        let directory = DataDirectory.normalize(directory)
        let path = DataDirectory.databasePath(in: directory)
        guard DataDirectory.exists(path) else {
            throw StoreError(.notFound, "no Pacer database at \(path); check --data-dir (the node creates the database when it first runs)")
        }
        var configuration = baseConfiguration()
        configuration.readonly = true
        let pool = try catching("cannot open database \(path) read-only") {
            try DatabasePool(path: path, configuration: configuration)
        }
        let migrator = Schema.migrator()
        let complete = try catching("cannot read database \(path)") {
            try pool.read { db in try migrator.hasCompletedMigrations(db) }
        }
        guard complete else {
            try? pool.close()
            throw StoreError(.schema, "database \(path) has an older schema; run the node (pacer run) once with this --data-dir to upgrade it")
        }
        return PacerDatabase(path: path, pool: pool, readOnly: true, lockDescriptor: nil)
    }

    /// Closes the database (and releases the data directory). Further calls throw
    /// `.closed`. Optional: releasing the last reference closes it too.
    public func close() throws(StoreError) {
        try state.withLock { (state: inout State) throws(StoreError) in
            guard !state.closed else { return }
            state.closed = true
            defer {
                if let fd = state.lockDescriptor { DataDirectory.unlock(fd) }
                state.lockDescriptor = nil
            }
            checkpoint()
            try catching("cannot close database \(path)") { try pool.close() }
        }
    }

    /// On a clean close, moves everything from the WAL into the database file and
    /// empties the WAL, so that the file alone holds the data. Best effort.
    private func checkpoint() {
        guard !isReadOnly else { return }
        _ = try? pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
    }

    /// Opens the writer; if the file is unusable, moves it aside and opens a fresh one.
    private static func openOrRecover(
        path: String, migrator: DatabaseMigrator, now: @autoclosure () -> Date
    ) throws(StoreError) -> (DatabasePool, String?) {
        switch openWriter(path: path, migrator: migrator) {
        case .opened(let pool):
            return (pool, nil)
        case .failed(let error):
            throw error
        case .unusable(let reason):
            let moved = try DataDirectory.moveAside(path, now: now())
            switch openWriter(path: path, migrator: migrator) {
            case .opened(let pool):
                let recovery = "database \(path) could not be used (\(reason)); moved it to \(moved) (with its -wal and -shm files, if any) and started with an empty database"
                return (pool, recovery)
            case .failed(let error):
                throw error
            case .unusable(let second):
                throw StoreError(.corrupt, "cannot create a fresh database \(path) after moving the unusable one to \(moved): \(second)")
            }
        }
    }

    private enum OpenAttempt {
        case opened(DatabasePool)
        /// The file is not a usable Pacer database: move it aside.
        case unusable(String)
        /// Anything else: report it.
        case failed(StoreError)
    }


    private static func baseConfiguration() -> Configuration {
        var configuration = Configuration()
        configuration.label = "pacer"
        configuration.foreignKeysEnabled = true
        // The writer waits this long for a reader's lock (e.g. WAL recovery by
        // `pacer history`); readers wait too.
        configuration.busyMode = .timeout(5)
        configuration.maximumReaderCount = 2
        // A smaller page cache per connection (SQLite's default is 2 MB): the node's writes touch
        // few pages, and the kernel's page cache holds the file anyway: a smaller RSS.
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA cache_size = -512")
            // Takes effect when the file is created (an existing one is converted once, by
            // `usePageSize`); a no-op otherwise.
            try db.execute(sql: "PRAGMA page_size = \(pageSize)")
        }
        return configuration
    }

    /// The database's page size: 1 KiB. SQLite writes every page a transaction changes whole,
    /// to the WAL and again at the checkpoint, and a command changes about ten (the timer, its
    /// event, the request and their indexes): 1 KiB pages cut a command's bytes on the SD card
    /// from about 45 KiB to about 10 (BENCHMARKS.md: what a reference gym day writes).
    static let pageSize = 1024

    /// Converts a database made with another page size (an older node made them 4 KiB) once, in
    /// place: SQLite changes the page size only through a VACUUM outside WAL mode, which it
    /// journals, so a power cut leaves the old file or the new one. Best effort: a database
    /// that cannot be converted now (a reader holds it) keeps its pages and is converted at a
    /// later start.
    private static func usePageSize(path: String) {
        guard DataDirectory.exists(path) else { return }
        do {
            let queue = try DatabaseQueue(path: path)
            defer { try? queue.close() }
            try queue.writeWithoutTransaction { db in
                guard let size = try Int.fetchOne(db, sql: "PRAGMA page_size"), size != pageSize else { return }
                try db.execute(sql: "PRAGMA journal_mode = DELETE")
                try db.execute(sql: "PRAGMA page_size = \(pageSize)")
                try db.execute(sql: "VACUUM")
                try db.execute(sql: "PRAGMA journal_mode = WAL")
            }
        } catch {
            return
        }
    }

    /// Opens the writer pool, checks integrity and migrates.
    private static func openWriter(path: String, migrator: DatabaseMigrator) -> OpenAttempt {
        if let problem = probe(path: path, migrator: migrator) {
            return problem
        }
        usePageSize(path: path)
        let pool: DatabasePool
        do {
            pool = try DatabasePool(path: path, configuration: baseConfiguration())
        } catch {
            return classify(error, stage: "cannot open database \(path)")
        }
        do {
            try pool.writeWithoutTransaction { db in
                // GRDB sets synchronous=NORMAL when it enables WAL; override it
                // (synchronous is per connection; this is the only writer).
                try db.execute(sql: "PRAGMA synchronous = FULL")
                // Keep the WAL file from staying large after a checkpoint (SD cards).
                _ = try DatabaseValue.fetchOne(db, sql: "PRAGMA journal_size_limit = 4194304")
            }
            try migrator.migrate(pool)
        } catch {
            try? pool.close()
            if let dbError = error as? DatabaseError, dbError.resultCode == .SQLITE_ERROR {
                // A schema conflict (e.g. "table timers already exists"): not our database.
                return .unusable("not a Pacer database: \(dbError.message ?? "migration failed")")
            }
            return classify(error, stage: "cannot open database \(path)")
        }
        return .opened(pool)
    }

    /// Checks an existing file through a read-only connection before the writer
    /// touches it, so that an unusable file is moved aside exactly as it was (a
    /// read-write connection would checkpoint or delete its WAL on close).
    /// Returns nil when the file is fine (or absent).
    private static func probe(path: String, migrator: DatabaseMigrator) -> OpenAttempt? {
        guard DataDirectory.exists(path) else {
            // A WAL without its database would be replayed into a new, empty file.
            if DataDirectory.exists(path + "-wal") {
                return .unusable("its -wal file was left without the database file")
            }
            return nil
        }
        guard DataDirectory.isRegularFile(path) else {
            return .unusable("it is not a regular file")
        }
        var configuration = baseConfiguration()
        configuration.readonly = true
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: path, configuration: configuration)
        } catch {
            return classify(error, stage: "cannot open database \(path)")
        }
        defer { try? queue.close() }
        do {
            return try queue.read { db -> OpenAttempt? in
                let problems = try String.fetchAll(db, sql: "PRAGMA quick_check")
                if problems != ["ok"] {
                    return .unusable("integrity check failed: " + problems.prefix(3).joined(separator: "; "))
                }
                let tables = try String.fetchAll(db, sql: """
                    SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
                    ORDER BY name
                    """)
                if !tables.isEmpty, !tables.contains("grdb_migrations") {
                    return .unusable("not a Pacer database: it has the tables \(tables.prefix(5).joined(separator: ", ")) and no Pacer schema")
                }
                let unknown = try migrator.appliedIdentifiers(db).subtracting(migrator.migrations).sorted()
                if !unknown.isEmpty {
                    return .failed(StoreError(
                        .schema,
                        "database \(path) was written by a newer version of Pacer (unknown migrations: \(unknown.joined(separator: ", "))); upgrade pacer, or choose another --data-dir"))
                }
                return nil
            }
        } catch {
            return classify(error, stage: "cannot check database \(path)")
        }
    }

    /// Corruption and unopenable files are `.unusable` (moved aside); anything
    /// that moving aside would not fix (busy, full, I/O) is `.failed`.
    private static func classify(_ error: any Error, stage: String) -> OpenAttempt {
        if let dbError = error as? DatabaseError {
            switch dbError.resultCode {
            case .SQLITE_CORRUPT, .SQLITE_NOTADB, .SQLITE_CANTOPEN, .SQLITE_READONLY, .SQLITE_PERM, .SQLITE_AUTH:
                return .unusable(dbError.message ?? "\(dbError.resultCode)")
            default:
                break
            }
        }
        return .failed(StoreError.wrapping(error, stage))
    }

    // MARK: - Access

    private func checkOpen() throws(StoreError) {
        if state.withLock({ $0.closed }) {
            throw StoreError(.closed, "database \(path) is closed")
        }
    }

    private func read<T>(_ what: @autoclosure () -> String, _ body: (Database) throws -> T) throws(StoreError) -> T {
        try checkOpen()
        return try catching("\(what()) from \(path)") { try pool.read(body) }
    }

    private func write<T>(_ what: @autoclosure () -> String, _ body: (Database) throws -> T) throws(StoreError) -> T {
        try checkOpen()
        if isReadOnly {
            throw StoreError(.readOnly, "cannot \(what()): database \(path) was opened read-only")
        }
        return try catching("cannot \(what()) in \(path)") {
            try pool.writeWithoutTransaction { db in try Self.inTransaction(db, body) }
        }
    }

    /// Runs `body` in one transaction, all or nothing. `BEGIN IMMEDIATE` and `COMMIT` are cached
    /// statements: GRDB's own transaction (`DatabasePool.write`) generates and prepares both on
    /// every call, which took a toggle's write 50–80 µs before its first statement (20–40 µs
    /// now). The writer takes its lock at BEGIN: this process is the only writer.
    private static func inTransaction<T>(_ db: Database, _ body: (Database) throws -> T) throws -> T {
        try db.cachedStatement(sql: "BEGIN IMMEDIATE").execute()
        do {
            let result = try body(db)
            try db.cachedStatement(sql: "COMMIT").execute()
            return result
        } catch {
            // A failed statement or COMMIT (disk full, I/O error) leaves nothing of the batch;
            // SQLite may already have rolled back.
            if db.isInsideTransaction { try? db.execute(sql: "ROLLBACK") }
            throw error
        }
    }

    // MARK: - Writing

    /// Applies `batch` in one write transaction and returns once it is durable
    /// (fsynced). All or nothing: if any part fails (e.g. a CHECK constraint on
    /// an invalid record) nothing of the batch is written.
    ///
    /// - Returns: the seqs assigned to the appended events that were new, in batch
    ///   order. Duplicates (an event with the same timer, type, revision and
    ///   dueMs is already stored) are ignored and have no entry, so the result
    ///   can be shorter than `batch.appendEvents`; use `commit(_:)` to know which
    ///   events were new.
    @discardableResult
    public func apply(_ batch: StoreBatch) throws(StoreError) -> [Int64] {
        try commit(batch).appended.compactMap(\.seq)
    }

    /// `apply(_:)`, returning the appended events with their seqs and the ignored
    /// duplicates. Publish `appended`, never `duplicates`.
    @discardableResult
    public func commit(_ batch: StoreBatch) throws(StoreError) -> StoreCommit {
        if batch.isEmpty { return StoreCommit() }
        return try write("write a batch") { db in
            var result = StoreCommit()
            for timer in batch.upsertTimers {
                try db.cachedStatement(sql: """
                    INSERT INTO timers (id, machine, revision, restore_policy, updated_at_ms)
                    VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET
                        machine = excluded.machine, revision = excluded.revision,
                        restore_policy = excluded.restore_policy, updated_at_ms = excluded.updated_at_ms
                    """).execute(arguments: [timer.id, Data(timer.machine), timer.revision, timer.restorePolicy, timer.updatedAtMs])
            }
            for id in batch.deleteTimers {
                try db.cachedStatement(sql: "DELETE FROM timers WHERE id = ?").execute(arguments: [id])
            }
            for event in batch.appendEvents {
                try db.cachedStatement(sql: """
                    INSERT INTO events (timer, type, revision, due_ms, at_ms, payload, published)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (timer, type, revision, due_ms) DO NOTHING
                    """).execute(arguments: [event.timer, event.type, event.revision, event.dueMs, event.atMs,
                                             Data(event.payload), event.published])
                var stored = event
                if db.changesCount > 0 {
                    stored.seq = db.lastInsertedRowID
                    result.appended.append(stored)
                } else {
                    stored.seq = nil
                    result.duplicates.append(stored)
                }
            }
            if batch.shiftRequestsMs != 0 {
                try db.execute(sql: "UPDATE requests SET at_ms = at_ms + ?", arguments: [batch.shiftRequestsMs])
            }
            for request in batch.requests {
                try db.cachedStatement(sql: """
                    INSERT INTO requests (id, reply, at_ms) VALUES (?, ?, ?)
                    ON CONFLICT (id) DO NOTHING
                    """).execute(arguments: [request.id, Data(request.reply), request.atMs])
            }
            for seq in batch.markPublished {
                try db.cachedStatement(sql: "UPDATE events SET published = 1 WHERE seq = ?").execute(arguments: [seq])
            }
            for (key, value) in batch.meta.sorted(by: { $0.key < $1.key }) {
                try db.cachedStatement(sql: """
                    INSERT INTO meta (key, value) VALUES (?, ?)
                    ON CONFLICT (key) DO UPDATE SET value = excluded.value
                    """).execute(arguments: [key, value])
            }
            return result
        }
    }

    /// Sets one meta value (its own durable transaction). For the store's tests: the node
    /// writes meta values only inside its batches.
    func setMeta(_ key: String, _ value: String) throws(StoreError) {
        var batch = StoreBatch()
        batch.meta[key] = value
        try apply(batch)
    }

    /// Removes old history and old requests in one transaction:
    /// 1. published events with `atMs < nowMs - maxAgeMs`;
    /// 2. then the oldest published events beyond `maxEvents` events in all;
    /// 3. requests with `atMs < nowMs - requestWindowMs`.
    /// Unpublished events (the outbox) are never removed. Call it only with a
    /// trustworthy wall clock: a clock far in the future prunes everything published.
    @discardableResult
    public func prune(_ policy: RetentionPolicy, nowMs: Int64) throws(StoreError) -> PruneResult {
        try write("prune history") { db in
            var result = PruneResult()
            let eventCutoff = saturatingSubtract(nowMs, max(0, policy.maxAgeMs))
            try db.execute(
                sql: "DELETE FROM events WHERE published = 1 AND at_ms < ?", arguments: [eventCutoff])
            result.eventsByAge = db.changesCount
            let total = try Int.fetchOne(db, sql: "SELECT count(*) FROM events") ?? 0
            let excess = total - max(0, policy.maxEvents)
            if excess > 0 {
                try db.execute(sql: """
                    DELETE FROM events WHERE seq IN
                        (SELECT seq FROM events WHERE published = 1 ORDER BY seq LIMIT ?)
                    """, arguments: [excess])
                result.eventsByCount = db.changesCount
            }
            let requestCutoff = saturatingSubtract(nowMs, max(0, policy.requestWindowMs))
            try db.execute(sql: "DELETE FROM requests WHERE at_ms < ?", arguments: [requestCutoff])
            result.requests = db.changesCount
            return result
        }
    }

    // MARK: - Reading

    /// Every stored timer, ordered by id.
    public func loadTimers() throws(StoreError) -> [TimerRecord] {
        try read("cannot load timers") { db in
            try Row.fetchAll(db, sql: "SELECT * FROM timers ORDER BY id").map(Self.timer)
        }
    }

    /// Processed requests with `atMs >= sinceMs`, oldest first.
    public func loadRequests(sinceMs: Int64) throws(StoreError) -> [RequestRecord] {
        try read("cannot load requests") { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM requests WHERE at_ms >= ? ORDER BY at_ms, id", arguments: [sinceMs]
            ).map(Self.request)
        }
    }

    /// The processed request with this id, if it is still stored.
    func request(id: String) throws(StoreError) -> RequestRecord? {
        try read("cannot load request \(id)") { db in
            try Row.fetchOne(db, sql: "SELECT * FROM requests WHERE id = ?", arguments: [id]).map(Self.request)
        }
    }

    /// The outbox: events written but not yet marked published, in seq order.
    public func unpublishedEvents() throws(StoreError) -> [EventRecord] {
        try read("cannot load unpublished events") { db in
            try Row.fetchAll(db, sql: "SELECT * FROM events WHERE published = 0 ORDER BY seq").map(Self.event)
        }
    }

    /// Events matching `query`, newest first (descending seq: commit order, which
    /// unlike `atMs` cannot go backwards when the wall clock is corrected).
    public func history(_ query: HistoryQuery) throws(StoreError) -> [EventRecord] {
        guard query.limit > 0 else { return [] }
        var conditions: [String] = []
        var arguments: StatementArguments = []
        if let timer = query.timer {
            conditions.append("timer = ?")
            arguments += [timer]
        }
        if let sinceMs = query.sinceMs {
            conditions.append("at_ms >= ?")
            arguments += [sinceMs]
        }
        if let beforeSeq = query.beforeSeq {
            conditions.append("seq < ?")
            arguments += [beforeSeq]
        }
        arguments += [query.limit]
        let filter = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        let sql = "SELECT * FROM events\(filter) ORDER BY seq DESC LIMIT ?"
        return try read("cannot load history") { db in
            try Row.fetchAll(db, sql: sql, arguments: arguments).map(Self.event)
        }
    }

    /// Whether an event of this timer, type and revision is stored (any dueMs),
    /// published or not. For exactly-once checks across restarts; pruned events
    /// are forgotten.
    func hasEvent(timer: String, type: String, revision: Int) throws(StoreError) -> Bool {
        try read("cannot look up an event") { db in
            try Bool.fetchOne(db, sql: """
                SELECT EXISTS (SELECT 1 FROM events WHERE timer = ? AND type = ? AND revision = ?)
                """, arguments: [timer, type, revision]) ?? false
        }
    }

    /// A meta value, or nil if never set.
    /// The value of a `meta` key (nil when it was never set).
    public func meta(_ key: String) throws(StoreError) -> String? {
        try read("cannot read meta \(key)") { db in
            try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [key])
        }
    }

    // MARK: - Test hooks and diagnostics

    /// `open(directory:)` with test-only migrations appended after the real ones.
    static func open(
        directory: String, extraMigrations: [(id: String, sql: String)], now: Date = Date()
    ) throws(StoreError) -> (database: PacerDatabase, recovery: String?) {
        try open(directory: directory, migrator: Schema.migrator(extra: extraMigrations), now: now)
    }

    /// Creates `<directory>/pacer.sqlite` migrated only up to `identifier`, as an
    /// older Pacer would have left it, and runs `sql` on it (e.g. to add rows).
    static func createForTesting(
        directory: String, upTo identifier: String, extraMigrations: [(id: String, sql: String)] = [],
        then sql: String = ""
    ) throws(StoreError) {
        let directory = try DataDirectory.prepare(directory)
        let path = DataDirectory.databasePath(in: directory)
        try catching("cannot create test database \(path)") {
            let pool = try DatabasePool(path: path)
            try Schema.migrator(extra: extraMigrations).migrate(pool, upTo: identifier)
            if !sql.isEmpty { try pool.write { try $0.execute(sql: sql) } }
            try pool.close()
        }
    }


    /// Runs raw SQL on the database file at `path` (creating it), outside of any
    /// migration: builds foreign or damaged databases for tests.
    static func executeForTesting(databaseAt path: String, _ sql: String) throws(StoreError) {
        try catching("cannot run test SQL on \(path)") {
            let queue = try DatabaseQueue(path: path)
            try queue.writeWithoutTransaction { try $0.execute(sql: sql) }  // PRAGMAs and VACUUM too
            try queue.close()
        }
    }

    /// The value of a pragma on the writer connection (e.g. "journal_mode", "synchronous").
    func pragma(_ name: String) throws(StoreError) -> String? {
        try checkOpen()
        return try catching("cannot read pragma \(name)") {
            try pool.writeWithoutTransaction { db in
                let value = try DatabaseValue.fetchOne(db, sql: "PRAGMA \(name)")
                switch value?.storage {
                case .string(let text)?: return text
                case .int64(let number)?: return String(number)
                case .double(let number)?: return String(number)
                default: return nil
                }
            }
        }
    }

    /// The applied migration identifiers.
    func appliedMigrations() throws(StoreError) -> [String] {
        try read("cannot read migrations") { db in
            try Schema.migrator().appliedIdentifiers(db).sorted()
        }
    }

    // MARK: - Rows

    private static func bytes(_ row: Row, _ column: String) -> [UInt8] {
        let data: Data? = row[column]
        return data.map { [UInt8]($0) } ?? []
    }

    private static func timer(_ row: Row) -> TimerRecord {
        TimerRecord(
            id: row["id"], machine: bytes(row, "machine"), revision: row["revision"],
            restorePolicy: row["restore_policy"], updatedAtMs: row["updated_at_ms"])
    }

    private static func event(_ row: Row) -> EventRecord {
        EventRecord(
            seq: row["seq"], timer: row["timer"], type: row["type"], revision: row["revision"],
            dueMs: row["due_ms"], atMs: row["at_ms"], payload: bytes(row, "payload"),
            published: row["published"])
    }

    private static func request(_ row: Row) -> RequestRecord {
        RequestRecord(id: row["id"], reply: bytes(row, "reply"), atMs: row["at_ms"])
    }
}

private func saturatingSubtract(_ a: Int64, _ b: Int64) -> Int64 {
    let (value, overflow) = a.subtractingReportingOverflow(b)
    return overflow ? Int64.min : value
}

import GRDB
import GRDBSQLite

/// Runs one of GRDB's cached statements through SQLite's C API: binds, steps to the end and
/// resets, with the values handed straight to `sqlite3_bind_*`.
///
/// Why (issue 10): a command's batch is written on its path, before its fsync. Through
/// `execute(arguments:)` every value is boxed (`StatementArguments`, `Data` copies) and bound
/// in nested closures, and GRDB does per-statement bookkeeping for observers this store never
/// registers. Stepping the statements here took a toggle's write, from `commit`'s entry to
/// the fsync, from 118–142 µs to 113–128 µs (uprobes, BENCHMARKS.md, tenth session); the rest
/// is SQLite itself, with cold caches.
///
/// The statement stays GRDB's (its cache owns and finalizes it): it is left reset with its
/// bindings cleared, as GRDB expects to find it. Errors are thrown as GRDB's `DatabaseError`
/// with SQLite's message, so they map to `StoreError` like any other.
struct DirectStatement: ~Copyable {
    private let statement: Statement
    private let handle: OpaquePointer
    private var index: Int32 = 0

    init(_ db: Database, _ sql: String) throws {
        statement = try db.cachedStatement(sql: sql)
        handle = statement.sqliteStatement
    }

    /// The next parameter, a text (copied by SQLite).
    mutating func bind(_ value: String) {
        index += 1
        var value = value
        value.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                if let base = chars.baseAddress, chars.count > 0 {
                    _ = sqlite3_bind_text(handle, index, base, Int32(chars.count), sqliteTransient)
                } else {
                    _ = sqlite3_bind_text(handle, index, "", 0, sqliteTransient)  // '', not NULL
                }
            }
        }
    }

    /// The next parameter, a text or NULL.
    mutating func bind(_ value: String?) {
        if let value { bind(value) } else { index += 1; _ = sqlite3_bind_null(handle, index) }
    }

    /// The next parameter, an integer.
    mutating func bind(_ value: Int64) {
        index += 1
        _ = sqlite3_bind_int64(handle, index, value)
    }

    /// The next parameter, an integer.
    mutating func bind(_ value: Int) { bind(Int64(value)) }

    /// The next parameter, 0 or 1.
    mutating func bind(_ value: Bool) { bind(Int64(value ? 1 : 0)) }

    /// The next parameter, a blob (copied by SQLite; an empty one is stored as an empty blob,
    /// not NULL).
    mutating func bind(_ value: [UInt8]) {
        index += 1
        value.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress, bytes.count > 0 {
                _ = sqlite3_bind_blob(handle, index, base, Int32(bytes.count), sqliteTransient)
            } else {
                _ = sqlite3_bind_zeroblob(handle, index, 0)
            }
        }
    }

    /// Steps the statement to its end, then resets it and clears its bindings. Throws GRDB's
    /// `DatabaseError` if a step fails (a constraint, a full disk, an I/O error).
    consuming func run(_ db: Database) throws {
        precondition(index == sqlite3_bind_parameter_count(handle), "DirectStatement: \(index) values bound to \(statement.sql)")
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        while true {
            let code = sqlite3_step(handle)
            if code == SQLITE_DONE { return }
            if code == SQLITE_ROW { continue }
            let connection = db.sqliteConnection
            let extended = connection.map { sqlite3_extended_errcode($0) } ?? code
            let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            throw DatabaseError(resultCode: ResultCode(rawValue: extended), message: message, sql: statement.sql)
        }
    }
}

/// `SQLITE_TRANSIENT`: SQLite copies the value before the bind call returns.
private let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

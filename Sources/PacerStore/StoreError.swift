import GRDB

/// An error from the store, with a message a person can act on.
public struct StoreError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What went wrong, so that callers can decide without parsing `message`.
    public enum Kind: String, Sendable, Equatable {
        /// The data directory cannot be created, is not a directory, or is not writable.
        case directory
        /// Another process (or another `PacerDatabase` in this process) has the
        /// data directory open for writing.
        case locked
        /// The database file is missing (read-only open only).
        case notFound
        /// The database was written by a newer Pacer (unknown migrations), or
        /// misses migrations (read-only open of an old file).
        case schema
        /// The file is not a usable Pacer database (corrupt, not a database,
        /// cannot be opened). `open` moves such a file aside instead of throwing;
        /// this kind is thrown only if that fails too.
        case corrupt
        /// The disk is full.
        case full
        /// A write was attempted through a read-only handle, or the file is read-only.
        case readOnly
        /// The database is busy (locked by another connection) beyond the timeout.
        case busy
        /// The handle has been closed.
        case closed
        /// An invalid argument (e.g. a CHECK constraint on a record failed).
        case invalid
        /// An I/O error or anything else.
        case io
    }

    public var kind: Kind
    /// A sentence a person can act on.
    public var message: String
    /// The SQLite extended result code, when the error came from SQLite.
    public var sqliteCode: Int32?

    public init(_ kind: Kind, _ message: String, sqliteCode: Int32? = nil) {
        self.kind = kind
        self.message = message
        self.sqliteCode = sqliteCode
    }

    public var description: String {
        if let sqliteCode {
            return "\(message) (SQLite error \(sqliteCode))"
        }
        return message
    }
}

extension StoreError {
    /// Wraps any error thrown while doing `what` (a phrase like "cannot load timers from /x").
    static func wrapping(_ error: any Error, _ what: String) -> StoreError {
        if let error = error as? StoreError { return error }
        guard let dbError = error as? DatabaseError else {
            return StoreError(.io, "\(what): \(error)")
        }
        let detail = dbError.message ?? "\(dbError.resultCode)"
        let code = dbError.extendedResultCode.rawValue
        let kind: Kind
        switch dbError.resultCode {
        case .SQLITE_FULL: kind = .full
        case .SQLITE_READONLY: kind = .readOnly
        case .SQLITE_BUSY, .SQLITE_LOCKED: kind = .busy
        case .SQLITE_CORRUPT, .SQLITE_NOTADB, .SQLITE_CANTOPEN: kind = .corrupt
        case .SQLITE_CONSTRAINT, .SQLITE_MISUSE, .SQLITE_MISMATCH, .SQLITE_RANGE: kind = .invalid
        default: kind = .io
        }
        var message = "\(what): \(detail)"
        if kind == .full { message += "; free some space on the disk" }
        if dbError.resultCode == .SQLITE_MISUSE, detail.contains("closed") { return StoreError(.closed, message, sqliteCode: code) }
        return StoreError(kind, message, sqliteCode: code)
    }
}

/// Runs `body`, turning any thrown error into a `StoreError` about `what`.
func catching<T>(_ what: @autoclosure () -> String, _ body: () throws -> T) throws(StoreError) -> T {
    do {
        return try body()
    } catch {
        throw StoreError.wrapping(error, what())
    }
}

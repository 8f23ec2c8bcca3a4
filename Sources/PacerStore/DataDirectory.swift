import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// File-system work around the database file: the data directory, the
/// single-writer lock, moving a corrupt file aside. Uses POSIX calls directly
/// so that errors carry `strerror` text a person can act on.
enum DataDirectory {
    static let databaseName = "pacer.sqlite"
    static let lockName = "pacer.lock"
    /// The files SQLite keeps beside the database.
    static let companionSuffixes = ["-wal", "-shm", "-journal"]

    /// `directory` without trailing slashes ("/" stays "/").
    static func normalize(_ directory: String) -> String {
        var path = directory
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        return path
    }

    static func databasePath(in directory: String) -> String {
        directory == "/" ? "/" + databaseName : directory + "/" + databaseName
    }

    static func errnoText(_ code: Int32 = errno) -> String {
        String(cString: strerror(code))
    }

    /// " (owner uid N, this process runs as uid M)" for an existing file, else "".
    static func ownerNote(_ file: String) -> String {
        var info = stat()
        return stat(file, &info) == 0 ? " (owner uid \(info.st_uid), this process runs as uid \(geteuid()))" : ""
    }

    static func isDirectory(_ path: String) -> Bool? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// True for a regular file, or a symbolic link to one.
    static func isRegularFile(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        return (info.st_mode & S_IFMT) == S_IFREG
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Creates `directory` (and its parents) if needed and checks that it is a
    /// writable directory.
    static func prepare(_ directory: String) throws(StoreError) -> String {
        let hint = "choose another with --data-dir"
        guard !directory.isEmpty else {
            throw StoreError(.directory, "the data directory is an empty path; \(hint)")
        }
        let directory = normalize(directory)
        switch isDirectory(directory) {
        case true?:
            break
        case false?:
            throw StoreError(.directory, "data directory \(directory) exists but is not a directory; \(hint)")
        case nil:
            try makeDirectories(directory, for: directory)
        }
        if access(directory, W_OK | X_OK) != 0 {
            let reason = errnoText()
            throw StoreError(.directory, "data directory \(directory) is read-only: \(reason); make it writable by this user or \(hint)")
        }
        return directory
    }

    /// Checks that the database file and its companions, where they exist, can be
    /// read and written by this process. A permission problem is not corruption:
    /// the file must not be moved aside for it.
    static func checkFileAccess(_ path: String) throws(StoreError) {
        for file in [path] + companionSuffixes.map({ path + $0 }) where exists(file) {
            if isRegularFile(file), access(file, R_OK | W_OK) != 0 {
                let reason = errnoText()
                throw StoreError(.readOnly, "database file \(file) cannot be written: \(reason)\(ownerNote(file)); fix its owner or permissions, or choose another --data-dir")
            }
        }
    }

    /// `mkdir -p`, reporting the component that failed.
    private static func makeDirectories(_ path: String, for directory: String) throws(StoreError) {
        if mkdir(path, 0o755) == 0 {
            syncDirectory(parent(of: path))
            return
        }
        let code = errno
        if code == EEXIST, isDirectory(path) == true { return }
        if code == ENOENT {
            let up = parent(of: path)
            if up != path {
                try makeDirectories(up, for: directory)
                if mkdir(path, 0o755) == 0 || (errno == EEXIST && isDirectory(path) == true) {
                    syncDirectory(up)
                    return
                }
                throw creationError(directory, failing: path, errno)
            }
        }
        throw creationError(directory, failing: path, code)
    }

    private static func creationError(_ directory: String, failing path: String, _ code: Int32) -> StoreError {
        var reason = errnoText(code)
        if code == ENOTDIR || code == EEXIST, let file = firstNonDirectory(in: path) {
            reason = "\(file) is a file, not a directory"
        } else if path != directory {
            reason = "\(path): \(reason)"
        }
        let kind = code == EROFS || code == EACCES || code == EPERM ? "is read-only" : "cannot be created"
        return StoreError(.directory, "data directory \(directory) \(kind): \(reason); choose another with --data-dir")
    }

    /// The first existing component of `path`, from the top, that is not a directory.
    private static func firstNonDirectory(in path: String) -> String? {
        var components: [String] = []
        var current = path
        while current != "/", current != "." {
            components.append(current)
            current = parent(of: current)
        }
        return components.reversed().first { isDirectory($0) == false }
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// fsync a directory so that a created or renamed entry survives power loss.
    static func syncDirectory(_ path: String) {
        let fd = posixOpen(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        _ = close(fd)
    }

    /// Takes the exclusive single-writer lock of the data directory: an
    /// `flock` on `pacer.lock`, held as long as the returned descriptor is open.
    /// The kernel releases it when the process dies, also on SIGKILL.
    static func lock(_ directory: String) throws(StoreError) -> Int32 {
        let path = directory + "/" + lockName
        let fd = posixOpen(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            let code = errno
            if code == EACCES || code == EPERM, exists(path) {
                // Typically a data directory first used by another user (pacer run as root once).
                throw StoreError(.directory, "cannot open lock file \(path): \(errnoText(code))\(ownerNote(path)); give the data directory and its files to the user Pacer runs as (chown -R), or choose another data directory with --data-dir")
            }
            throw StoreError(.directory, "cannot create lock file \(path): \(errnoText(code)); choose another data directory with --data-dir")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            let holder = readPID(fd)
            _ = close(fd)
            if code == EWOULDBLOCK {
                if holder == Int(getpid()) {
                    throw StoreError(.locked, "data directory \(directory) is already open for writing in this process (pid \(getpid())); use the open PacerDatabase, or openReadOnly to read")
                }
                let who = holder.map { "another pacer process (pid \($0))" } ?? "another pacer process"
                throw StoreError(.locked, "data directory \(directory) is in use by \(who); stop it or choose another with --data-dir")
            }
            throw StoreError(.directory, "cannot lock \(path): \(errnoText(code))")
        }
        // Record who holds the lock, for the message above. Best effort.
        let text = Array("\(getpid())\n".utf8)
        if ftruncate(fd, 0) == 0 {
            _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        }
        return fd
    }

    private static func readPID(_ fd: Int32) -> Int? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Int(text)
    }

    static func unlock(_ fd: Int32) {
        _ = flock(fd, LOCK_UN)
        _ = close(fd)
    }

    /// `20260122T040531Z`: ISO 8601 basic format, UTC, no characters that need quoting.
    static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d%02d%02dT%02d%02d%02dZ",
            Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }

    /// Renames the database file and its companions to
    /// `<path>.corrupt-<timestamp>[-n]` (+ `-wal`, `-shm`, `-journal`) and returns the new
    /// path of the database file. Nothing is deleted.
    static func moveAside(_ path: String, now: Date) throws(StoreError) -> String {
        let stem = path + ".corrupt-" + timestamp(now)
        var target = stem
        var attempt = 1
        while ([""] + companionSuffixes).contains(where: { exists(target + $0) }) {
            attempt += 1
            target = "\(stem)-\(attempt)"
        }
        for suffix in [""] + companionSuffixes where exists(path + suffix) {
            if rename(path + suffix, target + suffix) != 0 {
                throw StoreError(.directory, "cannot move the unusable database \(path + suffix) aside to \(target + suffix): \(errnoText()); move or delete it by hand")
            }
        }
        syncDirectory(parent(of: path))
        return target
    }
}

/// `open(2)`, named apart from `PacerDatabase.open`.
private func posixOpen(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
    open(path, flags, mode)
}

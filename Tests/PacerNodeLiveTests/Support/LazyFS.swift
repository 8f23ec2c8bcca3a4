import Foundation
import PacerTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `Tests/Fixtures/lazyfs/lazyfs.c` (a FUSE filesystem that loses every write not yet fsynced
/// at a "power cut"), compiled here with the system C compiler against libfuse3 and mounted
/// for one test: `disk/` is what was made durable, the mount point is what processes see,
/// `page-cache/` the filesystem's own copy of the current content (see the C file for the
/// model of data and metadata). Stopped by PID and unmounted on every path (`unmount()`); if
/// the test process dies, TestProcess's watchdog kills the daemon and fusermount3's
/// auto_unmount removes the mount.
final class LazyFS: Sendable {
    let mountpoint: URL
    /// The "disk": exactly what was synced.
    let backing: URL
    let process: TestProcess
    let logFile: URL
    /// Created by lazyfs when an armed cut fires.
    let firedFile: URL

    /// Why the filesystem cannot run on this machine, or nil when it can: FUSE (`/dev/fuse`,
    /// `fusermount3`), a C compiler and libfuse3's headers and library.
    static let unavailable: String? = {
        let fm = FileManager.default
        if !fm.fileExists(atPath: "/dev/fuse") { return "no /dev/fuse on this machine (FUSE is needed for the lazy filesystem)" }
        if access("/dev/fuse", R_OK | W_OK) != 0 { return "/dev/fuse is not readable and writable by this user" }
        if executable("fusermount3") == nil { return "no fusermount3 on PATH (apt-get install fuse3; scripts/setup installs it with PACER_SETUP=test)" }
        if compiler == nil { return "no C compiler (cc, gcc or clang) on PATH (apt-get install gcc libc6-dev)" }
        if !fm.fileExists(atPath: "/usr/include/fuse3/fuse.h") { return "no libfuse3 headers at /usr/include/fuse3 (apt-get install libfuse3-dev)" }
        return nil
    }()

    static func executable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return (path.split(separator: ":").map(String.init) + ["/usr/bin", "/bin", "/usr/sbin", "/sbin"])
            .map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static var compiler: String? { ["cc", "gcc", "clang"].lazy.compactMap(executable).first }

    static var source: URL {
        testsDirectory().appendingPathComponent("Fixtures/lazyfs/lazyfs.c")
    }

    private init(mountpoint: URL, backing: URL, process: TestProcess, logFile: URL, firedFile: URL) {
        self.mountpoint = mountpoint
        self.backing = backing
        self.process = process
        self.logFile = logFile
        self.firedFile = firedFile
    }

    /// Compiles lazyfs into `directory`.
    static func compile(into directory: URL) async throws -> URL {
        guard let compiler else { throw HarnessError(unavailable ?? "no C compiler") }
        let binary = directory.appendingPathComponent("lazyfs")
        let log = directory.appendingPathComponent("lazyfs-cc.log")
        // pkg-config's flags for fuse3 on Debian, written out so pkg-config is not needed.
        let arguments = ["-O2", "-Wall", "-Wextra", "-D_FILE_OFFSET_BITS=64", "-I/usr/include/fuse3",
                         "-o", binary.path, source.path, "-lfuse3", "-lpthread"]
        let process = try TestProcess.launch(compiler, arguments, outputFile: log)
        await process.waitForExit(timeout: .seconds(120))
        await process.terminate()  // (it has ended: this only reaps its watchdog)
        let end = ProcessEnd(waitStatus: process.terminationStatus)
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        guard end == .exited(0), FileManager.default.fileExists(atPath: binary.path) else {
            throw HarnessError("\(compiler) could not build \(source.path) (\(end)):\n\(output)")
        }
        // Our C fixtures compile without warnings, as the Swift code does.
        guard !output.contains("warning:") else { throw HarnessError("\(source.lastPathComponent) compiles with warnings:\n\(output)") }
        return binary
    }

    /// Compiles lazyfs into `directory` and mounts it at `mountpoint` (created if needed) over
    /// `directory/disk` (created empty if absent), its page cache in `directory/page-cache`.
    static func mount(in directory: URL, at mountpoint: URL) async throws -> LazyFS {
        let binary = try await compile(into: directory)
        let backing = directory.appendingPathComponent("disk", isDirectory: true)
        let cache = directory.appendingPathComponent("page-cache", isDirectory: true)
        try FileManager.default.createDirectory(at: backing, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: mountpoint, withIntermediateDirectories: true)
        let logFile = directory.appendingPathComponent("lazyfs.log")
        let firedFile = directory.appendingPathComponent("lazyfs.fired")
        let process = try TestProcess.launch(
            binary.path, ["--cache", cache.path, "--fired", firedFile.path, backing.path, mountpoint.path], outputFile: logFile)
        let fs = LazyFS(mountpoint: mountpoint, backing: backing, process: process, logFile: logFile, firedFile: firedFile)
        // Mounted once the control file answers (it exists only on the mount).
        let deadline = ContinuousClock.now + .seconds(15)
        var st = stat()
        while stat(fs.control.path, &st) != 0 {
            if !process.isRunning || ContinuousClock.now >= deadline {
                await fs.unmount()
                throw HarnessError("lazyfs did not mount at \(mountpoint.path) (\(ProcessEnd(waitStatus: process.terminationStatus))): \(fs.log)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return fs
    }

    var control: URL { mountpoint.appendingPathComponent(".lazyfs") }
    var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// The power cut: every byte and namespace change not yet synced is gone when this returns.
    /// (Kill every process using the mount first: the power took them too.)
    func cut() throws {
        try command("cut")
    }

    /// Zeroes the counters.
    func resetCounters() throws {
        try command("reset")
    }

    /// Arms a cut at an exact moment: the `count`th next `write` to `path` ("/pacer.sqlite"),
    /// or `fsync` (or fdatasync) of it. When it fires, lazyfs cuts, creates `firedFile` and holds
    /// that request until `release()`; kill the writer first (it cannot return from the
    /// request, so it dies without running another instruction). Every operation then fails
    /// with EIO until the next `cut()`. Every cut disarms.
    func arm(_ kind: String, _ path: String, count: Int = 1) throws {
        try command("arm \(kind) \(path) \(count)")
    }

    /// Lets the request held by a fired cut go (it fails with EIO).
    func release() {
        process.send(SIGUSR2)
    }

    var hasFired: Bool { FileManager.default.fileExists(atPath: firedFile.path) }

    func clearFired() { try? FileManager.default.removeItem(at: firedFile) }

    private func command(_ text: String) throws {
        let fd = open(control.path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw HarnessError("cannot open \(control.path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array("\(text)\n".utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else {
            throw HarnessError("lazyfs '\(text)' failed: \(written < 0 ? String(cString: strerror(errno)) : "short write"); its log: \(log.suffix(2_000))")
        }
    }

    /// The counters (see lazyfs.c).
    func counters() throws -> Counters {
        let text = try String(contentsOf: control, encoding: .utf8)
        var counters = Counters()
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 4).map(String.init)
            if parts.count == 5, parts[0] == "file", let written = UInt64(parts[1]), let synced = UInt64(parts[2]), let fsyncs = UInt64(parts[3]) {
                counters.files[parts[4]] = .init(written: written, synced: synced, fsyncs: fsyncs)
            } else if parts.count >= 3, parts[0] == "cut_file", let bytes = UInt64(parts[1]) {
                counters.lastCutFiles[parts[2...].joined(separator: " ")] = bytes
            } else if parts.count == 2, let value = UInt64(parts[1]) {
                counters.values[parts[0]] = value
            }
        }
        return counters
    }

    struct Counters {
        struct File: Equatable {
            var written: UInt64, synced: UInt64, fsyncs: UInt64
        }
        var values: [String: UInt64] = [:]
        /// By path ("/pacer.sqlite-wal").
        var files: [String: File] = [:]
        /// Bytes the last cut dropped, by path.
        var lastCutFiles: [String: UInt64] = [:]
        subscript(name: String) -> UInt64 { values[name] ?? 0 }
    }

    /// Unmounts (fusermount3 -u, lazily if the mount is still busy) and stops the daemon by
    /// its PID. Safe to call more than once.
    func unmount() async {
        if let fusermount = Self.executable("fusermount3") {
            var unmounted = false
            for _ in 0..<10 where isMounted {
                if (try? TestProcess.run(fusermount, ["-u", mountpoint.path], in: URL(fileURLWithPath: "/"), timeout: .seconds(20))) != nil {
                    unmounted = true
                    break
                }
                try? await Task.sleep(for: .milliseconds(100))
            }
            if !unmounted && isMounted {
                _ = try? TestProcess.run(fusermount, ["-u", "-z", mountpoint.path], in: URL(fileURLWithPath: "/"), timeout: .seconds(20))
            }
        }
        if !(await process.waitForExit(timeout: .seconds(10))) {
            await process.terminate()
        } else {
            await process.terminate()  // (it has ended: this only reaps its watchdog)
        }
    }

    /// Whether the mount point is a lazyfs mount now (/proc/self/mounts).
    var isMounted: Bool {
        let mounts = (try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? ""
        return mounts.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 2 && fields[1] == mountpoint.path && fields[2].hasPrefix("fuse")
        }
    }
}

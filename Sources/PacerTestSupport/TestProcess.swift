public import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A child process for tests (a broker, `mosquitto_sub`, `mosquitto_pub`), with its
/// output captured in a file, signalled and reaped by PID, and never left behind: a tiny
/// watchdog shell kills it if the test process dies first (crash, SIGKILL, timeout).
///
/// Started with `posix_spawn`, not Foundation's `Process`, for two reasons found the hard
/// way: a child inherits the signal mask of the spawning thread, and Swift concurrency and
/// Dispatch worker threads block SIGTERM, so a broker started from a test ignored SIGTERM;
/// and a child inherits every descriptor not marked close-on-exec, such as libmosquitto's
/// client sockets, which then stay open in the child after the test closes them. Here the
/// child gets an empty signal mask, default signal actions, and no descriptor above 2.
///
/// Threading: mutable state (the exit status) is behind a `Mutex`; safe from any task.
public final class TestProcess: Sendable {
    /// The process id.
    public let pid: Int32
    /// Where stdout and stderr go.
    public let outputFile: URL
    private let exitStatus = Mutex<Int32?>(nil)
    private let watchdog = Mutex<Int32?>(nil)

    /// Starts `executable` with `arguments`; stdout and stderr are appended to `outputFile`.
    /// - Parameter environment: the child's whole environment; nil: this process's.
    public static func launch(
        _ executable: String, _ arguments: [String], outputFile: URL, environment: [String: String]? = nil
    ) throws -> TestProcess {
        let pid = try spawn(executable, arguments, outputPath: outputFile.path, environment: environment)
        let process = TestProcess(pid: pid, outputFile: outputFile)
        process.watchdog.withLock { $0 = try? spawnWatchdog(child: pid) }
        return process
    }

    /// Runs a short tool to completion (openssl, mosquitto_passwd) in `directory` and returns
    /// its output; throws with that output when it fails, or kills it after `timeout`.
    ///
    /// Synchronous on purpose (a few tens of milliseconds), and without Foundation's
    /// `Process`: its `waitUntilExit` spins a run loop that has been seen to hang on Linux
    /// containers, and its children inherit every open descriptor (pipes included).
    public static func run(
        _ executable: String, _ arguments: [String], in directory: URL, timeout: Duration = .seconds(60)
    ) throws -> String {
        let outputFile = directory.appendingPathComponent(".run-\(UUID().uuidString.prefix(8)).log")
        defer { try? FileManager.default.removeItem(at: outputFile) }
        // The child starts in `directory` through the shell ("$0" is the directory).
        let pid = try spawn(
            "/bin/sh", ["-c", #"cd "$0" && exec "$@""#, directory.path, executable] + arguments,
            outputPath: outputFile.path, environment: nil)
        let deadline = ContinuousClock.now + timeout
        var raw: Int32 = 0
        while waitpid(pid, &raw, WNOHANG) == 0 {
            if ContinuousClock.now >= deadline {
                Glibc.kill(pid, SIGKILL)
                _ = waitpid(pid, &raw, 0)
                throw TestSupportError("\(executable) \(arguments.joined(separator: " ")) did not finish within \(timeout)")
            }
            usleep(2_000)
        }
        let output = (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
        let end = ProcessEnd(waitStatus: raw)
        guard end == .exited(0) else {
            throw TestSupportError("\(executable) \(arguments.joined(separator: " ")) failed (\(end)): \(output)")
        }
        return output
    }

    private init(pid: Int32, outputFile: URL) {
        self.pid = pid
        self.outputFile = outputFile
    }

    /// posix_spawn with a clean signal state and only stdin/stdout/stderr.
    private static func spawn(
        _ executable: String, _ arguments: [String], outputPath: String, environment: [String: String]?
    ) throws -> Int32 {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        closeInheritedDescriptors(&actions)

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let variables = environment ?? ProcessInfo.processInfo.environment
        let envp = variables.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard rc == 0 else {
            throw TestSupportError("cannot start \(executable): \(String(cString: strerror(rc)))")
        }
        return pid
    }

    /// `posix_spawn_file_actions_addclosefrom_np(actions, 3)` (glibc 2.34+, looked up at run
    /// time because Swift does not see GNU extensions), else one close action per open
    /// descriptor listed in /proc/self/fd.
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            let closeFrom = unsafeBitCast(symbol, to: CloseFrom.self)
            if closeFrom(&actions, 3) == 0 { return }
        }
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in descriptors.compactMap({ Int32($0) }) where descriptor > 2 {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
    }

    /// A shell that waits while both this test process and the child live; if the test
    /// process is gone first, it terminates the child (SIGTERM, then SIGKILL).
    private static func spawnWatchdog(child: Int32) throws -> Int32 {
        let parent = getpid()
        let script = """
            while kill -0 \(parent) 2>/dev/null && kill -0 \(child) 2>/dev/null; do sleep 1; done
            if ! kill -0 \(parent) 2>/dev/null; then kill -TERM \(child) 2>/dev/null; sleep 2; kill -KILL \(child) 2>/dev/null; fi
            """
        return try spawn("/bin/sh", ["-c", script], outputPath: "/dev/null", environment: nil)
    }

    /// Whether the process is still running (reaps it, and its watchdog, once it has exited).
    public var isRunning: Bool {
        let (running, justEnded) = exitStatus.withLock { status -> (Bool, Bool) in
            if status != nil { return (false, false) }
            var raw: Int32 = 0
            let rc = waitpid(pid, &raw, WNOHANG)
            if rc == pid || (rc < 0 && errno == ECHILD) {
                status = rc == pid ? raw : -1
                return (false, true)
            }
            return (true, false)
        }
        if justEnded { stopWatchdog() }  // else it lingers as a zombie until the tests end
        return running
    }

    /// The raw wait status once it has exited (see `waitpid(2)`), else `nil`.
    public var terminationStatus: Int32? {
        _ = isRunning
        return exitStatus.withLock { $0 }
    }

    /// What the process wrote to stdout and stderr so far.
    public var output: String {
        (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
    }

    /// Sends `signal` to the process (by PID), if it still runs.
    public func send(_ signal: Int32) {
        if isRunning { Glibc.kill(pid, signal) }
    }

    /// Waits until the process has exited, or `timeout` passed. Returns whether it exited.
    @discardableResult
    public func waitForExit(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// SIGTERM, wait up to `grace`, then SIGKILL and wait. Stops the watchdog too.
    public func terminate(grace: Duration = .seconds(5)) async {
        send(SIGTERM)
        if !(await waitForExit(timeout: grace)) {
            send(SIGKILL)
            await waitForExit(timeout: .seconds(5))
        }
        stopWatchdog()
    }

    /// SIGKILL at once (no clean shutdown: the kernel closes its sockets).
    public func kill() async {
        send(SIGKILL)
        await waitForExit(timeout: .seconds(5))
        stopWatchdog()
    }

    /// SIGKILL and reap at once, without suspending (for synchronous tests).
    public func killSynchronously() {
        send(SIGKILL)
        exitStatus.withLock { status in
            guard status == nil else { return }
            var raw: Int32 = 0
            status = waitpid(pid, &raw, 0) == pid ? raw : -1
        }
        stopWatchdog()
    }

    private func stopWatchdog() {
        guard let watchdog = watchdog.withLock({ pid -> Int32? in defer { pid = nil }; return pid }) else { return }
        Glibc.kill(watchdog, SIGKILL)
        var raw: Int32 = 0
        _ = waitpid(watchdog, &raw, 0)
    }

    /// Waits until the output contains `text`, or `timeout` passed. Returns whether it does.
    public func waitForOutput(containing text: String, timeout: Duration = .seconds(10)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !output.contains(text) {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }
}

/// How a process ended, from the raw `waitpid(2)` status that `TestProcess` reports.
public enum ProcessEnd: Equatable, CustomStringConvertible {
    case exited(Int32)
    case signalled(Int32)
    case running

    public init(waitStatus: Int32?) {
        guard let status = waitStatus else { self = .running; return }
        if status & 0x7F == 0 {
            self = .exited((status >> 8) & 0xFF)
        } else {
            self = .signalled(status & 0x7F)
        }
    }

    public var description: String {
        switch self {
        case .exited(let code): "exit status \(code)"
        case .signalled(let signal): "killed by signal \(signal)"
        case .running: "still running"
        }
    }
}

public import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A child process for tests (a broker, `mosquitto_sub`, `mosquitto_pub`), with its
/// output captured in a file, signalled by PID, and never left behind: a tiny watchdog
/// shell kills it if the test process dies first (crash, SIGKILL, timeout).
///
/// Threading: all mutable state is behind a `Mutex`; safe from any task.
public final class TestProcess: Sendable {
    /// The process id.
    public let pid: Int32
    /// Where stdout and stderr go.
    public let outputFile: URL
    private let process: Mutex<Process>
    private let watchdog: Mutex<Process?>

    /// Starts `executable` with `arguments`; stdout and stderr go to `outputFile`.
    public static func launch(_ executable: String, _ arguments: [String], outputFile: URL) throws -> TestProcess {
        _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
        let output = try FileHandle(forWritingTo: outputFile)
        output.seekToEndOfFile()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw TestSupportError("cannot start \(executable): \(error)")
        }
        try? output.close()
        return TestProcess(process: process, outputFile: outputFile)
    }

    private init(process: sending Process, outputFile: URL) {
        let pid = process.processIdentifier
        self.pid = pid
        self.outputFile = outputFile
        self.process = Mutex(process)
        self.watchdog = Mutex(Self.startWatchdog(child: pid))
    }

    /// A shell that waits while both this test process and the child live; if the test
    /// process is gone first, it terminates the child (SIGTERM, then SIGKILL).
    private static func startWatchdog(child: Int32) -> Process? {
        let parent = getpid()
        let script = """
            while kill -0 \(parent) 2>/dev/null && kill -0 \(child) 2>/dev/null; do sleep 1; done
            if ! kill -0 \(parent) 2>/dev/null; then kill -TERM \(child) 2>/dev/null; sleep 2; kill -KILL \(child) 2>/dev/null; fi
            """
        let watchdog = Process()
        watchdog.executableURL = URL(fileURLWithPath: "/bin/sh")
        watchdog.arguments = ["-c", script]
        watchdog.standardInput = FileHandle.nullDevice
        watchdog.standardOutput = FileHandle.nullDevice
        watchdog.standardError = FileHandle.nullDevice
        do {
            try watchdog.run()
            return watchdog
        } catch {
            return nil
        }
    }

    /// Whether the process is still running.
    public var isRunning: Bool { process.withLock { $0.isRunning } }

    /// The exit status (or terminating signal) once it has exited.
    public var terminationStatus: Int32? {
        process.withLock { $0.isRunning ? nil : $0.terminationStatus }
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
            try? await Task.sleep(for: .milliseconds(20))
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

    /// SIGKILL at once (no clean shutdown: sockets are closed by the kernel).
    public func kill() async {
        send(SIGKILL)
        await waitForExit(timeout: .seconds(5))
        stopWatchdog()
    }

    private func stopWatchdog() {
        watchdog.withLock { watchdog in
            if let process = watchdog, process.isRunning {
                Glibc.kill(process.processIdentifier, SIGKILL)
            }
            watchdog = nil
        }
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

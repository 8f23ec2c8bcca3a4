import Foundation
import Synchronization

/// Watches the test process's Swift concurrency pool (as wide as the machine has cores: two
/// here). Every 100 ms its own thread queues a task and measures how long the task waited to
/// start; a wait over a second is printed with the wall-clock time, so a live test's timing
/// failure can be told apart from a late node: a test that blocks a pool thread (a synchronous
/// wait, a long computation) delays every task of every test in the process, including the
/// ones that stamp a message's arrival.
public enum PoolStallWatch {
    private static let started = Atomic<Bool>(false)

    /// Starts the watch once per process (later calls do nothing).
    public static func ensureStarted() {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        let thread = Thread {
            let ran = DispatchSemaphore(value: 0)
            var dumped = false
            while true {
                let queued = ContinuousClock.now
                let queuedWall = Date()
                Task.detached {
                    let waited = ContinuousClock.now - queued
                    if waited > .seconds(1) {
                        let stamp = ISO8601DateFormatter().string(from: queuedWall)
                        print("PoolStallWatch: the test process's concurrency pool was blocked: a task queued at \(stamp) started \(waited) late")
                    }
                    ran.signal()
                }
                if ran.wait(timeout: .now() + .seconds(2)) == .timedOut {
                    // Still blocked after 2 s: with PACER_POOL_STALL_GDB=1 (diagnosis, never in
                    // CI), the threads' stacks once, to a file named in the log.
                    if ProcessInfo.processInfo.environment["PACER_POOL_STALL_GDB"] == "1", !dumped {
                        dumped = true
                        let path = "/tmp/pacer-pool-stall-\(getpid()).txt"
                        _ = try? TestProcess.launch("/usr/bin/gdb", ["-p", "\(getpid())", "-batch", "-ex", "thread apply all bt 30"],
                                                    outputFile: URL(fileURLWithPath: path))
                        print("PoolStallWatch: the pool is blocked; the threads' stacks go to \(path)")
                    }
                    ran.wait()
                }
                usleep(100_000)
            }
        }
        thread.name = "pool-stall-watch"
        thread.start()
    }
}

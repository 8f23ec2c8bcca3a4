import CTimerFD
import DequeModule
import Foundation
import Glibc
import Mosquitto
import PacerCore

/// The engine's own OS thread (a command's path without a hop between threads): the `NodeEngine`
/// actor's executor, its input queue and its alarm clock, in one place.
///
/// The thread runs the actor's jobs in order. When it has none, it sleeps in `poll` until a
/// job is enqueued, or until the armed deadline (plus `groupingMs`, on a timerfd: an absolute
/// instant of `CLOCK_BOOTTIME` with no slack; a poll timeout would be up to 0.1 % late, 1 ms
/// after a second's sleep), at which point it hands the deadline input to the engine itself:
/// no task, no Dispatch timer and no other thread is involved in a tick. It is woken (one byte
/// on its pipe) only when it sleeps: enqueuing while it is busy costs a lock and an append.
///
/// It is also the host of the node's command connection (`MQTTLoopHost`): its sleep watches
/// that connection's socket too, and it reads the socket itself, so a command is read,
/// handled, written and answered in one wake-up of this thread, with no hand-off from the
/// MQTT network thread (0.2 ms on this project's VM: docs/benchmarks/history.md, "the engine
/// thread reads its own commands"). Reads happen only
/// between jobs: before a deadline that fell due after work, the socket is checked without
/// waiting, so commands keep their turn under load.
///
/// Grouping: the thread sleeps until `groupingMs` after the earliest deadline, so every
/// deadline up to that instant is served by the same wake-up. A flip is never published
/// before its instant, and at most `groupingMs` (plus the wake-up latency) after it.
///
/// The thread ends after `stop()` (the engine's `deinit`), once the jobs already queued
/// have run.
///
/// It is also a `TaskExecutor`: the engine's loop (and the readers of the client's streams)
/// run with it as their task executor preference (`withTaskExecutorPreference`), so when
/// another thread resumes them (an input was submitted, a stream yielded) the runtime
/// enqueues them here rather than on Swift's global pool, which would cost one more thread
/// switch per input (measured with `perf`: `swift_task_enqueueGlobal` on every deadline).
final class EngineThread<Input: Sendable>: SerialExecutor, TaskExecutor, MQTTLoopHost, @unchecked Sendable {
    // @unchecked Sendable: every mutable field below is read and written only with `mutex`
    // held (`locked`), and the mutex and the pipe are made once in `init` and freed in
    // `deinit`, when no thread can use them any more (the thread holds a strong reference
    // while it runs). A hosted connection is turned only by this thread (MQTTLoopHost's
    // contract).

    private struct State {
        var jobs = Deque<UnownedJob>()
        var inputs = Deque<Input>()
        /// The engine waiting in `next()` with nothing queued.
        var waiter: UnsafeContinuation<Input?, Never>?
        /// No input comes after the ones queued (`finishInputs()`).
        var inputsFinished = false
        /// The armed deadline, in ns of `CLOCK_BOOTTIME` (`NodeClock.monotonicNs(at:)`).
        var deadline: Int64?
        /// The thread waits in `poll` (a wake-up is a byte on `wakePipe`).
        var sleeping = false
        /// The connection this thread serves (`adopt`), until it ends or the thread stops.
        var hosted: MQTTHostedLoop?
        var stopping = false
        var thread: pthread_t?
        /// Times the thread went to sleep (for tests and measurements).
        var sleeps = 0
    }

    /// What the queue holds for `next()`.
    private enum Take { case input(Input), finished, empty }

    /// What each descriptor of the thread's wait is (its `PollSet`).
    private enum Descriptor: Equatable {
        /// `wakePipe`'s read end: a job or input was queued, the deadline moved, or `stop()`.
        case wakeUp
        /// The timerfd of the armed deadline.
        case alarm
        /// The hosted command connection's (`MQTTLoopHost`).
        case connection(MQTTConnectionDescriptor)
    }

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// `[read end, write end]`, non-blocking: one byte wakes the sleeping thread.
    private let wakePipe: [Int32]
    /// The alarm: a timerfd on `CLOCK_BOOTTIME` (the node's monotonic clock), set to the
    /// armed deadline plus `groupingMs` as an absolute instant; readable once it passed.
    private let alarm: Int32
    private var state = State()
    private let deadlineInput: Input
    /// Deadlines this close after the earliest are served by the same wake-up.
    let groupingMs: Millis

    /// - Parameters:
    ///   - name: the thread's name (as `top -H` and `perf` show it).
    ///   - deadlineInput: what `next()` returns when the armed deadline has passed.
    ///   - groupingMs: the thread wakes this long after the earliest deadline.
    init(name: String, deadlineInput: Input, groupingMs: Millis = 1) {
        self.deadlineInput = deadlineInput
        self.groupingMs = groupingMs
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        var fds: [Int32] = [-1, -1]
        let made = pipe(&fds)
        precondition(made == 0, "the engine thread cannot make its wake-up pipe: \(String(cString: strerror(errno)))")
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
        }
        wakePipe = fds
        alarm = timerfd_create(CLOCK_BOOTTIME, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        precondition(alarm >= 0, "the engine thread cannot make its alarm (timerfd): \(String(cString: strerror(errno)))")
        let thread = Thread { [self] in
            Self.nameCurrentThread(name)
            loop()
        }
        thread.start()
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        for fd in wakePipe { close(fd) }
        close(alarm)
    }

    // MARK: - Executor

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let wake = locked { state in
            state.jobs.append(job)
            return Self.takeSleeper(&state)
        }
        if wake { wakeSleeper() }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    func checkIsolated() {
        let thread = locked { $0.thread }
        precondition(thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false,
                     "not on the engine thread")
    }

    /// True on the engine thread (tests).
    var isCurrent: Bool {
        locked { $0.thread }.map { pthread_equal($0, pthread_self()) != 0 } ?? false
    }

    /// How many times the thread went to sleep so far (tests, measurements).
    var sleepCount: Int { locked { $0.sleeps } }

    // MARK: - Inputs

    /// Queues an input for `next()` (safe from any thread).
    func submit(_ input: Input) {
        let waiter = locked { state -> UnsafeContinuation<Input?, Never>? in
            guard !state.inputsFinished else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.inputs.append(input)
            return nil
        }
        // Resuming enqueues the waiting engine on this executor (`enqueue` wakes the thread).
        waiter?.resume(returning: input)
    }

    /// The first queued input when it satisfies `accepts` (taken), else nil (the queue is
    /// unchanged). Never waits: the engine's group commit takes the commands already queued.
    func takeInput(if accepts: (Input) -> Bool) -> Input? {
        locked { state in
            guard let first = state.inputs.first, accepts(first) else { return nil }
            return state.inputs.removeFirst()
        }
    }

    /// Whether an input is queued (taken or not by `takeInput`).
    var hasQueuedInput: Bool { locked { !$0.inputs.isEmpty } }

    /// Whether jobs wait to run on the thread besides the current one: the readers of the
    /// client's streams, resumed with a message they are about to queue (the engine's group
    /// commit yields to them).
    var hasQueuedJobs: Bool { locked { !$0.jobs.isEmpty } }

    /// No input is accepted after the ones already queued; `next()` returns nil once they are taken.
    func finishInputs() {
        let waiter = locked { state -> UnsafeContinuation<Input?, Never>? in
            state.inputsFinished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The next input in arrival order, waiting while there is none; nil after
    /// `finishInputs()` once the queue is empty. One caller at a time (the engine loop).
    func next(isolation: isolated (any Actor)? = #isolation) async -> Input? {
        let take = locked { state -> Take in
            if let input = state.inputs.popFirst() { return .input(input) }
            return state.inputsFinished ? .finished : .empty
        }
        switch take {
        case .input(let input): return input
        case .finished: return nil
        case .empty: break
        }
        return await withUnsafeContinuation(isolation: isolation) { continuation in
            let ready = locked { state -> Take in
                if let input = state.inputs.popFirst() { return .input(input) }
                if state.inputsFinished { return .finished }
                precondition(state.waiter == nil, "EngineThread.next() called by two loops")
                state.waiter = continuation
                return .empty
            }
            switch ready {
            case .input(let input): continuation.resume(returning: input)
            case .finished: continuation.resume(returning: nil)
            case .empty: break
            }
        }
    }

    // MARK: - The command connection

    /// Serves `loop`'s connection from the next sleep on (`MQTTLoopHost`). False once the
    /// thread is stopping: the client's network thread then serves it.
    func adopt(_ loop: MQTTHostedLoop) -> Bool {
        let wake = locked { state -> Bool? in
            guard !state.stopping else { return nil }
            state.hosted = loop  // a previous one has ended: its network thread adopts anew only then
            return Self.takeSleeper(&state)
        }
        guard let wake else { return false }
        if wake { wakeSleeper() }
        return true
    }

    /// Serves the connection now, without waiting: a poll with no timeout, then a turn when the
    /// socket or the client's wake-up pipe is ready. On the thread only (the engine calls it from
    /// its job, between groups of commands). Why: the socket is otherwise read only when the thread
    /// has no job, and a long burst keeps it busy; the broker sends its acknowledgements of our
    /// publishes behind the burst's commands, and each QoS 1 publish stays in libmosquitto's memory
    /// until its acknowledgement is read (a burst of 10,000 starts held about twice the heap
    /// without it: docs/benchmarks/history.md, 2026-11-27, "the engine thread reads its own commands").
    func serveConnectionNow() {
        guard let hosted = locked({ $0.hosted }) else { return }
        var set = PollSet<Descriptor>()
        hosted.addDescriptors(to: &set, as: Descriptor.connection)
        guard set.wait(timeoutMs: 0) > 0 else { return }
        turn(hosted, after: set)
    }

    /// One turn of the served connection (when its descriptors in `set` were ready, or its
    /// keep-alive is due); forgets it when the connection ended (its network thread has it back).
    private func turn(_ hosted: MQTTHostedLoop, after set: PollSet<Descriptor>) {
        if !hosted.turn(after: set, as: Descriptor.connection) {
            locked { state in if state.hosted === hosted { state.hosted = nil } }
        }
    }

    /// Whether the thread serves a connection now (tests).
    var servesConnection: Bool { locked { $0.hosted != nil } }

    // MARK: - Alarm

    /// Delivers `deadlineInput` once the monotonic clock (`CLOCK_BOOTTIME`, ns) reaches
    /// `monotonicNs` (+ `groupingMs`); nil disarms. Replaces the previous deadline; an earlier
    /// one wakes the sleeping thread.
    func arm(atMonotonicNs monotonicNs: Int64?) {
        let wake = locked { state -> Bool in
            guard state.deadline != monotonicNs else { return false }
            let earlier = monotonicNs.map { new in state.deadline.map { new < $0 } ?? true } ?? false
            state.deadline = monotonicNs
            return earlier && Self.takeSleeper(&state)
        }
        if wake { wakeSleeper() }
    }

    /// The armed deadline, ns of `CLOCK_BOOTTIME` (tests).
    var armedMonotonicNs: Int64? { locked { $0.deadline } }

    /// Ends the thread once the jobs already queued have run.
    func stop() {
        let wake = locked { state -> Bool in
            state.stopping = true
            return Self.takeSleeper(&state)
        }
        if wake { wakeSleeper() }
    }

    // MARK: - The thread

    private func loop() {
        let serial = asUnownedSerialExecutor()
        let preferred = asUnownedTaskExecutor()
        /// The hosted socket was checked since the last job or deadline (see the type's doc).
        var socketChecked = false
        /// The instant the alarm is set to (ns of `CLOCK_BOOTTIME`); nil: disarmed.
        var armedNs: Int64?
        pthread_mutex_lock(mutex)
        state.thread = pthread_self()
        while true {
            if let job = state.jobs.popFirst() {
                pthread_mutex_unlock(mutex)
                // Every job here runs alone on this thread, so each may run as isolated to the
                // serial executor: a task preferring this thread then enters the engine actor
                // in place, without enqueuing itself again.
                job.runSynchronously(isolatedTo: serial, taskExecutor: preferred)
                socketChecked = false
                pthread_mutex_lock(mutex)
                continue
            }
            if state.stopping { break }
            // Nanoseconds to the deadline (+ grouping) on CLOCK_BOOTTIME, the node's monotonic clock.
            let remaining = state.deadline.map { $0 + groupingMs * 1_000_000 - NodeClock.nanoseconds(CLOCK_BOOTTIME) }
            if let remaining, remaining <= 0, state.hosted == nil || socketChecked {
                // Due: hand the engine its deadline input here, on this thread.
                socketChecked = false
                state.deadline = nil
                if let waiter = state.waiter {
                    state.waiter = nil
                    pthread_mutex_unlock(mutex)
                    waiter.resume(returning: deadlineInput)  // enqueues the engine's job here
                    pthread_mutex_lock(mutex)
                } else if !state.inputsFinished {
                    state.inputs.append(deadlineInput)  // the engine is busy: it takes it next
                }
                continue
            }
            // The alarm holds the deadline; the timeout is only the hosted connection's next turn
            // (its keep-alive: a little late is harmless), or none.
            let alarmNs = state.deadline.map { $0 + groupingMs * 1_000_000 }
            if alarmNs != armedNs {
                setAlarm(alarmNs)
                armedNs = alarmNs
            }
            let hosted = state.hosted
            var timeoutMs = hosted?.millisecondsToNextTurn() ?? -1
            if let remaining, remaining <= 0 { timeoutMs = 0 }  // due: check the socket, then deliver
            let sleeps = timeoutMs != 0
            if sleeps {
                state.sleeping = true
                state.sleeps += 1
            }
            pthread_mutex_unlock(mutex)
            var set = PollSet<Descriptor>()
            set.add(.wakeUp, fd: wakePipe[0], events: Int16(POLLIN))
            set.add(.alarm, fd: alarm, events: Int16(POLLIN))
            hosted?.addDescriptors(to: &set, as: Descriptor.connection)
            set.wait(timeoutMs: timeoutMs)
            if sleeps {
                pthread_mutex_lock(mutex)
                state.sleeping = false
                pthread_mutex_unlock(mutex)
            }
            if set.readiness(of: .wakeUp) != 0 {
                var drain = [UInt8](repeating: 0, count: 64)
                while read(wakePipe[0], &drain, drain.count) > 0 {}
            }
            if let hosted {
                socketChecked = true
                turn(hosted, after: set)
            }
            pthread_mutex_lock(mutex)
        }
        let hosted = state.hosted
        state.hosted = nil
        state.thread = nil
        pthread_mutex_unlock(mutex)
        hosted?.release()  // the client's network thread serves the connection from here
    }

    /// Names the calling thread (as `top -H`, `perf` and /proc show it; 15 bytes at most).
    private static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    /// Whether the thread must be signalled (it sleeps and nobody signalled it yet).
    private static func takeSleeper(_ state: inout State) -> Bool {
        guard state.sleeping else { return false }
        state.sleeping = false
        return true
    }

    /// Sets the alarm to an absolute instant (ns of `CLOCK_BOOTTIME`), or disarms it (nil).
    /// Setting it also clears a passed one.
    private func setAlarm(_ nanoseconds: Int64?) {
        var value = itimerspec()
        if let nanoseconds { value.it_value = Self.timespec(nanoseconds: max(1, nanoseconds)) }
        _ = timerfd_settime(alarm, Int32(TFD_TIMER_ABSTIME), &value, nil)
    }

    /// Wakes the sleeping thread (called by whoever took the sleeper).
    private func wakeSleeper() {
        var byte: UInt8 = 1
        _ = write(wakePipe[1], &byte, 1)  // EAGAIN when the pipe is full: a wake-up is pending anyway
    }

    private func locked<T>(_ body: (inout State) -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body(&state)
    }

    private static func timespec(nanoseconds ns: Int64) -> Glibc.timespec {
        Glibc.timespec(tv_sec: Int(ns / 1_000_000_000), tv_nsec: Int(ns % 1_000_000_000))
    }
}

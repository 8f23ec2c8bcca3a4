import Synchronization

/// The node's one sleeping task: wakes the engine loop at the earliest deadline.
///
/// `arm(at:)` replaces the pending wake-up (cancelling the previous sleep); `arm(at: nil)`
/// leaves nothing sleeping, so an idle node does not wake up at all. At most one task sleeps
/// at any time, whatever the number of timers.
final class DeadlineAlarm: Sendable {
    private struct State {
        var armedAt: ContinuousClock.Instant?
        var task: Task<Void, Never>?
    }

    private let state = Mutex(State())
    private let fire: @Sendable () -> Void

    /// - Parameter fire: called (from the sleeping task) when the armed instant is reached.
    init(fire: @escaping @Sendable () -> Void) {
        self.fire = fire
    }

    func arm(at instant: ContinuousClock.Instant?) {
        state.withLock { state in
            guard state.armedAt != instant else { return }
            state.task?.cancel()
            state.armedAt = instant
            guard let instant else {
                state.task = nil
                return
            }
            let fire = self.fire
            state.task = Task {
                do {
                    try await Task.sleep(until: instant, tolerance: .milliseconds(1), clock: .continuous)
                } catch {
                    return  // re-armed or cancelled
                }
                // Forget the fired instant so the engine may arm the same one again.
                self.state.withLock { if $0.armedAt == instant { $0.armedAt = nil; $0.task = nil } }
                fire()
            }
        }
    }

    func cancel() {
        arm(at: nil)
    }

    deinit {
        state.withLock { $0.task?.cancel() }
    }
}

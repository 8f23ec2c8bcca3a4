import Synchronization
import PacerCore

/// The node's one sleeping task: wakes the engine loop at the earliest deadline.
///
/// `arm(at:after:)` replaces the pending wake-up (cancelling the previous sleep); `arm(at: nil)`
/// leaves nothing sleeping, so an idle node does not wake up at all. At most one task sleeps
/// at any time, whatever the number of timers.
final class DeadlineAlarm: Sendable {
    private struct State {
        /// The deadline on the node's timeline the sleeping task wakes up for.
        var armedAt: Millis?
        var task: Task<Void, Never>?
    }

    private let state = Mutex(State())
    private let fire: @Sendable () -> Void

    /// - Parameter fire: called (from the sleeping task) when the armed instant is reached.
    init(fire: @escaping @Sendable () -> Void) {
        self.fire = fire
    }

    /// Wakes the engine at `deadline` (a timeline instant, `delay` from now), or never with nil.
    func arm(at deadline: Millis?, after delay: Duration = .zero) {
        state.withLock { state in
            guard state.armedAt != deadline else { return }
            state.task?.cancel()
            state.armedAt = deadline
            guard deadline != nil else {
                state.task = nil
                return
            }
            let fire = self.fire
            state.task = Task {
                do {
                    try await Task.sleep(for: delay, tolerance: .milliseconds(1), clock: .continuous)
                } catch {
                    return  // re-armed or cancelled
                }
                // Forget the fired instant so the engine may arm the same one again.
                self.state.withLock { if $0.armedAt == deadline { $0.armedAt = nil; $0.task = nil } }
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

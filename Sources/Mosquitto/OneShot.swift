import Synchronization

/// A value delivered once, from any thread, to one awaiting task.
///
/// The first `fulfil` wins; later ones are ignored. This is how the network thread (and
/// timeouts) hand results to `async` callers without ever resuming a continuation twice.
///
/// Threading: all state is behind a `Mutex`; `fulfil` never blocks and may be called from
/// the libmosquitto network thread, including inside a callback.
final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var continuation: CheckedContinuation<Value, Never>?
    }

    private let state = Mutex(State())

    init() {}

    /// Delivers `value` unless a value was already delivered. Returns whether it was taken.
    @discardableResult
    func fulfil(_ value: Value) -> Bool {
        let continuation: CheckedContinuation<Value, Never>?
        let taken = state.withLock { state -> (Bool, CheckedContinuation<Value, Never>?) in
            guard state.value == nil else { return (false, nil) }
            state.value = value
            let continuation = state.continuation
            state.continuation = nil
            return (true, continuation)
        }
        continuation = taken.1
        continuation?.resume(returning: value)
        return taken.0
    }

    /// Waits for the value (one waiter at a time).
    func wait() async -> Value {
        await withCheckedContinuation { (continuation: CheckedContinuation<Value, Never>) in
            let ready = state.withLock { state -> Value? in
                if let value = state.value { return value }
                state.continuation = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Waits for the value, or fulfils it with `timeoutValue` after `timeout`, or with
    /// `cancelValue` when the calling task is cancelled.
    func wait(timeout: Duration, timeoutValue: Value, cancelValue: Value) async -> Value {
        await withTaskCancellationHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        try await Task.sleep(for: timeout)
                        self.fulfil(timeoutValue)
                    } catch {
                        // Cancelled: either the value arrived (then this is ignored) or the
                        // caller was cancelled.
                        self.fulfil(cancelValue)
                    }
                }
                let value = await self.wait()
                group.cancelAll()
                return value
            }
        } onCancel: {
            self.fulfil(cancelValue)
        }
    }
}

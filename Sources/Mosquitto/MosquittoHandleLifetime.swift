/// The lifetime of the libmosquitto handle (`struct mosquitto *`) and of the network
/// thread that runs its loop.
///
/// Invariants:
/// - `mosquitto_destroy` is called exactly once: this value hands that duty to exactly one
///   caller (a `true` from ``close()``, ``leaveCall()`` or ``threadExited()``), when the
///   handle is closing, no API call is inside it and the network thread has returned.
/// - No API call enters a handle that is closing or destroyed.
/// - At most one network thread runs at a time, and only while the handle is open or
///   closing; it starts only on an open handle.
///
/// A plain value; it never calls libmosquitto.
///
/// Threading: none of its own; it lives inside ``MQTTConnectionStateMachine``, behind the
/// client core's `Mutex`.
struct MosquittoHandleLifetime: Equatable {
    /// Whether the network thread runs.
    enum LoopThread: Equatable {
        case stopped
        case running
    }

    enum State: Equatable {
        /// API calls may use the handle; `callsInside` of them are inside now.
        case open(thread: LoopThread, callsInside: Int)
        /// Shut down: destroy as soon as no call is inside and the thread is gone.
        case closing(thread: LoopThread, callsInside: Int)
        /// `mosquitto_destroy` has been called (or is being called by whoever got the duty).
        case destroyed
    }

    private(set) var state: State = .open(thread: .stopped, callsInside: 0)

    /// Whether the network thread runs.
    var threadRunning: Bool {
        switch state {
        case .open(let thread, _), .closing(let thread, _): thread == .running
        case .destroyed: false
        }
    }

    /// Whether the handle is still open for API calls and connecting.
    var isOpen: Bool {
        switch state {
        case .open: true
        case .closing, .destroyed: false
        }
    }

    /// The network thread is about to start. Returns false (start nothing) unless the
    /// handle is open and no thread runs.
    mutating func threadStarting() -> Bool {
        switch state {
        case .open(.stopped, let calls):
            state = .open(thread: .running, callsInside: calls)
            return true
        case .open(.running, _), .closing, .destroyed:
            return false
        }
    }

    /// The network thread has returned. Returns whether it must now destroy the handle.
    mutating func threadExited() -> Bool {
        switch state {
        case .open(_, let calls):
            state = .open(thread: .stopped, callsInside: calls)
            return false
        case .closing(_, let calls):
            state = .closing(thread: .stopped, callsInside: calls)
            return takeDestroyDuty()
        case .destroyed:
            return false
        }
    }

    /// An API call wants to use the handle. Returns false when it is shut down.
    mutating func enterCall() -> Bool {
        switch state {
        case .open(let thread, let calls):
            state = .open(thread: thread, callsInside: calls + 1)
            return true
        case .closing, .destroyed:
            return false
        }
    }

    /// An API call is done with the handle. Returns whether the caller must now destroy it.
    mutating func leaveCall() -> Bool {
        switch state {
        case .open(let thread, let calls):
            state = .open(thread: thread, callsInside: max(calls - 1, 0))
            return false
        case .closing(let thread, let calls):
            state = .closing(thread: thread, callsInside: max(calls - 1, 0))
            return takeDestroyDuty()
        case .destroyed:
            return false
        }
    }

    /// disconnect() or deinit. Returns whether the caller must destroy the handle now
    /// (nothing is inside it and no thread runs).
    mutating func close() -> Bool {
        switch state {
        case .open(let thread, let calls):
            state = .closing(thread: thread, callsInside: calls)
            return takeDestroyDuty()
        case .closing, .destroyed:
            return false
        }
    }

    /// True exactly once: closing, no call inside, no thread.
    private mutating func takeDestroyDuty() -> Bool {
        switch state {
        case .closing(.stopped, 0):
            state = .destroyed
            return true
        case .open, .closing, .destroyed:
            return false
        }
    }
}

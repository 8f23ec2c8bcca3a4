import Foundation

@testable import Mosquitto

/// Test-only views of the state machine's actions and states, so that a test reads as a
/// list of facts (`#expect(end.stops)`) instead of a nest of `if case` patterns.

extension MQTTConnectionStateMachine {
    /// The state's case, without its context.
    enum Phase: Equatable {
        case idle, connecting, connected, reconnecting, stopping, closed
    }

    var phase: Phase {
        switch state {
        case .idle: .idle
        case .connecting: .connecting
        case .connected: .connected
        case .reconnecting: .reconnecting
        case .stopping: .stopping
        case .closed: .closed
        }
    }

    /// Failed attempts in a row of the connection being made (0 when none is).
    var failedAttempts: Int {
        switch state {
        case .connecting(let context), .reconnecting(let context): context.failedAttempts
        case .idle, .connected, .stopping, .closed: 0
        }
    }

    /// Where the attempt is, while connecting or reconnecting.
    var attempt: Attempt? {
        switch state {
        case .connecting(let context), .reconnecting(let context): context.attempt
        case .idle, .connected, .stopping, .closed: nil
        }
    }
}

extension MQTTConnectionStateMachine.ConnackAction {
    var event: MQTTConnectionEvent? {
        switch self {
        case .accepted(let event, _, _), .refused(let event, _, _): event
        case .ignore: nil
        }
    }

    var waiters: [OneShot<Result<Void, MQTTError>>] {
        switch self {
        case .accepted(_, _, let waiters), .refused(_, let waiters, _): waiters
        case .ignore: []
        }
    }

    /// What the waiters get.
    var result: Result<Void, MQTTError>? {
        switch self {
        case .accepted: .success(())
        case .refused(_, _, let error): .failure(error)
        case .ignore: nil
        }
    }

    var resubscribe: [(filter: String, qos: MQTTQoS)] {
        switch self {
        case .accepted(_, let resubscribe, _): resubscribe
        case .refused, .ignore: []
        }
    }
}

extension MQTTConnectionStateMachine.EndAction {
    var stops: Bool {
        if case .stop = next { return true }
        return false
    }

    var retryDelay: Duration? {
        if case .retry(let delay) = next { return delay }
        return nil
    }

    /// The `connect()` callers failed by a stop.
    var waiters: [OneShot<Result<Void, MQTTError>>] {
        if case .stop(let waiters, _) = next { return waiters }
        return []
    }

    /// What the failed waiters get (a stop), or success (a retry keeps them waiting).
    var result: Result<Void, MQTTError> {
        if case .stop(_, let error) = next { return .failure(error) }
        return .success(())
    }
}

extension MQTTConnectionStateMachine.ShutdownAction {
    /// Whether the caller must wait for the network thread.
    var waitsForThread: Bool {
        switch thread {
        case .disconnectAndWait, .wakeAndWait: true
        case .none, .leave: false
        }
    }
}

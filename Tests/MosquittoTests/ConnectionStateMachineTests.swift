import Foundation
import Testing

@testable import Mosquitto

/// The connection machine's states and what shutdown and cancellation do in each of them.
/// (The older scenarios are in UnitTests.swift.)
@Suite("MQTTConnectionStateMachine states (no broker)")
struct ConnectionStateMachineTests {
    typealias Machine = MQTTConnectionStateMachine

    func machine() -> Machine {
        Machine(
            version: .v5, reconnectPolicy: MQTTReconnectPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(30)),
            endpoint: "127.0.0.1:1883", tlsConfigured: false)
    }

    /// connect() started: the thread runs and dials. Returns the waiter's token.
    @discardableResult
    func dial(_ state: inout Machine, _ waiter: OneShot<Result<Void, MQTTError>> = OneShot()) -> UInt64 {
        guard case .startThreadAndWait(let token) = state.connectRequested(waiter) else {
            Issue.record("expected the thread to start")
            return 0
        }
        #expect(state.attemptStarting() == .connect)
        return token
    }

    func connected() -> Machine {
        var state = machine()
        dial(&state)
        state.connectSent()
        _ = state.connackReceived(reasonCode: 0, sessionPresent: false)
        return state
    }

    /// Lost after a success, waiting to reconnect.
    func reconnecting() -> Machine {
        var state = connected()
        _ = state.connectionEnded(rc: MOSQ_CONN_LOST, errno: 0)
        return state
    }

    @Test("a connect() walks idle → connecting (dialing → awaiting CONNACK) → connected, and the thread starts once")
    func happyPath() {
        var state = machine()
        #expect(state.phase == .idle && !state.handle.threadRunning)
        let waiter = OneShot<Result<Void, MQTTError>>()
        let token = dial(&state, waiter)
        #expect(state.phase == .connecting && state.attempt == .dialing && state.handle.threadRunning)
        guard case .wait(let second) = state.connectRequested(OneShot()) else {
            Issue.record("a second connect() waits on the same thread"); return
        }
        #expect(second != token)
        state.connectSent()
        #expect(state.attempt == .awaitingConnack)
        let connack = state.connackReceived(reasonCode: 0, sessionPresent: true)
        #expect(connack.waiters.count == 2 && connack.waiters.contains { $0 === waiter })
        #expect(state.isConnected && state.phase == .connected)
        guard case .succeed = state.connectRequested(OneShot()) else {
            Issue.record("connected: connect() returns at once"); return
        }
    }

    @Test("disconnect() in each state: what it does about the network thread", arguments: [
        "idle", "dialing", "awaitingConnack", "backingOff", "connected", "reconnecting", "stoppingDialing",
        "stoppingBackingOff", "afterFatal",
    ])
    func shutdownInEachState(name: String) {
        var state = machine()
        enum Expected { case none, leave, disconnectAndWait }
        let expected: Expected
        switch name {
        case "idle":
            expected = .none
        case "dialing":
            dial(&state)
            expected = .leave
        case "awaitingConnack":
            dial(&state)
            state.connectSent()
            expected = .disconnectAndWait
        case "backingOff":
            dial(&state)
            _ = state.connectionEnded(rc: MOSQ_ERRNO, errno: ECONNREFUSED, connectFailed: true)
            #expect(state.attempt == .backingOff(.seconds(1)))
            expected = .disconnectAndWait
        case "connected":
            state = connected()
            expected = .disconnectAndWait
        case "reconnecting":
            state = reconnecting()
            #expect(state.phase == .reconnecting && state.attempt == .backingOff(.seconds(1)))
            expected = .disconnectAndWait
        case "stoppingDialing":
            let token = dial(&state)
            #expect(state.connectAbandoned(token: token) == .wakeNetworkThread)
            #expect(state.phase == .stopping)
            expected = .leave
        case "stoppingBackingOff":
            let token = dial(&state)
            _ = state.connectionEnded(rc: MOSQ_ERRNO, errno: ECONNREFUSED, connectFailed: true)
            #expect(state.connectAbandoned(token: token) == .wakeNetworkThread)
            expected = .disconnectAndWait
        default:  // "afterFatal"
            state = connected()
            let end = state.connectionEnded(rc: MOSQ_NOMEM, errno: 0)
            #expect(end.stops)
            _ = state.threadExited()
            #expect(state.phase == .idle)
            expected = .none
        }
        let action = state.shutdownRequested()
        #expect(state.phase == .closed)
        switch (action.thread, expected) {
        case (.none, .none):
            #expect(action.destroy, "no thread: the caller destroys the handle")
        case (.leave, .leave):
            #expect(!action.destroy, "the thread destroys the handle when its connect call returns")
            #expect(state.threadExited().destroy)
        case (.disconnectAndWait(let exit), .disconnectAndWait):
            #expect(!action.destroy)
            // The thread notices: it stops instead of another attempt, and its exit wakes disconnect().
            #expect(state.stopRequested)
            #expect(state.attemptStarting() == .stop)
            let exited = state.threadExited()
            #expect(exited.destroy)
            #expect(exited.exitWaiters.contains { $0 === exit })
        default:
            Issue.record("\(name): unexpected \(action.thread)")
        }
        #expect(state.handle.state == .destroyed)
    }

    @Test("a second disconnect() only wakes and waits; nothing leaves closed")
    func closedIsTerminal() {
        var state = connected()
        guard case .disconnectAndWait = state.shutdownRequested().thread else { Issue.record("first"); return }
        let again = state.shutdownRequested()
        #expect(!again.first)
        guard case .wakeAndWait = again.thread else { Issue.record("second: \(again.thread)"); return }
        guard case .fail(let error) = state.connectRequested(OneShot()) else { Issue.record("connect after shutdown"); return }
        #expect(error.code == .shutdown)
        guard case .ignore = state.connackReceived(reasonCode: 0, sessionPresent: false) else {
            Issue.record("a CONNACK after shutdown is ignored"); return
        }
        #expect(state.connectionEnded(rc: MOSQ_CONN_LOST, errno: 0).events.isEmpty)
        #expect(state.phase == .closed)
    }

    @Test("shutdown fails the connect() callers and the SUBACK waiters, and drops the kept publishes")
    func shutdownSettlesEveryone() throws {
        var state = reconnecting()
        let waiter = OneShot<Result<Void, MQTTError>>()
        guard case .wait = state.connectRequested(waiter) else { Issue.record("expected to wait"); return }
        let publish = PublishTracker.PendingPublish(topic: "t", payload: [], qos: .atLeastOnce, retain: false, properties: .none)
        #expect(state.publishRequested(publish) == .queued)
        let action = state.shutdownRequested()
        #expect(action.connectWaiters.count == 1 && action.connectWaiters.first === waiter)
        #expect(state.publishes.kept.isEmpty)
        guard case .fail(let error) = state.publishRequested(publish) else { Issue.record("publish after shutdown"); return }
        #expect(error.code == .shutdown)
    }

    @Test("a connect() that gives up while others wait, or after a connection was made, does not stop the thread")
    func abandonOnlyWhenAlone() {
        var state = machine()
        let first = dial(&state)
        guard case .wait(let second) = state.connectRequested(OneShot()) else { Issue.record("expected to wait"); return }
        #expect(state.connectAbandoned(token: first) == .none)
        #expect(state.phase == .connecting)
        #expect(state.connectAbandoned(token: second) == .wakeNetworkThread)
        #expect(state.phase == .stopping)
        #expect(state.attemptStarting() == .stop)

        var later = reconnecting()
        guard case .wait(let token) = later.connectRequested(OneShot()) else { Issue.record("expected to wait"); return }
        #expect(later.connectAbandoned(token: token) == .none)
        #expect(later.phase == .reconnecting)
        #expect(later.attemptStarting() == .connect)
    }

    @Test("a connect() while an abandoned thread stops waits for its exit, then starts a new one")
    func restartAfterStop() {
        var state = machine()
        let token = dial(&state)
        _ = state.connectAbandoned(token: token)
        guard case .waitForThreadExit(let exit) = state.connectRequested(OneShot()) else {
            Issue.record("expected to wait for the thread"); return
        }
        #expect(state.attemptStarting() == .stop)
        let exited = state.threadExited()
        #expect(!exited.destroy)
        #expect(exited.exitWaiters.contains { $0 === exit })
        #expect(state.phase == .idle && !state.handle.threadRunning)
        guard case .startThreadAndWait = state.connectRequested(OneShot()) else { Issue.record("expected a new thread"); return }
        #expect(state.handle.threadRunning)
    }

    @Test("a TLS failure while reconnecting is retried (the first connection worked), a fatal one ends with loopExited")
    func reconnectFailures() {
        var state = reconnecting()
        #expect(state.attemptStarting() == .connect)
        let protocolError = state.connectionEnded(rc: MOSQ_PROTOCOL, errno: 0)
        #expect(protocolError.retryDelay == .seconds(2))
        #expect(protocolError.events.isEmpty)
        #expect(state.attemptStarting() == .connect)
        let fatal = state.connectionEnded(rc: MOSQ_NOMEM, errno: 0)
        #expect(fatal.stops)
        guard case .loopExited = fatal.events.last else { Issue.record("expected loopExited: \(fatal.events)"); return }
        #expect(state.phase == .stopping)
    }

    @Test("publishes and subscriptions follow the connection: kept while reconnecting, sent once connected")
    func subMachinesFollowTheState() throws {
        var state = reconnecting()
        #expect(state.subscriptionAdded("a", qos: .atLeastOnce) == nil)
        let publish = PublishTracker.PendingPublish(topic: "t", payload: [], qos: .atLeastOnce, retain: false, properties: .none)
        #expect(state.publishRequested(publish) == .queued)
        #expect(state.attemptStarting() == .connect)
        state.connectSent()
        let connack = state.connackReceived(reasonCode: 0, sessionPresent: true)
        #expect(connack.resubscribe.map(\.filter) == ["a"])
        #expect(state.subscriptionAdded("b", qos: .atMostOnce) == 2)
        #expect(state.publishRequested(publish) == .queued, "behind the flush")
        #expect(state.takeFlush().count == 2)
        #expect(state.takeFlush().isEmpty)
        #expect(state.publishRequested(publish) == .publishNow(generation: 2))
    }
}

private let MOSQ_NOMEM: Int32 = 1
private let MOSQ_PROTOCOL: Int32 = 2
private let MOSQ_CONN_LOST: Int32 = 7
private let MOSQ_ERRNO: Int32 = 14

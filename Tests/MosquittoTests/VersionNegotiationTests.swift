import Foundation
import Testing

@testable import Mosquitto

/// MQTT 5 first, 3.1.1 when the broker will not speak it (amqtt, RabbitMQ), through the connection
/// machine with injected instants: which signs make the client fall back, which never do, and
/// that the version is kept once a broker accepted one.
@Suite("Version negotiation in the connection machine (no broker)")
struct VersionNegotiationTests {
    typealias Machine = MQTTConnectionStateMachine
    let start = ContinuousClock.now

    func machine(fallsBack: Bool = true, version: MQTTVersion = .v5) -> Machine {
        Machine(
            version: version, fallsBack: fallsBack,
            reconnectPolicy: MQTTReconnectPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(30)),
            endpoint: "127.0.0.1:1883", tlsConfigured: false)
    }

    /// connect() called, the thread dialled and sent CONNECT at `start + sentAfter`.
    func sent(_ state: inout Machine, sentAfter: Duration = .zero, waiter: OneShot<Result<Void, MQTTError>> = OneShot()) {
        switch state.connectRequested(waiter) {
        case .startThreadAndWait, .wait: break
        default: Issue.record("expected connect() to wait")
        }
        #expect(state.attemptStarting() == .connect)
        state.connectSent(now: start + sentAfter)
    }

    @Test("a broker that closes the MQTT 5 connection before any CONNACK: 3.1.1 at once, connect() still waits, and 3.1.1 is kept once accepted")
    func closedBeforeConnack() {
        var state = machine()
        let waiter = OneShot<Result<Void, MQTTError>>()
        sent(&state, waiter: waiter)
        let end = state.connectionEnded(rc: MOSQ_CONN_LOST, errno: 0)
        #expect(end.retryDelay == .zero && !end.stops && end.waiters.isEmpty)
        #expect(state.version == .v3_1_1)
        #expect(state.negotiation.fallbackReason?.contains("closed the connection") == true)
        #expect(state.attemptStarting() == .connect)
        state.connectSent(now: start + .seconds(1))
        let connack = state.connackReceived(reasonCode: 0, sessionPresent: false)
        #expect(connack.waiters.contains { $0 === waiter })
        // Kept: a later drop and reconnect stays on 3.1.1.
        _ = state.connectionEnded(rc: MOSQ_CONN_LOST, errno: 0)
        #expect(state.version == .v3_1_1 && !state.negotiation.isOpen)
    }

    @Test("a CONNACK refusing the version (0x84, or a 3.1.1-style 1): no error, 3.1.1 at once")
    func refusedVersion() {
        for code: Int32 in [0x84, 1] {
            var state = machine()
            sent(&state)
            let connack = state.connackReceived(reasonCode: code, sessionPresent: false)
            #expect(connack.waiters.isEmpty && connack.event == nil, "code \(code)")
            let end = state.connectionEnded(rc: MOSQ_CONN_REFUSED, errno: 0)
            #expect(end.retryDelay == .zero && !end.stops, "code \(code)")
            #expect(state.version == .v3_1_1 && state.negotiation.fallbackReason?.contains("0x84") == true)
        }
    }

    @Test("an MQTT 5 CONNECT left unanswered: abandoned after 2 s, not before, then 3.1.1")
    func unanswered() {
        var state = machine()
        sent(&state)
        let early = state.abandonsUnansweredConnect(now: start + .milliseconds(1_999))
        #expect(!early && state.version == .v5)
        let due = state.abandonsUnansweredConnect(now: start + .seconds(2))
        #expect(due)
        #expect(state.version == .v3_1_1)
        let end = state.connectionEnded(rc: 0, errno: 0)
        #expect(end.retryDelay == .zero)
        // The 3.1.1 CONNECT is not abandoned: only MQTT 5 is timed.
        #expect(state.attemptStarting() == .connect)
        state.connectSent(now: start + .seconds(3))
        let late = state.abandonsUnansweredConnect(now: start + .seconds(60))
        #expect(!late)
    }

    @Test("never a sign: a refused login, TLS, no broker at the address, a CONNECT answered with another refusal")
    func notSigns() {
        // Bad credentials (MQTT 5's 0x86) on the first connection: connect() fails, version stays 5.
        var login = machine()
        let waiter = OneShot<Result<Void, MQTTError>>()
        sent(&login, waiter: waiter)
        let refused = login.connackReceived(reasonCode: 0x86, sessionPresent: false)
        #expect(refused.waiters.contains { $0 === waiter })
        _ = login.connectionEnded(rc: MOSQ_CONN_REFUSED, errno: 0)
        #expect(login.version == .v5 && login.negotiation.fallbackReason == nil)

        // A TLS failure after the socket was up.
        var tls = machine()
        sent(&tls)
        let tlsEnd = tls.connectionEnded(rc: MOSQ_TLS, errno: 0)
        #expect(tlsEnd.stops && tls.version == .v5)

        // Nothing listens: the dial fails before any CONNECT.
        var down = machine()
        _ = down.connectRequested(OneShot())
        #expect(down.attemptStarting() == .connect)
        let downEnd = down.connectionEnded(rc: MOSQ_ERRNO, errno: ECONNREFUSED, connectFailed: true)
        #expect(downEnd.retryDelay != .zero && down.version == .v5)
    }

    @Test("without fallback (a configured version), or once MQTT 5 was accepted, no sign changes the version")
    func closedNegotiation() {
        var fixed = machine(fallsBack: false)
        sent(&fixed)
        let fixedAbandons = fixed.abandonsUnansweredConnect(now: start + .seconds(10))
        #expect(!fixedAbandons)
        _ = fixed.connectionEnded(rc: MOSQ_CONN_LOST, errno: 0)
        #expect(fixed.version == .v5)

        var settled = machine()
        sent(&settled)
        _ = settled.connackReceived(reasonCode: 0, sessionPresent: false)
        _ = settled.connectionEnded(rc: MOSQ_CONN_LOST, errno: 0)
        #expect(settled.attemptStarting() == .connect)
        settled.connectSent(now: start + .seconds(5))
        _ = settled.connectionEnded(rc: MOSQ_CONN_LOST, errno: 0)
        let settledAbandons = settled.abandonsUnansweredConnect(now: start + .seconds(60))
        #expect(settled.version == .v5 && !settledAbandons)

        var configured311 = machine(fallsBack: true, version: .v3_1_1)
        #expect(!configured311.negotiation.isOpen)
        sent(&configured311)
        _ = configured311.connectionEnded(rc: MOSQ_CONN_LOST, errno: 0)
        #expect(configured311.version == .v3_1_1)
    }

    @Test("a 3.1.1 attempt that fails before any acceptance sends the next one back to MQTT 5, with the usual backoff")
    func fallbackFailsToo() {
        var state = machine()
        sent(&state)
        _ = state.connectionEnded(rc: MOSQ_CONN_LOST, errno: 0)
        #expect(state.version == .v3_1_1)
        #expect(state.attemptStarting() == .connect)
        let end = state.connectionEnded(rc: MOSQ_ERRNO, errno: ECONNREFUSED, connectFailed: true)
        #expect(end.retryDelay != nil && end.retryDelay != .zero)
        #expect(state.version == .v5 && state.negotiation.fallbackReason == nil && state.negotiation.isOpen)
    }

    @Test("a second connection to the same broker starts at the version the first settled on, only before it connects")
    func startLikeAnother() {
        var plain = machine()
        plain.startNegotiation(at: .v3_1_1, because: "the broker closed the connection without accepting the MQTT 5 CONNECT")
        #expect(plain.version == .v3_1_1 && plain.negotiation.fallbackReason?.contains("closed") == true)
        sent(&plain)
        _ = plain.connackReceived(reasonCode: 0, sessionPresent: false)
        plain.startNegotiation(at: .v5, because: nil)
        #expect(plain.version == .v3_1_1, "settled: kept")

        var fixed = machine(fallsBack: false)
        fixed.startNegotiation(at: .v3_1_1, because: "x")
        #expect(fixed.version == .v5, "a configured version is not negotiated")
    }
}

private let MOSQ_CONN_REFUSED: Int32 = 5
private let MOSQ_CONN_LOST: Int32 = 7
private let MOSQ_TLS: Int32 = 8
private let MOSQ_ERRNO: Int32 = 14

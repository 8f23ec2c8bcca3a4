import Foundation
import Testing

@testable import Mosquitto

/// Tests without a broker: the connection state machine, backoff, error mapping, validation.
@Suite("MQTT client logic (no broker)")
struct MQTTLogicTests {
    func machine(_ version: MQTTVersion = .v5, tls: Bool = false, offlineQueueLimit: Int = 1000) -> MQTTConnectionStateMachine {
        MQTTConnectionStateMachine(
            version: version,
            reconnectPolicy: MQTTReconnectPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(30)),
            endpoint: "127.0.0.1:1883", tlsConfigured: tls, offlineQueueLimit: offlineQueueLimit)
    }

    /// Starts a connect() and returns its waiter.
    func startConnect(_ state: inout MQTTConnectionStateMachine) -> OneShot<Result<Void, MQTTError>> {
        let waiter = OneShot<Result<Void, MQTTError>>()
        guard case .startThreadAndWait = state.connectRequested(waiter) else {
            Issue.record("expected the thread to start")
            return waiter
        }
        let r1 = state.attemptStarting()
        #expect(r1 == .connect)
        state.connectSent()  // TCP connected, CONNECT on its way
        return waiter
    }

    @Test("backoff doubles from the initial delay and is capped")
    func backoff() {
        let policy = MQTTReconnectPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(30))
        #expect((1...8).map { policy.delay(forAttempt: $0) } == [1, 2, 4, 8, 16, 30, 30, 30].map { .seconds($0) })
        #expect(policy.delay(forAttempt: 10_000) == .seconds(30))
        let flat = MQTTReconnectPolicy(initialDelay: .milliseconds(500), maximumDelay: .seconds(30), exponential: false)
        #expect(flat.delay(forAttempt: 7) == .milliseconds(500))
        let odd = MQTTReconnectPolicy(initialDelay: .seconds(5), maximumDelay: .seconds(2))
        #expect(odd.delay(forAttempt: 1) == .seconds(5))
    }

    @Test("a refused first CONNACK fails connect() and stops retrying")
    func refusedFirstConnect() {
        var state = machine()
        _ = startConnect(&state)
        let connack = state.connackReceived(reasonCode: 134, sessionPresent: false)
        #expect(connack.waiters.count == 1)
        guard case .failure(let error) = connack.result else { Issue.record("expected a failure"); return }
        #expect(error.code == .badCredentials)
        #expect(error.message.contains("reason 134: Bad User Name or Password"))
        #expect(error.message.contains("check --username / --password-file"))
        #expect(connack.event == .refused(error))
        #expect(state.stopRequested)
        let end = state.connectionEnded(rc: MOSQ_PROTOCOL, errno: 0)
        #expect(end.stops)
        #expect(end.events.isEmpty)
    }

    @Test("a refusal after an earlier success is reported and retried with backoff")
    func refusedLater() {
        var state = machine()
        _ = startConnect(&state)
        _ = state.connackReceived(reasonCode: 0, sessionPresent: false)
        _ = state.connectionEnded(rc: MOSQ_CONN_LOST, errno: 0)
        let r2 = state.attemptStarting()
        #expect(r2 == .connect)
        let connack = state.connackReceived(reasonCode: 135, sessionPresent: false)
        #expect(connack.waiters.isEmpty)
        #expect(!state.stopRequested)
        let end = state.connectionEnded(rc: MOSQ_PROTOCOL, errno: 0)
        #expect(end.retryDelay == .seconds(2))
    }

    @Test("a lost connection is reported once, then retried with growing delays; a CONNACK resets them")
    func lostConnection() {
        var state = machine()
        let waiter = startConnect(&state)
        let connack = state.connackReceived(reasonCode: 0, sessionPresent: true)
        #expect(connack.event == .connected(sessionPresent: true))
        #expect(connack.waiters.first === waiter)
        #expect(state.isConnected)

        let lost = state.connectionEnded(rc: MOSQ_CONN_LOST, errno: 0)
        #expect(lost.events.count == 1)
        #expect(lost.events.first?.isDisconnectedEvent == true)
        #expect(lost.retryDelay == .seconds(1))
        #expect(!state.isConnected)
        // Failed attempts while the broker is down: no more events, longer waits.
        let r3 = state.attemptStarting()
        #expect(r3 == .connect)
        let second = state.connectionEnded(rc: MOSQ_ERRNO, errno: ECONNREFUSED)
        #expect(second.events.isEmpty)
        #expect(second.retryDelay == .seconds(2))
        let r4 = state.attemptStarting()
        #expect(r4 == .connect)
        _ = state.connackReceived(reasonCode: 0, sessionPresent: true)
        #expect(state.failedAttempts == 0)
    }

    @Test("a TLS failure on the first connection fails connect() at once")
    func tlsFailure() {
        var state = machine(tls: true)
        _ = startConnect(&state)
        state.logged(problem: "OpenSSL Error[0]: error:0A000086:SSL routines::certificate verify failed")
        let end = state.connectionEnded(rc: MOSQ_TLS, errno: 0)
        #expect(end.stops)
        guard case .failure(let error) = end.result else { Issue.record("expected a failure"); return }
        #expect(error.code == .tls)
        #expect(error.message.contains("certificate verify failed"))
        #expect(end.waiters.count == 1)
    }

    @Test("a TLS connection reset without any OpenSSL text (the alert was lost) points at the client certificate",
          arguments: [false, true])
    func tlsResetWithoutReason(certificateConfigured: Bool) {
        var state = MQTTConnectionStateMachine(
            version: .v5, reconnectPolicy: MQTTReconnectPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(30)),
            endpoint: "127.0.0.1:8883", tlsConfigured: true, clientCertificateConfigured: certificateConfigured)
        _ = startConnect(&state)
        let end = state.connectionEnded(rc: MOSQ_ERRNO, errno: EPROTO)
        guard case .failure(let error) = end.result else { Issue.record("expected a failure"); return }
        #expect(error.code == .tls)
        #expect(error.message.contains("without a TLS alert the client could read"), "\(error.message)")
        #expect(error.message.contains(certificateConfigured ? "refused the client certificate" : "requires a client certificate"), "\(error.message)")
        #expect(!error.message.contains("names this host"), "\(error.message)")
        // With OpenSSL's text, the text decides (here: the client's own check of the broker).
        var logged = MQTTConnectionStateMachine(
            version: .v5, reconnectPolicy: MQTTReconnectPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(30)),
            endpoint: "127.0.0.1:8883", tlsConfigured: true, clientCertificateConfigured: certificateConfigured)
        _ = startConnect(&logged)
        logged.logged(problem: "OpenSSL Error[0]: error:0A000086:SSL routines::certificate verify failed")
        guard case .failure(let verify) = logged.connectionEnded(rc: MOSQ_ERRNO, errno: EPROTO).result else {
            Issue.record("expected a failure"); return
        }
        #expect(verify.message.contains("names this host"), "\(verify.message)")
    }

    @Test("a fatal error after a success emits loopExited and stops")
    func fatalAfterSuccess() {
        var state = machine()
        _ = startConnect(&state)
        _ = state.connackReceived(reasonCode: 0, sessionPresent: false)
        let end = state.connectionEnded(rc: MOSQ_NOMEM, errno: 0)
        #expect(end.stops)
        #expect(end.events.count == 2)
        guard case .loopExited(let error) = end.events.last else { Issue.record("expected loopExited"); return }
        #expect(error.code == .loopExited)
        let exited = state.threadExited()
        #expect(exited.destroy == false)
        #expect(state.phase == .idle)
    }

    @Test("connect() that times out with nobody else waiting stops the network thread")
    func abandonedConnect() {
        var state = machine()
        _ = startConnect(&state)
        _ = state.connectionEnded(rc: MOSQ_ERRNO, errno: ECONNREFUSED)
        let r5 = state.connectAbandoned(token: 1)
        #expect(r5 == .wakeNetworkThread)
        #expect(state.stopRequested)
        let error = state.timeoutError(after: .seconds(5))
        #expect(error.code == .timeout)
        #expect(error.message.contains("within 5 s"))
        #expect(error.message.contains("Connection refused"))
        // A new connect() waits for the old thread to finish first.
        guard case .waitForThreadExit = state.connectRequested(OneShot()) else {
            Issue.record("expected to wait for the thread")
            return
        }
    }

    @Test("the handle is destroyed exactly once, by the last one out")
    func destroyDuty() {
        var state = machine()
        _ = startConnect(&state)
        let r6 = state.enterCall()
        #expect(r6)
        let shutdown = state.shutdownRequested()
        #expect(shutdown.first)
        #expect(shutdown.waitsForThread)
        #expect(!shutdown.destroy)          // thread still running, a call inside
        let r7 = state.enterCall()
        #expect(!r7)         // no new calls after shutdown
        let r8 = state.threadExited()
        #expect(!r8.destroy)  // a call is still inside
        let r9 = state.leaveCall()
        #expect(r9)          // the last one out destroys
        let r10 = state.shutdownRequested()
        #expect(!r10.destroy)  // and never again
        let r11 = state.shutdownRequested()
        #expect(!r11.first)
    }

    @Test("kept publishes go out after the CONNACK's loop call (after libmosquitto's own resends); publishes meanwhile queue behind them; QoS 0 goes at once")
    func publishDuringFlush() {
        var state = machine()
        func publish(_ topic: String, _ qos: MQTTQoS) -> PublishTracker.PendingPublish {
            .init(topic: topic, payload: [1], qos: qos, retain: false, properties: .none)
        }
        let early = state.publishRequested(publish("early", .atLeastOnce))
        #expect(early == .queued)
        _ = startConnect(&state)
        _ = state.connackReceived(reasonCode: 0, sessionPresent: false)
        // Between the CONNACK and the end of that loop call (libmosquitto resends its own
        // kept messages then), a new QoS 1 publish waits behind "early":
        let late = state.publishRequested(publish("late", .atLeastOnce))
        #expect(late == .queued)
        let q0 = state.publishRequested(publish("q0", .atMostOnce))
        #expect(q0 == .publishNow(generation: 1))
        let first = state.takeFlush()
        #expect(first.map(\.topic) == ["early", "late"])
        // Handed over outside the lock, while one more comes:
        let later = state.publishRequested(publish("later", .atLeastOnce))
        #expect(later == .queued)
        let more = state.takeFlush()
        #expect(more.map(\.topic) == ["later"])
        let none = state.takeFlush()
        #expect(none.isEmpty)
        // The flush is over: publishes go straight out again, and nothing more is taken.
        let after = state.publishRequested(publish("after", .atLeastOnce))
        #expect(after == .publishNow(generation: 1))
        let idle = state.takeFlush()
        #expect(idle.isEmpty)
        // A connection that ends mid-flush keeps the rest for the next CONNACK.
        let kept = state.publishRequested(publish("x", .atLeastOnce))
        #expect(kept == .publishNow(generation: 1))
        _ = state.connectionEnded(rc: MOSQ_CONN_LOST, errno: 0)
        let y = state.publishRequested(publish("y", .atLeastOnce))
        #expect(y == .queued)
        let down = state.takeFlush()
        #expect(down.isEmpty)
        let started = state.attemptStarting()
        #expect(started == .connect)
        _ = state.connackReceived(reasonCode: 0, sessionPresent: true)
        let again = state.takeFlush()
        #expect(again.map(\.topic) == ["y"])
        let drained = state.takeFlush()
        #expect(drained.isEmpty)
        let next = state.publishRequested(publish("next", .atLeastOnce))
        #expect(next == .publishNow(generation: 2))
    }

    @Test("a connection that was up and ends because connect() gave up still reports its end")
    func abandonedAfterConnack() {
        var state = machine()
        let waiter = OneShot<Result<Void, MQTTError>>()
        guard case .startThreadAndWait(let token) = state.connectRequested(waiter) else {
            Issue.record("expected the thread to start")
            return
        }
        _ = state.attemptStarting()
        // connect() times out just as the CONNACK comes: the thread is told to stop...
        let abandoned = state.connectAbandoned(token: token)
        #expect(abandoned == .wakeNetworkThread)
        _ = state.connackReceived(reasonCode: 0, sessionPresent: false)
        // ... and the connection it had made ends with an event, not silently.
        let end = state.connectionEnded(rc: 0, errno: 0)
        let ended = end.events.contains { event in
            if case .disconnected = event { return true }
            return false
        }
        #expect(ended, "no end event: \(end.events)")
    }

    @Test("publishes are kept while disconnected (QoS 1/2 only, bounded) and flushed at the CONNACK")
    func offlineQueue() {
        var state = machine(offlineQueueLimit: 2)
        func publish(_ topic: String, _ qos: MQTTQoS) -> PublishTracker.PendingPublish {
            .init(topic: topic, payload: [1], qos: qos, retain: false, properties: .none)
        }
        guard case .fail(let error) = state.publishRequested(publish("a", .atMostOnce)) else {
            Issue.record("QoS 0 must fail when disconnected")
            return
        }
        #expect(error.code == .notConnected)
        let r12 = state.publishRequested(publish("b", .atLeastOnce))
        #expect(r12 == .queued)
        let r13 = state.publishRequested(publish("c", .exactlyOnce))
        #expect(r13 == .queued)
        guard case .fail(let full) = state.publishRequested(publish("d", .atLeastOnce)) else {
            Issue.record("the queue limit must hold")
            return
        }
        #expect(full.message.contains("2 publishes already wait"))
        _ = startConnect(&state)
        _ = state.connackReceived(reasonCode: 0, sessionPresent: false)
        let flush = state.takeFlush()
        #expect(flush.map(\.topic) == ["b", "c"])
        let flushEnd = state.takeFlush()
        #expect(flushEnd.isEmpty)
        let r14 = state.publishRequested(publish("e", .atMostOnce))
        #expect(r14 == .publishNow(generation: 1))
        // "No connection" at QoS 1/2: libmosquitto kept the message in its own outgoing
        // queue (resent after the next CONNACK), so no second copy is kept here.
        let r15 = state.publishFoundNoConnection(publish("f", .atLeastOnce), generation: 1)
        #expect(r15 == .queued)
        // At QoS 0 on the current connection: it fails like any QoS 0 publish while down...
        _ = state.connectionEnded(rc: MOSQ_CONN_LOST, errno: 0)
        guard case .fail(let down) = state.publishFoundNoConnection(publish("q0", .atMostOnce), generation: 1) else {
            Issue.record("a QoS 0 publish cannot be kept")
            return
        }
        #expect(down.code == .notConnected)
        let r16 = state.attemptStarting()
        #expect(r16 == .connect)
        _ = state.connackReceived(reasonCode: 0, sessionPresent: true)
        let again = state.takeFlush()
        #expect(again.isEmpty, "f is libmosquitto's to resend, not ours: \(again.map(\.topic))")
        // ... but if a newer connection is already up, a QoS 0 publish goes out on it now.
        let r17 = state.publishFoundNoConnection(publish("g", .atMostOnce), generation: 1)
        #expect(r17 == .publishNow(generation: 2))
        let r17b = state.publishFoundNoConnection(publish("h", .atLeastOnce), generation: 1)
        #expect(r17b == .queued)
    }

    @Test("subscriptions are remembered and redone after every CONNACK; early SUBACKs are not lost")
    func subscriptions() throws {
        var state = machine()
        let r18 = state.subscriptionAdded("a/#", qos: .atLeastOnce)
        #expect(r18 == nil)  // not connected: later
        _ = startConnect(&state)
        let connack = state.connackReceived(reasonCode: 0, sessionPresent: false)
        #expect(connack.resubscribe.map(\.filter) == ["a/#"])
        let added = state.subscriptionAdded("b", qos: .atMostOnce)
        let generation = try #require(added)
        // The SUBACK arrives before the waiter is registered.
        let r20 = state.acknowledgementReceived(messageID: 7, result: .success(()))
        #expect(r20 == nil)
        let waiter = OneShot<Result<Void, MQTTError>>()
        state.awaitAcknowledgement(of: 7, sentOn: generation, waiter)
        #expect(!waiter.fulfil(.success(())))  // already fulfilled
        // A waiter registered normally waits for its SUBACK.
        let addedC = state.subscriptionAdded("c", qos: .atMostOnce)
        let sent = try #require(addedC)
        let waiting = OneShot<Result<Void, MQTTError>>()
        state.awaitAcknowledgement(of: 8, sentOn: sent, waiting)
        #expect(state.acknowledgementReceived(messageID: 8, result: .success(())) === waiting)
        let r21 = state.subscriptionRemoved("a/#")
        #expect(r21 != nil)
        #expect(state.subscriptions.filters.keys.sorted() == ["b", "c"])
    }

    @Test("a SUBACK waiter registered after its connection ended is settled at once, not left waiting",
          arguments: [false, true])
    func subscribeRacingConnectionEnd(reconnectedFirst: Bool) throws {
        var state = machine()
        _ = startConnect(&state)
        _ = state.connackReceived(reasonCode: 0, sessionPresent: false)
        let added = state.subscriptionAdded("x", qos: .atLeastOnce)
        let generation = try #require(added)
        // SUBSCRIBE handed to libmosquitto; the connection ends before the caller registers.
        let end = state.connectionEnded(rc: MOSQ_CONN_LOST, errno: 0)
        #expect(end.orphanedAcknowledgements.isEmpty)
        if reconnectedFirst {
            let started = state.attemptStarting()
            #expect(started == .connect)
            let connack = state.connackReceived(reasonCode: 0, sessionPresent: true)
            #expect(connack.resubscribe.map(\.filter) == ["x"])  // redone on the new connection
        }
        let waiter = OneShot<Result<Void, MQTTError>>()
        state.awaitAcknowledgement(of: 3, sentOn: generation, waiter)
        #expect(!waiter.fulfil(.failure(MQTTError(.io, "late"))), "the waiter was left waiting")
        #expect(state.acknowledgementReceived(messageID: 3, result: .success(())) == nil)
    }

    @Test("delivery reports: on_publish before or after the message id is registered; only tracked ones report; QoS 0 leftovers go with the connection")
    func deliveryRegistry() {
        var state = machine()
        _ = startConnect(&state)
        _ = state.connackReceived(reasonCode: 0, sessionPresent: false)
        let tracked = state.makeDeliveryToken()
        let other = state.makeDeliveryToken()
        #expect(tracked != other)
        // Registered first, acknowledged later (the usual order).
        #expect(state.publishSent(messageID: 1, qos: .atLeastOnce, token: tracked) == nil)
        #expect(state.publishAcknowledged(messageID: 1, reasonCode: 0) == MQTTDeliveryReport(token: tracked, reasonCode: 0))
        // The network thread's on_publish came before mosquitto_publish returned the id.
        #expect(state.publishAcknowledged(messageID: 2, reasonCode: 0x10) == nil)
        #expect(state.publishSent(messageID: 2, qos: .exactlyOnce, token: other) == MQTTDeliveryReport(token: other, reasonCode: 0x10))
        // Untracked publishes never report, in either order, and leave nothing behind.
        #expect(state.publishSent(messageID: 3, qos: .atLeastOnce, token: nil) == nil)
        #expect(state.publishAcknowledged(messageID: 3, reasonCode: 0) == nil)
        #expect(state.publishAcknowledged(messageID: 4, reasonCode: 0) == nil)
        #expect(state.publishSent(messageID: 4, qos: .atMostOnce, token: nil) == nil)
        #expect(state.publishes.sent.isEmpty && state.publishes.earlyAcknowledgements.isEmpty)
        // A refusal is reported as such.
        let refused = state.makeDeliveryToken()
        _ = state.publishSent(messageID: 5, qos: .atLeastOnce, token: refused)
        let report = state.publishAcknowledged(messageID: 5, reasonCode: 0x87)
        #expect(report?.token == refused && report?.isAccepted == false)
        // A connection ends: an unwritten QoS 0 packet is gone, a QoS 1 message is resent.
        let kept = state.makeDeliveryToken()
        _ = state.publishSent(messageID: 6, qos: .atMostOnce, token: nil)
        _ = state.publishSent(messageID: 7, qos: .atLeastOnce, token: kept)
        _ = state.connectionEnded(rc: MOSQ_CONN_LOST, errno: 0)
        #expect(Array(state.publishes.sent.keys) == [7])
        let restarted = state.attemptStarting()
        #expect(restarted == .connect)
        _ = state.connackReceived(reasonCode: 0, sessionPresent: true)
        #expect(state.publishAcknowledged(messageID: 7, reasonCode: 0) == MQTTDeliveryReport(token: kept, reasonCode: 0))
    }

    @Test("CONNACK codes map to error codes with actionable messages", arguments: [
        (MQTTVersion.v5, Int32(134), MQTTError.Code.badCredentials, "reason 134"),
        (.v5, 135, .notAuthorized, "reason 135: Not authorized"),
        (.v5, 132, .protocolError, "MQTT 3.1.1"),
        (.v5, 136, .connectionRefused, "try again later"),
        (.v3_1_1, 4, .badCredentials, "return code 4"),
        (.v3_1_1, 5, .notAuthorized, "check --username / --password-file"),
        (.v3_1_1, 2, .invalidArgument, "client id"),
    ])
    func connackMapping(version: MQTTVersion, code: Int32, expected: MQTTError.Code, text: String) {
        let error = MQTTError.connack(code, version: version)
        #expect(error.code == expected)
        #expect(error.message.contains(text), "\(error.message)")
    }

    @Test("mosq_err_t values map to codes and carry the number and strerror text")
    func mosquittoErrors() {
        let lost = MQTTError.mosquitto(MOSQ_CONN_LOST, "publishing")
        #expect(lost.code == .io)
        #expect(lost.message == "publishing: The connection was lost. (mosq_err_t 7)")
        let refused = MQTTError.mosquitto(MOSQ_ERRNO, errno: ECONNREFUSED, "connecting")
        #expect(refused.code == .connectionRefused)
        #expect(refused.message.contains("Connection refused"))
        #expect(refused.message.contains("errno \(ECONNREFUSED)"))
        #expect(MQTTError.mosquitto(MOSQ_INVAL, "x").code == .invalidArgument)
        #expect(MQTTError.mosquitto(MOSQ_NO_CONN, "x").code == .notConnected)
    }

    @Test("bad configurations and topics are rejected before libmosquitto sees them")
    func validation() async {
        #expect(throws: MQTTError.self) { _ = try MQTTClient(configuration: MQTTConfiguration(clientID: "")) }
        #expect(throws: MQTTError.self) { _ = try MQTTClient(configuration: MQTTConfiguration(clientID: "x", keepAlive: 2)) }
        #expect(throws: MQTTError.self) { _ = try MQTTClient(configuration: MQTTConfiguration(port: 0, clientID: "x")) }
        #expect(throws: MQTTError.self) {
            _ = try MQTTClient(configuration: MQTTConfiguration(clientID: "x", username: nil, password: "p"))
        }
        let client = try? MQTTClient(configuration: MQTTConfiguration(clientID: "valid"))
        for topic in ["", "a/+/b", "a/#", "nul\u{0}byte"] {
            let error = await #expect(throws: MQTTError.self) { try await client?.publish(to: topic, string: "x") }
            #expect(error?.code == .invalidArgument)
        }
        for filter in ["", "a/b#", "a+/b"] {
            let error = await #expect(throws: MQTTError.self) { try await client?.subscribe(to: filter) }
            #expect(error?.code == .invalidArgument)
        }
        let tooLong = await #expect(throws: MQTTError.self) {
            try await client?.publish(
                to: "t", string: "x", qos: .atLeastOnce,
                properties: MQTTProperties(correlationData: Array(repeating: 0, count: 70_000)))
        }
        #expect(tooLong?.code == .invalidArgument)
        await client?.disconnect()
    }

    @Test("factories build the expected configurations")
    func factories() {
        let v5 = MQTTConfiguration.v5(clientID: "a", sessionExpiryInterval: 60)
        #expect(v5.version == .v5)
        #expect(v5.sessionExpiryInterval == 60)
        #expect(v5.host == "127.0.0.1" && v5.port == 1883)
        let v3 = MQTTConfiguration.v3_1_1(port: 1884, clientID: "b", cleanSession: true)
        #expect(v3.version == .v3_1_1)
        #expect(v3.cleanStart)
        #expect(v3.port == 1884)
    }

    @Test("payloadString is nil for invalid UTF-8")
    func payloadString() {
        #expect(MQTTMessage(topic: "t", payload: Array("ok".utf8)).payloadString == "ok")
        #expect(MQTTMessage(topic: "t", payload: [0xFF, 0xFE]).payloadString == nil)
        #expect(MQTTMessage(topic: "t", payload: []).payloadString == "")
    }
}

private let MOSQ_PROTOCOL: Int32 = 2
private let MOSQ_INVAL: Int32 = 3
private let MOSQ_NO_CONN: Int32 = 4
private let MOSQ_CONN_LOST: Int32 = 7
private let MOSQ_TLS: Int32 = 8
private let MOSQ_ERRNO: Int32 = 14
private let MOSQ_NOMEM: Int32 = 1

extension MQTTConnectionEvent {
    fileprivate var isDisconnectedEvent: Bool {
        if case .disconnected = self { return true }
        return false
    }
}

import CMosquitto
import Foundation

/// The client's connection state, kept behind the core's `Mutex`.
///
/// A plain value: every input (an API call, a CONNACK, the end of a connection, the
/// network thread starting or stopping) is one `mutating func` that returns what the
/// shell must do. It never calls libmosquitto and never blocks, so it is safe to drive
/// from a libmosquitto callback, and it is unit-tested without a broker.
///
/// Threading: none of its own; the owner serialises access (`Mutex<…StateMachine>`).
struct MQTTConnectionStateMachine {
    /// Where the connection is.
    enum Phase: Equatable {
        /// No network thread; `connect()` starts one.
        case idle
        /// Trying to make the first connection of a `connect()` call.
        case connecting
        /// The broker accepted the current connection.
        case connected
        /// The connection was lost after a success; the network thread reconnects.
        case reconnecting
        /// `disconnect()` or deinit ran: the client is finished.
        case closed
    }

    /// The libmosquitto handle's lifetime (see `MQTTClientCore`).
    enum Handle: Equatable {
        /// API calls may use the handle.
        case open
        /// Shut down: destroy as soon as no API call is inside and the thread is gone.
        case closing
        /// `mosquitto_destroy` has been called (or is being called by whoever got the duty).
        case destroyed
    }

    /// What the network thread does after a connection (or a connection attempt) ends.
    enum Next: Equatable {
        case stop
        case retry(after: Duration)
    }

    /// A publish kept while disconnected.
    struct PendingPublish: Sendable, Equatable {
        var topic: String
        var payload: [UInt8]
        var qos: MQTTQoS
        var retain: Bool
        var properties: MQTTProperties
        /// Set for a tracked publish: its acknowledgement is reported with this token.
        var token: MQTTDeliveryToken? = nil
    }

    let version: MQTTVersion
    let reconnectPolicy: MQTTReconnectPolicy
    var offlineQueueLimit = 1000
    let endpoint: String
    let tlsConfigured: Bool

    private(set) var phase: Phase = .idle
    private(set) var handle: Handle = .open
    private(set) var threadRunning = false
    private(set) var stopRequested = false
    /// A CONNACK success was seen since the network thread started.
    private(set) var everConnected = false
    private(set) var failedAttempts = 0
    private(set) var inFlightCalls = 0

    /// `connect()` callers waiting for the first CONNACK.
    private var connectWaiters: [UInt64: OneShot<Result<Void, MQTTError>>] = [:]
    private var nextToken: UInt64 = 0
    /// Tasks waiting for the network thread to exit.
    private var exitWaiters: [OneShot<Void>] = []

    /// Counts successful CONNACKs: tells connections apart.
    private(set) var connectionGeneration = 0
    /// QoS 1/2 publishes made while disconnected, sent after the next CONNACK.
    private(set) var offlineQueue: [PendingPublish] = []
    /// Between a CONNACK and the end of its flush of `offlineQueue` (sent outside the lock):
    /// new publishes keep queueing behind the flushed ones, so none overtakes them.
    private(set) var flushing = false

    /// Remembered subscriptions, redone after every CONNACK.
    private(set) var subscriptions: [String: MQTTQoS] = [:]
    /// SUBACK / UNSUBACK waiters by message id.
    private var ackWaiters: [Int32: OneShot<Result<Void, MQTTError>>] = [:]
    /// Acknowledgements that arrived before their waiter was registered.
    private var earlyAcks: [Int32: Result<Void, MQTTError>] = [:]
    /// Message ids of the resubscriptions made inside on_connect (nobody waits for them).
    private var ignoredMessageIDs: Set<Int32> = []

    // Per-connection facts, reset when an attempt starts.
    private var connackThisConnection = false
    private var refusalThisConnection: MQTTError?
    private(set) var serverDisconnectReason: Int32?
    /// The last error or warning libmosquitto logged (OpenSSL errors land here).
    private(set) var lastLoggedProblem: String?
    /// Why the last attempt failed, for the timeout message.
    private(set) var lastFailure: MQTTError?

    /// Whether a client certificate is configured (for the advice of a failed handshake).
    let clientCertificateConfigured: Bool

    init(version: MQTTVersion, reconnectPolicy: MQTTReconnectPolicy, endpoint: String, tlsConfigured: Bool,
         clientCertificateConfigured: Bool = false) {
        self.version = version
        self.reconnectPolicy = reconnectPolicy
        self.endpoint = endpoint
        self.tlsConfigured = tlsConfigured
        self.clientCertificateConfigured = clientCertificateConfigured
    }

    var isConnected: Bool { phase == .connected }

    // MARK: connect()

    enum ConnectAction {
        /// Already connected: return at once.
        case succeed
        /// Fail at once.
        case fail(MQTTError)
        /// A network thread from an abandoned attempt is still stopping: wait for it, then try again.
        case waitForThreadExit(OneShot<Void>)
        /// Wait on the registered waiter; the thread is already running.
        case wait(token: UInt64)
        /// Start the network thread, then wait on the registered waiter.
        case startThreadAndWait(token: UInt64)
    }

    mutating func connectRequested(_ waiter: OneShot<Result<Void, MQTTError>>) -> ConnectAction {
        guard handle == .open, phase != .closed else {
            return .fail(MQTTError(.shutdown, "the client was shut down with disconnect(); create a new MQTTClient"))
        }
        if phase == .connected { return .succeed }
        if threadRunning {
            if stopRequested {
                let exit = OneShot<Void>()
                exitWaiters.append(exit)
                return .waitForThreadExit(exit)
            }
            let token = register(waiter)
            return .wait(token: token)
        }
        let token = register(waiter)
        threadRunning = true
        stopRequested = false
        everConnected = false
        failedAttempts = 0
        lastFailure = nil
        phase = .connecting
        return .startThreadAndWait(token: token)
    }

    private mutating func register(_ waiter: OneShot<Result<Void, MQTTError>>) -> UInt64 {
        nextToken += 1
        connectWaiters[nextToken] = waiter
        return nextToken
    }

    /// A `connect()` caller gave up (timeout or cancellation). When nobody else waits and
    /// no connection was ever made, the network thread stops trying.
    /// Returns whether the network thread must be woken to notice.
    mutating func connectAbandoned(token: UInt64) -> Bool {
        connectWaiters[token] = nil
        if connectWaiters.isEmpty, !everConnected, threadRunning, !stopRequested {
            stopRequested = true
            return true
        }
        return false
    }

    /// The message for a `connect()` that timed out.
    func timeoutError(after timeout: Duration) -> MQTTError {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        var message = "could not connect to \(endpoint) within \(seconds.formatted()) s"
        if let lastFailure {
            message += "; last error: \(lastFailure.message)"
        } else {
            message += " (no CONNACK from the broker)"
        }
        return MQTTError(.timeout, message)
    }

    // MARK: Network thread

    /// The network thread is about to call `mosquitto_connect_bind_v5`.
    mutating func attemptStarting() -> Bool {
        connackThisConnection = false
        refusalThisConnection = nil
        serverDisconnectReason = nil
        lastLoggedProblem = nil
        return !stopRequested
    }

    struct ConnackAction {
        var event: MQTTConnectionEvent
        var waiters: [OneShot<Result<Void, MQTTError>>]
        var result: Result<Void, MQTTError>
        /// Subscriptions to redo (success only).
        var resubscribe: [(String, MQTTQoS)]
    }

    /// on_connect: the broker answered the CONNECT.
    mutating func connackReceived(reasonCode: Int32, sessionPresent: Bool) -> ConnackAction {
        connackThisConnection = true
        earlyAcks.removeAll()
        ignoredMessageIDs.removeAll()
        let waiters = Array(connectWaiters.values)
        if reasonCode == 0 {
            connectWaiters.removeAll()
            if phase != .closed { phase = .connected }
            everConnected = true
            connectionGeneration += 1
            failedAttempts = 0
            lastFailure = nil
            // The kept publishes go out after libmosquitto has resent its own older ones
            // (its retry runs when this callback returns): see `takeFlush`.
            flushing = true
            return ConnackAction(
                event: .connected(sessionPresent: sessionPresent), waiters: waiters, result: .success(()),
                resubscribe: subscriptions.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        }
        let error = MQTTError.connack(reasonCode, version: version)
        refusalThisConnection = error
        lastFailure = error
        if !everConnected {
            // Refused on the first connection: fail connect() now, and do not retry
            // (a bad password must not become a silent endless retry).
            connectWaiters.removeAll()
            stopRequested = true
            return ConnackAction(event: .refused(error), waiters: waiters, result: .failure(error), resubscribe: [])
        }
        return ConnackAction(event: .refused(error), waiters: [], result: .failure(error), resubscribe: [])
    }

    mutating func ignoreAcknowledgement(of messageID: Int32) {
        ignoredMessageIDs.insert(messageID)
    }

    /// on_disconnect: remember a reason code the broker sent in a DISCONNECT (MQTT 5).
    mutating func disconnectCallback(reason: Int32) {
        if reason >= 0x80 { serverDisconnectReason = reason }
    }

    /// on_log: remember the last error or warning line.
    mutating func logged(problem: String) {
        lastLoggedProblem = problem
    }

    struct EndAction {
        var events: [MQTTConnectionEvent] = []
        var waiters: [OneShot<Result<Void, MQTTError>>] = []
        var result: Result<Void, MQTTError> = .success(())
        /// SUBACK/UNSUBACK waiters whose packet died with the connection; the
        /// subscription is remembered and redone on reconnect, so they succeed.
        var orphanedAcks: [OneShot<Result<Void, MQTTError>>] = []
        var next: Next = .stop
    }

    /// The network thread's connection (or attempt) ended with `rc` (`mosq_err_t`) and
    /// `errno`; `connectFailed` when `mosquitto_connect_bind_v5` itself failed.
    mutating func connectionEnded(rc: Int32, errno: Int32, connectFailed: Bool = false) -> EndAction {
        var action = EndAction()
        action.orphanedAcks = Array(ackWaiters.values)
        ackWaiters.removeAll()
        // QoS 0 packets not yet written die with the connection (no on_publish will come);
        // QoS 1/2 messages stay with libmosquitto, which resends them after the reconnect.
        sentPublishes = sentPublishes.filter { $0.value.qos != .atMostOnce }
        let wasConnected = connackThisConnection && refusalThisConnection == nil
        if phase == .connected { phase = .reconnecting }
        flushing = false  // what is left waits for the next CONNACK

        if stopRequested {
            // A connection that was up ends without disconnect() (a connect() that timed out
            // as its CONNACK arrived): its end is still an event, so no listener thinks it is up.
            if wasConnected, phase != .closed {
                action.events.append(.disconnected(reason: "the connection attempt was abandoned"))
            }
            action.next = .stop
            action.waiters = Array(connectWaiters.values)
            connectWaiters.removeAll()
            action.result = .failure(
                refusalThisConnection ?? lastFailure
                    ?? MQTTError(.shutdown, "the connection attempt was stopped"))
            return action
        }
        if refusalThisConnection != nil {
            // Refused after an earlier success (the .refused event is already out): keep
            // trying with backoff; the broker's password file may be fixed meanwhile.
            failedAttempts += 1
            action.next = .retry(after: reconnectPolicy.delay(forAttempt: failedAttempts))
            return action
        }

        let error = classify(rc: rc, errno: errno, connectFailed: connectFailed)
        lastFailure = error
        if wasConnected {
            action.events.append(.disconnected(reason: error.message))
        }
        if Self.isFatal(rc) {
            action.next = .stop
            stopRequested = true
            if everConnected {
                action.events.append(.loopExited(MQTTError(.loopExited, "the MQTT network thread stopped: \(error.message)")))
            }
            action.waiters = Array(connectWaiters.values)
            connectWaiters.removeAll()
            action.result = .failure(error)
            return action
        }
        if !everConnected, error.code == .tls || error.code == .protocolError {
            // The first connection cannot work as configured: fail connect() now.
            action.next = .stop
            stopRequested = true
            action.waiters = Array(connectWaiters.values)
            connectWaiters.removeAll()
            action.result = .failure(error)
            return action
        }
        failedAttempts += 1
        action.next = .retry(after: reconnectPolicy.delay(forAttempt: failedAttempts))
        return action
    }

    /// Errors that retrying cannot fix (libmosquitto's loop_forever also gives up on these).
    static func isFatal(_ rc: Int32) -> Bool {
        switch rc {
        case MOSQ_ERR_NOMEM.rawValue, MOSQ_ERR_INVAL.rawValue, MOSQ_ERR_NOT_SUPPORTED.rawValue, MOSQ_ERR_UNKNOWN.rawValue:
            return true
        default:
            return false
        }
    }

    /// The error that ended a connection, in words.
    func classify(rc: Int32, errno: Int32, connectFailed: Bool = false) -> MQTTError {
        if let reason = serverDisconnectReason {
            return MQTTError(
                .io, "the broker closed the connection (\(MQTTError.reasonText(reason)))")
        }
        let looksLikeTLS =
            rc == MOSQ_ERR_TLS.rawValue || rc == MOSQ_ERR_TLS_HANDSHAKE.rawValue
            || (rc == MOSQ_ERR_ERRNO.rawValue && errno == EPROTO)
            || (lastLoggedProblem.map { $0.contains("SSL") || $0.contains("certificate") } ?? false)
        if tlsConfigured, !connackThisConnection, looksLikeTLS {
            let detail = lastLoggedProblem ?? MQTTError.mosquitto(rc, errno: errno, "TLS").message
            // A protocol error with no OpenSSL text: the broker broke the connection off.
            let reasonUnread = lastLoggedProblem == nil && rc == MOSQ_ERR_ERRNO.rawValue && errno == EPROTO
            let advice = MQTTError.tlsHandshakeAdvice(
                detail, certificateConfigured: clientCertificateConfigured, reasonUnread: reasonUnread)
            return MQTTError(.tls, "the TLS handshake with \(endpoint) failed: \(detail) (mosq_err_t \(rc)); \(advice)")
        }
        if !connackThisConnection, rc == MOSQ_ERR_CONN_LOST.rawValue || rc == MOSQ_ERR_NO_CONN.rawValue, tlsConfigured == false,
            let problem = lastLoggedProblem
        {
            return MQTTError(.io, "the connection to \(endpoint) closed before the broker answered: \(problem) (mosq_err_t \(rc))")
        }
        if connectFailed {
            return MQTTError.mosquitto(rc, errno: errno, "connecting to \(endpoint)")
        }
        return MQTTError.mosquitto(rc, errno: errno, "the connection to \(endpoint) ended")
    }

    /// The network thread has returned.
    mutating func threadExited() -> (exitWaiters: [OneShot<Void>], destroy: Bool) {
        threadRunning = false
        stopRequested = false
        if phase != .closed { phase = .idle }
        let waiters = exitWaiters
        exitWaiters.removeAll()
        return (waiters, takeDestroyDuty())
    }

    // MARK: Publishing

    enum PublishDecision: Equatable {
        /// Connected: hand it to libmosquitto now (on connection number `generation`).
        case publishNow(generation: Int)
        /// Kept in the offline queue; sent after the next CONNACK.
        case queued
        /// Not connected and it cannot be kept (QoS 0, or the queue is full).
        case fail(MQTTError)
    }

    /// publish(): send now when connected, else keep it (QoS 1/2) for the next CONNACK.
    mutating func publishRequested(_ publish: PendingPublish) -> PublishDecision {
        if phase == .connected {
            // QoS 0 is never kept; QoS 1/2 waits behind a flush in progress.
            if !flushing || publish.qos == .atMostOnce { return .publishNow(generation: connectionGeneration) }
            return keepForReconnect(publish)
        }
        return keepForReconnect(publish)
    }

    /// The network thread, after each `mosquitto_loop` call: the kept publishes to send now,
    /// in order (then it asks again), or nothing, which ends the flush. A flush starts at a
    /// CONNACK and is taken only after the loop call that handled it has returned, that is
    /// after libmosquitto resent the older messages it kept itself, so nothing newer
    /// overtakes them; publishes made meanwhile queue behind.
    mutating func takeFlush() -> [PendingPublish] {
        guard flushing else { return [] }
        guard phase == .connected, !offlineQueue.isEmpty else {
            flushing = false
            return []
        }
        let batch = offlineQueue
        offlineQueue.removeAll()
        return batch
    }

    /// libmosquitto answered "no connection" to a `.publishNow` made on connection
    /// `generation`. At QoS 1 and 2 it has kept the message (see below). At QoS 0: if that
    /// connection is the current one, it is going down, and the publish fails like any QoS 0
    /// publish while disconnected; if a newer connection is already up, send it on that one.
    mutating func publishFoundNoConnection(_ publish: PendingPublish, generation: Int) -> PublishDecision {
        // At QoS 1 and 2 libmosquitto puts the message in its outgoing queue before it tries
        // to send it, and resends that queue after the next CONNACK: it owns the message now.
        // A second copy (ours, or a send on the new connection) would reach the broker twice.
        if publish.qos != .atMostOnce {
            if phase == .closed { return .fail(MQTTError(.shutdown, "the client was shut down with disconnect()")) }
            return .queued
        }
        if phase == .connected, generation != connectionGeneration {
            return .publishNow(generation: connectionGeneration)
        }
        return keepForReconnect(publish)
    }

    private mutating func keepForReconnect(_ publish: PendingPublish) -> PublishDecision {
        if phase == .closed {
            return .fail(MQTTError(.shutdown, "the client was shut down with disconnect()"))
        }
        guard publish.qos != .atMostOnce else {
            return .fail(
                MQTTError(
                    .notConnected,
                    "cannot publish to \(publish.topic) at QoS 0: not connected to \(endpoint) (QoS 1 and 2 publishes are kept until the reconnect)"))
        }
        guard offlineQueue.count < offlineQueueLimit else {
            return .fail(
                MQTTError(
                    .notConnected,
                    "cannot publish to \(publish.topic): not connected to \(endpoint) and \(offlineQueueLimit) publishes already wait for the reconnect"))
        }
        offlineQueue.append(publish)
        return .queued
    }

    // MARK: Delivery reports

    /// Every publish handed to libmosquitto whose `on_publish` has not come yet, by message
    /// id, with the token of a tracked one. Untracked ones are kept too, so that each
    /// callback finds its publish whichever comes first (see `publishSent`).
    private(set) var sentPublishes: [Int32: (qos: MQTTQoS, token: MQTTDeliveryToken?)] = [:]
    /// `on_publish` callbacks that came before their publish was registered: message id → reason.
    private(set) var earlyPublishAcks: [Int32: Int32] = [:]
    private var lastDeliveryToken: UInt64 = 0

    mutating func makeDeliveryToken() -> MQTTDeliveryToken {
        lastDeliveryToken += 1
        return MQTTDeliveryToken(rawValue: lastDeliveryToken)
    }

    /// A publish was handed to libmosquitto as `messageID` (it queued it: sent, or kept for
    /// the reconnect at QoS 1/2). libmosquitto reports the id only when `mosquitto_publish`
    /// returns, and its network thread can call `on_publish` before that: then the early
    /// acknowledgement is waiting here. Returns the report of a tracked publish already acknowledged.
    mutating func publishSent(messageID: Int32, qos: MQTTQoS, token: MQTTDeliveryToken?) -> MQTTDeliveryReport? {
        if let reason = earlyPublishAcks.removeValue(forKey: messageID) {
            return token.map { MQTTDeliveryReport(token: $0, reasonCode: reason) }
        }
        sentPublishes[messageID] = (qos, token)
        return nil
    }

    /// `on_publish`: a QoS 0 publish was written to the socket, or the broker acknowledged a
    /// QoS 1 (PUBACK) or 2 (PUBCOMP) one. Returns the report of a tracked publish.
    mutating func publishAcknowledged(messageID: Int32, reasonCode: Int32) -> MQTTDeliveryReport? {
        guard let sent = sentPublishes.removeValue(forKey: messageID) else {
            earlyPublishAcks[messageID] = reasonCode
            return nil
        }
        return sent.token.map { MQTTDeliveryReport(token: $0, reasonCode: reasonCode) }
    }

    // MARK: Subscriptions

    /// subscribe(): remember it. Returns whether to send SUBSCRIBE now (connected).
    /// Remembers a subscription. Returns the connection's generation when connected (the
    /// SUBSCRIBE goes out now), nil when it waits for the next CONNACK.
    mutating func subscriptionAdded(_ filter: String, qos: MQTTQoS) -> Int? {
        subscriptions[filter] = qos
        return phase == .connected ? connectionGeneration : nil
    }

    /// Forgets a subscription; returns like ``subscriptionAdded(_:qos:)``.
    mutating func subscriptionRemoved(_ filter: String) -> Int? {
        subscriptions[filter] = nil
        return phase == .connected ? connectionGeneration : nil
    }

    /// Registers a waiter for the SUBACK/UNSUBACK of `messageID`, sent on connection
    /// `generation`; fulfils it at once when the acknowledgement already arrived, or when
    /// that connection has ended meanwhile (its waiters were settled without this one, and
    /// the remembered subscriptions are redone on the next CONNACK): never left waiting.
    mutating func awaitAcknowledgement(
        of messageID: Int32, sentOn generation: Int, _ waiter: OneShot<Result<Void, MQTTError>>
    ) {
        if let early = earlyAcks.removeValue(forKey: messageID), generation == connectionGeneration {
            waiter.fulfil(early)
        } else if phase != .connected || generation != connectionGeneration {
            waiter.fulfil(.success(()))
        } else {
            ackWaiters[messageID] = waiter
        }
    }

    /// on_subscribe / on_unsubscribe. Returns the waiter to fulfil, if any.
    mutating func acknowledgementReceived(
        messageID: Int32, result: Result<Void, MQTTError>
    ) -> OneShot<Result<Void, MQTTError>>? {
        if ignoredMessageIDs.remove(messageID) != nil { return nil }
        if let waiter = ackWaiters.removeValue(forKey: messageID) { return waiter }
        earlyAcks[messageID] = result
        return nil
    }

    // MARK: Handle lifetime and shutdown

    /// An API call wants to use the handle. Returns false when it is shut down.
    mutating func enterCall() -> Bool {
        guard handle == .open else { return false }
        inFlightCalls += 1
        return true
    }

    /// An API call is done with the handle. Returns whether the caller must now destroy it.
    mutating func leaveCall() -> Bool {
        inFlightCalls -= 1
        return takeDestroyDuty()
    }

    struct ShutdownAction {
        var waiters: [OneShot<Result<Void, MQTTError>>]
        var ackWaiters: [OneShot<Result<Void, MQTTError>>]
        /// The network thread runs: tell libmosquitto to disconnect and wait for the thread.
        var threadExit: OneShot<Void>?
        /// Whether the caller must destroy the handle now.
        var destroy: Bool
        /// Whether this was the first shutdown request.
        var first: Bool
    }

    /// disconnect() or deinit.
    mutating func shutdownRequested() -> ShutdownAction {
        let first = phase != .closed
        phase = .closed
        offlineQueue.removeAll()
        if handle == .open { handle = .closing }
        stopRequested = true
        let waiters = Array(connectWaiters.values)
        connectWaiters.removeAll()
        let acks = Array(ackWaiters.values)
        ackWaiters.removeAll()
        var exit: OneShot<Void>?
        if threadRunning {
            let waiter = OneShot<Void>()
            exitWaiters.append(waiter)
            exit = waiter
        }
        return ShutdownAction(waiters: waiters, ackWaiters: acks, threadExit: exit, destroy: takeDestroyDuty(), first: first)
    }

    /// Returns true exactly once: when the handle is closing, no API call is inside it and
    /// the network thread is gone. The caller then calls `mosquitto_destroy`.
    private mutating func takeDestroyDuty() -> Bool {
        guard handle == .closing, inFlightCalls == 0, !threadRunning else { return false }
        handle = .destroyed
        return true
    }
}

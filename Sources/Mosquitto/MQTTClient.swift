import CMosquitto
import Foundation

/// An MQTT client over libmosquitto, for Swift concurrency.
///
/// ```swift
/// let client = try MQTTClient(configuration: .v5(host: "127.0.0.1", clientID: "pacer-gym"))
/// try await client.connect()
/// try await client.subscribe(to: "pacer/gym/cmd", qos: .atLeastOnce)
/// try await client.publish(to: "pacer/gym/status", string: "online", qos: .atLeastOnce, retain: true)
/// for await message in client.messages { ... }
/// await client.disconnect()
/// ```
///
/// After ``connect()`` succeeds the client stays connected by itself: on a lost
/// connection it reconnects with capped backoff (``MQTTReconnectPolicy``), sends the MQTT 5
/// session expiry again, and redoes every subscription; ``connectionEvents`` tells what
/// happens. ``disconnect()`` ends it for good.
///
/// Threading: `@unchecked Sendable` is sound because the class has no mutable stored
/// state of its own: it holds one immutable reference to `MQTTClientCore`, whose
/// invariants (documented there) make every method safe to call from any task or thread
/// at any time: libmosquitto is configured completely in `init` before any thread
/// exists; afterwards API calls only use libmosquitto's thread-safe queueing functions;
/// connecting runs on the client's own network thread, the loop on it or (``MQTTIOProfile/engine``)
/// on the loop host it hands the connection to (``serveConnections(on:)``), never on both at once; callbacks are
/// static C functions that copy their data and yield; `mosquitto_destroy` runs exactly once,
/// when no call is inside the handle and the network thread has returned. No user closure
/// ever reaches C, so no callback can run on, or hop to, the main actor.
public final class MQTTClient: @unchecked Sendable {
    private let core: MQTTClientCore

    /// The configuration the client was made with.
    public var configuration: MQTTConfiguration { core.configuration }

    /// Creates a client and configures libmosquitto (will, credentials, protocol version,
    /// TLS, callbacks). Does not connect.
    ///
    /// - Throws: ``MQTTError`` with `.invalidArgument` for a configuration libmosquitto would
    ///   reject (empty client id, keep-alive under 5 s, ...), `.tls` for unreadable TLS files.
    public init(configuration: MQTTConfiguration) throws(MQTTError) {
        core = try MQTTClientCore(configuration: configuration)
    }

    deinit {
        // Without disconnect(): stop the network thread and let the last one out destroy
        // the handle (no waiting in deinit).
        let action = core.state.withLock { $0.shutdownRequested() }
        let error = MQTTError(.shutdown, "the client was deallocated")
        for waiter in action.connectWaiters { waiter.fulfil(.failure(error)) }
        for waiter in action.acknowledgementWaiters { waiter.fulfil(.failure(error)) }
        switch action.thread {
        case .none, .leave:
            break
        case .disconnectAndWait, .wakeAndWait:
            _ = mosquitto_disconnect(core.mosq)  // the thread is alive, so the handle is too
            core.wakeNetworkThread()
        }
        if action.destroy { mosquitto_destroy(core.mosq) }
        core.finishStreams()
    }

    /// Every message received on any subscription. One consumer; ends at shutdown.
    public var messages: MQTTMessages { MQTTMessages(core.messages) }

    /// Connection events: connected, disconnected (then reconnecting), refused, loop exited.
    /// One consumer; ends at shutdown.
    public var connectionEvents: MQTTConnectionEvents { MQTTConnectionEvents(core.events) }

    /// The broker's acknowledgements of tracked publishes
    /// (``publishTracked(to:payload:qos:retain:properties:)``). One consumer; ends at shutdown.
    public var deliveries: MQTTDeliveries { MQTTDeliveries(core.deliveries) }

    /// Whether the broker has accepted the current connection.
    public var isConnected: Bool { core.state.withLock { $0.isConnected } }

    /// The MQTT version of the current (or next) connection: the configured one, or, with
    /// ``MQTTConfiguration/fallsBackToV3_1_1``, the one the broker accepted.
    public var protocolVersion: MQTTVersion { core.state.withLock { $0.version } }

    /// Before ``connect()``, with ``MQTTConfiguration/fallsBackToV3_1_1``: starts with the
    /// version `other` (a client of the same broker) settled on, and its reason, instead of
    /// trying MQTT 5 again. Does nothing otherwise.
    public func startNegotiation(like other: MQTTClient) {
        let (version, reason) = other.core.state.withLock { ($0.version, $0.negotiation.fallbackReason) }
        core.state.withLock { $0.startNegotiation(at: version, because: reason) }
    }

    /// Why the client speaks MQTT 3.1.1 although it tried 5 first (``MQTTConfiguration/fallsBackToV3_1_1``); nil otherwise.
    public var versionFallbackReason: String? {
        core.state.withLock { $0.version == .v3_1_1 ? $0.negotiation.fallbackReason : nil }
    }

    /// Connects and returns once the broker accepted the connection (the first CONNACK).
    ///
    /// Connection failures that may pass (nothing listening yet, connection reset) are
    /// retried with the reconnect policy until ``MQTTConfiguration/connectTimeout``. From
    /// then on the client reconnects by itself. Calling it while connected returns at once.
    ///
    /// - Throws: ``MQTTError``: `.badCredentials` / `.notAuthorized` (or another refusal code)
    ///   as soon as the broker refuses the CONNECT, without retrying; `.tls` when the TLS
    ///   handshake fails; `.timeout` (with the last error) when no connection was made in
    ///   time; `.shutdown` after ``disconnect()``; `.cancelled` at once when the calling
    ///   task is cancelled, whatever the attempt is doing (resolving the name, a TCP connect
    ///   that hangs, waiting for the CONNACK, waiting to retry): the network thread then
    ///   stops trying unless another `connect()` still waits or a connection was made.
    public func connect() async throws(MQTTError) {
        let timeout = core.configuration.connectTimeout
        let started = ContinuousClock.now
        let cancelled = MQTTError(
            .cancelled, "connect() to \(core.configuration.host):\(core.configuration.port) was cancelled; the client stopped trying")
        while true {
            // A cancelled task starts nothing (and a retry below stops here).
            if Task.isCancelled { throw cancelled }
            let waiter = OneShot<Result<Void, MQTTError>>()
            let action = core.state.withLock { $0.connectRequested(waiter) }
            let token: UInt64
            switch action {
            case .succeed:
                return
            case .fail(let error):
                throw error
            case .waitForThreadExit(let exit):
                // An earlier, abandoned attempt is still unwinding; wait for it (bounded,
                // and ended at once by cancellation).
                let remaining = timeout - (ContinuousClock.now - started)
                guard remaining > .zero else { throw core.state.withLock { $0.timeoutError(after: timeout) } }
                await exit.wait(timeout: remaining, timeoutValue: (), cancelValue: ())
                continue
            case .wait(let t):
                token = t
            case .startThreadAndWait(let t):
                token = t
                core.startNetworkThread()
            }
            let remaining = max(timeout - (ContinuousClock.now - started), .milliseconds(1))
            let timedOut = MQTTError(.timeout, "")
            let result = await waiter.wait(
                timeout: remaining, timeoutValue: .failure(timedOut), cancelValue: .failure(cancelled))
            switch result {
            case .success:
                return
            case .failure(let error) where error == timedOut || error == cancelled:
                let (abandon, message) = core.state.withLock { state in
                    (state.connectAbandoned(token: token), state.timeoutError(after: timeout))
                }
                switch abandon {
                case .wakeNetworkThread: core.wakeNetworkThread()
                case .none: break
                }
                throw error == cancelled ? cancelled : message
            case .failure(let error):
                throw error
            }
        }
    }

    /// Publishes a message.
    ///
    /// Returns once libmosquitto has queued it: QoS 0 needs a connection (else
    /// `.notConnected`); QoS 1 and 2 messages made while disconnected are kept in memory
    /// and sent after the reconnect (lost if the process ends first).
    ///
    /// - Parameters:
    ///   - topic: the topic name (no wildcards).
    ///   - payload: the bytes to send (may be empty; an empty retained message clears the
    ///     retained message of the topic).
    ///   - qos: the quality of service.
    ///   - retain: whether the broker keeps it as the topic's retained message.
    ///   - properties: MQTT 5 properties (ignored with MQTT 3.1.1).
    /// - Throws: ``MQTTError``: `.invalidArgument` for a bad topic or payload,
    ///   `.notConnected`, `.shutdown`.
    ///
    /// Runs on the caller's executor (`nonisolated(nonsending)`): it only takes a lock and
    /// hands the packet to libmosquitto, so an actor publishing many messages does not hop
    /// to the global executor and back for each one.
    nonisolated(nonsending) public func publish(
        to topic: String, payload: [UInt8], qos: MQTTQoS = .atMostOnce, retain: Bool = false,
        properties: MQTTProperties = .none
    ) async throws(MQTTError) {
        try await publish(to: topic, payload: payload, qos: qos, retain: retain, properties: properties, token: nil)
    }

    /// Publishes like ``publish(to:payload:qos:retain:properties:)`` (QoS 1 or 2 only) and
    /// returns a token that ``deliveries`` reports once the broker has acknowledged the
    /// message: its PUBACK (QoS 1) or PUBCOMP (QoS 2), also when that comes after a reconnect
    /// (libmosquitto resends unacknowledged messages). No report comes for a message lost
    /// with the client (shut down, or the process ended) before the broker acknowledged it.
    ///
    /// - Throws: like ``publish(to:payload:qos:retain:properties:)``, and `.invalidArgument`
    ///   at QoS 0 (the broker never acknowledges it).
    nonisolated(nonsending) public func publishTracked(
        to topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = false,
        properties: MQTTProperties = .none
    ) async throws(MQTTError) -> MQTTDeliveryToken {
        guard qos != .atMostOnce else {
            throw MQTTError(.invalidArgument, "a QoS 0 publish to \(topic) cannot be tracked: the broker never acknowledges it")
        }
        let token = core.state.withLock { $0.makeDeliveryToken() }
        try await publish(to: topic, payload: payload, qos: qos, retain: retain, properties: properties, token: token)
        return token
    }

    nonisolated(nonsending) private func publish(
        to topic: String, payload: [UInt8], qos: MQTTQoS, retain: Bool, properties: MQTTProperties,
        token: MQTTDeliveryToken?
    ) async throws(MQTTError) {
        try Self.checkTopicName(topic)
        guard payload.count <= Int(Int32.max) else {
            throw MQTTError(.invalidArgument, "the payload of \(payload.count) bytes is too large for MQTT")
        }
        if core.speaksMQTT5.load(ordering: .acquiring), !properties.isEmpty {
            // Check the properties now, not only when a kept publish is finally sent.
            var list = try properties.makePropertyList()
            mosquitto_property_free_all(&list)
        }
        // QoS 0 through the direct lane when the client has one and it can take it now
        // (the `engine` profile); otherwise through libmosquitto.
        if qos == .atMostOnce, properties.isEmpty, core.writeDirectly(topic: topic, payload: payload, retain: retain) { return }
        let pending = PublishTracker.PendingPublish(
            topic: topic, payload: payload, qos: qos, retain: retain, properties: properties, token: token)
        var decision = core.state.withLock { $0.publishRequested(pending) }
        while true {
            switch decision {
            case .queued:
                return
            case .fail(let error):
                throw error
            case .publishNow(let generation):
                let rc = try core.withHandle { mosq throws(MQTTError) in try core.send(pending, on: mosq) }
                guard rc == MOSQ_ERR_NO_CONN.rawValue else { return }
                decision = core.state.withLock { $0.publishFoundNoConnection(pending, generation: generation) }
            }
        }
    }

    /// Publishes a UTF-8 text message; see ``publish(to:payload:qos:retain:properties:)``.
    nonisolated(nonsending) public func publish(
        to topic: String, string: String, qos: MQTTQoS = .atMostOnce, retain: Bool = false,
        properties: MQTTProperties = .none
    ) async throws(MQTTError) {
        try await publish(to: topic, payload: Array(string.utf8), qos: qos, retain: retain, properties: properties)
    }

    /// Lets `host`'s thread serve this client's connections, from the next one on, in place
    /// of the client's network thread (``MQTTIOProfile/engine`` only, so plain TCP only; under
    /// `library` the network thread keeps them). The network thread still connects, reconnects
    /// and backs off. See ``MQTTLoopHost`` for the contract and why. The client holds `host`
    /// weakly.
    public func serveConnections(on host: any MQTTLoopHost) {
        core.engine?.loopHost.withLock { $0.host = host }
    }

    /// Starts a batch of publishes: until the matching ``endPublishBatch()``, publishes are
    /// queued in libmosquitto without waking the network thread for each one; the end of
    /// the batch wakes it once, and it writes them all in one go. For the many publishes of
    /// one instant (a node's per-second values): one thread hand-off instead of one per
    /// message. Order is kept; a publish of another task during the batch waits for its end
    /// (or for the network thread's next wake-up). Batches may nest; every begin needs its
    /// end. Under the `library` profile (every packet wakes the network thread) it changes nothing.
    public func beginPublishBatch() {
        core.beginBatch()
    }

    /// Ends a batch begun by ``beginPublishBatch()``: the network thread writes what it queued.
    public func endPublishBatch() {
        core.endBatch()
    }

    /// Log lines libmosquitto has formatted for this client so far (tests: the callback is only
    /// set while a connection attempt waits for its CONNACK).
    var logLinesSeen: Int { core.logLinesSeen.load(ordering: .relaxed) }

    /// Whether this client has the direct lane (the `engine` profile over plain TCP).
    var hasDirectLane: Bool { core.engine != nil }

    /// Bytes written through the direct lane so far (tests: QoS 0 publishes really took it).
    var directBytesWritten: Int { core.directBytesWritten }
    /// Times a publishing thread wrote libmosquitto's queue itself (the `engine` profile; tests).
    var publisherWriteCount: Int { core.publisherWriteCount }
    /// The flush of kept publishes after the last CONNACK has not ended: QoS 0 publishes made
    /// now may overtake QoS 1 ones (tests that check the order on the wire wait for its end).
    var connectFlushPending: Bool { core.connectFlushPending }

    /// How long packets have been waiting to be written because the socket's buffer is full
    /// (the broker reads slower than this client publishes); nil when nothing waits, and
    /// always nil over TLS, where it cannot be told. A publisher of values that supersede
    /// each other can skip them while this grows, instead of queueing them without bound.
    public var writeBacklog: Duration? {
        let since = core.backlogSinceNs.load(ordering: .acquiring)
        guard since != 0 else { return nil }
        let now = DispatchTime.now().uptimeNanoseconds
        return .nanoseconds(Int64(clamping: now >= since ? now - since : 0))
    }

    /// Subscribes to a topic filter and remembers it: every reconnect subscribes again.
    ///
    /// When connected, returns once the broker acknowledged it (SUBACK), or once the
    /// connection dropped first (it is redone on reconnect). When not connected, returns
    /// at once; the subscription is made on the next connection.
    ///
    /// - Throws: ``MQTTError``: `.invalidArgument` for a bad filter, `.notAuthorized` when
    ///   the broker refuses it (then it is forgotten), `.shutdown`.
    public func subscribe(to topicFilter: String, qos: MQTTQoS = .atLeastOnce) async throws(MQTTError) {
        try Self.checkTopicFilter(topicFilter)
        let waiter = OneShot<Result<Void, MQTTError>>()
        let sent = try core.withHandle { mosq throws(MQTTError) -> Bool in
            guard let generation = core.state.withLock({ $0.subscriptionAdded(topicFilter, qos: qos) }) else { return false }
            var messageID: Int32 = 0
            let rc = mosquitto_subscribe_v5(mosq, &messageID, topicFilter, qos.rawValue, 0, nil)
            if rc == MOSQ_ERR_NO_CONN.rawValue { return false }
            if rc != MOSQ_ERR_SUCCESS.rawValue {
                throw MQTTError.mosquitto(rc, errno: errno, "subscribing to \(topicFilter)")
            }
            core.state.withLock { $0.awaitAcknowledgement(of: messageID, sentOn: generation, waiter) }
            core.packetQueued(awaited: true)
            return true
        }
        guard sent else { return }
        let result = await waiter.wait()
        if case .failure(let error) = result {
            if error.code != .shutdown { _ = core.state.withLock { $0.subscriptionRemoved(topicFilter) } }
            throw error
        }
    }

    /// Unsubscribes from a topic filter and forgets it (reconnects no longer subscribe).
    ///
    /// When connected, returns once the broker acknowledged it (UNSUBACK) or the
    /// connection dropped.
    ///
    /// - Throws: ``MQTTError``: `.invalidArgument`, `.shutdown`.
    public func unsubscribe(from topicFilter: String) async throws(MQTTError) {
        try Self.checkTopicFilter(topicFilter)
        let waiter = OneShot<Result<Void, MQTTError>>()
        let sent = try core.withHandle { mosq throws(MQTTError) -> Bool in
            guard let generation = core.state.withLock({ $0.subscriptionRemoved(topicFilter) }) else { return false }
            var messageID: Int32 = 0
            let rc = mosquitto_unsubscribe_v5(mosq, &messageID, topicFilter, nil)
            if rc == MOSQ_ERR_NO_CONN.rawValue { return false }
            if rc != MOSQ_ERR_SUCCESS.rawValue {
                throw MQTTError.mosquitto(rc, errno: errno, "unsubscribing from \(topicFilter)")
            }
            core.state.withLock { $0.awaitAcknowledgement(of: messageID, sentOn: generation, waiter) }
            core.packetQueued(awaited: true)
            return true
        }
        guard sent else { return }
        try await waiter.wait().get()
    }

    /// Disconnects cleanly and releases libmosquitto: sends DISCONNECT (MQTT 5 reason 0:
    /// the will is not published and the session is kept for its expiry interval), waits
    /// for the network thread to stop, then destroys the handle; all of it bounded by
    /// ``MQTTConfiguration/shutdownTimeout``. Finishes ``messages`` and ``connectionEvents``.
    /// Idempotent; returns at once when the calling task is cancelled. If the network
    /// thread is in its blocking connect call (a DNS lookup or a TCP connect to an
    /// unreachable host), there is no connection to end: it returns at once, and the
    /// thread destroys the handle itself when that call returns. A thread waiting out a
    /// reconnect delay is woken at once.
    public func disconnect() async {
        let action = core.state.withLock { $0.shutdownRequested() }
        let error = MQTTError(.shutdown, "disconnect() was called")
        for waiter in action.connectWaiters { waiter.fulfil(.failure(error)) }
        for waiter in action.acknowledgementWaiters { waiter.fulfil(.failure(error)) }
        switch action.thread {
        case .none, .leave:
            // No thread, or one stuck in a blocking connect with no connection to end: it
            // notices the shutdown when that call returns and destroys the handle itself.
            break
        case .disconnectAndWait(let exit):
            // Safe: the network thread is alive, so the handle is not destroyed. This
            // queues DISCONNECT and wakes the loop; the thread sends it and returns.
            _ = mosquitto_disconnect(core.mosq)
            core.wakeNetworkThread()
            await exit.wait(timeout: core.configuration.shutdownTimeout, timeoutValue: (), cancelValue: ())
        case .wakeAndWait(let exit):
            core.wakeNetworkThread()
            await exit.wait(timeout: core.configuration.shutdownTimeout, timeoutValue: (), cancelValue: ())
        }
        if action.destroy { mosquitto_destroy(core.mosq) }
        core.finishStreams()
    }

    // MARK: Validation

    static func checkTopicName(_ topic: String) throws(MQTTError) {
        if topic.isEmpty || topic.utf8.contains(0) || topic.utf8.count > 65_535
            || mosquitto_pub_topic_check(topic) != MOSQ_ERR_SUCCESS.rawValue
        {
            throw MQTTError(
                .invalidArgument,
                "cannot publish to \"\(topic)\": a topic name must be 1 to 65535 bytes of UTF-8 without NUL, '+' or '#'")
        }
    }

    static func checkTopicFilter(_ filter: String) throws(MQTTError) {
        if filter.isEmpty || filter.utf8.contains(0) || filter.utf8.count > 65_535
            || mosquitto_sub_topic_check(filter) != MOSQ_ERR_SUCCESS.rawValue
        {
            throw MQTTError(
                .invalidArgument,
                "cannot subscribe to \"\(filter)\": a topic filter must be 1 to 65535 bytes of UTF-8; '+' must fill a whole level and '#' must be the last level")
        }
    }
}

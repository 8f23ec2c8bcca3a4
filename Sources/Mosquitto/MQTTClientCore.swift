import CMosquitto
import Dispatch
import Foundation
import Synchronization

/// The part of a client that libmosquitto's callbacks and the network thread see.
///
/// Threading: this type owns the `struct mosquitto *` and is shared by three kinds of
/// thread: API callers (any task), the network thread (ours, one per connect cycle) and
/// libmosquitto callbacks (on the thread that serves the connection: the network thread, or,
/// under the `engine` profile, the loop host it handed the connection to; never both at
/// once). It is `@unchecked Sendable` because of these invariants:
/// - `mosq` is set once in `init` and never reassigned. Options, will, credentials, TLS
///   and callbacks are all set in `init`, before any thread exists; never again.
/// - After that, API threads make only thread-safe libmosquitto calls (`publish`,
///   `subscribe`, `unsubscribe`, `disconnect`: they queue a packet under libmosquitto's own
///   mutexes). Connecting happens on the network thread only, the loop's turns on the thread
///   serving the connection.
/// - `mosquitto_destroy` runs exactly once, when the handle is closing, no API call is
///   inside it and the network thread has returned. ``MosquittoHandleLifetime`` hands
///   that duty to exactly one caller.
/// - Callbacks get `self` through `Unmanaged` userdata, unretained: the network thread
///   retains `self` while it runs (a hosted loop retains it too), and callbacks run only
///   inside a loop turn.
/// - Mutable Swift state lives in `state` (a `Mutex`), which is never held while calling
///   into libmosquitto, so no lock-order cycle with libmosquitto's mutexes is possible.
/// - The `engine` profile's writes from other threads, and its lock order: ``EngineIO``.
final class MQTTClientCore: @unchecked Sendable {
    let configuration: MQTTConfiguration
    let mosq: OpaquePointer
    /// CONNECT properties (MQTT 5 session expiry), sent on every connect and reconnect.
    private let connectProperties: OpaquePointer?
    let state: Mutex<MQTTConnectionStateMachine>
    let messages: AsyncStream<MQTTMessage>
    let events: AsyncStream<MQTTConnectionEvent>
    let deliveries: AsyncStream<MQTTDeliveryReport>
    private let messageContinuation: AsyncStream<MQTTMessage>.Continuation
    private let eventContinuation: AsyncStream<MQTTConnectionEvent>.Continuation
    private let deliveryContinuation: AsyncStream<MQTTDeliveryReport>.Continuation
    /// Wakes the network thread from a backoff wait.
    private let wakeUp = DispatchSemaphore(value: 0)
    /// Monotonic ns since packets have stayed unwritten after a write (the socket's buffer
    /// is full: the broker reads slower than we publish); 0 when nothing waits.
    let backlogSinceNs = Atomic<UInt64>(0)
    /// Log lines libmosquitto has handed to the log callback, at any level (for tests: none
    /// once connected, since the callback is removed then).
    let logLinesSeen = Atomic<Int>(0)
    /// The `engine` profile's state; nil under `library` (and over TLS).
    let engine: EngineIO?
    /// Whether the handle speaks MQTT 5 (properties go out) or 3.1.1: the configured version,
    /// or the one ``VersionNegotiation`` chose. Changed only between connections.
    let speaksMQTT5 = Atomic<Bool>(true)
    /// Wakes the thread serving the connection from its poll (MQTTClientCore+Loop.swift).
    let wakePipe: WakePipe

    init(configuration: MQTTConfiguration) throws(MQTTError) {
        try configuration.validate()
        guard MosquittoLibrary.initResult == MOSQ_ERR_SUCCESS.rawValue else {
            throw MQTTError.mosquitto(MosquittoLibrary.initResult, "initialising libmosquitto")
        }
        guard let wakePipe = WakePipe() else {
            let code = errno
            throw MQTTError(.other, "cannot make the network thread's wake-up pipe: \(String(cString: strerror(code))) (errno \(code))")
        }
        self.wakePipe = wakePipe
        // clean_session is libmosquitto's name for clean start (used for MQTT 5 too).
        guard let handle = mosquitto_new(configuration.clientID, configuration.cleanStart, nil) else {
            let code = errno
            throw MQTTError(
                code == EINVAL ? .invalidArgument : .other,
                "mosquitto_new failed for client id \(configuration.clientID): \(String(cString: strerror(code))) (errno \(code))")
        }
        var properties: OpaquePointer?
        if configuration.version == .v5 {
            var rc = mosquitto_property_add_int32(
                &properties, propertyID(MQTT_PROP_SESSION_EXPIRY_INTERVAL), configuration.sessionExpiryInterval)
            if rc == MOSQ_ERR_SUCCESS.rawValue, let size = configuration.maximumPacketSize {
                rc = mosquitto_property_add_int32(&properties, propertyID(MQTT_PROP_MAXIMUM_PACKET_SIZE), size)
            }
            if rc != MOSQ_ERR_SUCCESS.rawValue {
                mosquitto_property_free_all(&properties)
                mosquitto_destroy(handle)
                throw MQTTError.mosquitto(rc, "building the CONNECT properties")
            }
        }
        self.engine = configuration.ioProfile == .engine && configuration.tls == nil ? EngineIO() : nil
        self.configuration = configuration
        self.mosq = handle
        self.connectProperties = properties
        self.state = Mutex(
            MQTTConnectionStateMachine(
                version: configuration.version, fallsBack: configuration.fallsBackToV3_1_1,
                reconnectPolicy: configuration.reconnect,
                endpoint: "\(configuration.host):\(configuration.port)",
                tlsConfigured: configuration.tls != nil,
                clientCertificateConfigured: configuration.tls?.certificateFile != nil,
                offlineQueueLimit: configuration.offlineQueueLimit))
        (messages, messageContinuation) = AsyncStream.makeStream(of: MQTTMessage.self)
        (events, eventContinuation) = AsyncStream.makeStream(of: MQTTConnectionEvent.self)
        (deliveries, deliveryContinuation) = AsyncStream.makeStream(of: MQTTDeliveryReport.self)
        // From here on, a throw runs deinit, which destroys the handle.
        try configureHandle()
    }

    deinit {
        // Reached when the client and the network thread are both gone. Normally the
        // handle is already destroyed; this covers a throwing init.
        let destroy = state.withLock { state -> Bool in
            if case .destroyed = state.handle.state { return false }
            return true
        }
        if destroy { mosquitto_destroy(mosq) }
        var properties = connectProperties
        mosquitto_property_free_all(&properties)
        messageContinuation.finish()
        eventContinuation.finish()
    }

    // MARK: Streams

    func yield(_ message: MQTTMessage) {
        messageContinuation.yield(message)
    }

    func yield(_ event: MQTTConnectionEvent) {
        eventContinuation.yield(event)
    }

    func finishStreams() {
        messageContinuation.finish()
        eventContinuation.finish()
        deliveryContinuation.finish()
    }

    // MARK: Using the handle from API calls

    /// Runs `body` with the handle unless the client is shut down; the handle cannot be
    /// destroyed while `body` runs.
    func withHandle<T>(_ body: (OpaquePointer) throws(MQTTError) -> T) throws(MQTTError) -> T {
        guard state.withLock({ $0.enterCall() }) else {
            throw MQTTError(.shutdown, "the client was shut down with disconnect()")
        }
        defer {
            if state.withLock({ $0.leaveCall() }) { mosquitto_destroy(mosq) }
        }
        return try body(mosq)
    }

    /// Hands a publish to libmosquitto. Returns `MOSQ_ERR_SUCCESS` or `MOSQ_ERR_NO_CONN`;
    /// throws for anything else.
    func send(_ publish: PublishTracker.PendingPublish, on mosq: OpaquePointer) throws(MQTTError) -> Int32 {
        var list: OpaquePointer?
        if speaksMQTT5.load(ordering: .acquiring) { list = try publish.properties.makePropertyList() }
        defer { mosquitto_property_free_all(&list) }
        var messageID: Int32 = 0
        func queue() -> (Int32, Int32) {
            publish.payload.withUnsafeBytes { bytes in
                let rc = mosquitto_publish_v5(
                    mosq, &messageID, publish.topic, Int32(bytes.count), bytes.baseAddress, publish.qos.rawValue, publish.retain,
                    list)
                return (rc, errno)
            }
        }
        // With the direct lane, what it holds goes out before this packet (DirectLane rule 3).
        let (rc, savedErrno) = engine?.direct.withLock { lane in lane.libraryQueued = true; return queue() } ?? queue()
        if rc == MOSQ_ERR_SUCCESS.rawValue { packetQueued() }
        // Queued by libmosquitto: sent (every QoS), or kept for the reconnect (QoS 1/2 only).
        if rc == MOSQ_ERR_SUCCESS.rawValue || (rc == MOSQ_ERR_NO_CONN.rawValue && publish.qos != .atMostOnce) {
            let early = state.withLock { $0.publishSent(messageID: messageID, qos: publish.qos, token: publish.token) }
            if let early { deliveryContinuation.yield(early) }
        }
        if rc == MOSQ_ERR_SUCCESS.rawValue || rc == MOSQ_ERR_NO_CONN.rawValue { return rc }
        throw MQTTError.mosquitto(rc, errno: savedErrno, "publishing to \(publish.topic)")
    }

    /// The flush after the last CONNACK has not ended (tests).
    var connectFlushPending: Bool { state.withLock { $0.connectFlushPending } }

    // MARK: Network thread

    func startNetworkThread() {
        let name = "mqtt-\(configuration.clientID)"
        let thread = Thread { [self] in
            Thread.current.name = name
            self.networkThreadMain()
        }
        thread.start()
    }

    func wakeNetworkThread() {
        wakeUp.signal()
        wakePipe.wake()
    }

    /// What a served connection carries from one turn to the next (the network thread's, or
    /// its host's: ``MQTTHostedLoop``).
    struct TurnState {
        /// Set once a `disconnect()` was seen: the DISCONNECT is queued, and the connection is
        /// given up at this instant if the broker has not closed it by then.
        var stopDeadline: ContinuousClock.Instant?
        /// The last turn (a hosted loop turns at least once a second, for the keep-alive).
        var lastTurn = ContinuousClock.now
    }

    /// `disconnect()` was called (or `connect()` gave up): send DISCONNECT (MQTT 5 reason 0:
    /// the session is kept for its expiry and the will is not published), then keep turning
    /// until the socket closes, within the bound.
    ///
    /// Also ends, at once and without a DISCONNECT, an MQTT 5 CONNECT the broker left
    /// unanswered while the version may still change (``VersionNegotiation``).
    func requestDisconnectIfAsked(_ turn: inout TurnState) {
        guard turn.stopDeadline == nil else { return }
        let (stop, unanswered) = state.withLock { ($0.stopRequested, $0.abandonsUnansweredConnect(now: .now)) }
        if unanswered {
            turn.stopDeadline = .now
        } else if stop {
            _ = mosquitto_disconnect(mosq)
            turn.stopDeadline = .now + configuration.shutdownTimeout
        }
    }

    /// The network thread: connects (always with `mosquitto_connect_bind_v5` and the
    /// CONNECT properties), serves the connection until it ends (`serveConnection`), then
    /// decides (in the state machine) whether to stop or to reconnect after a backoff delay.
    ///
    /// Why not `mosquitto_loop_start`: libmosquitto 2.0.11's own reconnect
    /// (`mosquitto_reconnect`, called by `mosquitto_loop_forever`) sends CONNECT without
    /// the properties given to `mosquitto_connect_bind_v5`, so after the first automatic
    /// reconnect an MQTT 5 session would have expiry 0 and be lost on the next drop. Its
    /// thread also exits silently on some errors (`MOSQ_ERR_EAI`, `MOSQ_ERR_TLS`, a
    /// refused MQTT 5 CONNACK) with nothing to observe. Running the loop on our own thread
    /// (`mosquitto_threaded_set(true)`, the documented mode for that) fixes both: every
    /// CONNECT carries the session expiry, and the thread's end is always seen. The loop is
    /// our poll, not `mosquitto_loop` (whose select() refuses descriptors from 1024 on, as
    /// `mosquitto_loop_forever`'s and `mosquitto_loop_start`'s): MQTTClientCore+Loop.swift.
    private func networkThreadMain() {
        let configuration = self.configuration
        let port = Int32(configuration.port)
        let keepAlive = Int32(configuration.keepAlive)
        var appliedVersion = configuration.version
        attempts: while state.withLock({ $0.attemptStarting() }) == .connect {
            // Blocking: resolves the host name and connects TCP, then sends CONNECT. A
            // disconnect() meanwhile does not wait for it (see MQTTClient.disconnect()).
            // libmosquitto formats a log line (malloc, vsnprintf, our callback) for every packet
            // it sends or receives while a log callback is set. Only the lines before the
            // CONNACK explain anything (OpenSSL's errors, for ConnectionDiagnostics), so the
            // callback is set for the attempt and removed when the broker accepts it
            // (handleConnack).
            mosquitto_log_callback_set(mosq, MosquittoCallbacks.onLog)
            let version = state.withLock { $0.version }
            if version != appliedVersion {
                // VersionNegotiation chose the other version; setting it cannot fail for a
                // handle that took the configured one, but a failure is that attempt's end.
                do { try setVersion(version); appliedVersion = version } catch {
                    state.withLock { $0.logged(problem: error.message) }
                }
            }
            var rc = mosquitto_connect_bind_v5(
                mosq, configuration.host, port, keepAlive, nil, appliedVersion == .v5 ? connectProperties : nil)
            var savedErrno = errno
            let connectFailed = rc != MOSQ_ERR_SUCCESS.rawValue
            if rc == MOSQ_ERR_SUCCESS.rawValue {
                state.withLock { $0.connectSent() }
                // libmosquitto does not open its socket close-on-exec: without this, a
                // child process the node spawns (a sound player, say) would inherit the
                // connection and keep it open after the node dies, delaying the will.
                let socket = mosquitto_socket(mosq)
                if socket >= 0 { _ = fcntl(socket, F_SETFD, fcntl(socket, F_GETFD) | FD_CLOEXEC) }
                engine?.direct.withLock { $0.connectionUp = true }
                (rc, savedErrno) = serveConnection()
            }
            backlogSinceNs.store(0, ordering: .releasing)
            if let io = engine {
                // A publishing thread's failed write closed the socket: its error is the reason
                // (this thread saw only the closed socket). The lane closes with the connection.
                let failure = io.direct.withLock { lane in
                    defer { lane.connectionUp = false; lane.publisherWriteFailure = nil; lane.close() }
                    return lane.publisherWriteFailure
                }
                io.connackAccepted.store(false, ordering: .releasing)
                if let failure, rc == MOSQ_ERR_SUCCESS.rawValue || rc == MOSQ_ERR_NO_CONN.rawValue {
                    (rc, savedErrno) = failure
                }
            }
            let action = state.withLock { $0.connectionEnded(rc: rc, errno: savedErrno, connectFailed: connectFailed) }
            for waiter in action.orphanedAcknowledgements { waiter.fulfil(.success(())) }
            for event in action.events { yield(event) }
            switch action.next {
            case .retry(let delay):
                backoff(delay)
            case .stop(let waiters, let error):
                for waiter in waiters { waiter.fulfil(.failure(error)) }
                break attempts
            }
        }
        let exit = state.withLock { $0.threadExited() }
        if exit.destroy { mosquitto_destroy(mosq) }
        for waiter in exit.exitWaiters { waiter.fulfil(()) }
    }

    /// Serves one connection until it ends, in our loop's turns (`pollTurn`,
    /// MQTTClientCore+Loop.swift) on this thread; under `engine`, on the loop host's thread
    /// when one is set and takes it (``MQTTLoopHost``), and here from the moment the host stops.
    /// Returns the result and errno that ended it.
    private func serveConnection() -> (rc: Int32, errno: Int32) {
        var turn = TurnState()
        if let io = engine, let host = io.loopHost.withLock({ $0.host }) {
            let hosted = MQTTHostedLoop(core: self, turnState: turn)
            if host.adopt(hosted) {
                switch hosted.waitForHandBack() {
                case .ended(let rc, let errno): return (rc, errno)
                case .released: turn = hosted.turnState
                }
            }
        }
        while true {
            if let end = pollTurn(&turn) { return end }
        }
    }

    /// Sends the publishes kept while disconnected, in order, and those that queued behind
    /// them meanwhile (a no-op but for one lock when no flush is due). This only queues
    /// packets; the next loop call writes them.
    func flushKeptPublishes() {
        var batch = state.withLock { $0.takeFlush() }
        while !batch.isEmpty {
            for publish in batch { _ = try? send(publish, on: mosq) }
            batch = state.withLock { $0.takeFlush() }
        }
    }

    /// Sleeps `delay` unless woken (by disconnect() or an abandoned connect()).
    private func backoff(_ delay: Duration) {
        let (seconds, attoseconds) = delay.components
        let nanoseconds = max(0, seconds) * 1_000_000_000 + attoseconds / 1_000_000_000
        _ = wakeUp.wait(timeout: .now() + .nanoseconds(Int(clamping: nanoseconds)))
        // Drain extra signals so a later backoff is not cut short.
        while wakeUp.wait(timeout: .now()) == .success {}
    }

    // MARK: Callback bodies (the serving thread, inside libmosquitto's callback mutex)

    func handleConnack(reasonCode: Int32, flags: Int32) {
        let action = state.withLock {
            $0.connackReceived(reasonCode: reasonCode, sessionPresent: flags & 1 != 0)
        }
        switch action {
        case .accepted(let event, let resubscribe, let waiters):
            // No more log lines for this connection (see networkThreadMain). Safe here:
            // libmosquitto holds its callback mutex now, not the log callback's.
            mosquitto_log_callback_set(mosq, nil)
            engine?.connackAccepted.store(true, ordering: .releasing)
            // Redo the remembered subscriptions (the canonical place: on_connect, so every
            // reconnect resubscribes). mosquitto_subscribe only queues a packet here.
            for (filter, qos) in resubscribe {
                var messageID: Int32 = 0
                if mosquitto_subscribe_v5(mosq, &messageID, filter, qos.rawValue, 0, nil) == MOSQ_ERR_SUCCESS.rawValue {
                    state.withLock { $0.ignoreAcknowledgement(of: messageID) }
                }
            }
            // What was published while disconnected goes out from the network loop once this
            // callback has returned (see MQTTConnectionStateMachine.takeFlush).
            yield(event)
            for waiter in waiters { waiter.fulfil(.success(())) }
        case .refused(let event, let waiters, let error):
            yield(event)
            for waiter in waiters { waiter.fulfil(.failure(error)) }
        case .ignore:
            break
        }
    }

    func handlePublished(messageID: Int32, reasonCode: Int32) {
        let report = state.withLock { $0.publishAcknowledged(messageID: messageID, reasonCode: reasonCode) }
        if let report { deliveryContinuation.yield(report) }
    }

    func handleDisconnect(reason: Int32) {
        state.withLock { $0.disconnectCallback(reason: reason) }
    }

    func handleAcknowledgement(messageID: Int32, result: Result<Void, MQTTError>) {
        let waiter = state.withLock { $0.acknowledgementReceived(messageID: messageID, result: result) }
        waiter?.fulfil(result)
    }

    func handleLog(level: Int32, text: String) {
        state.withLock { $0.logged(problem: text) }
    }
}

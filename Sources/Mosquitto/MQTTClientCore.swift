import CMosquitto
import Dispatch
import Foundation
import Synchronization

/// `mosquitto_lib_init()`, run once per process before the first `mosquitto_new`.
///
/// Threading: a Swift `static let` is initialised exactly once, thread-safely (swift_once).
enum MosquittoLibrary {
    static let initResult: Int32 = mosquitto_lib_init()
}

/// The part of a client that libmosquitto's callbacks and the network thread see.
///
/// Threading: this type owns the `struct mosquitto *` and is shared by three kinds of
/// thread: API callers (any task), the network thread (ours, one per connect cycle) and
/// libmosquitto callbacks (on the thread that serves the connection: the network thread, or
/// the loop host's thread that it handed the connection to, ``MQTTLoopHost``; never both at
/// once). It is `@unchecked Sendable` because of these invariants:
/// - `mosq` is set once in `init` and never reassigned. Options, will, credentials, TLS
///   and callbacks are all set in `init`, before any thread exists; never again.
/// - After that, only thread-safe libmosquitto calls are made from API threads
///   (`publish`, `subscribe`, `unsubscribe`, `disconnect`: they queue a packet under
///   libmosquitto's own mutexes and wake the loop through its socket pair). Connecting
///   happens on the network thread only; the loop's turns on the thread serving the
///   connection: the network thread, or a loop host while the network thread waits for the
///   connection back (the hand-over is a semaphore, so the two never turn at once).
/// - `mosquitto_destroy` runs exactly once, when the handle is closing, no API call is
///   inside it and the network thread has returned. ``MosquittoHandleLifetime`` hands
///   that duty to exactly one caller.
/// - Callbacks get `self` through `Unmanaged` userdata, unretained: the network thread
///   retains `self` while it runs (also while a loop host serves its connection, and the
///   hosted loop retains it too), and callbacks run only inside a loop turn.
/// - Mutable Swift state lives in `state` (a `Mutex`), which is never held while calling
///   into libmosquitto, so no lock-order cycle with libmosquitto's mutexes is possible.
/// - With the direct lane (`writesQoS0Directly`), API threads also write to the socket, but
///   only under `direct`'s lock, which the serving thread holds for every libmosquitto call
///   made while connected (DirectLane.swift): the two never write at once, and the socket is
///   never closed or replaced under a writer. Order: `direct`, then libmosquitto's mutexes,
///   then `state`.
/// - With `writesFromPublishingThread`, an API thread that queued packets also writes
///   libmosquitto's queue (`mosquitto_loop_write`), under the same lock and only while the
///   network thread has a connection up (`DirectLane.connectionUp`): never two writers, never
///   during the connect. libmosquitto may then run on_publish (QoS 0 written) or, when the
///   write fails and it closes the socket, on_disconnect on that thread: both only take
///   `state`, so the lock order holds.
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
    /// Wakes the network thread's poll (plain TCP; see `pollOnce`): a non-blocking pipe,
    /// `[read end, write end]`, closed in deinit. One byte per hand-over of queued packets.
    private let wakePipe: [Int32]
    /// While above zero, `send` does not wake the network thread: a batch of publishes is
    /// handed over with one wake-up at its end (`beginBatch`/`endBatch`).
    private let batchDepth = Atomic<Int>(0)
    /// A packet was queued while a batch was open: its end must wake the network thread.
    private let batchHasPackets = Atomic<Bool>(false)
    /// Monotonic ns since packets have stayed unwritten after a write (the socket's buffer
    /// is full: the broker reads slower than we publish); 0 when nothing waits.
    let backlogSinceNs = Atomic<UInt64>(0)
    /// Log lines libmosquitto has handed to the log callback, at any level (for tests: none
    /// once connected, since the callback is removed then).
    let logLinesSeen = Atomic<Int>(0)
    /// Whether the loop is our poll over the socket and `wakePipe` (plain TCP) rather than
    /// `mosquitto_loop` (TLS, whose handshake and buffered records only it handles).
    let usesOwnPoll: Bool
    /// QoS 0 publishes written by the publishing thread (`configuration.writesQoS0Directly`,
    /// plain TCP only); see DirectLane.swift for the rules. Lock order: this lock, then
    /// libmosquitto's mutexes (its calls made under it), then `state` (its callbacks).
    let direct = Mutex(DirectLane())
    let directLaneEnabled: Bool
    /// `configuration.writesFromPublishingThread` over plain TCP: the thread that queued
    /// packets writes them (`writeQueued`); the network thread runs its libmosquitto calls
    /// under `direct`'s lock.
    let publisherWrites: Bool
    /// The broker accepted a connection (set in on_connect, where the network thread already
    /// holds `direct`): the network thread opens the lane after that read.
    private let connackAccepted = Atomic<Bool>(false)

    /// The thread that serves this client's connections in place of the network thread
    /// (``MQTTClient/serveConnections(on:)``); held weakly: its owner keeps it.
    let loopHost = Mutex(WeakLoopHost())
    struct WeakLoopHost {
        weak var host: (any MQTTLoopHost)?
    }

    init(configuration: MQTTConfiguration) throws(MQTTError) {
        try configuration.validate()
        guard MosquittoLibrary.initResult == MOSQ_ERR_SUCCESS.rawValue else {
            throw MQTTError.mosquitto(MosquittoLibrary.initResult, "initialising libmosquitto")
        }
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
        var fds: [Int32] = [-1, -1]
        if configuration.tls == nil, !configuration.usesLibraryLoop, pipe(&fds) == 0 {
            for fd in fds {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
            }
        } else {
            fds = [-1, -1]
        }
        self.wakePipe = fds
        self.usesOwnPoll = fds[0] >= 0
        self.directLaneEnabled = fds[0] >= 0 && configuration.writesQoS0Directly
        self.publisherWrites = fds[0] >= 0 && configuration.writesFromPublishingThread
        self.configuration = configuration
        self.mosq = handle
        self.connectProperties = properties
        self.state = Mutex(
            MQTTConnectionStateMachine(
                version: configuration.version, reconnectPolicy: configuration.reconnect,
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
        for fd in wakePipe where fd >= 0 { close(fd) }
        messageContinuation.finish()
        eventContinuation.finish()
    }

    /// Everything libmosquitto needs before connecting, in the order its rules require:
    /// protocol version first (the will's properties are checked against it), then will,
    /// credentials, TLS, threading mode and callbacks. No thread exists yet.
    private func configureHandle() throws(MQTTError) {
        let configuration = self.configuration
        func check(_ rc: Int32, _ what: String) throws(MQTTError) {
            if rc != MOSQ_ERR_SUCCESS.rawValue { throw MQTTError.mosquitto(rc, errno: errno, what) }
        }
        mosquitto_user_data_set(mosq, Unmanaged.passUnretained(self).toOpaque())
        let protocolVersion = configuration.version == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311
        try check(mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, protocolVersion), "setting the protocol version")
        // Small packets go out at once: without TCP_NODELAY, a reply written right after a
        // PUBACK waits for the broker's delayed ACK (Nagle), about 40 ms per hop on Linux.
        try check(mosquitto_int_option(mosq, MOSQ_OPT_TCP_NODELAY, 1), "setting TCP_NODELAY")

        if let will = configuration.will {
            guard !will.topic.isEmpty, !will.topic.utf8.contains(0) else {
                throw MQTTError(.invalidArgument, "the will topic must not be empty")
            }
            var properties: OpaquePointer?
            if configuration.version == .v5 { properties = try will.properties.makePropertyList() }
            let rc = will.payload.withUnsafeBytes { payload in
                mosquitto_will_set_v5(
                    mosq, will.topic, Int32(payload.count), payload.baseAddress, will.qos.rawValue, will.retain,
                    properties)
            }
            if rc != MOSQ_ERR_SUCCESS.rawValue {
                // On failure the list is still ours.
                mosquitto_property_free_all(&properties)
                throw MQTTError.mosquitto(rc, "setting the will on \(will.topic)")
            }
            // On success libmosquitto owns the property list.
        }
        if let username = configuration.username {
            try check(mosquitto_username_pw_set(mosq, username, configuration.password), "setting the username and password")
        }
        if let tls = configuration.tls {
            try configureTLS(tls)
        }
        // Our own thread runs the loop (see networkThreadMain): tell libmosquitto so that
        // publish() from other threads only queues packets and wakes the loop.
        try check(mosquitto_threaded_set(mosq, true), "setting threaded mode")

        mosquitto_connect_v5_callback_set(mosq, MosquittoCallbacks.onConnect)
        mosquitto_disconnect_v5_callback_set(mosq, MosquittoCallbacks.onDisconnect)
        mosquitto_message_v5_callback_set(mosq, MosquittoCallbacks.onMessage)
        mosquitto_subscribe_v5_callback_set(mosq, MosquittoCallbacks.onSubscribe)
        mosquitto_unsubscribe_v5_callback_set(mosq, MosquittoCallbacks.onUnsubscribe)
        mosquitto_publish_v5_callback_set(mosq, MosquittoCallbacks.onPublish)
        // The log callback is set per connection attempt, until the CONNACK (networkThreadMain).
    }

    private func configureTLS(_ tls: MQTTTLSConfiguration) throws(MQTTError) {
        // Missing, unreadable, non-PEM or encrypted files fail here, not after a TCP connect.
        try tls.checkFiles()
        var caDirectory = tls.caDirectory
        if tls.caFile == nil && tls.caDirectory == nil {
            let rc = mosquitto_int_option(mosq, MOSQ_OPT_TLS_USE_OS_CERTS, 1)
            if rc != MOSQ_ERR_SUCCESS.rawValue { throw MQTTError.mosquitto(rc, "enabling the system CA store") }
            // mosquitto_tls_set needs a CA location when a client certificate is given.
            if tls.certificateFile != nil { caDirectory = "/etc/ssl/certs" } else { return setInsecure(tls) }
        }
        let rc = mosquitto_tls_set(mosq, tls.caFile, caDirectory, tls.certificateFile, tls.keyFile, nil)
        if rc != MOSQ_ERR_SUCCESS.rawValue {
            let error = MQTTError.mosquitto(rc, errno: errno, "setting up TLS (CA file \(tls.caFile ?? "-"), CA directory \(caDirectory ?? "-"))")
            throw MQTTError(.tls, error.message)
        }
        setInsecure(tls)
    }

    private func setInsecure(_ tls: MQTTTLSConfiguration) {
        _ = mosquitto_tls_insecure_set(mosq, !tls.verifyHostname)
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
        if configuration.version == .v5 { list = try publish.properties.makePropertyList() }
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
        let (rc, savedErrno) = directLaneEnabled ? direct.withLock { lane in lane.libraryQueued = true; return queue() } : queue()
        if rc == MOSQ_ERR_SUCCESS.rawValue { packetQueued() }
        // Queued by libmosquitto: sent (every QoS), or kept for the reconnect (QoS 1/2 only).
        if rc == MOSQ_ERR_SUCCESS.rawValue || (rc == MOSQ_ERR_NO_CONN.rawValue && publish.qos != .atMostOnce) {
            let early = state.withLock { $0.publishSent(messageID: messageID, qos: publish.qos, token: publish.token) }
            if let early { deliveryContinuation.yield(early) }
        }
        if rc == MOSQ_ERR_SUCCESS.rawValue || rc == MOSQ_ERR_NO_CONN.rawValue { return rc }
        throw MQTTError.mosquitto(rc, errno: savedErrno, "publishing to \(publish.topic)")
    }

    /// Writes a QoS 0 publish through the direct lane (at once, or at the end of the open
    /// batch). False when the lane cannot take it now: the caller publishes through
    /// libmosquitto, which keeps the order (DirectLane rule 3).
    func writeDirectly(topic: String, payload: [UInt8], retain: Bool) -> Bool {
        guard directLaneEnabled, payload.count <= DirectLane.largestPayload else { return false }
        let inBatch = batchDepth.load(ordering: .acquiring) > 0
        let outcome: Bool? = direct.withLock { lane in
            guard lane.canAppend else { return nil }
            lane.append(topic: topic, payload: payload, retain: retain, version: configuration.version)
            if inBatch { return false }
            lane.flush()
            return lane.pending > 0
        }
        guard let outcome else { return false }
        if outcome { wakePoll() }  // the socket is full: the network thread writes the rest
        return true
    }

    /// Writes what the direct lane holds (the end of a batch); wakes the network thread for
    /// what the socket does not take now.
    private func flushDirect() {
        guard directLaneEnabled else { return }
        let left = direct.withLock { lane -> Bool in
            guard lane.pending > 0, !lane.libraryBusy, lane.socket >= 0 else { return false }
            lane.flush()
            return lane.pending > 0
        }
        if left { wakePoll() }
    }

    /// Records what libmosquitto has left to write (the caller holds the lane's lock, which every
    /// API publish to libmosquitto takes: what is seen here is all there is). The lane takes
    /// bytes again once nothing of ours waits there: no packet in its queue, no QoS 1/2
    /// message held back or unacknowledged, no kept publish still to hand over (after a
    /// CONNACK, `flushKeptPublishes`).
    private func releaseDirectLane(_ lane: inout DirectLane) {
        let left = mosquitto_want_write(mosq)
        lane.libraryBusy = left
        if !left, lane.libraryQueued, !state.withLock({ $0.reliablePublishMayWait }) { lane.libraryQueued = false }
    }

    /// Bytes the direct lane has written (tests).
    var directBytesWritten: Int { direct.withLock { $0.bytesWritten } }
    /// Times a publishing thread wrote libmosquitto's queue itself (tests).
    var publisherWriteCount: Int { direct.withLock { $0.publisherWrites } }
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
        wakePoll()
    }

    // MARK: Handing packets to the network thread

    /// A packet was queued in libmosquitto from an API thread: the network thread must write
    /// it. `mosquitto_loop` is woken by libmosquitto itself (its socket pair); our poll is
    /// woken here, at once, or once at the end of a batch.
    /// - Parameter awaited: the caller waits for the broker's answer (SUBACK, UNSUBACK), so
    ///   it goes out at once, even inside a batch.
    func packetQueued(awaited: Bool = false) {
        guard usesOwnPoll else { return }
        guard awaited || batchDepth.load(ordering: .acquiring) == 0 else {
            batchHasPackets.store(true, ordering: .releasing)
            return
        }
        handOver()
    }

    /// Gets what libmosquitto holds written: by this thread when it may
    /// (`writesFromPublishingThread`), else, or for what the socket did not take, by the
    /// network thread, woken.
    private func handOver() {
        if !publisherWrites || writeQueued() { wakePoll() }
    }

    /// Writes libmosquitto's queue from the calling thread (`writesFromPublishingThread`),
    /// behind what the direct lane holds. Returns whether the network thread must be woken:
    /// no connection up (it writes after the CONNACK), packets left (the socket is full), or
    /// the write failed (libmosquitto closed the socket; the network thread reports it).
    private func writeQueued() -> Bool {
        direct.withLock { lane -> Bool in
            guard lane.connectionUp, lane.publisherWriteFailure == nil else { return true }
            let socket = mosquitto_socket(mosq)
            guard socket >= 0 else { return true }
            if directLaneEnabled, lane.pending > 0 {
                if lane.socket >= 0 { lane.flush() }
                if lane.pending > 0 { return true }  // the lane's bytes go first (DirectLane rule 3)
            }
            guard mosquitto_want_write(mosq) else { return false }
            lane.countPublisherWrite()
            setCork(socket, true)
            let rc = mosquitto_loop_write(mosq, 1)
            let savedErrno = errno
            setCork(socket, false)
            if rc != MOSQ_ERR_SUCCESS.rawValue || mosquitto_socket(mosq) < 0 {
                lane.publisherWriteFailure = (rc == MOSQ_ERR_SUCCESS.rawValue ? MOSQ_ERR_CONN_LOST.rawValue : rc, savedErrno)
                return true
            }
            if directLaneEnabled { releaseDirectLane(&lane) }
            return mosquitto_want_write(mosq)
        }
    }

    /// Publishes until the matching `endBatch()` do not wake the network thread one by one.
    func beginBatch() {
        batchDepth.add(1, ordering: .acquiringAndReleasing)
    }

    /// Ends a batch: one wake-up hands everything queued in it to the network thread; none
    /// when nothing was queued (a node's tick that published only over its other connection).
    func endBatch() {
        guard batchDepth.subtract(1, ordering: .acquiringAndReleasing).newValue == 0, usesOwnPoll else { return }
        flushDirect()
        if batchHasPackets.exchange(false, ordering: .acquiringAndReleasing) {
            handOver()
        }
    }

    private func wakePoll() {
        guard usesOwnPoll else { return }
        var byte: UInt8 = 1
        _ = write(wakePipe[1], &byte, 1)  // EAGAIN when the pipe is full: a wake-up is pending anyway
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

    /// The socket (read; write too while something waits to be written) and the wake-up pipe,
    /// as one turn of the loop waits on them (plain TCP).
    func pollDescriptors() -> [pollfd] {
        let socket = mosquitto_socket(mosq)
        let directPending = directLaneEnabled && direct.withLock { $0.pending > 0 }
        let write = mosquitto_want_write(mosq) || directPending
        return [
            pollfd(fd: socket, events: Int16(POLLIN) | (write ? Int16(POLLOUT) : 0), revents: 0),
            pollfd(fd: wakePipe[0], events: Int16(POLLIN), revents: 0),
        ]
    }

    /// One turn of the network loop over plain TCP, in place of `mosquitto_loop`: waits (at
    /// most 1 s, for the keep-alive) for the socket or a wake-up, then serves the socket
    /// (`afterWait`). Unlike `mosquitto_loop` it does not watch libmosquitto's socket pair,
    /// which gets one byte per queued packet: a batch of publishes costs one wake-up of this
    /// thread (through `wakePipe`), not one per packet. The bytes left in the socket pair are
    /// never read; once its buffer is full, the non-blocking write in libmosquitto fails
    /// harmlessly. Returns the result and errno that ended the connection, nil to go on.
    private func ownPollTurn(_ turn: inout TurnState) -> (rc: Int32, errno: Int32)? {
        requestDisconnectIfAsked(&turn)
        var fds = pollDescriptors()
        guard fds[0].fd >= 0 else { return (MOSQ_ERR_NO_CONN.rawValue, errno) }
        let ready = poll(&fds, 2, 1000)
        if ready < 0 && errno != EINTR { return (MOSQ_ERR_ERRNO.rawValue, errno) }
        return afterWait(socketEvents: fds[0].revents, wakeEvents: fds[1].revents, readsAll: false, &turn)
    }

    /// A turn on a loop host's thread (``MQTTHostedLoop/turn(socketEvents:wakeEvents:)``),
    /// after the host's wait. Reads every packet already in the socket (up to
    /// `hostedReadLimit`), not one: the host handles what arrived before it waits again, so a
    /// burst of commands that came in during one write is handled (and written) as one group,
    /// and the broker's acknowledgements queued behind a burst's commands are reached soon.
    func hostedTurn(socketEvents: Int16, wakeEvents: Int16, _ turn: inout TurnState) -> (rc: Int32, errno: Int32)? {
        requestDisconnectIfAsked(&turn)
        return afterWait(socketEvents: socketEvents, wakeEvents: wakeEvents, readsAll: true, &turn)
    }

    /// How long a host may wait before the next turn, in ms (the keep-alive's second, or the
    /// end of a disconnect's grace).
    func millisecondsToNextTurn(_ turn: TurnState) -> Int32 {
        var next = turn.lastTurn.advanced(by: .seconds(1))
        if let stop = turn.stopDeadline, stop < next { next = stop }
        let (seconds, attoseconds) = ContinuousClock.now.duration(to: next).components
        let ms = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return Int32(clamping: max(0, ms + (attoseconds % 1_000_000_000_000_000 > 0 ? 1 : 0)))
    }

    /// `disconnect()` was called (or `connect()` gave up): send DISCONNECT (MQTT 5 reason 0:
    /// the session is kept for its expiry and the will is not published), then keep turning
    /// until the socket closes, within the bound.
    private func requestDisconnectIfAsked(_ turn: inout TurnState) {
        guard turn.stopDeadline == nil, state.withLock({ $0.stopRequested }) else { return }
        _ = mosquitto_disconnect(mosq)
        turn.stopDeadline = .now + configuration.shutdownTimeout
    }

    /// The work of a turn once its wait is over: reads, writes and the keep-alive
    /// (`serviceSocket`, under the lane's lock), then the publishes kept while disconnected.
    /// Returns the result and errno that ended the connection, nil to go on.
    private func afterWait(socketEvents: Int16, wakeEvents: Int16, readsAll: Bool, _ turn: inout TurnState) -> (rc: Int32, errno: Int32)? {
        turn.lastTurn = .now
        if wakeEvents != 0 {
            var drain = [UInt8](repeating: 0, count: 256)
            while read(wakePipe[0], &drain, drain.count) > 0 {}
        }
        let socket = mosquitto_socket(mosq)
        guard socket >= 0 else { return (MOSQ_ERR_NO_CONN.rawValue, errno) }
        let readable = socketEvents & Int16(POLLIN | POLLERR | POLLHUP) != 0
        let rc: Int32
        if directLaneEnabled || publisherWrites {
            // Every libmosquitto call under the lane's lock (DirectLane rule 1; a publishing
            // thread's writes, writesFromPublishingThread).
            rc = direct.withLock { lane in
                let rc = serviceSocket(socket, readable: readable, readsAll: readsAll, lane: &lane, laneEnabled: directLaneEnabled)
                if lane.socket >= 0 && lane.socket != mosquitto_socket(mosq) { lane.close() }
                return rc
            }
        } else {
            var none = DirectLane()
            rc = serviceSocket(socket, readable: readable, readsAll: readsAll, lane: &none, laneEnabled: false)
        }
        let savedErrno = errno
        if rc != MOSQ_ERR_SUCCESS.rawValue { return (rc, savedErrno) }
        flushKeptPublishes()
        if directLaneEnabled { direct.withLock { lane in if lane.socket >= 0 { releaseDirectLane(&lane) } } }
        if let stop = turn.stopDeadline, ContinuousClock.now >= stop { return (MOSQ_ERR_SUCCESS.rawValue, savedErrno) }
        return nil
    }

    /// Packets a host's turn reads at most: a turn stays a few milliseconds long.
    static let hostedReadLimit = 256

    /// Whether bytes wait in the socket's receive buffer (a peek, never blocks).
    private func socketHasBytes(_ socket: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(socket, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }

    /// The read, the writes and the keep-alive of one turn (`afterWait`). With the direct
    /// lane (held locked by the caller): opens it after an accepted CONNACK, writes what it
    /// holds before libmosquitto's queue, and records what libmosquitto left (rules 3 and 4).
    private func serviceSocket(_ socket: Int32, readable: Bool, readsAll: Bool, lane: inout DirectLane, laneEnabled: Bool) -> Int32 {
        func ended(_ rc: Int32) -> Int32? {
            if rc != MOSQ_ERR_SUCCESS.rawValue { return rc }
            return mosquitto_socket(mosq) < 0 ? MOSQ_ERR_NO_CONN.rawValue : nil
        }
        if readable {
            var reads = 0
            repeat {
                if let rc = ended(mosquitto_loop_read(mosq, 1)) { return rc }
                reads += 1
            } while readsAll && reads < Self.hostedReadLimit && socketHasBytes(socket)
        }
        if laneEnabled, connackAccepted.exchange(false, ordering: .acquiringAndReleasing) {
            lane.open(socket: mosquitto_socket(mosq))
        }
        if laneEnabled, lane.pending > 0, lane.socket >= 0 { lane.flush() }
        let directLeft = laneEnabled ? lane.pending : 0
        if directLeft == 0 && mosquitto_want_write(mosq) {
            // libmosquitto writes each queued packet with its own send(): corked, a burst of
            // them leaves as full segments when uncorked below (one wake-up of the broker,
            // not one per packet); a lone packet still goes out at once.
            setCork(socket, true)
            let rc = mosquitto_loop_write(mosq, 1)
            setCork(socket, false)
            if let rc = ended(rc) { return rc }
        }
        if laneEnabled {
            // Checked under the lane's lock, which every API publish to libmosquitto takes:
            // an empty queue here holds nothing published after the lane's bytes.
            releaseDirectLane(&lane)
        }
        if !mosquitto_want_write(mosq) && directLeft == 0 {
            backlogSinceNs.store(0, ordering: .releasing)
        } else if backlogSinceNs.load(ordering: .acquiring) == 0 {
            backlogSinceNs.store(DispatchTime.now().uptimeNanoseconds, ordering: .releasing)
        }
        return mosquitto_loop_misc(mosq)
    }

    /// TCP_CORK on the broker socket (fails harmlessly on a socket that is not TCP).
    private func setCork(_ socket: Int32, _ on: Bool) {
        var value: Int32 = on ? 1 : 0
        _ = setsockopt(socket, Int32(IPPROTO_TCP), TCP_CORK, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// The network thread: connects (always with `mosquitto_connect_bind_v5` and the
    /// CONNECT properties), runs `mosquitto_loop` until the connection ends, then decides
    /// (in the state machine) whether to stop or to reconnect after a backoff delay.
    ///
    /// Why not `mosquitto_loop_start`: libmosquitto 2.0.11's own reconnect
    /// (`mosquitto_reconnect`, called by `mosquitto_loop_forever`) sends CONNECT without
    /// the properties given to `mosquitto_connect_bind_v5`, so after the first automatic
    /// reconnect an MQTT 5 session would have expiry 0 and be lost on the next drop. Its
    /// thread also exits silently on some errors (`MOSQ_ERR_EAI`, `MOSQ_ERR_TLS`, a
    /// refused MQTT 5 CONNACK) with nothing to observe. Running the loop on our own thread
    /// (`mosquitto_threaded_set(true)`, the documented mode for that) fixes both: every
    /// CONNECT carries the session expiry, and the thread's end is always seen.
    private func networkThreadMain() {
        let configuration = self.configuration
        let port = Int32(configuration.port)
        let keepAlive = Int32(configuration.keepAlive)
        attempts: while state.withLock({ $0.attemptStarting() }) == .connect {
            // Blocking: resolves the host name and connects TCP, then sends CONNECT. A
            // disconnect() meanwhile does not wait for it (see MQTTClient.disconnect()).
            // libmosquitto formats a log line (malloc, vsnprintf, our callback) for every packet
            // it sends or receives while a log callback is set. Only the lines before the
            // CONNACK explain anything (OpenSSL's errors, for ConnectionDiagnostics), so the
            // callback is set for the attempt and removed when the broker accepts it
            // (handleConnack).
            mosquitto_log_callback_set(mosq, MosquittoCallbacks.onLog)
            var rc = mosquitto_connect_bind_v5(mosq, configuration.host, port, keepAlive, nil, connectProperties)
            var savedErrno = errno
            let connectFailed = rc != MOSQ_ERR_SUCCESS.rawValue
            if rc == MOSQ_ERR_SUCCESS.rawValue {
                state.withLock { $0.connectSent() }
                // libmosquitto does not open its socket close-on-exec: without this, a
                // child process the node spawns (a sound player, say) would inherit the
                // connection and keep it open after the node dies, delaying the will.
                let socket = mosquitto_socket(mosq)
                if socket >= 0 { _ = fcntl(socket, F_SETFD, fcntl(socket, F_GETFD) | FD_CLOEXEC) }
                if publisherWrites { direct.withLock { $0.connectionUp = true } }
                (rc, savedErrno) = serveConnection()
            }
            backlogSinceNs.store(0, ordering: .releasing)
            if publisherWrites {
                // A publishing thread's failed write closed the socket: its error is the reason
                // (this thread saw only the closed socket).
                let failure = direct.withLock { lane in
                    defer { lane.connectionUp = false; lane.publisherWriteFailure = nil }
                    return lane.publisherWriteFailure
                }
                if let failure, rc == MOSQ_ERR_SUCCESS.rawValue || rc == MOSQ_ERR_NO_CONN.rawValue {
                    (rc, savedErrno) = failure
                }
            }
            if directLaneEnabled {
                direct.withLock { $0.close() }
                connackAccepted.store(false, ordering: .releasing)
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

    /// Serves one connection until it ends: on the loop host's thread when one is set and
    /// takes it (``MQTTLoopHost``; plain TCP only), else, or from the moment the host stops,
    /// here. Returns the result and errno that ended it.
    private func serveConnection() -> (rc: Int32, errno: Int32) {
        var turn = TurnState()
        if usesOwnPoll, let host = loopHost.withLock({ $0.host }) {
            let hosted = MQTTHostedLoop(core: self, turnState: turn)
            if host.adopt(hosted) {
                switch hosted.waitForHandBack() {
                case .ended(let rc, let errno): return (rc, errno)
                case .released: turn = hosted.turnState
                }
            }
        }
        while true {
            if usesOwnPoll {
                if let end = ownPollTurn(&turn) { return end }
                continue
            }
            requestDisconnectIfAsked(&turn)
            let rc = mosquitto_loop(mosq, 1000, 1)
            let savedErrno = errno
            if rc != MOSQ_ERR_SUCCESS.rawValue { return (rc, savedErrno) }
            flushKeptPublishes()
            if let stop = turn.stopDeadline, ContinuousClock.now >= stop { return (rc, savedErrno) }
        }
    }

    /// Sends the publishes kept while disconnected, in order, and those that queued behind
    /// them meanwhile (a no-op but for one lock when no flush is due). This only queues
    /// packets; the next loop call writes them.
    private func flushKeptPublishes() {
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
            if directLaneEnabled { connackAccepted.store(true, ordering: .releasing) }
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

/// The libmosquitto callbacks: static `@convention(c)` functions, so no Swift closure
/// (and no actor-isolated code) ever reaches C. Each one finds its client through the
/// userdata pointer, copies what libmosquitto lends it (that memory is freed when the
/// callback returns), updates a little lock-protected state and yields to a stream or
/// fulfils a waiter. None blocks, destroys or stops the loop; the only callback one sets is
/// the log callback, removed by on_connect once the broker accepted the connection.
///
/// Threading: all run on the thread serving the connection (the client's network thread, or its
/// loop host), inside a loop turn and libmosquitto's callback mutex.
enum MosquittoCallbacks {
    private static func core(_ userdata: UnsafeMutableRawPointer?) -> MQTTClientCore? {
        guard let userdata else { return nil }
        return Unmanaged<MQTTClientCore>.fromOpaque(userdata).takeUnretainedValue()
    }

    static let onConnect: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, Int32, OpaquePointer?) -> Void = {
        _, userdata, reasonCode, flags, _ in
        core(userdata)?.handleConnack(reasonCode: reasonCode, flags: flags)
    }

    static let onDisconnect: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, OpaquePointer?) -> Void = {
        _, userdata, reason, _ in
        core(userdata)?.handleDisconnect(reason: reason)
    }

    static let onMessage: @convention(c) (
        OpaquePointer?, UnsafeMutableRawPointer?, UnsafePointer<mosquitto_message>?, OpaquePointer?
    ) -> Void = { _, userdata, message, properties in
        guard let core = core(userdata), let message = message?.pointee, let topic = message.topic else { return }
        let payload: [UInt8]
        if let bytes = message.payload, message.payloadlen > 0 {
            payload = Array(UnsafeRawBufferPointer(start: bytes, count: Int(message.payloadlen)))
        } else {
            payload = []
        }
        let copied = MQTTMessage(
            topic: String(cString: topic),
            payload: payload,
            qos: MQTTQoS(rawValue: message.qos) ?? .atMostOnce,
            retain: message.retain,
            properties: core.configuration.version == .v5 ? MQTTProperties(copying: properties) : .none)
        core.yield(copied)
    }

    static let onSubscribe: @convention(c) (
        OpaquePointer?, UnsafeMutableRawPointer?, Int32, Int32, UnsafePointer<Int32>?, OpaquePointer?
    ) -> Void = { _, userdata, messageID, count, granted, _ in
        guard let core = core(userdata) else { return }
        var result: Result<Void, MQTTError> = .success(())
        if let granted, count > 0, granted[0] >= 0x80 {
            let reason = granted[0]
            result = .failure(
                MQTTError(
                    reason == 0x87 || reason == 0x80 ? .notAuthorized : .other,
                    "the broker refused the subscription (\(MQTTError.reasonText(reason))); check the broker's ACL for this client"))
        }
        core.handleAcknowledgement(messageID: messageID, result: result)
    }

    static let onUnsubscribe: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, OpaquePointer?) -> Void = {
        _, userdata, messageID, _ in
        core(userdata)?.handleAcknowledgement(messageID: messageID, result: .success(()))
    }

    static let onPublish: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, Int32, OpaquePointer?) -> Void = {
        _, userdata, messageID, reasonCode, _ in
        core(userdata)?.handlePublished(messageID: messageID, reasonCode: reasonCode)
    }

    static let onLog: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?) -> Void = {
        _, userdata, level, text in
        guard let core = core(userdata) else { return }
        core.logLinesSeen.add(1, ordering: .relaxed)
        guard level & (MOSQ_LOG_ERR | MOSQ_LOG_WARNING) != 0, let text else { return }
        core.handleLog(level: level, text: String(cString: text))
    }
}

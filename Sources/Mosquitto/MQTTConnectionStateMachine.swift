import Foundation

/// The client's connection state, kept behind the core's `Mutex`.
///
/// A pure state machine in the postgres-nio style: `state` is an enum whose every case
/// carries its own context, and every input (an API call, a CONNACK, the end of a
/// connection, the network thread starting or stopping) is one `mutating func` that
/// switches over it exhaustively and returns what the shell (``MQTTClientCore`` and
/// ``MQTTClient``) must do. It never calls libmosquitto and never blocks, so it is safe to
/// drive from a libmosquitto callback, and it is unit-tested without a broker.
///
/// ```
///                  connect()                          CONNACK 0
///   idle ─────────────────────▶ connecting ─────────────────────────▶ connected
///    ▲                         (dialing → awaitingConnack,               │   ▲
///    │                          ended → backingOff → dialing)            │   │ CONNACK 0
///    │                                │                          ended   ▼   │
///    │ thread                         │ CONNACK refused,            reconnecting
///    │ returned                       │ TLS / protocol error,       (dialing → awaitingConnack
///    │                                │ fatal error,                 [→ refused] → ended →
///    │                                │ last connect() gave up       backingOff → dialing)
///    │                                ▼                                  │
///    └──────────────────────────── stopping ◀──── fatal error ───────────┘
///                                                 (from connected too)
///
///   any state ── disconnect() / deinit ──▶ closed (terminal)
/// ```
///
/// Invariants (each made structural where it can be):
/// - A network thread runs in `connecting`, `connected`, `reconnecting` and `stopping`, and
///   none in `idle`; in `closed`, ``ClosedContext/thread`` says. ``handle`` agrees.
/// - `connect()` callers wait only in `connecting` and `reconnecting`; every one is
///   fulfilled exactly once (success at the CONNACK, failure when the attempt stops, or
///   `.shutdown` at `disconnect()`), or removed by ``connectAbandoned(token:)``.
/// - A first refused CONNACK, a TLS or protocol failure on the first connection, and an
///   error retrying cannot fix all lead to `stopping`, never to a silent retry.
/// - Nothing leaves `closed`.
///
/// The publish bookkeeping, the subscriptions, the handle's lifetime and the wording of a
/// connection's end are separate parts (``PublishTracker``, ``SubscriptionRegistry``,
/// ``MosquittoHandleLifetime``, ``ConnectionDiagnostics``) that this one drives and tells
/// where the connection is.
///
/// Threading: none of its own; the owner serialises access (`Mutex<…StateMachine>`).
struct MQTTConnectionStateMachine {
    typealias ConnectWaiter = OneShot<Result<Void, MQTTError>>
    typealias PendingPublish = PublishTracker.PendingPublish

    /// Where the connection is.
    enum State {
        /// No network thread; `connect()` starts one.
        case idle
        /// A network thread tries to make the first connection of a `connect()` call.
        case connecting(ConnectingContext)
        /// The broker accepted the current connection.
        case connected(ConnectedContext)
        /// The connection was lost after a success; the network thread reconnects by itself.
        case reconnecting(ConnectingContext)
        /// The network thread was told to stop (connect() gave up, the first CONNACK was
        /// refused, an error retrying cannot fix) and has not returned yet.
        case stopping(StoppingContext)
        /// `disconnect()` or deinit ran: the client is finished. Terminal.
        case closed(ClosedContext)
    }

    /// Where the network thread is within one attempt.
    enum Attempt: Equatable {
        /// Inside `mosquitto_connect_bind_v5`: it resolves the name and connects TCP,
        /// blocking; no socket exists to send DISCONNECT on.
        case dialing
        /// CONNECT was sent; waiting for the CONNACK.
        case awaitingConnack
        /// The broker refused this CONNECT (only while reconnecting: a refused first
        /// connection stops instead); the connection is ending.
        case refused(MQTTError)
        /// Waiting this long before the next attempt.
        case backingOff(Duration)
    }

    /// The first connection, or a reconnection, being made.
    struct ConnectingContext {
        /// `connect()` callers waiting for the CONNACK, by token.
        var waiters: [UInt64: ConnectWaiter] = [:]
        var attempt: Attempt = .dialing
        /// Failed attempts in a row (the backoff grows with them).
        var failedAttempts = 0
        /// Why the last attempt failed (for the timeout message).
        var lastFailure: MQTTError?
    }

    /// Whether the publishes kept while disconnected have all gone out on this connection.
    enum Flush: Equatable {
        /// Not yet: they go out from the network loop after the CONNACK's loop call, and new
        /// QoS 1/2 publishes queue behind them.
        case pending
        /// Done: publishes go straight to libmosquitto.
        case done
    }

    struct ConnectedContext {
        /// Which accepted connection this is (1 for the first).
        var generation: Int
        var flush: Flush = .pending
    }

    struct StoppingContext {
        /// Where the thread is.
        enum Step: Equatable {
            /// In the blocking `mosquitto_connect_bind_v5`.
            case dialing
            /// A connection exists (CONNECT sent, possibly refused); it is being closed.
            case connection
            /// The broker accepted this connection after the stop was decided: its end is
            /// still reported, so no listener thinks it is up.
            case accepted
            /// Waiting out a backoff delay (woken at once).
            case backingOff
            /// The connection is over; the thread is returning.
            case exiting
        }

        var step: Step
        /// Why the last attempt failed.
        var lastFailure: MQTTError?
        /// Tasks waiting for the network thread to return (a `connect()` that wants to start over).
        var exitWaiters: [OneShot<Void>] = []
    }

    struct ClosedContext {
        /// The network thread, as far as shutdown goes.
        enum Thread: Equatable {
            /// None runs.
            case exited
            /// It is in the blocking `mosquitto_connect_bind_v5`: nothing can be sent, and
            /// it may stay there for minutes; it destroys the handle when it returns.
            case dialing
            /// In the network loop or a backoff wait: it notices the shutdown at once.
            case running
        }

        var thread: Thread
        /// Tasks waiting for the network thread to return (`disconnect()`).
        var exitWaiters: [OneShot<Void>] = []
    }

    /// The version of the next (or current) CONNECT, and whether it may still change.
    private(set) var negotiation: VersionNegotiation
    var version: MQTTVersion { negotiation.version }
    let reconnectPolicy: MQTTReconnectPolicy
    let endpoint: String

    private(set) var state: State = .idle
    private(set) var publishes: PublishTracker
    private(set) var subscriptions = SubscriptionRegistry()
    private(set) var handle = MosquittoHandleLifetime()
    private(set) var diagnostics: ConnectionDiagnostics
    /// How many connections the broker has accepted: tells connections apart.
    private(set) var acceptedConnections = 0
    private var lastWaiterToken: UInt64 = 0

    init(version: MQTTVersion, fallsBack: Bool = false, reconnectPolicy: MQTTReconnectPolicy, endpoint: String, tlsConfigured: Bool,
         clientCertificateConfigured: Bool = false, offlineQueueLimit: Int = 1000) {
        self.negotiation = VersionNegotiation(version: version, fallsBack: fallsBack)
        self.reconnectPolicy = reconnectPolicy
        self.endpoint = endpoint
        self.diagnostics = ConnectionDiagnostics(
            endpoint: endpoint, tlsConfigured: tlsConfigured, clientCertificateConfigured: clientCertificateConfigured)
        self.publishes = PublishTracker(endpoint: endpoint, keptLimit: offlineQueueLimit)
    }

    // MARK: Queries

    var isConnected: Bool {
        switch state {
        case .connected: true
        case .idle, .connecting, .reconnecting, .stopping, .closed: false
        }
    }

    /// Whether the network thread must stop (and send DISCONNECT if it has a connection).
    var stopRequested: Bool {
        switch state {
        case .stopping, .closed: true
        case .idle, .connecting, .connected, .reconnecting: false
        }
    }

    /// The generation of the connection that is up, if any.
    /// Whether a QoS 1/2 publish may still wait to be written: kept while disconnected and not
    /// yet handed to libmosquitto, or handed to it and not yet acknowledged (libmosquitto holds
    /// back those beyond the broker's receive maximum, which `mosquitto_want_write` does not
    /// show). The direct lane waits for them (DirectLane rule 3).
    var reliablePublishMayWait: Bool {
        if publishes.unacknowledgedReliable > 0 { return true }
        if case .connected(let context) = state { return context.flush == .pending }
        return false
    }

    /// The flush of the kept publishes that a CONNACK starts has not ended yet. Meanwhile QoS 1/2
    /// publishes queue behind it and QoS 0 ones go out at once, so they may overtake.
    var connectFlushPending: Bool {
        if case .connected(let context) = state { return context.flush == .pending }
        return false
    }

    private var currentGeneration: Int? {
        switch state {
        case .connected(let context): context.generation
        case .idle, .connecting, .reconnecting, .stopping, .closed: nil
        }
    }

    private var publishLink: PublishTracker.Link {
        switch state {
        case .connected(let context):
            switch context.flush {
            case .pending: .flushing(generation: context.generation)
            case .done: .up(generation: context.generation)
            }
        case .idle, .connecting, .reconnecting, .stopping: .down
        case .closed: .closed
        }
    }

    private static let shutdownError = MQTTError(
        .shutdown, "the client was shut down with disconnect(); create a new MQTTClient")

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

    mutating func connectRequested(_ waiter: ConnectWaiter) -> ConnectAction {
        switch state {
        case .closed:
            return .fail(Self.shutdownError)
        case .connected:
            return .succeed
        case .idle:
            guard handle.threadStarting() else { return .fail(Self.shutdownError) }
            var context = ConnectingContext()
            let token = register(waiter, in: &context)
            state = .connecting(context)
            return .startThreadAndWait(token: token)
        case .connecting(var context):
            let token = register(waiter, in: &context)
            state = .connecting(context)
            return .wait(token: token)
        case .reconnecting(var context):
            let token = register(waiter, in: &context)
            state = .reconnecting(context)
            return .wait(token: token)
        case .stopping(var context):
            let exit = OneShot<Void>()
            context.exitWaiters.append(exit)
            state = .stopping(context)
            return .waitForThreadExit(exit)
        }
    }

    private mutating func register(_ waiter: ConnectWaiter, in context: inout ConnectingContext) -> UInt64 {
        lastWaiterToken += 1
        context.waiters[lastWaiterToken] = waiter
        return lastWaiterToken
    }

    enum AbandonAction: Equatable {
        case none
        /// The network thread must stop trying: wake it from a backoff wait.
        case wakeNetworkThread
    }

    /// A `connect()` caller gave up (timeout or cancellation). When nobody else waits and
    /// no connection was ever made, the network thread stops trying.
    mutating func connectAbandoned(token: UInt64) -> AbandonAction {
        switch state {
        case .connecting(var context):
            context.waiters[token] = nil
            guard context.waiters.isEmpty else {
                state = .connecting(context)
                return .none
            }
            let step: StoppingContext.Step
            switch context.attempt {
            case .dialing: step = .dialing
            case .awaitingConnack, .refused: step = .connection
            case .backingOff: step = .backingOff
            }
            state = .stopping(StoppingContext(step: step, lastFailure: context.lastFailure))
            return .wakeNetworkThread
        case .reconnecting(var context):
            // A connection was made before: the client keeps reconnecting.
            context.waiters[token] = nil
            state = .reconnecting(context)
            return .none
        case .idle, .connected, .stopping, .closed:
            return .none
        }
    }

    /// The message for a `connect()` that timed out.
    func timeoutError(after timeout: Duration) -> MQTTError {
        let lastFailure: MQTTError?
        switch state {
        case .connecting(let context), .reconnecting(let context): lastFailure = context.lastFailure
        case .stopping(let context): lastFailure = context.lastFailure
        case .idle, .connected, .closed: lastFailure = nil
        }
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

    enum AttemptAction: Equatable {
        /// Call `mosquitto_connect_bind_v5`.
        case connect
        /// Return from the thread.
        case stop
    }

    /// The network thread is about to call `mosquitto_connect_bind_v5` (first, or after a backoff).
    mutating func attemptStarting() -> AttemptAction {
        diagnostics.attemptStarting()
        switch state {
        case .connecting(var context):
            context.attempt = .dialing
            state = .connecting(context)
            return .connect
        case .reconnecting(var context):
            context.attempt = .dialing
            state = .reconnecting(context)
            return .connect
        case .stopping, .closed:
            return .stop
        case .idle, .connected:
            // The thread only asks between connections, and runs only outside `idle`.
            return .stop
        }
    }

    /// `mosquitto_connect_bind_v5` returned success at `now`: a socket exists and CONNECT is on its way.
    mutating func connectSent(now: ContinuousClock.Instant = .now) {
        negotiation.connectSent(at: now)
        switch state {
        case .connecting(var context):
            context.attempt = .awaitingConnack
            state = .connecting(context)
        case .reconnecting(var context):
            context.attempt = .awaitingConnack
            state = .reconnecting(context)
        case .stopping(var context):
            context.step = .connection
            state = .stopping(context)
        case .closed(var context):
            if context.thread == .dialing { context.thread = .running }
            state = .closed(context)
        case .idle, .connected:
            break
        }
    }

    enum ConnackAction {
        /// The broker accepted: redo these subscriptions (inside on_connect), publish the
        /// event, fulfil the waiters with success.
        case accepted(MQTTConnectionEvent, resubscribe: [(filter: String, qos: MQTTQoS)], waiters: [ConnectWaiter])
        /// The broker refused: publish the event, fail the waiters with the error.
        case refused(MQTTConnectionEvent, waiters: [ConnectWaiter], error: MQTTError)
        /// The client is shut down: nothing to do.
        case ignore
    }

    /// on_connect: the broker answered the CONNECT.
    mutating func connackReceived(reasonCode: Int32, sessionPresent: Bool) -> ConnackAction {
        subscriptions.connackReceived()
        let event = MQTTConnectionEvent.connected(sessionPresent: sessionPresent)
        if reasonCode == 0 {
            negotiation.accepted()
            switch state {
            case .connecting(let context), .reconnecting(let context):
                acceptedConnections += 1
                state = .connected(ConnectedContext(generation: acceptedConnections))
                // The kept publishes go out after libmosquitto has resent its own older ones
                // (its retry runs when this callback returns): see `takeFlush`.
                return .accepted(event, resubscribe: subscriptions.resubscriptions(), waiters: Array(context.waiters.values))
            case .stopping(var context):
                // Accepted just as connect() gave up: reported, and ended by the thread.
                acceptedConnections += 1
                context.step = .accepted
                state = .stopping(context)
                return .accepted(event, resubscribe: [], waiters: [])
            case .closed:
                return .ignore
            case .idle, .connected:
                // No CONNECT is outstanding in these states.
                return .ignore
            }
        }
        let error = MQTTError.connack(reasonCode, version: version)
        if negotiation.refused(reasonCode: reasonCode) {
            // Not an error: the connection ends and the next attempt speaks 3.1.1 (connectionEnded).
            return .ignore
        }
        switch state {
        case .connecting(let context):
            // Refused on the first connection: fail connect() now, and do not retry
            // (a bad password must not become a silent endless retry).
            state = .stopping(StoppingContext(step: .connection, lastFailure: error))
            return .refused(.refused(error), waiters: Array(context.waiters.values), error: error)
        case .reconnecting(var context):
            // Refused after an earlier success: reported, then retried with backoff when
            // the connection ends (the broker's password file may be fixed meanwhile).
            context.attempt = .refused(error)
            context.lastFailure = error
            state = .reconnecting(context)
            return .refused(.refused(error), waiters: [], error: error)
        case .stopping(var context):
            context.lastFailure = error
            state = .stopping(context)
            return .refused(.refused(error), waiters: [], error: error)
        case .closed, .idle, .connected:
            return .ignore
        }
    }

    /// on_disconnect: remember a reason code the broker sent in a DISCONNECT (MQTT 5).
    mutating func disconnectCallback(reason: Int32) {
        diagnostics.disconnectReceived(reason: reason)
    }

    /// on_log: remember the last error or warning line.
    mutating func logged(problem: String) {
        diagnostics.logged(problem: problem)
    }

    /// What the network thread does after a connection (or an attempt) ended.
    enum Next {
        /// Wait this long (unless woken), then ask ``attemptStarting()``.
        case retry(after: Duration)
        /// Return from the thread, failing these `connect()` callers with `error`.
        case stop(failing: [ConnectWaiter], error: MQTTError)
    }

    struct EndAction {
        /// Connection events to publish, in order.
        var events: [MQTTConnectionEvent] = []
        /// SUBACK/UNSUBACK waiters whose packet died with the connection; the
        /// subscription is remembered and redone on reconnect, so they succeed.
        var orphanedAcknowledgements: [SubscriptionRegistry.Waiter] = []
        var next: Next
    }

    /// The network thread's connection (or attempt) ended with `rc` (`mosq_err_t`) and
    /// `errno`; `connectFailed` when `mosquitto_connect_bind_v5` itself failed.
    mutating func connectionEnded(rc: Int32, errno: Int32, connectFailed: Bool = false) -> EndAction {
        let orphaned = subscriptions.connectionEnded()
        publishes.connectionEnded()
        var action = EndAction(orphanedAcknowledgements: orphaned, next: .stop(failing: [], error: Self.shutdownError))
        switch state {
        case .connected:
            let error = diagnostics.error(endingWith: rc, errno: errno, connectFailed: connectFailed, connackSeen: true)
            action.events.append(.disconnected(reason: error.message))
            if ConnectionDiagnostics.isFatal(rc) {
                action.events.append(.loopExited(MQTTError(.loopExited, "the MQTT network thread stopped: \(error.message)")))
                state = .stopping(StoppingContext(step: .exiting, lastFailure: error))
                action.next = .stop(failing: [], error: error)
            } else {
                let delay = reconnectPolicy.delay(forAttempt: 1)
                state = .reconnecting(ConnectingContext(attempt: .backingOff(delay), failedAttempts: 1, lastFailure: error))
                action.next = .retry(after: delay)
            }
        case .connecting(var context):
            let error = diagnostics.error(endingWith: rc, errno: errno, connectFailed: connectFailed, connackSeen: false)
            context.lastFailure = error
            let sent = !connectFailed && context.attempt == .awaitingConnack
            if !ConnectionDiagnostics.isFatal(rc), negotiation.attemptEnded(connectSent: sent, error: error.code) {
                // The broker does not speak MQTT 5 (VersionNegotiation): 3.1.1 at once.
                context.attempt = .backingOff(.zero)
                state = .connecting(context)
                action.next = .retry(after: .zero)
                return action
            }
            if ConnectionDiagnostics.isFatal(rc) || error.code == .tls || error.code == .protocolError {
                // Retrying cannot help, or the first connection cannot work as configured:
                // fail connect() now.
                state = .stopping(StoppingContext(step: .exiting, lastFailure: error))
                action.next = .stop(failing: Array(context.waiters.values), error: error)
            } else {
                action.next = backOff(&context)
                state = .connecting(context)
            }
        case .reconnecting(var context):
            if case .refused = context.attempt {
                // The .refused event is already out; keep trying.
                action.next = backOff(&context)
                state = .reconnecting(context)
                return action
            }
            let error = diagnostics.error(endingWith: rc, errno: errno, connectFailed: connectFailed, connackSeen: false)
            context.lastFailure = error
            if ConnectionDiagnostics.isFatal(rc) {
                action.events.append(.loopExited(MQTTError(.loopExited, "the MQTT network thread stopped: \(error.message)")))
                state = .stopping(StoppingContext(step: .exiting, lastFailure: error))
                action.next = .stop(failing: Array(context.waiters.values), error: error)
            } else {
                action.next = backOff(&context)
                state = .reconnecting(context)
            }
        case .stopping(var context):
            if context.step == .accepted {
                // A connection that was up ends without disconnect() (a connect() that gave
                // up as its CONNACK arrived): still an event, so no listener thinks it is up.
                action.events.append(.disconnected(reason: "the connection attempt was abandoned"))
            }
            context.step = .exiting
            state = .stopping(context)
            action.next = .stop(
                failing: [], error: context.lastFailure ?? MQTTError(.shutdown, "the connection attempt was stopped"))
        case .closed, .idle:
            break
        }
        return action
    }

    private func backOff(_ context: inout ConnectingContext) -> Next {
        context.failedAttempts += 1
        let delay = reconnectPolicy.delay(forAttempt: context.failedAttempts)
        context.attempt = .backingOff(delay)
        return .retry(after: delay)
    }

    struct ThreadExitAction {
        /// Tasks waiting for the thread to return.
        var exitWaiters: [OneShot<Void>]
        /// Whether the thread must destroy the handle now (as its last act).
        var destroy: Bool
    }

    /// The network thread has returned.
    mutating func threadExited() -> ThreadExitAction {
        var waiters: [OneShot<Void>] = []
        switch state {
        case .stopping(let context):
            waiters = context.exitWaiters
            state = .idle
        case .closed(var context):
            waiters = context.exitWaiters
            context.exitWaiters = []
            context.thread = .exited
            state = .closed(context)
        case .idle, .connecting, .connected, .reconnecting:
            // The thread returns only after a `.stop`, which leaves `stopping` or `closed`.
            state = .idle
        }
        return ThreadExitAction(exitWaiters: waiters, destroy: handle.threadExited())
    }

    // MARK: Publishing

    /// publish(): send now when connected, else keep it (QoS 1/2) for the next CONNACK.
    mutating func publishRequested(_ publish: PendingPublish) -> PublishTracker.Decision {
        publishes.publishRequested(publish, link: publishLink)
    }

    /// libmosquitto answered "no connection" to a `.publishNow` made on connection
    /// `generation` (see ``PublishTracker/publishFoundNoConnection(_:generation:link:)``).
    mutating func publishFoundNoConnection(_ publish: PendingPublish, generation: Int) -> PublishTracker.Decision {
        publishes.publishFoundNoConnection(publish, generation: generation, link: publishLink)
    }

    /// See ``MQTTClient/startNegotiation(like:)``: only before the first connect.
    mutating func startNegotiation(at version: MQTTVersion, because reason: String?) {
        guard case .idle = state, acceptedConnections == 0 else { return }
        negotiation.start(at: version, because: reason)
    }

    /// The thread serving the connection, at each turn: whether to end a CONNECT the broker
    /// left unanswered, so that the next attempt speaks 3.1.1 (``VersionNegotiation``).
    mutating func abandonsUnansweredConnect(now: ContinuousClock.Instant) -> Bool {
        switch state {
        case .connecting(let context) where context.attempt == .awaitingConnack:
            return negotiation.abandonsUnanswered(now: now)
        case .idle, .connecting, .connected, .reconnecting, .stopping, .closed:
            return false
        }
    }

    /// The serving thread, after each turn of the loop: the kept publishes to send now,
    /// in order (then it asks again), or nothing, which ends the flush. A flush starts at a
    /// CONNACK and is taken only after the loop call that handled it has returned, that is
    /// after libmosquitto resent the older messages it kept itself, so nothing newer
    /// overtakes them; publishes made meanwhile queue behind.
    mutating func takeFlush() -> [PendingPublish] {
        switch state {
        case .connected(var context):
            guard context.flush == .pending else { return [] }
            let batch = publishes.takeKept()
            if batch.isEmpty {
                context.flush = .done
                state = .connected(context)
            }
            return batch
        case .idle, .connecting, .reconnecting, .stopping, .closed:
            return []
        }
    }

    mutating func makeDeliveryToken() -> MQTTDeliveryToken {
        publishes.makeDeliveryToken()
    }

    /// See ``PublishTracker/publishSent(messageID:qos:token:)``.
    mutating func publishSent(messageID: Int32, qos: MQTTQoS, token: MQTTDeliveryToken?) -> MQTTDeliveryReport? {
        publishes.publishSent(messageID: messageID, qos: qos, token: token)
    }

    /// See ``PublishTracker/publishAcknowledged(messageID:reasonCode:)``.
    mutating func publishAcknowledged(messageID: Int32, reasonCode: Int32) -> MQTTDeliveryReport? {
        publishes.publishAcknowledged(messageID: messageID, reasonCode: reasonCode)
    }

    // MARK: Subscriptions

    /// subscribe(): remember it. Returns the connection's generation when connected (the
    /// SUBSCRIBE goes out now), nil when it waits for the next CONNACK.
    mutating func subscriptionAdded(_ filter: String, qos: MQTTQoS) -> Int? {
        subscriptions.add(filter, qos: qos)
        return currentGeneration
    }

    /// Forgets a subscription; returns like ``subscriptionAdded(_:qos:)``.
    mutating func subscriptionRemoved(_ filter: String) -> Int? {
        subscriptions.remove(filter)
        return currentGeneration
    }

    /// Registers a waiter for the SUBACK/UNSUBACK of `messageID`, sent on connection
    /// `generation`; it is never left waiting (see ``SubscriptionRegistry``).
    mutating func awaitAcknowledgement(of messageID: Int32, sentOn generation: Int, _ waiter: ConnectWaiter) {
        subscriptions.awaitAcknowledgement(
            of: messageID, sentOn: generation, latest: acceptedConnections, isUp: isConnected, waiter)
    }

    /// on_subscribe / on_unsubscribe. Returns the waiter to fulfil, if any.
    mutating func acknowledgementReceived(messageID: Int32, result: Result<Void, MQTTError>) -> ConnectWaiter? {
        subscriptions.acknowledgementReceived(messageID: messageID, result: result)
    }

    mutating func ignoreAcknowledgement(of messageID: Int32) {
        subscriptions.ignoreAcknowledgement(of: messageID)
    }

    // MARK: Handle lifetime and shutdown

    /// An API call wants to use the handle. Returns false when it is shut down.
    mutating func enterCall() -> Bool {
        handle.enterCall()
    }

    /// An API call is done with the handle. Returns whether the caller must now destroy it.
    mutating func leaveCall() -> Bool {
        handle.leaveCall()
    }

    /// What `disconnect()` (or deinit) does about the network thread.
    enum ThreadShutdown {
        /// No thread runs.
        case none
        /// The thread is in the blocking `mosquitto_connect_bind_v5` (DNS, TCP connect):
        /// there is no connection to end and nothing to wait for; it sees the shutdown when
        /// the call returns and destroys the handle as its last act.
        case leave
        /// Queue DISCONNECT (which also wakes the loop), wake a backoff wait, and wait for
        /// the thread to return, bounded.
        case disconnectAndWait(OneShot<Void>)
        /// Wake the thread (DISCONNECT is already queued) and wait for it, bounded.
        case wakeAndWait(OneShot<Void>)
    }

    struct ShutdownAction {
        /// `connect()` callers to fail with `.shutdown`.
        var connectWaiters: [ConnectWaiter] = []
        /// SUBACK/UNSUBACK waiters to fail with `.shutdown`.
        var acknowledgementWaiters: [SubscriptionRegistry.Waiter] = []
        var thread: ThreadShutdown = .none
        /// Whether the caller must destroy the handle now.
        var destroy = false
        /// Whether this was the first shutdown request.
        var first = true
    }

    /// disconnect() or deinit.
    mutating func shutdownRequested() -> ShutdownAction {
        var action = ShutdownAction()
        var closed = ClosedContext(thread: .exited)
        var first = true
        switch state {
        case .idle:
            closed.thread = .exited
        case .connecting(let context), .reconnecting(let context):
            action.connectWaiters = Array(context.waiters.values)
            closed.thread = context.attempt == .dialing ? .dialing : .running
        case .connected:
            closed.thread = .running
        case .stopping(let context):
            closed.thread = context.step == .dialing ? .dialing : .running
            closed.exitWaiters = context.exitWaiters
        case .closed(let context):
            closed = context
            first = false
        }
        switch closed.thread {
        case .exited:
            action.thread = .none
        case .dialing:
            action.thread = .leave
        case .running:
            let exit = OneShot<Void>()
            closed.exitWaiters.append(exit)
            action.thread = first ? .disconnectAndWait(exit) : .wakeAndWait(exit)
        }
        action.first = first
        state = .closed(closed)
        publishes.close()
        action.acknowledgementWaiters = subscriptions.close()
        action.destroy = handle.close()
        return action
    }
}

/// What the client knows about its outgoing publishes: the ones kept while disconnected,
/// the ones handed to libmosquitto and not yet reported by `on_publish` (by message id),
/// and the delivery tokens of tracked publishes.
///
/// Invariants:
/// - A publish is in at most one place: `kept` (ours, not yet handed to libmosquitto) or
///   `sent` (libmosquitto's, waiting for its `on_publish`).
/// - `on_publish` and the registration of its message id meet exactly once, whichever
///   comes first: a callback that finds no registration waits in `earlyAcknowledgements`,
///   and a registration that finds an early callback consumes it. Neither table keeps an
///   entry once both have happened.
/// - QoS 0 is never kept, and a QoS 0 packet still unwritten when its connection ends is
///   forgotten (libmosquitto will never report it). QoS 1/2 stay registered across
///   reconnects: libmosquitto resends them and reports them after the reconnect.
/// - `kept` holds at most `keptLimit` publishes; they go out in the order they came.
/// - Delivery tokens are unique within a client (a counter that only grows).
///
/// A plain value: every input is one `mutating func` that returns what to do; it never
/// calls libmosquitto and never blocks. It learns where the connection is from the caller
/// (``Link``), so it holds no connection flag of its own.
///
/// Threading: none of its own; it lives inside ``MQTTConnectionStateMachine``, behind the
/// client core's `Mutex`.
struct PublishTracker {
    /// A publish the client holds on to (kept while disconnected, or being handed over).
    struct PendingPublish: Sendable, Equatable {
        var topic: String
        var payload: [UInt8]
        var qos: MQTTQoS
        var retain: Bool
        var properties: MQTTProperties
        /// Set for a tracked publish: its acknowledgement is reported with this token.
        var token: MQTTDeliveryToken? = nil
    }

    /// A publish libmosquitto took, waiting for its `on_publish`.
    struct SentPublish: Equatable {
        var qos: MQTTQoS
        var token: MQTTDeliveryToken?
    }

    /// Where the connection is, as far as publishing goes.
    enum Link: Equatable {
        /// Connected (connection number `generation`), nothing kept waits to go out.
        case up(generation: Int)
        /// Connected, and the publishes kept while disconnected are still going out: new
        /// QoS 1/2 publishes queue behind them.
        case flushing(generation: Int)
        /// Not connected (yet, or any more); the client may still reconnect.
        case down
        /// Shut down for good.
        case closed
    }

    /// What to do with a publish.
    enum Decision: Equatable {
        /// Hand it to libmosquitto now (on connection number `generation`).
        case publishNow(generation: Int)
        /// Kept (or owned by libmosquitto): it goes out after the next CONNACK.
        case queued
        /// It cannot be sent or kept.
        case fail(MQTTError)
    }

    /// "host:port", for error messages.
    let endpoint: String
    /// How many publishes may be kept while disconnected.
    var keptLimit: Int

    /// QoS 1/2 publishes made while disconnected (or during a flush), oldest first.
    private(set) var kept: [PendingPublish] = []
    /// Every publish handed to libmosquitto whose `on_publish` has not come yet, by message
    /// id. Untracked ones are kept too, so that each callback finds its publish.
    private(set) var sent: [Int32: SentPublish] = [:]
    /// The QoS 1/2 publishes in `sent`: handed to libmosquitto and not yet acknowledged by the
    /// broker. Some may still wait in libmosquitto's own queue of messages beyond the broker's
    /// receive maximum, which `mosquitto_want_write` does not show (the direct lane waits).
    private(set) var unacknowledgedReliable = 0
    /// `on_publish` callbacks that came before their publish was registered: id → reason code.
    private(set) var earlyAcknowledgements: [Int32: Int32] = [:]
    private var lastToken: UInt64 = 0

    init(endpoint: String, keptLimit: Int = 1000) {
        self.endpoint = endpoint
        self.keptLimit = keptLimit
    }

    // MARK: Publishing

    /// A new token for a tracked publish.
    mutating func makeDeliveryToken() -> MQTTDeliveryToken {
        lastToken += 1
        return MQTTDeliveryToken(rawValue: lastToken)
    }

    /// publish(): send now when connected, else keep it (QoS 1/2) for the next CONNACK.
    mutating func publishRequested(_ publish: PendingPublish, link: Link) -> Decision {
        switch link {
        case .up(let generation):
            return .publishNow(generation: generation)
        case .flushing(let generation):
            // QoS 0 is never kept; QoS 1/2 waits behind the flush so it overtakes nothing.
            if publish.qos == .atMostOnce { return .publishNow(generation: generation) }
            return keep(publish, closed: false)
        case .down:
            return keep(publish, closed: false)
        case .closed:
            return keep(publish, closed: true)
        }
    }

    /// libmosquitto answered "no connection" to a `.publishNow` made on connection
    /// `generation`. At QoS 1 and 2 it has put the message in its own outgoing queue before
    /// trying to send it, and resends that queue after the next CONNACK: it owns the message
    /// now, and a second copy would reach the broker twice. At QoS 0: if a newer connection
    /// is already up, send it on that one; otherwise it fails like any QoS 0 publish while down.
    mutating func publishFoundNoConnection(_ publish: PendingPublish, generation: Int, link: Link) -> Decision {
        switch link {
        case .closed:
            return .fail(Self.shutdownError)
        case .up(let current), .flushing(let current):
            if publish.qos != .atMostOnce { return .queued }
            if current != generation { return .publishNow(generation: current) }
            return keep(publish, closed: false)
        case .down:
            if publish.qos != .atMostOnce { return .queued }
            return keep(publish, closed: false)
        }
    }

    /// The kept publishes to send now, in order, emptying the list.
    mutating func takeKept() -> [PendingPublish] {
        defer { kept.removeAll() }
        return kept
    }

    private mutating func keep(_ publish: PendingPublish, closed: Bool) -> Decision {
        if closed { return .fail(Self.shutdownError) }
        guard publish.qos != .atMostOnce else {
            return .fail(
                MQTTError(
                    .notConnected,
                    "cannot publish to \(publish.topic) at QoS 0: not connected to \(endpoint) (QoS 1 and 2 publishes are kept until the reconnect)"))
        }
        guard kept.count < keptLimit else {
            return .fail(
                MQTTError(
                    .notConnected,
                    "cannot publish to \(publish.topic): not connected to \(endpoint) and \(keptLimit) publishes already wait for the reconnect"))
        }
        kept.append(publish)
        return .queued
    }

    static let shutdownError = MQTTError(.shutdown, "the client was shut down with disconnect()")

    // MARK: Delivery reports

    /// A publish was handed to libmosquitto as `messageID` (sent, or kept by libmosquitto
    /// for the reconnect at QoS 1/2). libmosquitto reports the id only when
    /// `mosquitto_publish` returns, and its network thread can call `on_publish` before
    /// that: then the early acknowledgement is waiting here. Returns the report of a
    /// tracked publish already acknowledged.
    mutating func publishSent(messageID: Int32, qos: MQTTQoS, token: MQTTDeliveryToken?) -> MQTTDeliveryReport? {
        if let reason = earlyAcknowledgements.removeValue(forKey: messageID) {
            return token.map { MQTTDeliveryReport(token: $0, reasonCode: reason) }
        }
        if let replaced = sent.updateValue(SentPublish(qos: qos, token: token), forKey: messageID), replaced.qos != .atMostOnce {
            unacknowledgedReliable -= 1  // an id libmosquitto reused: the old one is gone
        }
        if qos != .atMostOnce { unacknowledgedReliable += 1 }
        return nil
    }

    /// `on_publish`: a QoS 0 publish was written to the socket, or the broker acknowledged a
    /// QoS 1 (PUBACK) or 2 (PUBCOMP) one. Returns the report of a tracked publish.
    mutating func publishAcknowledged(messageID: Int32, reasonCode: Int32) -> MQTTDeliveryReport? {
        guard let publish = sent.removeValue(forKey: messageID) else {
            earlyAcknowledgements[messageID] = reasonCode
            return nil
        }
        if publish.qos != .atMostOnce { unacknowledgedReliable -= 1 }
        return publish.token.map { MQTTDeliveryReport(token: $0, reasonCode: reasonCode) }
    }

    // MARK: Connection changes

    /// The connection ended: QoS 0 packets not yet written die with it (no `on_publish`
    /// will come); QoS 1/2 messages stay with libmosquitto, which resends them.
    mutating func connectionEnded() {
        sent = sent.filter { $0.value.qos != .atMostOnce }
    }

    /// The client is shut down: what was kept is dropped (documented: kept publishes die
    /// at `disconnect()`).
    mutating func close() {
        kept.removeAll()
    }
}

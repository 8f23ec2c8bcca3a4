/// The client's subscriptions: the filters it remembers (made again after every CONNACK)
/// and the callers waiting for a SUBACK or UNSUBACK.
///
/// Invariants:
/// - Every remembered filter is subscribed on every connection: `subscribe()` sends it when
///   connected, and each successful CONNACK redoes all of them (``connectionAccepted()``).
/// - A SUBACK/UNSUBACK waiter is never left waiting: it is fulfilled by its
///   acknowledgement, by an acknowledgement that arrived before it registered
///   (`earlyAcknowledgements`), at once when its connection already ended, or when its
///   connection ends (``connectionEnded()``: the filter is remembered, so that is a success)
///   or the client shuts down (``close()``).
/// - The acknowledgements of the resubscriptions made inside `on_connect` are ignored
///   (`ignoredMessageIDs`): nobody waits for them, and they must not be taken for a later
///   caller's acknowledgement.
/// - Message ids are only compared within one connection: a CONNACK clears the early and
///   ignored ones (libmosquitto restarts nothing, but the old connection's acks never come).
///
/// A plain value: inputs are `mutating func`s that return what to do; it never calls
/// libmosquitto. It learns which connection is current from the caller.
///
/// Threading: none of its own; it lives inside ``MQTTConnectionStateMachine``, behind the
/// client core's `Mutex`.
struct SubscriptionRegistry {
    typealias Waiter = OneShot<Result<Void, MQTTError>>

    /// Remembered subscriptions: filter → QoS.
    private(set) var filters: [String: MQTTQoS] = [:]
    /// SUBACK / UNSUBACK waiters by message id.
    private var waiters: [Int32: Waiter] = [:]
    /// Acknowledgements that arrived before their waiter was registered.
    private var earlyAcknowledgements: [Int32: Result<Void, MQTTError>] = [:]
    /// Message ids of the resubscriptions made inside on_connect (nobody waits for them).
    private var ignoredMessageIDs: Set<Int32> = []

    /// How many callers wait for an acknowledgement (for tests).
    var waiterCount: Int { waiters.count }

    /// subscribe(): remember the filter (a later subscribe to it replaces the QoS).
    mutating func add(_ filter: String, qos: MQTTQoS) {
        filters[filter] = qos
    }

    /// unsubscribe(), or a refused SUBACK: forget the filter.
    mutating func remove(_ filter: String) {
        filters[filter] = nil
    }

    /// Registers a waiter for the SUBACK/UNSUBACK of `messageID`, sent on connection
    /// `generation`. `latest` is the number of the latest accepted connection and `isUp`
    /// whether it is still up.
    mutating func awaitAcknowledgement(
        of messageID: Int32, sentOn generation: Int, latest: Int, isUp: Bool, _ waiter: Waiter
    ) {
        if let early = earlyAcknowledgements.removeValue(forKey: messageID), generation == latest {
            waiter.fulfil(early)
        } else if !isUp || generation != latest {
            // Its connection ended meanwhile: the waiters of that connection were settled
            // without this one, and the filter is redone on the next CONNACK.
            waiter.fulfil(.success(()))
        } else {
            waiters[messageID] = waiter
        }
    }

    /// on_subscribe / on_unsubscribe. Returns the waiter to fulfil with `result`, if any.
    mutating func acknowledgementReceived(messageID: Int32, result: Result<Void, MQTTError>) -> Waiter? {
        if ignoredMessageIDs.remove(messageID) != nil { return nil }
        if let waiter = waiters.removeValue(forKey: messageID) { return waiter }
        earlyAcknowledgements[messageID] = result
        return nil
    }

    /// Any CONNACK (accepted or refused): message ids start over.
    mutating func connackReceived() {
        earlyAcknowledgements.removeAll()
        ignoredMessageIDs.removeAll()
    }

    /// A CONNACK accepted the connection: the filters to subscribe again, sorted.
    func resubscriptions() -> [(filter: String, qos: MQTTQoS)] {
        filters.sorted { $0.key < $1.key }.map { (filter: $0.key, qos: $0.value) }
    }

    /// A resubscription made inside on_connect got `messageID`: its acknowledgement is nobody's.
    mutating func ignoreAcknowledgement(of messageID: Int32) {
        ignoredMessageIDs.insert(messageID)
    }

    /// The connection ended: the waiters whose packet died with it. The filters are
    /// remembered and redone on reconnect, so the caller fulfils them with success.
    mutating func connectionEnded() -> [Waiter] {
        defer { waiters.removeAll() }
        return Array(waiters.values)
    }

    /// The client is shut down: the waiters to fail.
    mutating func close() -> [Waiter] {
        connectionEnded()
    }
}

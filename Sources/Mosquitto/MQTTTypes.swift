/// The quality of service of a publish or a subscription.
///
/// The raw values are the MQTT wire values (and libmosquitto's `int qos`).
public enum MQTTQoS: Int32, Sendable, Hashable, CaseIterable {
    /// Fire and forget: delivered at most once, never stored for an offline client.
    case atMostOnce = 0
    /// Acknowledged delivery: delivered at least once; duplicates are possible.
    case atLeastOnce = 1
    /// Assured delivery: delivered exactly once (a four-step handshake).
    case exactlyOnce = 2
}

/// The MQTT protocol version spoken to the broker.
public enum MQTTVersion: Sendable, Hashable {
    /// MQTT 3.1.1 (protocol level 4). ``MQTTProperties`` are ignored.
    case v3_1_1
    /// MQTT 5.0 (protocol level 5): reason codes, properties, session expiry.
    case v5
}

/// An MQTT 5 user property: a name/value pair of UTF-8 strings. Names may repeat.
public struct MQTTUserProperty: Sendable, Hashable {
    /// The property's name.
    public var name: String
    /// The property's value.
    public var value: String

    /// Creates a user property.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// The MQTT 5 properties of a publish (or of a will) that Pacer uses.
///
/// They are sent only with ``MQTTVersion/v5``; with MQTT 3.1.1 they are ignored on
/// publish and are always empty on received messages.
public struct MQTTProperties: Sendable, Hashable {
    /// Where a responder should publish its answer (request/response pattern).
    public var responseTopic: String?
    /// Opaque bytes that tie a response to its request.
    public var correlationData: [UInt8]?
    /// Seconds after which the broker discards the message if not yet delivered.
    /// On a received message this is what is left of the interval.
    public var messageExpiryInterval: UInt32?
    /// A MIME type describing the payload, e.g. `application/json`.
    public var contentType: String?
    /// Application-defined name/value pairs, in order.
    public var userProperties: [MQTTUserProperty]

    /// Creates a set of properties; every field defaults to absent.
    public init(
        responseTopic: String? = nil,
        correlationData: [UInt8]? = nil,
        messageExpiryInterval: UInt32? = nil,
        contentType: String? = nil,
        userProperties: [MQTTUserProperty] = []
    ) {
        self.responseTopic = responseTopic
        self.correlationData = correlationData
        self.messageExpiryInterval = messageExpiryInterval
        self.contentType = contentType
        self.userProperties = userProperties
    }

    /// No properties.
    public static let none = MQTTProperties()

    /// Whether no property is set.
    public var isEmpty: Bool {
        responseTopic == nil && correlationData == nil && messageExpiryInterval == nil
            && contentType == nil && userProperties.isEmpty
    }
}

/// The last will: published by the broker when the client vanishes without a clean
/// disconnect (network loss, crash, keep-alive expiry).
public struct MQTTWill: Sendable, Hashable {
    /// The topic the will is published to.
    public var topic: String
    /// The will's payload.
    public var payload: [UInt8]
    /// The quality of service of the will publish.
    public var qos: MQTTQoS
    /// Whether the broker retains the will.
    public var retain: Bool
    /// MQTT 5 properties of the will message (ignored with MQTT 3.1.1).
    public var properties: MQTTProperties

    /// Creates a will with a binary payload.
    public init(
        topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = true,
        properties: MQTTProperties = .none
    ) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.properties = properties
    }

    /// Creates a will with a UTF-8 text payload.
    public init(
        topic: String, string: String, qos: MQTTQoS = .atLeastOnce, retain: Bool = true,
        properties: MQTTProperties = .none
    ) {
        self.init(topic: topic, payload: Array(string.utf8), qos: qos, retain: retain, properties: properties)
    }
}

/// A message received on a subscription. Everything is copied out of libmosquitto's
/// memory before the callback returns, so a message is an independent value.
public struct MQTTMessage: Sendable, Hashable {
    /// The topic the message was published to.
    public var topic: String
    /// The payload bytes (may be empty).
    public var payload: [UInt8]
    /// The quality of service the message was delivered with.
    public var qos: MQTTQoS
    /// Whether the message was delivered from the broker's retained store.
    public var retain: Bool
    /// MQTT 5 properties (always empty with MQTT 3.1.1).
    public var properties: MQTTProperties

    /// Creates a message (received messages are made by ``MQTTClient``; this is for tests).
    public init(
        topic: String, payload: [UInt8], qos: MQTTQoS = .atMostOnce, retain: Bool = false,
        properties: MQTTProperties = .none
    ) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.properties = properties
    }

    /// The payload as UTF-8 text, or `nil` when it is not valid UTF-8.
    public var payloadString: String? {
        String(validating: payload, as: UTF8.self)
    }
}

/// A change of the client's connection, delivered on ``MQTTClient/connectionEvents``.
public enum MQTTConnectionEvent: Sendable, Equatable {
    /// The broker accepted a CONNECT (first connection or a reconnect).
    /// `sessionPresent` tells whether the broker resumed a stored session.
    case connected(sessionPresent: Bool)
    /// The connection was lost unexpectedly; the client reconnects by itself with
    /// capped backoff and resubscribes. `reason` says why, for a log line.
    case disconnected(reason: String)
    /// The broker refused a CONNECT (bad credentials, not authorised, ...).
    case refused(MQTTError)
    /// The network thread stopped on an error that retrying cannot fix; the client
    /// will not reconnect until ``MQTTClient/connect()`` is called again.
    case loopExited(MQTTError)
}

/// Identifies one tracked publish (``MQTTClient/publishTracked(to:payload:qos:retain:properties:)``);
/// unique within a client.
public struct MQTTDeliveryToken: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public var description: String { "delivery-\(rawValue)" }
}

/// The broker's answer to a tracked publish: its PUBACK (QoS 1) or PUBCOMP (QoS 2).
public struct MQTTDeliveryReport: Sendable, Hashable {
    /// The token ``MQTTClient/publishTracked(to:payload:qos:retain:properties:)`` returned.
    public let token: MQTTDeliveryToken
    /// The MQTT 5 reason code (always 0 with MQTT 3.1.1). 0x10 "no matching subscribers"
    /// is a success; 0x80 and above are refusals (0x87 not authorised, ...).
    public let reasonCode: Int32

    public init(token: MQTTDeliveryToken, reasonCode: Int32) {
        self.token = token
        self.reasonCode = reasonCode
    }

    /// Whether the broker took the message (reason code below 0x80).
    public var isAccepted: Bool { reasonCode < 0x80 }
}

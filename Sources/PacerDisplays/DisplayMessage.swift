/// One MQTT publish for a display: QoS 0, and never retained (a retained app or light state
/// would come back on a device's reboot after the node had died). A display message is as
/// disposable as a per-second value: one superseded under overload may be dropped.
public struct DisplayMessage: Sendable, Hashable, CustomStringConvertible {
    public var topic: String
    /// JSON (or empty: AWTRIX removes the app of an empty payload).
    public var payload: [UInt8]
    /// Always false; here so the publishing code needs no rule of its own.
    public var retain: Bool

    public init(topic: String, payload: [UInt8], retain: Bool = false) {
        self.topic = topic
        self.payload = payload
        self.retain = retain
    }

    public var description: String { "\(topic) \(String(decoding: payload, as: UTF8.self))" }
}

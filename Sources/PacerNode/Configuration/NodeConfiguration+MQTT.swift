public import Mosquitto

extension NodeConfiguration {
    /// The MQTT client configuration for this configuration's broker: host, port, protocol
    /// version, keep-alive, credentials and TLS, with the given client id, will and clean start.
    ///
    /// The node uses its stable `clientID`, the `offline` will and `cleanStart: false` (a
    /// persistent session, kept for the client's default session expiry); the command-line
    /// tools use a client id of their own, no will and `cleanStart: true`, with which the
    /// broker keeps no session after they disconnect (MQTT 5 session expiry 0).
    ///
    /// - Parameters:
    ///   - clientID: the MQTT client id.
    ///   - will: the last will, if any.
    ///   - cleanStart: whether to start a fresh session (and keep none after the disconnect).
    public func mqttConfiguration(clientID: String, will: MQTTWill?, cleanStart: Bool) -> MQTTConfiguration {
        let b = broker
        var c = MQTTConfiguration(clientID: clientID)
        c.host = b.host
        c.port = b.port
        c.version = b.mqttVersion == "3.1.1" ? .v3_1_1 : .v5
        c.fallsBackToV3_1_1 = b.mqttVersion == "auto"
        c.keepAlive = b.keepAliveSeconds
        c.username = b.username
        c.password = b.password
        if b.tls {
            c.tls = MQTTTLSConfiguration(caFile: b.caFile, caDirectory: b.caFile == nil ? "/etc/ssl/certs" : nil,
                                         certificateFile: b.certificateFile, keyFile: b.keyFile,
                                         verifyHostname: b.verifyHostname)
        }
        c.will = will
        c.cleanStart = cleanStart
        if cleanStart { c.sessionExpiryInterval = 0 }
        c.maximumPacketSize = UInt32(maximumPacketSize)
        return c
    }

    /// The largest MQTT packet the node accepts from the broker (MQTT 5): 4 times the command
    /// limit, at least 2 MiB. What the node reads (commands, clock requests, heart rates, its
    /// own retained states) is far smaller; a larger publish on a topic it subscribes to is
    /// dropped by the broker, never allocated by the node (docs/SECURITY.md).
    public var maximumPacketSize: Int {
        min(max(2 << 20, limits.maxPayloadBytes * 4), 256 << 20)
    }
}

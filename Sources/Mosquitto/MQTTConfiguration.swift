import Foundation

/// TLS settings for the broker connection.
public struct MQTTTLSConfiguration: Sendable, Hashable {
    /// A PEM file of CA certificates to trust. When both this and ``caDirectory`` are
    /// `nil`, the operating system's CA store is used.
    public var caFile: String?
    /// A directory of hashed PEM CA certificates to trust (as made by `openssl rehash`).
    public var caDirectory: String?
    /// A PEM client certificate, for brokers that require one (needs ``keyFile``).
    public var certificateFile: String?
    /// The PEM private key of ``certificateFile`` (unencrypted).
    public var keyFile: String?
    /// Whether the broker certificate's host name must match the host connected to.
    /// Turning this off is insecure: anyone with a certificate from the CA can pose as the broker.
    public var verifyHostname: Bool

    /// Creates TLS settings.
    public init(
        caFile: String? = nil, caDirectory: String? = nil, certificateFile: String? = nil,
        keyFile: String? = nil, verifyHostname: Bool = true
    ) {
        self.caFile = caFile
        self.caDirectory = caDirectory
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.verifyHostname = verifyHostname
    }

    /// Checks the TLS files in `MQTTClient.init`, before any network I/O, with a message
    /// that names the setting and the path.
    ///
    /// libmosquitto's `mosquitto_tls_set` only checks that the files open; it loads them
    /// after the TCP connect, and then reports a bad certificate or key with OpenSSL's text
    /// alone ("PEM routines::no start line"), and an encrypted key makes OpenSSL ask for a
    /// passphrase on the terminal. So: every file must exist and be readable; the client
    /// certificate must hold a PEM certificate and the key an unencrypted PEM private key.
    /// (Whether the key belongs to the certificate needs OpenSSL; that shows at connect.)
    func checkFiles() throws(MQTTError) {
        if let caFile {
            _ = try Self.read(caFile, "the CA file (caFile / ca_file)")
        }
        if let certificateFile {
            let what = "the client certificate file (certificateFile / cert_file)"
            let text = try Self.read(certificateFile, what)
            if !text.contains("-----BEGIN CERTIFICATE-----") {
                let swapped = text.contains("PRIVATE KEY-----") ? "; it holds a private key: are the certificate and key files swapped?" : ""
                throw MQTTError(.tls, "\(what) \(certificateFile) holds no PEM certificate (-----BEGIN CERTIFICATE-----)\(swapped)")
            }
        }
        if let keyFile {
            let what = "the client key file (keyFile / key_file)"
            let text = try Self.read(keyFile, what)
            if text.contains("ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED") {
                throw MQTTError(.tls, "\(what) \(keyFile) is encrypted; a passphrase cannot be given: decrypt it, e.g. openssl pkey -in \(keyFile) -out <new file>, and keep that file readable only by the node's user")
            }
            if !(text.contains("-----BEGIN ") && text.contains("PRIVATE KEY-----")) {
                let swapped = text.contains("-----BEGIN CERTIFICATE-----") ? "; it holds a certificate: are the certificate and key files swapped?" : ""
                throw MQTTError(.tls, "\(what) \(keyFile) holds no PEM private key (-----BEGIN ... PRIVATE KEY-----)\(swapped)")
            }
        }
    }

    private static func read(_ path: String, _ what: String) throws(MQTTError) -> String {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw MQTTError(.tls, "\(what) \(path) does not exist")
        }
        if isDirectory.boolValue { throw MQTTError(.tls, "\(what) \(path) is a directory, not a file") }
        guard FileManager.default.isReadableFile(atPath: path), let data = FileManager.default.contents(atPath: path) else {
            throw MQTTError(.tls, "\(what) \(path) cannot be read; check its permissions for the user this process runs as")
        }
        return String(decoding: data, as: UTF8.self)
    }
}

/// How the client waits between reconnect attempts after losing the broker.
///
/// The n-th consecutive attempt waits `initialDelay * 2^(n-1)` (or `initialDelay` when
/// not exponential), never more than `maximumDelay`. A successful CONNACK resets the count.
public struct MQTTReconnectPolicy: Sendable, Hashable {
    /// The wait before the first reconnect attempt.
    public var initialDelay: Duration
    /// The longest wait between attempts.
    public var maximumDelay: Duration
    /// Whether the wait doubles after each failed attempt.
    public var exponential: Bool

    /// Creates a reconnect policy.
    public init(initialDelay: Duration = .seconds(1), maximumDelay: Duration = .seconds(30), exponential: Bool = true) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.exponential = exponential
    }

    /// The wait before reconnect attempt number `attempt` (1 for the first).
    public func delay(forAttempt attempt: Int) -> Duration {
        let initial = max(initialDelay, .zero)
        let cap = max(maximumDelay, initial)
        guard exponential, attempt > 1 else { return min(initial, cap) }
        var delay = initial
        for _ in 1..<min(attempt, 64) {
            delay = delay * 2
            if delay >= cap { return cap }
        }
        return min(delay, cap)
    }
}

/// Everything the client needs to connect. A `Sendable` value; the client copies it.
public struct MQTTConfiguration: Sendable {
    /// The broker's host name or address.
    public var host: String
    /// The broker's TCP port (1883 plain, 8883 TLS by convention).
    public var port: Int
    /// The client id. Must be non-empty and stable across restarts for a persistent session.
    public var clientID: String
    /// The protocol version.
    public var version: MQTTVersion
    /// The keep-alive interval in seconds (at least 5).
    public var keepAlive: Int
    /// The username, if the broker needs one.
    public var username: String?
    /// The password, if the broker needs one.
    public var password: String?
    /// TLS settings; `nil` for a plain TCP connection.
    public var tls: MQTTTLSConfiguration?
    /// The last will, published by the broker when the client vanishes.
    public var will: MQTTWill?
    /// Whether to discard any session the broker holds for this client id on connect.
    /// `false` (the default) resumes it: subscriptions and queued QoS 1/2 messages survive.
    public var cleanStart: Bool
    /// MQTT 5: how long, in seconds, the broker keeps the session after a disconnect.
    /// Sent on every connect and reconnect. (MQTT 3.1.1 sessions with `cleanStart == false`
    /// are kept until the broker's `persistent_client_expiration`.)
    public var sessionExpiryInterval: UInt32
    /// MQTT 5: the largest packet this client accepts (the CONNECT's Maximum Packet Size);
    /// the broker drops a larger message for this client instead of sending it, so no
    /// publisher can make it allocate more. `nil`: no limit but the protocol's 256 MB.
    public var maximumPacketSize: UInt32? = nil
    /// With `version` `.v5`: when the broker shows it does not speak MQTT 5 (it refuses the
    /// version, closes the connection before accepting it, or leaves the CONNECT unanswered
    /// for 2 s), the client tries 3.1.1, and keeps whichever version a broker accepts first.
    /// ``MQTTClient/protocolVersion`` and ``MQTTClient/versionFallbackReason`` say which and why.
    /// A refused login or a TLS failure never makes it change. (amqtt and RabbitMQ before 3.13
    /// speak only 3.1.1.)
    public var fallsBackToV3_1_1 = false
    /// How reconnect attempts are spaced.
    public var reconnect: MQTTReconnectPolicy
    /// How long ``MQTTClient/connect()`` waits for the first CONNACK.
    public var connectTimeout: Duration
    /// How long ``MQTTClient/disconnect()`` waits for the network thread to close a
    /// connection and stop (a thread that has no connection yet is not waited for).
    public var shutdownTimeout: Duration
    /// How many QoS 1/2 publishes are kept in memory while disconnected (libmosquitto
    /// 2.0.11 itself refuses every publish without a connection). They are sent, in
    /// order, right after the next CONNACK; beyond the limit ``MQTTClient/publish(to:payload:qos:retain:properties:)``
    /// throws `.notConnected`. They are lost if the process ends or ``MQTTClient/disconnect()`` runs.
    public var offlineQueueLimit: Int
    /// Which threads do the socket I/O: `library` (our poll loop on the client's network thread,
    /// the default) or `engine` (opt-in; plain TCP only). See ``MQTTIOProfile``.
    public var ioProfile: MQTTIOProfile = .library

    /// Creates a configuration; see the properties for the meaning of each argument.
    public init(
        host: String = "127.0.0.1",
        port: Int = 1883,
        clientID: String,
        version: MQTTVersion = .v5,
        keepAlive: Int = 30,
        username: String? = nil,
        password: String? = nil,
        tls: MQTTTLSConfiguration? = nil,
        will: MQTTWill? = nil,
        cleanStart: Bool = false,
        sessionExpiryInterval: UInt32 = 86_400 * 7,
        reconnect: MQTTReconnectPolicy = .init(),
        connectTimeout: Duration = .seconds(5),
        shutdownTimeout: Duration = .seconds(2),
        offlineQueueLimit: Int = 1000
    ) {
        self.host = host
        self.port = port
        self.clientID = clientID
        self.version = version
        self.keepAlive = keepAlive
        self.username = username
        self.password = password
        self.tls = tls
        self.will = will
        self.cleanStart = cleanStart
        self.sessionExpiryInterval = sessionExpiryInterval
        self.reconnect = reconnect
        self.connectTimeout = connectTimeout
        self.shutdownTimeout = shutdownTimeout
        self.offlineQueueLimit = offlineQueueLimit
    }

    /// An MQTT 5 configuration (mqtt-nio style factory).
    public static func v5(
        host: String = "127.0.0.1", port: Int = 1883, clientID: String,
        username: String? = nil, password: String? = nil, tls: MQTTTLSConfiguration? = nil,
        will: MQTTWill? = nil, cleanStart: Bool = false, sessionExpiryInterval: UInt32 = 86_400 * 7,
        keepAlive: Int = 30, reconnect: MQTTReconnectPolicy = .init(),
        connectTimeout: Duration = .seconds(5), shutdownTimeout: Duration = .seconds(2)
    ) -> MQTTConfiguration {
        MQTTConfiguration(
            host: host, port: port, clientID: clientID, version: .v5, keepAlive: keepAlive,
            username: username, password: password, tls: tls, will: will, cleanStart: cleanStart,
            sessionExpiryInterval: sessionExpiryInterval, reconnect: reconnect,
            connectTimeout: connectTimeout, shutdownTimeout: shutdownTimeout)
    }

    /// An MQTT 3.1.1 configuration (mqtt-nio style factory). Will properties are ignored.
    public static func v3_1_1(
        host: String = "127.0.0.1", port: Int = 1883, clientID: String,
        username: String? = nil, password: String? = nil, tls: MQTTTLSConfiguration? = nil,
        will: MQTTWill? = nil, cleanSession: Bool = false,
        keepAlive: Int = 30, reconnect: MQTTReconnectPolicy = .init(),
        connectTimeout: Duration = .seconds(5), shutdownTimeout: Duration = .seconds(2)
    ) -> MQTTConfiguration {
        MQTTConfiguration(
            host: host, port: port, clientID: clientID, version: .v3_1_1, keepAlive: keepAlive,
            username: username, password: password, tls: tls, will: will, cleanStart: cleanSession,
            sessionExpiryInterval: 0, reconnect: reconnect,
            connectTimeout: connectTimeout, shutdownTimeout: shutdownTimeout)
    }

    /// Checks the values libmosquitto would reject later, with a message that says which.
    func validate() throws(MQTTError) {
        if clientID.isEmpty || clientID.utf8.count > 65_535 || clientID.contains("\0") {
            throw MQTTError(.invalidArgument, "the client id must be 1 to 65535 bytes of UTF-8 without NUL, got \(clientID.utf8.count) bytes")
        }
        if host.isEmpty || host.contains("\0") {
            throw MQTTError(.invalidArgument, "the broker host must not be empty")
        }
        if !(1...65_535).contains(port) {
            throw MQTTError(.invalidArgument, "the broker port must be between 1 and 65535, got \(port)")
        }
        if !(5...65_535).contains(keepAlive) {
            throw MQTTError(.invalidArgument, "keepAlive must be between 5 and 65535 seconds, got \(keepAlive)")
        }
        if password != nil && username == nil {
            throw MQTTError(.invalidArgument, "a password needs a username")
        }
        if let tls, (tls.certificateFile == nil) != (tls.keyFile == nil) {
            throw MQTTError(.invalidArgument, "a TLS client certificate needs its key file and the other way round")
        }
        if offlineQueueLimit < 0 {
            throw MQTTError(.invalidArgument, "offlineQueueLimit must not be negative, got \(offlineQueueLimit)")
        }
        if connectTimeout <= .zero || shutdownTimeout <= .zero {
            throw MQTTError(.invalidArgument, "connectTimeout and shutdownTimeout must be positive")
        }
    }
}

import CMosquitto
import Foundation

/// The one error type of the MQTT client.
///
/// `message` is meant for a person: it names what failed, the libmosquitto text
/// (`mosquitto_strerror`, `mosquitto_reason_string` or `mosquitto_connack_string`) and the
/// numeric `mosq_err_t` or reason code, and where it helps, what to check.
///
/// Threading: a plain value. Building one calls libmosquitto's string functions
/// (`mosquitto_strerror`, `mosquitto_reason_string`, `mosquitto_connack_string`), which only
/// return static strings and are safe from any thread.
public struct MQTTError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure, for code that reacts to it.
    public enum Code: Sendable, Equatable {
        /// The broker refused the connection (CONNACK), or the TCP connection was refused.
        case connectionRefused
        /// The broker says this client may not connect or subscribe (ACL, `allow_anonymous`).
        case notAuthorized
        /// The broker refused the username or password.
        case badCredentials
        /// TLS setup or handshake failed (certificate not trusted, wrong host name, ...).
        case tls
        /// The operation did not finish in time (see ``MQTTConfiguration/connectTimeout``).
        case timeout
        /// The client is not connected and the operation needs a connection.
        case notConnected
        /// An argument was rejected (topic with wildcards, payload too large, bad option).
        case invalidArgument
        /// The broker or the library saw a protocol violation.
        case protocolError
        /// A network or operating-system error (connection lost, DNS, socket errors).
        case io
        /// The network thread stopped.
        case loopExited
        /// The client has been shut down with ``MQTTClient/disconnect()``.
        case shutdown
        /// The calling task was cancelled (``MQTTClient/connect()``).
        case cancelled
        /// Anything else.
        case other
    }

    /// The kind of failure.
    public var code: Code
    /// What happened, in words a person can act on.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Creates an error.
    public init(code: Code, message: String) {
        self.init(code, message)
    }

    public var description: String { message }
}

// MARK: - Mapping libmosquitto results

extension MQTTError {
    /// The error for a `mosq_err_t` result.
    ///
    /// - Parameters:
    ///   - rc: the `mosq_err_t` value.
    ///   - errno: the `errno` read right after the call (used for `MOSQ_ERR_ERRNO`).
    ///   - context: what was being done, e.g. "publishing to a/b".
    static func mosquitto(_ rc: Int32, errno savedErrno: Int32 = 0, _ context: String) -> MQTTError {
        let text: String
        if rc == MOSQ_ERR_ERRNO.rawValue {
            text = savedErrno != 0 ? String(cString: strerror(savedErrno)) : "system error"
        } else {
            text = String(cString: mosquitto_strerror(rc))
        }
        var suffix = "mosq_err_t \(rc)"
        if rc == MOSQ_ERR_ERRNO.rawValue, savedErrno != 0 { suffix += ", errno \(savedErrno)" }
        return MQTTError(code(forMosquittoError: rc, errno: savedErrno), "\(context): \(text) (\(suffix))")
    }

    /// The ``Code`` for a `mosq_err_t`.
    static func code(forMosquittoError rc: Int32, errno savedErrno: Int32 = 0) -> Code {
        switch mosq_err_t(rawValue: rc) {
        case MOSQ_ERR_NO_CONN: return .notConnected
        case MOSQ_ERR_CONN_REFUSED: return .connectionRefused
        case MOSQ_ERR_INVAL, MOSQ_ERR_PAYLOAD_SIZE, MOSQ_ERR_MALFORMED_UTF8, MOSQ_ERR_QOS_NOT_SUPPORTED,
            MOSQ_ERR_OVERSIZE_PACKET, MOSQ_ERR_NOT_SUPPORTED, MOSQ_ERR_RETAIN_NOT_SUPPORTED,
            MOSQ_ERR_TOPIC_ALIAS_INVALID:
            return .invalidArgument
        case MOSQ_ERR_PROTOCOL, MOSQ_ERR_MALFORMED_PACKET, MOSQ_ERR_DUPLICATE_PROPERTY:
            return .protocolError
        case MOSQ_ERR_TLS, MOSQ_ERR_TLS_HANDSHAKE, MOSQ_ERR_OCSP: return .tls
        case MOSQ_ERR_TIMEOUT: return .timeout
        case MOSQ_ERR_AUTH: return .badCredentials
        case MOSQ_ERR_ACL_DENIED: return .notAuthorized
        case MOSQ_ERR_CONN_LOST, MOSQ_ERR_EAI, MOSQ_ERR_KEEPALIVE, MOSQ_ERR_LOOKUP:
            return .io
        case MOSQ_ERR_ERRNO:
            if savedErrno == EPROTO { return .tls }
            if savedErrno == ECONNREFUSED { return .connectionRefused }
            if savedErrno == ETIMEDOUT { return .timeout }
            return .io
        default: return .other
        }
    }

    /// The error for a refused CONNACK.
    ///
    /// - Parameters:
    ///   - reason: the CONNACK return code (3.1.1: 1...5) or reason code (MQTT 5: >= 0x80).
    ///   - version: the protocol version in use, which decides how `reason` reads.
    static func connack(_ reason: Int32, version: MQTTVersion) -> MQTTError {
        switch version {
        case .v3_1_1:
            let text = String(cString: mosquitto_connack_string(reason))
            let tag = "CONNACK return code \(reason): \(text)"
            switch reason {
            case 1:
                return MQTTError(.protocolError, "the broker does not accept MQTT 3.1.1 (\(tag))")
            case 2:
                return MQTTError(.invalidArgument, "the broker rejected the client id (\(tag)); choose another client id")
            case 3:
                return MQTTError(.connectionRefused, "the broker is unavailable (\(tag)); try again later")
            case 4:
                return MQTTError(.badCredentials, "the broker refused the username or password (\(tag)); check --username / --password-file")
            case 5:
                return MQTTError(.notAuthorized, "the broker refused the connection as not authorised (\(tag)); mosquitto answers a wrong username or password this way too: check --username / --password-file, then the broker's allow_anonymous / ACL settings")
            default:
                return MQTTError(.connectionRefused, "the broker refused the connection (\(tag))")
            }
        case .v5:
            let text = String(cString: mosquitto_reason_string(reason))
            let tag = "reason \(reason): \(text)"
            switch UInt32(truncatingIfNeeded: reason) {
            case MQTT_RC_BAD_USERNAME_OR_PASSWORD.rawValue:
                return MQTTError(.badCredentials, "the broker refused the username or password (\(tag)); check --username / --password-file")
            case MQTT_RC_NOT_AUTHORIZED.rawValue:
                return MQTTError(.notAuthorized, "the broker refused the connection as not authorised (\(tag)); mosquitto answers a wrong username or password this way too: check --username / --password-file, then the broker's allow_anonymous / ACL settings")
            case MQTT_RC_BAD_AUTHENTICATION_METHOD.rawValue:
                return MQTTError(.badCredentials, "the broker refused the authentication method (\(tag))")
            case MQTT_RC_BANNED.rawValue:
                return MQTTError(.notAuthorized, "the broker has banned this client (\(tag))")
            case MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION.rawValue:
                return MQTTError(.protocolError, "the broker does not accept MQTT 5 (\(tag)); try the MQTT 3.1.1 setting")
            case MQTT_RC_CLIENTID_NOT_VALID.rawValue:
                return MQTTError(.invalidArgument, "the broker rejected the client id (\(tag)); choose another client id")
            case MQTT_RC_SERVER_UNAVAILABLE.rawValue, MQTT_RC_SERVER_BUSY.rawValue,
                MQTT_RC_USE_ANOTHER_SERVER.rawValue, MQTT_RC_SERVER_MOVED.rawValue,
                MQTT_RC_CONNECTION_RATE_EXCEEDED.rawValue, MQTT_RC_QUOTA_EXCEEDED.rawValue:
                return MQTTError(.connectionRefused, "the broker cannot take the connection now (\(tag)); try again later")
            default:
                return MQTTError(.connectionRefused, "the broker refused the connection (\(tag))")
            }
        }
    }
}

extension MQTTError {
    /// "reason 142: Session taken over" for an MQTT 5 reason code.
    static func reasonText(_ reason: Int32) -> String {
        "reason \(reason): \(String(cString: mosquitto_reason_string(reason)))"
    }
}

extension MQTTError {
    /// What a person should do about a failed TLS handshake, from OpenSSL's text: advice about
    /// the client certificate when that is the problem, else the CA file / host name hint.
    ///
    /// OpenSSL reports the broker's verdict on the client certificate as a TLS alert:
    /// "tlsv13 alert certificate required" (none sent; TLS 1.2 says "alert handshake
    /// failure"), "alert unknown ca" / "bad certificate" / "certificate expired" ... (sent,
    /// refused). "key values mismatch" comes from loading a key that is not the certificate's.
    ///
    /// With TLS 1.3 the client's side of the handshake is over before the broker checks
    /// the client certificate, so the client sends CONNECT at once; a broker that refuses
    /// the certificate sends its alert and closes with that CONNECT unread, which resets the
    /// connection, and the reset can discard the alert before OpenSSL reads it. The client
    /// then sees only a reset or protocol error with no OpenSSL text (`reasonUnread`): every
    /// check the client makes itself (the broker's certificate, its name) does log a text,
    /// so what is left is the broker's verdict on the client certificate.
    static func tlsHandshakeAdvice(_ text: String, certificateConfigured: Bool, reasonUnread: Bool = false) -> String {
        if reasonUnread {
            return certificateConfigured
                ? "the broker reset the connection without a TLS alert the client could read, as it does when it refused the client certificate (certificateFile / cert_file): it must be signed by a CA in the broker's cafile, be valid now and allow client authentication (extendedKeyUsage clientAuth); the broker's log says why"
                : "the broker reset the connection without a TLS alert the client could read, as a broker that requires a client certificate does: set certificateFile and keyFile (cert_file / key_file in the node's broker settings) to a certificate signed by a CA the broker trusts (its cafile) and its key; the broker's log says why"
        }
        if text.contains("alert certificate required") || (!certificateConfigured && text.contains("alert handshake failure")) {
            let verb = text.contains("alert certificate required") ? "requires" : "may require"
            return "the broker \(verb) a client certificate: set certificateFile and keyFile (cert_file / key_file in the node's broker settings) to a certificate signed by a CA the broker trusts (its cafile) and its key"
        }
        if certificateConfigured, text.contains("key values mismatch") {
            return "the client key (keyFile / key_file) does not belong to the client certificate (certificateFile / cert_file): give the key the certificate was made for"
        }
        if certificateConfigured,
            ["alert unknown ca", "alert bad certificate", "alert certificate unknown", "alert unsupported certificate",
             "alert certificate expired", "alert certificate revoked", "alert access denied"].contains(where: text.contains)
        {
            return "the broker refused the client certificate (certificateFile / cert_file): it must be signed by a CA in the broker's cafile, be valid now and allow client authentication (extendedKeyUsage clientAuth)"
        }
        return "check the CA file and that the broker's certificate names this host"
    }
}

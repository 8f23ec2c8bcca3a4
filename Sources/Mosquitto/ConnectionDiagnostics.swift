import CMosquitto
import Foundation

/// What the callbacks tell about the current connection attempt, and the error, in words,
/// that its end becomes.
///
/// Invariants:
/// - The facts describe one attempt: ``attemptStarting()`` clears them before every
///   `mosquitto_connect_bind_v5`.
/// - A DISCONNECT reason from the broker wins over every other explanation; a TLS
///   explanation is given only before the broker answered the CONNECT; OpenSSL's text (only
///   ever in libmosquitto's log) is quoted when there is one.
///
/// A plain value; it only reads libmosquitto's static error strings.
///
/// Threading: none of its own; it lives inside ``MQTTConnectionStateMachine``, behind the
/// client core's `Mutex`, and is fed from callbacks on the network thread.
struct ConnectionDiagnostics {
    /// "host:port", for messages.
    let endpoint: String
    let tlsConfigured: Bool
    /// Whether a client certificate is configured (for the advice of a failed handshake).
    let clientCertificateConfigured: Bool

    /// A reason code the broker sent in a DISCONNECT (MQTT 5), 0x80 and above.
    private(set) var serverDisconnectReason: Int32?
    /// The last error or warning libmosquitto logged (OpenSSL errors land here).
    private(set) var lastLoggedProblem: String?

    init(endpoint: String, tlsConfigured: Bool, clientCertificateConfigured: Bool) {
        self.endpoint = endpoint
        self.tlsConfigured = tlsConfigured
        self.clientCertificateConfigured = clientCertificateConfigured
    }

    /// A new attempt starts: forget the last one's facts.
    mutating func attemptStarting() {
        serverDisconnectReason = nil
        lastLoggedProblem = nil
    }

    /// on_disconnect: remember an error reason code the broker sent in a DISCONNECT.
    mutating func disconnectReceived(reason: Int32) {
        if reason >= 0x80 { serverDisconnectReason = reason }
    }

    /// on_log: remember the last error or warning line.
    mutating func logged(problem: String) {
        lastLoggedProblem = problem
    }

    /// Errors that retrying cannot fix (libmosquitto's loop_forever also gives up on these).
    static func isFatal(_ rc: Int32) -> Bool {
        switch rc {
        case MOSQ_ERR_NOMEM.rawValue, MOSQ_ERR_INVAL.rawValue, MOSQ_ERR_NOT_SUPPORTED.rawValue, MOSQ_ERR_UNKNOWN.rawValue:
            return true
        default:
            return false
        }
    }

    /// The error that ended a connection (or attempt) with `rc` (`mosq_err_t`) and `errno`.
    /// `connectFailed`: `mosquitto_connect_bind_v5` itself failed; `connackSeen`: the broker
    /// answered this connection's CONNECT.
    func error(endingWith rc: Int32, errno: Int32, connectFailed: Bool = false, connackSeen: Bool) -> MQTTError {
        if let reason = serverDisconnectReason {
            return MQTTError(
                .io, "the broker closed the connection (\(MQTTError.reasonText(reason)))")
        }
        let looksLikeTLS =
            rc == MOSQ_ERR_TLS.rawValue || rc == MOSQ_ERR_TLS_HANDSHAKE.rawValue
            || (rc == MOSQ_ERR_ERRNO.rawValue && errno == EPROTO)
            || (lastLoggedProblem.map { $0.contains("SSL") || $0.contains("certificate") } ?? false)
        if tlsConfigured, !connackSeen, looksLikeTLS {
            let detail = lastLoggedProblem ?? MQTTError.mosquitto(rc, errno: errno, "TLS").message
            // A protocol error with no OpenSSL text: the broker broke the connection off.
            let reasonUnread = lastLoggedProblem == nil && rc == MOSQ_ERR_ERRNO.rawValue && errno == EPROTO
            let advice = MQTTError.tlsHandshakeAdvice(
                detail, certificateConfigured: clientCertificateConfigured, reasonUnread: reasonUnread)
            return MQTTError(.tls, "the TLS handshake with \(endpoint) failed: \(detail) (mosq_err_t \(rc)); \(advice)")
        }
        if !connackSeen, rc == MOSQ_ERR_CONN_LOST.rawValue || rc == MOSQ_ERR_NO_CONN.rawValue, tlsConfigured == false,
            let problem = lastLoggedProblem
        {
            return MQTTError(.io, "the connection to \(endpoint) closed before the broker answered: \(problem) (mosq_err_t \(rc))")
        }
        if connectFailed {
            return MQTTError.mosquitto(rc, errno: errno, "connecting to \(endpoint)")
        }
        return MQTTError.mosquitto(rc, errno: errno, "the connection to \(endpoint) ended")
    }
}

import Foundation
import Testing

@testable import Mosquitto

@Suite("ConnectionDiagnostics (no broker)")
struct ConnectionDiagnosticsTests {
    func diagnostics(tls: Bool = false) -> ConnectionDiagnostics {
        ConnectionDiagnostics(endpoint: "127.0.0.1:1883", tlsConfigured: tls, clientCertificateConfigured: false)
    }

    @Test("the broker's DISCONNECT reason explains the end; a new attempt forgets it")
    func serverReason() {
        var facts = diagnostics()
        facts.disconnectReceived(reason: 0)  // a normal DISCONNECT is no explanation
        #expect(facts.serverDisconnectReason == nil)
        facts.disconnectReceived(reason: 142)
        let error = facts.error(endingWith: 7, errno: 0, connackSeen: true)
        #expect(error.code == .io && error.message.contains("reason 142"), "\(error)")
        facts.attemptStarting()
        let plain = facts.error(endingWith: 7, errno: 0, connackSeen: true)
        #expect(plain.message.contains("the connection to 127.0.0.1:1883 ended"), "\(plain)")
    }

    @Test("a plain connection closed before the CONNACK quotes libmosquitto's log; TLS wording only with TLS and before the CONNACK")
    func beforeConnack() {
        var facts = diagnostics()
        facts.logged(problem: "Client sent a malformed packet")
        let closed = facts.error(endingWith: 7, errno: 0, connackSeen: false)
        #expect(closed.message.contains("closed before the broker answered: Client sent a malformed packet"), "\(closed)")
        var tls = diagnostics(tls: true)
        tls.logged(problem: "OpenSSL Error[0]: certificate verify failed")
        let handshake = tls.error(endingWith: 8, errno: 0, connackSeen: false)
        #expect(handshake.code == .tls && handshake.message.contains("TLS handshake with 127.0.0.1:1883 failed: OpenSSL"), "\(handshake)")
        let later = tls.error(endingWith: 8, errno: 0, connackSeen: true)
        #expect(!later.message.contains("handshake"), "\(later)")
        let refused = diagnostics().error(endingWith: 14, errno: ECONNREFUSED, connectFailed: true, connackSeen: false)
        #expect(refused.code == .connectionRefused && refused.message.hasPrefix("connecting to 127.0.0.1:1883"), "\(refused)")
    }

    @Test("only errors retrying cannot fix are fatal")
    func fatal() {
        #expect([1, 3, 10, 13].allSatisfy(ConnectionDiagnostics.isFatal))
        #expect(![2, 4, 7, 8, 14, 15].contains(where: ConnectionDiagnostics.isFatal))
    }
}

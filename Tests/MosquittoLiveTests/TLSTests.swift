import Foundation
import Mosquitto
import PacerTestSupport
import Testing

extension BrokerTests {
    @Test("TLS: connects with the broker's CA file; fails with a clear .tls error when the CA is not trusted")
    func tls() async throws {
        try await withTestBroker(TestBrokerOptions(tls: true)) { broker in
            let caFile = try #require(broker.caFile)
            var config = configuration(broker)
            config.tls = MQTTTLSConfiguration(caFile: caFile)
            let client = try await ConnectedClient(config)
            let topic = unique("tls")
            try await client.client.subscribe(to: topic)
            #expect(try await client.publishAndWaitForEcho(to: topic, payload: Array("over TLS".utf8)))
            await client.client.disconnect()

            // The system CA store does not know the test CA.
            var untrusted = configuration(broker)
            untrusted.tls = MQTTTLSConfiguration()
            untrusted.connectTimeout = .seconds(60)
            let rejected = try await ConnectedClient(untrusted, connect: false)
            var thrown: MQTTError?
            let elapsed = await measure {
                thrown = await #expect(throws: MQTTError.self) { try await rejected.client.connect() }
            }
            let error = try #require(thrown)
            print("untrusted CA: \(error.code): \(error.message)")
            #expect(error.code == .tls, "\(error)")
            #expect(error.message.contains("certificate verify failed"), "\(error.message)")
            #expect(elapsed < .seconds(30), "a TLS failure should fail fast (connectTimeout is 60 s), took \(elapsed)")
            await rejected.client.disconnect()

            // A CA file that does not exist is caught when the client is made.
            var missing = configuration(broker)
            missing.tls = MQTTTLSConfiguration(caFile: broker.directory.appendingPathComponent("nope.crt").path)
            let missingError = #expect(throws: MQTTError.self) { _ = try MQTTClient(configuration: missing) }
            #expect(missingError?.code == .tls)
        }
    }
}

// MARK: - Client certificates

/// A TLS broker that demands a client certificate from its CA and takes the certificate's
/// common name as the username (so its log shows which certificate a client used).
private let certificateBroker = TestBrokerOptions(tls: true, requireClientCertificate: true, useIdentityAsUsername: true)

/// A TLS configuration for `broker` with `certificate` (or none).
private func tlsConfiguration(
    _ broker: TestBroker, version: MQTTVersion = .v5, certificate: TestClientCertificate? = nil
) throws -> MQTTConfiguration {
    let caFile: String = try #require(broker.caFile)
    var config = configuration(broker, version: version)
    config.tls = MQTTTLSConfiguration(
        caFile: caFile, certificateFile: certificate?.certificateFile, keyFile: certificate?.keyFile)
    // Long, so that "fails fast" bounds tell a TLS failure from a timeout even on a loaded runner.
    config.connectTimeout = .seconds(60)
    return config
}

/// Connects with `config`, expecting `connect()` to throw quickly; returns the error.
private func expectRefusedConnect(_ config: MQTTConfiguration, _ label: String) async throws -> MQTTError {
    let client = try await ConnectedClient(config, connect: false)
    var thrown: MQTTError?
    let elapsed = await measure {
        thrown = await #expect(throws: MQTTError.self) { try await client.client.connect() }
    }
    await client.client.disconnect()
    let error = try #require(thrown)
    print("\(label): \(error.code): \(error.message)")
    // Far below connectTimeout: the TLS failure ended the wait, not a timeout.
    #expect(elapsed < .seconds(30), "\(label) should fail fast (connectTimeout is \(config.connectTimeout)), took \(elapsed)")
    #expect(!client.events.all.contains { $0.isConnected }, "\(client.events.all)")
    return error
}

extension BrokerTests {
    @Test("TLS client certificate from the broker's CA: connects, the broker takes its CN as the username, messages flow",
          arguments: [MQTTVersion.v5, .v3_1_1])
    func clientCertificate(version: MQTTVersion) async throws {
        try await withTestBroker(certificateBroker) { broker in
            let commonName = unique("pacer-node")
            let certificate = try broker.makeClientCertificate(commonName: commonName)
            let client = try await ConnectedClient(try tlsConfiguration(broker, version: version, certificate: certificate))
            #expect(client.client.isConnected)
            // The broker used this very certificate: its CN became the username.
            #expect(await broker.waitForLog(containing: "u'\(commonName)'"), "\(broker.log)")
            let topic = unique("cert")
            try await client.client.subscribe(to: topic)
            #expect(try await client.publishAndWaitForEcho(to: topic, payload: Array("with a client certificate".utf8)))
            await client.client.disconnect()
        }
    }

    @Test("TLS without a client certificate on a broker that requires one: connect() throws .tls at once, naming the client certificate")
    func clientCertificateMissing() async throws {
        try await withTestBroker(certificateBroker) { broker in
            let error = try await expectRefusedConnect(try tlsConfiguration(broker), "no client certificate")
            #expect(error.code == .tls, "\(error)")
            #expect(error.message.contains("requires a client certificate"), "\(error.message)")
            #expect(error.message.contains("cert_file") && error.message.contains("key_file"), "\(error.message)")
            // The generic CA file / host name hint would point the wrong way here.
            #expect(!error.message.contains("names this host"), "\(error.message)")
            // Refused because of the certificate: the broker says so, ...
            #expect(await broker.waitForLog(containing: "peer did not return a certificate"), "\(broker.log)")
            // ... and the same configuration with a certificate connects (CA, host, port are right).
            let certificate = try broker.makeClientCertificate()
            let accepted = try await ConnectedClient(try tlsConfiguration(broker, certificate: certificate))
            #expect(accepted.client.isConnected)
            await accepted.client.disconnect()
        }
    }

    @Test("TLS client certificate from a CA the broker does not trust: connect() throws .tls at once, saying the broker refused it")
    func clientCertificateUntrusted() async throws {
        try await withTestBroker(certificateBroker) { broker in
            let commonName = unique("pacer-node")
            // Same CN, and a CA with the same name as the broker's: only the signing key differs.
            let untrusted = try broker.makeClientCertificate(commonName: commonName, trusted: false)
            #expect(untrusted.caFile != broker.caFile)
            let error = try await expectRefusedConnect(try tlsConfiguration(broker, certificate: untrusted), "untrusted client CA")
            #expect(error.code == .tls, "\(error)")
            // OpenSSL's "alert unknown ca" when the client read the alert; when the broker's reset
            // discarded it first, the message says so (see MQTTError.tlsHandshakeAdvice).
            #expect(error.message.contains("alert unknown ca") || error.message.contains("without a TLS alert the client could read"),
                    "\(error.message)")
            #expect(error.message.contains("refused the client certificate"), "\(error.message)")
            #expect(error.message.contains("cert_file") && error.message.contains("cafile"), "\(error.message)")
            #expect(!error.message.contains("names this host"), "\(error.message)")
            // The broker refused it for its CA ("certificate verify failed" is its own check).
            #expect(await broker.waitForLog(containing: "certificate verify failed"), "\(broker.log)")
            #expect(!broker.log.contains("u'\(commonName)'"))
            // The same CN from the broker's CA connects: it was the CA, not the name.
            let trusted = try broker.makeClientCertificate(commonName: commonName)
            let accepted = try await ConnectedClient(try tlsConfiguration(broker, certificate: trusted))
            #expect(accepted.client.isConnected)
            #expect(await broker.waitForLog(containing: "u'\(commonName)'"), "\(broker.log)")
            await accepted.client.disconnect()
        }
    }

    @Test("TLS client certificate or key file missing, a directory, not PEM, swapped or encrypted: MQTTClient.init throws .tls naming the setting, before any network I/O")
    func clientCertificateFiles() async throws {
        try await withTestBroker(certificateBroker) { broker in
            let good = try broker.makeClientCertificate()
            let encrypted = try broker.makeClientCertificate(keyPassphrase: "secret")
            let missing = broker.directory.appendingPathComponent("nope.pem").path
            let notPEM = broker.directory.appendingPathComponent("not-pem.txt").path
            try "not a certificate\n".write(toFile: notPEM, atomically: false, encoding: .utf8)
            // MQTTClient.init never touches the network (connect() does), so a throw from init
            // is before any network I/O. libmosquitto alone lets the directory, non-PEM,
            // swapped and encrypted cases through init and fails them after a TCP connect.
            let cases: [(label: String, certificate: String, key: String, expected: [String])] = [
                ("missing certificate", missing, good.keyFile, ["client certificate file", "cert_file", missing, "does not exist"]),
                ("missing key", good.certificateFile, missing, ["client key file", "key_file", missing, "does not exist"]),
                ("directory as certificate", broker.directory.path, good.keyFile, ["client certificate file", "is a directory"]),
                ("certificate not PEM", notPEM, good.keyFile, ["client certificate file", notPEM, "no PEM certificate"]),
                ("key not PEM", good.certificateFile, notPEM, ["client key file", notPEM, "no PEM private key"]),
                ("swapped", good.keyFile, good.certificateFile, ["client certificate file", "swapped"]),
                ("encrypted key", good.certificateFile, encrypted.keyFile, ["client key file", "is encrypted", "openssl pkey"]),
            ]
            for (label, certificate, key, expected) in cases {
                var config = try tlsConfiguration(broker)
                config.tls?.certificateFile = certificate
                config.tls?.keyFile = key
                let error = #expect(throws: MQTTError.self, "\(label)") { _ = try MQTTClient(configuration: config) }
                print("\(label): \(error.map { "\($0.code): \($0.message)" } ?? "no error")")
                #expect(error?.code == .tls, "\(label): \(String(describing: error))")
                for text in expected {
                    #expect(error?.message.contains(text) == true, "\(label): \(String(describing: error?.message)) lacks \(text)")
                }
            }
            // A certificate without its key is a configuration error.
            var halfConfigured = try tlsConfiguration(broker)
            halfConfigured.tls?.certificateFile = good.certificateFile
            let half = #expect(throws: MQTTError.self) { _ = try MQTTClient(configuration: halfConfigured) }
            #expect(half?.code == .invalidArgument)

            // The good pair still works, so each refusal above was about its file.
            let accepted = try await ConnectedClient(try tlsConfiguration(broker, certificate: good))
            #expect(accepted.client.isConnected)
            await accepted.client.disconnect()
        }
    }

    @Test("TLS client key that is not the certificate's: connect() throws .tls at once, saying the key does not belong to the certificate")
    func clientCertificateKeyMismatch() async throws {
        try await withTestBroker(certificateBroker) { broker in
            let one = try broker.makeClientCertificate()
            let other = try broker.makeClientCertificate()
            // Both files are fine on their own; only OpenSSL, at connect time, can tell they do not match.
            var config = try tlsConfiguration(broker, certificate: one)
            config.tls?.keyFile = other.keyFile
            let error = try await expectRefusedConnect(config, "key of another certificate")
            #expect(error.code == .tls, "\(error)")
            #expect(error.message.contains("key values mismatch"), "\(error.message)")
            #expect(error.message.contains("does not belong to the client certificate"), "\(error.message)")
            // The client gave up before TLS: the broker never saw a certificate or a CONNECT.
            #expect(!broker.log.contains("New client connected"), "\(broker.log)")
        }
    }
}

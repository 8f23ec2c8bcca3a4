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
            untrusted.connectTimeout = .seconds(5)
            let rejected = try await ConnectedClient(untrusted, connect: false)
            var thrown: MQTTError?
            let elapsed = await measure {
                thrown = await #expect(throws: MQTTError.self) { try await rejected.client.connect() }
            }
            let error = try #require(thrown)
            print("untrusted CA: \(error.code): \(error.message)")
            #expect(error.code == .tls, "\(error)")
            #expect(error.message.contains("certificate verify failed"), "\(error.message)")
            #expect(elapsed < .seconds(4), "a TLS failure should fail fast, took \(elapsed)")
            await rejected.client.disconnect()

            // A CA file that does not exist is caught when the client is made.
            var missing = configuration(broker)
            missing.tls = MQTTTLSConfiguration(caFile: broker.directory.appendingPathComponent("nope.crt").path)
            let missingError = #expect(throws: MQTTError.self) { _ = try MQTTClient(configuration: missing) }
            #expect(missingError?.code == .tls)
        }
    }
}

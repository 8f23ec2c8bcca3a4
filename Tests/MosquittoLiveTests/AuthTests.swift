import Foundation
import Mosquitto
import PacerTestSupport
import Testing

extension BrokerTests {
    @Test("a wrong password makes connect() throw badCredentials/notAuthorized at once, without retrying; the right one works",
          arguments: [MQTTVersion.v5, .v3_1_1])
    func wrongPassword(version: MQTTVersion) async throws {
        try await withTestBroker(TestBrokerOptions(users: ["pacer": "s3cret", "display": "pw"])) { broker in
            var config = configuration(broker, version: version)
            config.username = "pacer"
            config.password = "wrong"
            config.connectTimeout = .seconds(60)
            let refused = try await ConnectedClient(config, connect: false)
            var thrown: MQTTError?
            let elapsed = await measure {
                thrown = await #expect(throws: MQTTError.self) { try await refused.client.connect() }
            }
            let error = try #require(thrown)
            print("wrong password, \(version): \(error.code): \(error.message)")
            // About 0.1 s on an idle machine (4 s was seen on a machine loaded far beyond its
            // cores). The bound is generous for a loaded CI runner yet far below connectTimeout
            // (60 s): the refusal ended the wait, not a timeout or a retry loop (the error code
            // below and the single refusal event check that too).
            #expect(elapsed < .seconds(30), "took \(elapsed)")
            #expect([.badCredentials, .notAuthorized].contains(error.code), "\(error)")
            #expect(error.message.contains("refused") || error.message.contains("not authorised"))
            #expect(error.message.contains(version == .v5 ? "reason 13" : "return code"), "\(error.message)")
            #expect(!refused.client.isConnected)
            let event = try #require(await refused.events.first { if case .refused = $0 { true } else { false } })
            #expect(event == .refused(error))
            // No silent retry: with a 100 ms backoff a retry would show up as more refusals.
            try await Task.sleep(for: .milliseconds(800))
            #expect(refused.events.all.count == 1, "\(refused.events.all)")
            await refused.client.disconnect()

            config.password = "s3cret"
            let accepted = try await ConnectedClient(config)
            #expect(accepted.client.isConnected)
            let topic = unique("auth")
            try await accepted.client.subscribe(to: topic)
            #expect(try await accepted.publishAndWaitForEcho(to: topic, payload: [1, 2, 3]))
            await accepted.client.disconnect()

            // No credentials at all on a broker that needs them.
            let anonymous = try await ConnectedClient(configuration(broker, version: version), connect: false)
            let anonymousError = await #expect(throws: MQTTError.self) { try await anonymous.client.connect() }
            #expect([.badCredentials, .notAuthorized].contains(anonymousError?.code))
            await anonymous.client.disconnect()
        }
    }
}

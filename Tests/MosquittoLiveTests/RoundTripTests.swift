import Foundation
import Mosquitto
import PacerTestSupport
import Testing

/// Every test that talks to a real broker is in this suite, run one at a time so that
/// timing bounds hold on a busy machine. Each test starts its own broker.
@Suite("MQTT client against a real mosquitto", .serialized)
struct BrokerTests {}

extension BrokerTests {
    @Test("publish/subscribe round trip keeps payload bytes", arguments: [MQTTVersion.v5, .v3_1_1], MQTTQoS.allCases)
    func roundTrip(version: MQTTVersion, qos: MQTTQoS) async throws {
        try await withTestBroker { broker in
            let subscriber = try await ConnectedClient(configuration(broker, version: version))
            let publisher = try await ConnectedClient(configuration(broker, version: version))
            let base = unique("rt")
            try await subscriber.client.subscribe(to: "\(base)/#", qos: .exactlyOnce)

            let payloads: [[UInt8]] = [
                Array("hello, 世界".utf8),
                [0, 1, 2, 0x7F, 0x80, 0xFE, 0xFF, 0],
                [],
                Array(repeating: 0xA5, count: 100_000),
            ]
            for (index, payload) in payloads.enumerated() {
                try await publisher.client.publish(to: "\(base)/\(index)", payload: payload, qos: qos)
            }
            for (index, payload) in payloads.enumerated() {
                let received = try #require(await subscriber.messages.message(on: "\(base)/\(index)"))
                #expect(received.payload == payload)
                #expect(received.qos == qos)
                #expect(received.retain == false)
            }
            #expect(subscriber.messages.all.count == payloads.count)
            #expect(subscriber.messages.all.first?.payloadString == "hello, 世界")
            await publisher.client.disconnect()
            await subscriber.client.disconnect()
        }
    }
}

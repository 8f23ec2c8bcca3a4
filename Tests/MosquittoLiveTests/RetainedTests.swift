import Foundation
import Mosquitto
import PacerTestSupport
import Testing

extension BrokerTests {
    @Test("a retained message reaches a late subscriber; an empty retained payload clears it",
          arguments: [MQTTVersion.v5, .v3_1_1])
    func retainedMessages(version: MQTTVersion) async throws {
        try await withTestBroker { broker in
            let topic = unique("retained")
            let publisher = try await ConnectedClient(configuration(broker, version: version))
            try await publisher.client.subscribe(to: topic)
            #expect(try await publisher.publishAndWaitForEcho(to: topic, payload: Array("r1".utf8), retain: true))

            let late = try await ConnectedClient(configuration(broker, version: version))
            try await late.client.subscribe(to: topic)
            let retained = try #require(await late.messages.message(on: topic))
            #expect(retained.payloadString == "r1")
            #expect(retained.retain)

            // Clear it: an empty retained publish.
            #expect(try await publisher.publishAndWaitForEcho(to: topic, payload: [], retain: true))

            let later = try await ConnectedClient(configuration(broker, version: version))
            try await later.client.subscribe(to: topic)
            // Anything retained would be delivered before a message published after the
            // SUBACK, so the marker must be the first message on the topic.
            try await publisher.client.publish(to: topic, string: "marker", qos: .atLeastOnce)
            let first = try #require(await later.messages.message(on: topic))
            #expect(first.payloadString == "marker")
            #expect(first.retain == false)

            for client in [publisher, late, later] { await client.client.disconnect() }
        }
    }
}

import Foundation
import Mosquitto
import PacerTestSupport
import Testing

extension BrokerTests {
    static let fullProperties = MQTTProperties(
        responseTopic: "pacer/replies/phone-1",
        correlationData: [0x00, 0x01, 0xFE, 0xFF, 0x00],
        messageExpiryInterval: 300,
        contentType: "application/json",
        userProperties: [
            MQTTUserProperty(name: "request-id", value: "42"),
            MQTTUserProperty(name: "tag", value: "a"),
            MQTTUserProperty(name: "tag", value: "b"),
        ])

    @Test("MQTT 5 response topic, correlation data, user properties, content type and expiry survive a round trip")
    func propertiesRoundTrip() async throws {
        try await withTestBroker { broker in
            let topic = unique("props")
            let subscriber = try await ConnectedClient(configuration(broker))
            try await subscriber.client.subscribe(to: topic)
            let publisher = try await ConnectedClient(configuration(broker))
            try await publisher.client.publish(
                to: topic, string: #"{"action":"start"}"#, qos: .atLeastOnce, properties: Self.fullProperties)
            let message = try #require(await subscriber.messages.message(on: topic))
            var expected = Self.fullProperties
            let expiry = try #require(message.properties.messageExpiryInterval)
            #expect((295...300).contains(expiry))
            expected.messageExpiryInterval = expiry
            #expect(message.properties == expected)
            #expect(message.payloadString == #"{"action":"start"}"#)
            // A message without properties has none.
            try await publisher.client.publish(to: topic, string: "plain", qos: .atLeastOnce)
            let plain = try #require(await subscriber.messages.first { $0.payloadString == "plain" })
            #expect(plain.properties == .none)
            await publisher.client.disconnect()
            await subscriber.client.disconnect()
        }
    }

    @Test("MQTT 5 Maximum Packet Size: the broker drops a larger message for the client, never sends it")
    func maximumPacketSize() async throws {
        try await withTestBroker { broker in
            let topic = unique("maxpacket")
            var limited = configuration(broker)
            limited.maximumPacketSize = 4096
            let subscriber = try await ConnectedClient(limited)
            try await subscriber.client.subscribe(to: topic)
            let publisher = try await ConnectedClient(configuration(broker))
            try await publisher.client.publish(to: topic, payload: Array(repeating: 0x78, count: 10_000), qos: .atLeastOnce)
            try await publisher.client.publish(to: topic, string: "small", qos: .atLeastOnce)
            let first = try #require(await subscriber.messages.message(on: topic))
            #expect(first.payload.count == 5, "the 10,000-byte message reached the client: \(first.payload.count) bytes")
            await publisher.client.disconnect()
            await subscriber.client.disconnect()
        }
    }

    @Test("MQTT 3.1.1 round trip works; properties are not sent")
    func v311IgnoresProperties() async throws {
        try await withTestBroker { broker in
            let topic = unique("v311")
            let subscriber = try await ConnectedClient(configuration(broker, version: .v3_1_1))
            try await subscriber.client.subscribe(to: topic, qos: .exactlyOnce)
            let publisher = try await ConnectedClient(configuration(broker, version: .v3_1_1))
            try await publisher.client.publish(to: topic, string: "hi", qos: .exactlyOnce, properties: Self.fullProperties)
            let message = try #require(await subscriber.messages.message(on: topic))
            #expect(message.payloadString == "hi")
            #expect(message.qos == .exactlyOnce)
            #expect(message.properties == .none)
            // An MQTT 5 subscriber sees none either: the 3.1.1 publisher sent none.
            let v5 = try await ConnectedClient(configuration(broker))
            try await v5.client.subscribe(to: topic)
            try await publisher.client.publish(to: topic, string: "again", qos: .atLeastOnce, properties: Self.fullProperties)
            let again = try #require(await v5.messages.message(on: topic))
            #expect(again.properties == .none)
            for client in [publisher, subscriber, v5] { await client.client.disconnect() }
        }
    }

    @Test("properties cross-checked with mosquitto_pub and mosquitto_sub (an independent MQTT 5 implementation)")
    func propertiesCrossCheck() async throws {
        try await withTestBroker { broker in
            let topic = unique("cross")
            let node = try await ConnectedClient(configuration(broker))
            try await node.client.subscribe(to: "\(topic)/in")

            // mosquitto_pub -> our client
            try await broker.mosquittoPub([
                "-V", "5", "-q", "1", "-t", "\(topic)/in", "-m", "from cli",
                "-D", "publish", "response-topic", "\(topic)/reply",
                "-D", "publish", "correlation-data", "abc",
                "-D", "publish", "content-type", "text/plain",
                "-D", "publish", "message-expiry-interval", "60",
                "-D", "publish", "user-property", "k", "v",
            ])
            let received = try #require(await node.messages.message(on: "\(topic)/in"))
            #expect(received.payloadString == "from cli")
            #expect(received.properties.responseTopic == "\(topic)/reply")
            #expect(received.properties.correlationData == Array("abc".utf8))
            #expect(received.properties.contentType == "text/plain")
            #expect((55...60).contains(received.properties.messageExpiryInterval ?? 0))
            #expect(received.properties.userProperties == [MQTTUserProperty(name: "k", value: "v")])

            // our client -> mosquitto_sub
            let cli = try broker.startMosquittoSub([
                "-V", "5", "-t", "\(topic)/out", "-C", "1", "-F", "%t|%p|%R|%C|%D|%P",
            ])
            #expect(await broker.waitForLog(containing: "as auto-") || true)
            // Publish until mosquitto_sub has subscribed and printed the message.
            let deadline = ContinuousClock.now + .seconds(10)
            while cli.isRunning, ContinuousClock.now < deadline {
                try await node.client.publish(
                    to: "\(topic)/out", string: "to cli", qos: .atLeastOnce,
                    properties: MQTTProperties(
                        responseTopic: "r/t", correlationData: Array("xyz".utf8), contentType: "text/plain",
                        userProperties: [MQTTUserProperty(name: "a", value: "b")]))
                _ = await cli.waitForExit(timeout: .milliseconds(200))
            }
            #expect(cli.output.trimmingCharacters(in: .whitespacesAndNewlines) == "\(topic)/out|to cli|r/t|text/plain|xyz|a:b")
            await cli.kill()
            await node.client.disconnect()
        }
    }
}

import Foundation
import Mosquitto
import PacerTestSupport
import Testing

/// With ``MQTTConfiguration/fallsBackToV3_1_1`` a client reaches a broker that speaks
/// only 3.1.1 (a real mosquitto behind ``V3OnlyGate``, which answers MQTT 5 as RabbitMQ, amqtt
/// and old mosquittos do) and works there: subscriptions, QoS 0 and 1, properties dropped.
extension BrokerTests {
    @Test("MQTT 5 refused, closed or unanswered: the client falls back to 3.1.1, says why, and works",
          arguments: [V3OnlyGate.Answer.close, .silent, .refuse])
    func fallsBack(answer: V3OnlyGate.Answer) async throws {
        try await withTestBroker { broker in
            let gate = try V3OnlyGate.start(forwardingTo: broker.port, answeringMQTT5With: answer)
            defer { gate.stop() }
            var config = configuration(broker, port: gate.port)
            config.fallsBackToV3_1_1 = true
            config.will = MQTTWill(topic: unique("will"), payload: Array("gone".utf8), qos: .atLeastOnce, retain: false)
            let client = try await ConnectedClient(config)
            #expect(client.client.protocolVersion == .v3_1_1)
            let reason = try #require(client.client.versionFallbackReason)
            let expected = switch answer {
            case .close: "closed the connection"
            case .silent: "unanswered"
            case .refuse: "0x84"
            }
            #expect(reason.contains(expected), "\(reason)")
            #expect(gate.connectLevels == [5, 4], "\(gate.connectLevels)")
            // Works as 3.1.1: a round trip at QoS 0 and 1, with properties that 3.1.1 drops.
            let topic = unique("fallback")
            try await client.client.subscribe(to: topic, qos: .atLeastOnce)
            try await client.client.publish(to: topic, string: "zero", qos: .atMostOnce,
                                            properties: MQTTProperties(responseTopic: "r", correlationData: [1]))
            try await client.client.publish(to: topic, string: "one", qos: .atLeastOnce)
            #expect(await client.messages.first { $0.payloadString == "zero" } != nil)
            let one = await client.messages.first { $0.payloadString == "one" }
            #expect(one?.properties.responseTopic == nil)
            await client.client.disconnect()
        }
    }

    @Test("a broker that speaks MQTT 5: no fallback; a configured MQTT 5 refused by a 3.1.1 broker is an error that names the version")
    func noFallback() async throws {
        try await withTestBroker { broker in
            var config = configuration(broker)
            config.fallsBackToV3_1_1 = true
            let client = try await ConnectedClient(config)
            #expect(client.client.protocolVersion == .v5 && client.client.versionFallbackReason == nil)
            await client.client.disconnect()

            let gate = try V3OnlyGate.start(forwardingTo: broker.port, answeringMQTT5With: .refuse)
            defer { gate.stop() }
            let fixed = try MQTTClient(configuration: configuration(broker, port: gate.port))
            do {
                try await fixed.connect()
                Issue.record("connect() succeeded against a broker that refuses MQTT 5")
            } catch {
                #expect("\(error)".lowercased().contains("protocol version"), "\(error)")
            }
            #expect(fixed.protocolVersion == .v5)
            #expect(Set(gate.connectLevels) == [5])
            await fixed.disconnect()
        }
    }
}

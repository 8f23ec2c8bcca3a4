import Foundation
import Mosquitto
import PacerTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension BrokerTests {
    @Test("the will of a client that is SIGKILLed (mosquitto_sub) is delivered to our client")
    func willOfKilledProcess() async throws {
        try await withTestBroker { broker in
            let willTopic = unique("will")
            let watcher = try await ConnectedClient(configuration(broker))
            try await watcher.client.subscribe(to: willTopic, qos: .atLeastOnce)

            let id = unique("doomed")
            let doomed = try broker.startMosquittoSub([
                "-i", id, "-t", unique("idle"), "--will-topic", willTopic, "--will-payload", "gone",
                "--will-qos", "1",
            ])
            #expect(await broker.waitForLog(containing: " as \(id) "), "mosquitto_sub did not connect: \(doomed.output)")
            await doomed.kill()

            let will = try #require(await watcher.messages.message(on: willTopic))
            #expect(will.payloadString == "gone")
            #expect(will.qos == .atLeastOnce)
            await watcher.client.disconnect()
        }
    }

    /// Our own client's will: the client connects through a TCP proxy; cutting the proxy
    /// makes the broker see the client vanish without DISCONNECT, exactly like a crash or
    /// a network loss, so the broker publishes the will the client configured.
    @Test("our client's will (topic, payload, QoS, retain, MQTT 5 properties) is published when its connection dies",
          arguments: [MQTTVersion.v5, .v3_1_1])
    func ownWillOnConnectionLoss(version: MQTTVersion) async throws {
        try await withTestBroker { broker in
            let proxy = try TCPProxy.start(forwardingTo: broker.port)
            defer { proxy.stop() }
            let willTopic = unique("status")
            let watcher = try await ConnectedClient(configuration(broker))
            try await watcher.client.subscribe(to: willTopic, qos: .atLeastOnce)

            var config = configuration(broker, version: version, port: proxy.port)
            config.will = MQTTWill(
                topic: willTopic, string: "offline", qos: .atLeastOnce, retain: true,
                properties: MQTTProperties(
                    contentType: "text/plain", userProperties: [MQTTUserProperty(name: "node", value: "gym")]))
            let node = try await ConnectedClient(config)
            try await node.client.publish(to: willTopic, string: "online", qos: .atLeastOnce, retain: true)
            _ = try #require(await watcher.messages.first { $0.topic == willTopic && $0.payloadString == "online" })

            proxy.cutConnections()

            let will = try #require(await watcher.messages.first { $0.topic == willTopic && $0.payloadString == "offline" })
            #expect(will.qos == .atLeastOnce)
            if version == .v5 {
                #expect(will.properties.contentType == "text/plain")
                #expect(will.properties.userProperties == [MQTTUserProperty(name: "node", value: "gym")])
            }
            // Retained: a subscriber that comes later still sees it.
            let late = try await ConnectedClient(configuration(broker))
            try await late.client.subscribe(to: willTopic)
            let retained = try #require(await late.messages.message(on: willTopic))
            #expect(retained.payloadString == "offline")
            #expect(retained.retain)

            // The node noticed and reconnected by itself.
            let lost = try #require(await node.events.firstIndex { $0.isDisconnected })
            #expect(await node.events.firstIndex(from: lost + 1) { $0.isConnected } != nil)
            for client in [watcher, node, late] { await client.client.disconnect() }
        }
    }

    @Test("disconnect() is clean: the will is not published")
    func cleanDisconnectKeepsWill() async throws {
        try await withTestBroker { broker in
            let willTopic = unique("status")
            let watcher = try await ConnectedClient(configuration(broker))
            try await watcher.client.subscribe(to: willTopic, qos: .atLeastOnce)
            let id = unique("node")
            var config = configuration(broker, clientID: id)
            config.will = MQTTWill(topic: willTopic, string: "offline")
            let node = try await ConnectedClient(config)
            await node.client.disconnect()
            #expect(await broker.waitForLog(containing: "Client \(id) disconnected"))
            // Had the broker published the will, it would come before this marker.
            try await watcher.client.publish(to: willTopic, string: "marker", qos: .atLeastOnce)
            let first = try #require(await watcher.messages.message(on: willTopic))
            #expect(first.payloadString == "marker")
            try await Task.sleep(for: .milliseconds(200))
            #expect(watcher.messages.all.filter { $0.topic == willTopic }.map(\.payloadString) == ["marker"])
            await watcher.client.disconnect()
        }
    }
}

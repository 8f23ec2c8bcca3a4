import Foundation
import Mosquitto
import PacerTestSupport
import Testing

extension BrokerTests {
    @Test("persistent session: QoS 1 messages published while the client is away are delivered when it comes back",
          arguments: [MQTTVersion.v5, .v3_1_1])
    func persistentSessionAcrossDisconnect(version: MQTTVersion) async throws {
        try await withTestBroker { broker in
            let topic = unique("cmd")
            let id = unique("node")
            let config = configuration(broker, version: version, clientID: id)  // cleanStart false

            let first = try await ConnectedClient(config)
            let firstFirstEvent = await first.events.firstElement()
            #expect(firstFirstEvent == .connected(sessionPresent: false))
            try await first.client.subscribe(to: topic, qos: .atLeastOnce)
            await first.client.disconnect()

            let publisher = try await ConnectedClient(configuration(broker))
            try await publisher.client.subscribe(to: topic)
            #expect(try await publisher.publishAndWaitForEcho(to: topic, payload: Array("while away".utf8)))

            // Same client id, no subscribe: the session brings the subscription and the message.
            let second = try await ConnectedClient(config)
            let secondFirstEvent = await second.events.firstElement()
            #expect(secondFirstEvent == .connected(sessionPresent: true))
            let message = try #require(await second.messages.message(on: topic))
            #expect(message.payloadString == "while away")
            #expect(message.qos == .atLeastOnce)
            await second.client.disconnect()
            await publisher.client.disconnect()
        }
    }

    @Test("cleanStart discards the stored session")
    func cleanStartDiscardsSession() async throws {
        try await withTestBroker { broker in
            let id = unique("node")
            let first = try await ConnectedClient(configuration(broker, clientID: id))
            try await first.client.subscribe(to: unique("t"), qos: .atLeastOnce)
            await first.client.disconnect()
            var config = configuration(broker, clientID: id)
            config.cleanStart = true
            let second = try await ConnectedClient(config)
            let secondFirstEvent = await second.events.firstElement()
            #expect(secondFirstEvent == .connected(sessionPresent: false))
            await second.client.disconnect()
        }
    }

    /// libmosquitto's own reconnect (`mosquitto_reconnect`) sends CONNECT without the
    /// properties of the first connect, so with it an MQTT 5 session would get expiry 0
    /// after the first automatic reconnect and vanish at the next drop. The client
    /// reconnects with the session expiry every time; this checks two drops in a row.
    @Test("the session survives repeated automatic reconnects (messages sent during each outage arrive)",
          arguments: [MQTTVersion.v5, .v3_1_1])
    func sessionSurvivesRepeatedReconnects(version: MQTTVersion) async throws {
        try await withTestBroker { broker in
            let proxy = try TCPProxy.start(forwardingTo: broker.port)
            defer { proxy.stop() }
            let topic = unique("cmd")
            let node = try await ConnectedClient(configuration(broker, version: version, port: proxy.port))
            try await node.client.subscribe(to: topic, qos: .atLeastOnce)
            let publisher = try await ConnectedClient(configuration(broker))
            try await publisher.client.subscribe(to: topic)
            // The first `.connected` reaches the collector asynchronously: wait for it, so that
            // no outage below takes it for its reconnect (seen once on a heavily loaded machine).
            _ = try #require(await node.events.firstIndex { $0.isConnected })

            for outage in 1...3 {
                let eventsBefore = node.events.all.count
                proxy.setAccepting(false)
                proxy.cutConnections()
                _ = try #require(await node.events.firstIndex(from: eventsBefore) { $0.isDisconnected })
                // The broker has seen this connection go (so the next publish is queued in the session).
                // mosquitto words it by how the reset met it: a read of the closed socket, or
                // a socket error (seen under the full suite's load).
                let id = node.client.configuration.clientID
                #expect(await waitForLog(of: broker, toContainAnyOf: ["Client \(id) closed its connection", "Socket error on client \(id),",
                                                                      "Client \(id) disconnected"], times: outage),
                        "outage \(outage): \(broker.log.split(separator: "\n").filter { $0.contains(id) })")
                #expect(try await publisher.publishAndWaitForEcho(to: topic, payload: Array("outage \(outage)".utf8)))
                // And the node publishes while it is disconnected: kept, sent after the CONNACK.
                try await node.client.publish(to: topic, string: "from node \(outage)", qos: .atLeastOnce)
                proxy.setAccepting(true)
                let back = try #require(await node.events.firstIndex(from: eventsBefore) { $0.isConnected })
                #expect(node.events.all[back] == .connected(sessionPresent: true), "outage \(outage)")
                let message = await node.messages.first { $0.payloadString == "outage \(outage)" }
                #expect(message != nil, "the message sent during outage \(outage) was lost")
                let fromNode = await publisher.messages.first { $0.payloadString == "from node \(outage)" }
                #expect(fromNode != nil, "the node's publish during outage \(outage) was lost")
            }
            await node.client.disconnect()
            await publisher.client.disconnect()
        }
    }

    @Test("QoS 1 publishes made before connect() are sent once connected; QoS 0 needs a connection")
    func publishBeforeConnect() async throws {
        try await withTestBroker { broker in
            let topic = unique("early")
            let watcher = try await ConnectedClient(configuration(broker))
            try await watcher.client.subscribe(to: topic)
            let node = try await ConnectedClient(configuration(broker), connect: false)
            let error = await #expect(throws: MQTTError.self) {
                try await node.client.publish(to: topic, string: "qos0", qos: .atMostOnce)
            }
            #expect(error?.code == .notConnected)
            try await node.client.publish(to: topic, string: "queued", qos: .atLeastOnce)
            try await node.client.subscribe(to: topic)  // remembered, made on connect
            try await node.client.connect()
            #expect(await watcher.messages.message(on: topic)?.payloadString == "queued")
            let own = try await watcher.publishUntilReceived(to: topic, by: node)
            #expect(own != nil)
            await node.client.disconnect()
            await watcher.client.disconnect()
        }
    }
}

import Foundation
import Mosquitto
import PacerTestSupport
import Testing

extension BrokerTests {
    @Test("after a broker restart the client reconnects by itself and its subscriptions work again",
          arguments: [MQTTVersion.v5, .v3_1_1])
    func reconnectsAfterBrokerRestart(version: MQTTVersion) async throws {
        try await withTestBroker { broker in
            let topic = unique("restart")
            let node = try await ConnectedClient(configuration(broker, version: version))
            try await node.client.subscribe(to: topic, qos: .atLeastOnce)
            #expect(node.client.isConnected)

            try await broker.restart()

            let lost = try #require(await node.events.firstIndex { $0.isDisconnected })
            let back = try #require(await node.events.firstIndex(from: lost + 1) { $0.isConnected })
            // The broker has no persistence: the session is new, so the client must have
            // subscribed again by itself.
            #expect(node.events.all[back] == .connected(sessionPresent: false))
            #expect(node.client.isConnected)

            let publisher = try await ConnectedClient(configuration(broker))
            let received = try await publisher.publishUntilReceived(to: topic, by: node)
            #expect(received?.payloadString?.hasPrefix("ping") == true)
            await publisher.client.disconnect()
            await node.client.disconnect()
        }
    }

    @Test("the client keeps retrying while the broker is down and reconnects when it is back")
    func retriesWhileBrokerIsDown() async throws {
        try await withTestBroker { broker in
            let topic = unique("down")
            let node = try await ConnectedClient(configuration(broker))
            try await node.client.subscribe(to: topic)
            await broker.stop()
            #expect(await node.events.firstIndex { $0.isDisconnected } != nil)
            #expect(!node.client.isConnected)
            // Several reconnect attempts fail meanwhile (backoff 100 ms, capped at 1 s).
            try await Task.sleep(for: .milliseconds(1500))
            #expect(!node.client.isConnected)
            try await broker.restart()
            let lost = try #require(await node.events.firstIndex { $0.isDisconnected })
            _ = try #require(await node.events.firstIndex(from: lost + 1) { $0.isConnected })
            let publisher = try await ConnectedClient(configuration(broker))
            #expect(try await publisher.publishUntilReceived(to: topic, by: node) != nil)
            await publisher.client.disconnect()
            await node.client.disconnect()
        }
    }
}

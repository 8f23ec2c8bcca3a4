import Foundation
import Mosquitto
import PacerTestSupport
import Testing

extension BrokerTests {
    @Test("tracked publishes are reported once the broker acknowledged them (PUBACK, PUBCOMP); untracked ones are not",
          arguments: [MQTTVersion.v5, .v3_1_1])
    func trackedPublishes(version: MQTTVersion) async throws {
        try await withTestBroker { broker in
            let client = try await ConnectedClient(configuration(broker, version: version))
            let reports = Collector(client.client.deliveries)
            let topic = unique("tracked")
            // An untracked message first: it must not show up among the reports.
            try await client.client.publish(to: topic, string: "untracked", qos: .atLeastOnce)
            var tokens: [MQTTDeliveryToken] = []
            for index in 0..<20 {
                let qos: MQTTQoS = index % 2 == 0 ? .atLeastOnce : .exactlyOnce
                tokens.append(try await client.client.publishTracked(to: topic, payload: Array("m\(index)".utf8), qos: qos))
            }
            #expect(Set(tokens).count == tokens.count, "tokens must be unique")
            _ = await reports.first(from: tokens.count - 1) { _ in true }
            let reported = reports.all
            #expect(Set(reported.map(\.token)) == Set(tokens), "\(reported)")
            #expect(reported.count == tokens.count, "each once: \(reported)")
            #expect(reported.allSatisfy { $0.isAccepted }, "\(reported)")
            // The broker really has them: a retained tracked message is there for a late subscriber.
            let retainedTopic = unique("tracked-retained")
            let retainedToken = try await client.client.publishTracked(to: retainedTopic, payload: Array("kept".utf8), retain: true)
            #expect(await reports.first { $0.token == retainedToken } != nil)
            let late = try await ConnectedClient(configuration(broker, version: version))
            try await late.client.subscribe(to: retainedTopic)
            #expect(await late.messages.message(on: retainedTopic)?.payloadString == "kept")

            let qos0 = await #expect(throws: MQTTError.self) {
                try await client.client.publishTracked(to: topic, payload: [1], qos: .atMostOnce)
            }
            #expect(qos0?.code == .invalidArgument)
            for c in [client, late] { await c.client.disconnect() }
            #expect(await reports.waitUntilFinished())
        }
    }

    @Test("a tracked publish made while the broker is away is reported after the reconnect, when the broker took it")
    func trackedAcrossReconnect() async throws {
        try await withTestBroker(.init(persistence: true)) { broker in
            let watcher = try await ConnectedClient(configuration(broker, clientID: unique("watcher")))
            let topic = unique("outage")
            try await watcher.client.subscribe(to: topic, qos: .atLeastOnce)
            let client = try await ConnectedClient(configuration(broker))
            let reports = Collector(client.client.deliveries)

            await broker.stop()
            _ = try #require(await client.events.firstIndex { $0.isDisconnected })
            let token = try await client.client.publishTracked(to: topic, payload: Array("while away".utf8))
            try await Task.sleep(for: .milliseconds(300))
            #expect(reports.all.isEmpty, "reported before any broker could have it: \(reports.all)")

            try await broker.restart()
            let report = await reports.first(timeout: .seconds(20)) { $0.token == token }
            #expect(report?.isAccepted == true, "\(reports.all)")
            // The watcher's persistent session gets it too: the broker really took it.
            #expect(await watcher.messages.message(on: topic, timeout: .seconds(20))?.payloadString == "while away")
            #expect(reports.all.count == 1, "\(reports.all)")
            for c in [client, watcher] { await c.client.disconnect() }
        }
    }

    @Test("a tracked publish made before connect() is kept, sent at the CONNACK and reported")
    func trackedBeforeConnect() async throws {
        try await withTestBroker { broker in
            let client = try await ConnectedClient(configuration(broker), connect: false)
            let reports = Collector(client.client.deliveries)
            let token = try await client.client.publishTracked(to: unique("early"), payload: [7], qos: .exactlyOnce)
            try await client.client.connect()
            #expect(await reports.first { $0.token == token }?.isAccepted == true, "\(reports.all)")
            await client.client.disconnect()
        }
    }
}

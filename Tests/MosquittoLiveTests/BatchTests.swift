import Foundation
@testable import Mosquitto
import PacerTestSupport
import Testing

extension BrokerTests {
    @Test("a publish batch arrives whole and in order; a subscribe inside a batch and a publish after it go out at once")
    func publishBatch() async throws {
        try await withTestBroker { broker in
            let subscriber = try await ConnectedClient(configuration(broker))
            let publisher = try await ConnectedClient(configuration(broker))
            let base = unique("batch")
            try await subscriber.client.subscribe(to: "\(base)/#", qos: .atLeastOnce)

            publisher.client.beginPublishBatch()
            for index in 0..<500 {
                try await publisher.client.publish(to: "\(base)/\(index % 7)", payload: Array("\(index)".utf8), qos: .atMostOnce)
            }
            // Waiting for a SUBACK inside a batch must not wait for the batch's end.
            let clock = ContinuousClock()
            let subscribed = try await clock.measure {
                try await publisher.client.subscribe(to: "\(base)-echo", qos: .atLeastOnce)
            }
            #expect(subscribed < .milliseconds(800), "a subscribe inside a batch took \(subscribed)")
            publisher.client.endPublishBatch()
            #expect(await subscriber.messages.firstIndex(from: 499) { _ in true } != nil, "\(subscriber.messages.all.count) of 500 arrived")
            #expect(subscriber.messages.all.map(\.payloadString) == (0..<500).map { "\($0)" })

            // A single publish outside a batch is written at once (not at the network loop's
            // next 1 s turn).
            let before = subscriber.messages.all.count
            let single = try await clock.measure {
                try await publisher.client.publish(to: "\(base)/single", payload: Array("x".utf8), qos: .atMostOnce)
                _ = await subscriber.messages.firstIndex(from: before) { _ in true }
            }
            #expect(single < .milliseconds(800), "a single publish took \(single)")
            await publisher.client.disconnect()
            await subscriber.client.disconnect()
        }
    }

    @Test("a broker that stops reading shows as a write backlog, which clears when it reads again")
    func writeBacklog() async throws {
        try await withTestBroker { broker in
            let proxy = try TCPProxy.start(forwardingTo: broker.port)
            defer { proxy.stop() }
            let publisher = try await ConnectedClient(configuration(broker, port: proxy.port))
            #expect(publisher.client.writeBacklog == nil)
            proxy.setPaused(true)
            let topic = unique("backlog")
            let payload = [UInt8](repeating: 0x41, count: 64 * 1024)
            // Far more than the socket buffers hold (a few MB on loopback).
            for _ in 0..<400 { try await publisher.client.publish(to: topic, payload: payload, qos: .atMostOnce) }
            var backlog: Duration?
            for _ in 0..<100 {
                backlog = publisher.client.writeBacklog
                if let backlog, backlog > .milliseconds(300) { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect((backlog ?? .zero) > .milliseconds(300), "no backlog seen: \(String(describing: backlog))")
            proxy.setPaused(false)
            var cleared = false
            for _ in 0..<200 {
                if publisher.client.writeBacklog == nil { cleared = true; break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(cleared, "the backlog did not clear once the broker read again")
            await publisher.client.disconnect()
        }
    }
}

extension BrokerTests {
    @Test("libmosquitto formats log lines only until the CONNACK, not for every packet of a connection")
    func noLogLinesOnceConnected() async throws {
        try await withTestBroker { broker in
            let client = try await ConnectedClient(configuration(broker))
            let subscriber = try await ConnectedClient(configuration(broker))
            let topic = unique("quiet-log")
            try await subscriber.client.subscribe(to: topic, qos: .atLeastOnce)
            // The attempt itself was logged (libmosquitto logs the CONNECT it sends).
            let atConnect = client.client.logLinesSeen
            #expect(atConnect > 0, "no log line at all: the callback was never set")
            for index in 0..<200 {
                try await client.client.publish(to: topic, payload: Array("\(index)".utf8), qos: index % 2 == 0 ? .atMostOnce : .atLeastOnce)
            }
            #expect(await subscriber.messages.firstIndex(from: 199) { _ in true } != nil)
            // 200 publishes and 100 PUBACKs would each be a debug line with the callback set.
            #expect(client.client.logLinesSeen == atConnect, "\(client.client.logLinesSeen - atConnect) lines formatted after the CONNACK")
            await client.client.disconnect()
            await subscriber.client.disconnect()
        }
    }
}

import Foundation
@testable import Mosquitto
import PacerTestSupport
import Testing

/// The `engine` profile: the thread that hands packets to libmosquitto writes them to the socket
/// itself, under the lock the network thread holds for its own calls.
extension BrokerTests {
    @Test("the publishing thread writes libmosquitto's queue: QoS 0 and 1, batched and single, whole and in order")
    func publisherWritesOrder() async throws {
        try await withTestBroker { broker in
            let proxy = try TCPProxy.start(forwardingTo: broker.port)
            defer { proxy.stop() }
            let subscriber = try await ConnectedClient(configuration(broker))
            var c = configuration(broker, port: proxy.port)
            c.ioProfile = .engine
            let publisher = try await ConnectedClient(c)
            #expect(await publisher.flushEnded())
            let topic = unique("publisher-writes")
            try await subscriber.client.subscribe(to: topic, qos: .atLeastOnce)
            let deliveries = Collector(publisher.client.deliveries)
            var tokens: Set<MQTTDeliveryToken> = []
            let count = 600
            for round in 0..<(count / 30) {
                let batched = round % 2 == 0
                if batched { publisher.client.beginPublishBatch() }
                for index in (round * 30)..<(round * 30 + 30) {
                    let payload = Array("\(index)".utf8)
                    if index % 10 == 3 {
                        tokens.insert(try await publisher.client.publishTracked(to: topic, payload: payload, qos: .atLeastOnce))
                    } else {
                        try await publisher.client.publish(to: topic, payload: payload, qos: .atMostOnce)
                    }
                }
                if batched { publisher.client.endPublishBatch() }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(await subscriber.messages.firstIndex(from: count - 1, timeout: .seconds(20)) { _ in true } != nil,
                    "\(subscriber.messages.all.count) of \(count) arrived")
            // On the wire exactly in the order published; at the subscriber, each QoS level in order.
            let written = publishedPayloads(in: proxy.bytesFromClients, topic: topic, version: .v5)
            #expect(written == (0..<count).map { "\($0)" }, "\(written.count) written")
            let received = subscriber.messages.all.compactMap(\.payloadString).compactMap(Int.init)
            #expect(received.sorted() == Array(0..<count))
            #expect(received.filter { $0 % 10 == 3 } == received.filter { $0 % 10 == 3 }.sorted())
            // Every QoS 1 publish is reported delivered (its PUBACK read by the network thread).
            #expect(await deliveries.firstIndex(from: tokens.count - 1, timeout: .seconds(10)) { _ in true } != nil)
            #expect(Set(deliveries.all.map(\.token)) == tokens)
            #expect(deliveries.all.allSatisfy { $0.reasonCode < 0x80 })
            // The publishing thread did the writing (a batch's end or a single publish).
            #expect(publisher.client.publisherWriteCount >= count / 30, "written by the caller \(publisher.client.publisherWriteCount) times")
            await publisher.client.disconnect()
            await subscriber.client.disconnect()
        }
    }

    @Test("connections cut while the publishing thread writes: each loss is reported as such, the client reconnects, the last value arrives")
    func publisherWritesCutConnections() async throws {
        try await withTestBroker { broker in
            let proxy = try TCPProxy.start(forwardingTo: broker.port)
            defer { proxy.stop() }
            var c = configuration(broker, port: proxy.port)
            c.ioProfile = .engine
            let publisher = try await ConnectedClient(c)
            let subscriber = try await ConnectedClient(configuration(broker))
            let topic = unique("publisher-cut")
            try await subscriber.client.subscribe(to: topic, qos: .atLeastOnce)
            let cuts = 5
            var published = 0
            for cut in 0..<cuts {
                // Publishing without pause while the proxy resets both sides: the reset meets
                // either the network thread's read or this thread's write.
                let connectedBefore = publisher.events.all.filter(\.isConnected).count
                let writer = Task {
                    var sent = 0
                    while !Task.isCancelled {
                        try? await publisher.client.publish(to: topic, payload: Array("\(cut)-\(sent)".utf8), qos: .atLeastOnce)
                        sent += 1
                        if sent % 20 == 0 { await Task.yield() }
                    }
                    return sent
                }
                try await Task.sleep(for: .milliseconds(50))
                proxy.cutConnections()
                let back = await publisher.events.firstIndex(timeout: .seconds(15)) { _ in
                    publisher.events.all.filter(\.isConnected).count > connectedBefore
                }
                writer.cancel()
                published += await writer.value
                #expect(back != nil, "cut \(cut + 1): not reconnected: \(publisher.events.all)")
            }
            let events = publisher.events.all
            #expect(!events.contains { if case .loopExited = $0 { true } else { false } }, "\(events)")
            let losses = events.compactMap { event -> String? in
                if case .disconnected(let reason) = event { return reason }
                return nil
            }
            #expect(losses.count == cuts, "\(events)")
            // A loss found by the publishing thread's write is reported with that write's error,
            // not as the "no connection" the network thread then sees.
            // (MOSQ_ERR_NO_CONN is 4.)
            #expect(!losses.contains { $0.contains("(mosq_err_t 4)") }, "\(losses)")
            #expect(published > 0)
            // Still working: a value published now arrives.
            #expect(try await publisher.publishUntilReceived(to: topic, by: subscriber) != nil)
            await publisher.client.disconnect()
            await subscriber.client.disconnect()
        }
    }
}

import Foundation
@testable import Mosquitto
import PacerTestSupport
import Testing

/// The `engine` profile's direct lane: QoS 0 publishes written by the publishing thread.
@Suite("The direct QoS 0 lane")
struct DirectLaneEncodingTests {
    @Test("a QoS 0 PUBLISH is encoded as MQTT 3.1.1 and 5 lay it out")
    func encoding() {
        var v3: [UInt8] = []
        DirectLane.encodePublish(topic: "a/b", payload: Array("42".utf8), retain: true, version: .v3_1_1, into: &v3)
        #expect(v3 == [0x31, 7, 0, 3, 0x61, 0x2F, 0x62, 0x34, 0x32])
        var v5: [UInt8] = []
        DirectLane.encodePublish(topic: "a/b", payload: Array("42".utf8), retain: false, version: .v5, into: &v5)
        #expect(v5 == [0x30, 8, 0, 3, 0x61, 0x2F, 0x62, 0, 0x34, 0x32])
        // A remaining length of 200 takes two bytes (200 = 0x48 + 1 × 128).
        var long: [UInt8] = []
        DirectLane.encodePublish(topic: "t", payload: [UInt8](repeating: 7, count: 197), retain: false, version: .v3_1_1, into: &long)
        #expect(Array(long.prefix(5)) == [0x30, 0xC8, 0x01, 0, 1])
        #expect(long.count == 3 + 200)
    }

    @Test("with TLS the lane is off (libmosquitto owns the TLS records)")
    func offWithTLS() throws {
        let caFile = FileManager.default.temporaryDirectory.appendingPathComponent(unique("ca") + ".pem").path
        try Data("not read before a connect".utf8).write(to: URL(fileURLWithPath: caFile))
        defer { try? FileManager.default.removeItem(atPath: caFile) }
        var configuration = MQTTConfiguration(clientID: unique("tls"))
        configuration.tls = MQTTTLSConfiguration(caFile: caFile)
        configuration.ioProfile = .engine
        #expect(try MQTTClient(configuration: configuration).hasDirectLane == false)
        var plain = MQTTConfiguration(clientID: unique("plain"))
        plain.ioProfile = .engine
        #expect(try MQTTClient(configuration: plain).hasDirectLane == true)
        // The default profile is libmosquitto's own loop: no lane.
        #expect(try MQTTClient(configuration: MQTTConfiguration(clientID: unique("default"))).hasDirectLane == false)
    }
}

func directConfiguration(_ broker: TestBroker, version: MQTTVersion = .v5, port: Int? = nil) -> MQTTConfiguration {
    var c = configuration(broker, version: version, port: port)
    c.ioProfile = .engine
    return c
}

extension BrokerTests {
    @Test("QoS 0 publishes take the direct lane and arrive whole and in order, mixed with QoS 1 ones on the same topic",
          arguments: [MQTTVersion.v5, .v3_1_1])
    func directLaneOrder(version: MQTTVersion) async throws {
        try await withTestBroker { broker in
            let proxy = try TCPProxy.start(forwardingTo: broker.port)
            defer { proxy.stop() }
            let subscriber = try await ConnectedClient(configuration(broker))
            let publisher = try await ConnectedClient(directConfiguration(broker, version: version, port: proxy.port))
            #expect(await publisher.flushEnded())  // the order on the wire holds once it has ended
            let topic = unique("direct")
            try await subscriber.client.subscribe(to: topic, qos: .atLeastOnce)
            // Rounds like a node's instants: a batch of 50 (one `send`), or 50 single publishes,
            // then a pause. Every 50th publish is QoS 1: it goes through libmosquitto's queue and
            // must keep its place; the lane then waits for its PUBACK. (Few enough that
            // libmosquitto never holds one back beyond the broker's receive maximum: then it
            // lets later QoS 0 messages pass it, with or without the lane.)
            let count = 1_000
            for round in 0..<(count / 50) {
                let batched = round % 2 == 0
                if batched { publisher.client.beginPublishBatch() }
                for index in (round * 50)..<(round * 50 + 50) {
                    try await publisher.client.publish(
                        to: topic, payload: Array("\(index)".utf8), qos: index % 50 == 17 ? .atLeastOnce : .atMostOnce, retain: true)
                }
                if batched { publisher.client.endPublishBatch() }
                try await Task.sleep(for: .milliseconds(20))  // the PUBACK comes: the lane reopens
            }
            #expect(await subscriber.messages.firstIndex(from: count - 1, timeout: .seconds(20)) { _ in true } != nil,
                    "\(subscriber.messages.all.count) of \(count) arrived")
            // On the wire, as the publisher wrote them: exactly in order. (What the subscriber gets
            // is checked per QoS level: mosquitto may deliver a QoS 1 message after later QoS 0
            // ones, seen once in a loaded CI run.)
            let written = publishedPayloads(in: proxy.bytesFromClients, topic: topic, version: version)
            #expect(written == (0..<count).map { "\($0)" }, "\(written.count) written")
            let received = subscriber.messages.all.compactMap(\.payloadString).compactMap(Int.init)
            #expect(received.sorted() == Array(0..<count))
            let reliable = received.filter { $0 % 50 == 17 }
            let unreliable = received.filter { $0 % 50 != 17 }
            #expect(reliable == reliable.sorted() && unreliable == unreliable.sorted())
            // The lane carried a part of them: at least the first round's 17 publishes before its
            // QoS 1 one (each at least the topic and 4 bytes); later rounds' only when the previous
            // PUBACK came within the pause, which a loaded machine does not promise.
            #expect(publisher.client.directBytesWritten >= 17 * (topic.utf8.count + 4), "the lane was hardly used: \(publisher.client.directBytesWritten) bytes")
            // The broker kept the last one as the retained value.
            let late = try await ConnectedClient(configuration(broker))
            try await late.client.subscribe(to: topic, qos: .atLeastOnce)
            let retained = await late.messages.first { $0.topic == topic }
            #expect(retained?.retain == true && retained?.payloadString == "\(count - 1)")
            await late.client.disconnect()
            await publisher.client.disconnect()
            await subscriber.client.disconnect()
        }
    }

    @Test("a broker that stops reading: the lane's bytes wait, then everything arrives in order")
    func directLaneStalledBroker() async throws {
        try await withTestBroker { broker in
            let proxy = try TCPProxy.start(forwardingTo: broker.port)
            defer { proxy.stop() }
            let subscriber = try await ConnectedClient(configuration(broker))
            let publisher = try await ConnectedClient(directConfiguration(broker, port: proxy.port))
            let topic = unique("direct-stalled")
            try await subscriber.client.subscribe(to: topic, qos: .atLeastOnce)
            proxy.setPaused(true)
            // 8 MB: far more than the socket buffers hold, and more than the lane's limit
            // (1 MB), beyond which publishes queue in libmosquitto, behind the lane's bytes.
            let count = 1_000
            let filler = [UInt8](repeating: 0x41, count: 8 * 1024)
            for index in 0..<count {
                try await publisher.client.publish(
                    to: topic, payload: Array("\(index):".utf8) + filler, qos: index % 50 == 10 ? .atLeastOnce : .atMostOnce)
            }
            var backlog: Duration?
            for _ in 0..<100 {
                backlog = publisher.client.writeBacklog
                if backlog != nil { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(backlog != nil, "the unwritten bytes are not reported as a backlog")
            proxy.setPaused(false)
            #expect(await subscriber.messages.firstIndex(from: count - 1, timeout: .seconds(30)) { _ in true } != nil,
                    "\(subscriber.messages.all.count) of \(count) arrived")
            let indices = subscriber.messages.all.compactMap { $0.payloadString?.split(separator: ":").first.flatMap { Int($0) } }
            #expect(indices.sorted() == Array(0..<count), "lost or repeated: \(indices.count) arrived")
            // Each QoS level in order. (Across levels mosquitto itself may deliver a QoS 1 message
            // after later QoS 0 ones when it catches up on a backlog: seen here also without the
            // lane, one run in six.)
            let reliable = indices.filter { $0 % 50 == 10 }
            #expect(reliable == reliable.sorted())
            let unreliable = indices.filter { $0 % 50 != 10 }
            #expect(unreliable == unreliable.sorted())
            await publisher.client.disconnect()
            await subscriber.client.disconnect()
        }
    }

    @Test("after a broker restart the lane opens on the new connection only after its CONNACK")
    func directLaneReconnect() async throws {
        try await withTestBroker { broker in
            let publisher = try await ConnectedClient(directConfiguration(broker))
            let topic = unique("direct-restart")
            // The lane opens once the CONNACK's turn of the network thread is over.
            for _ in 0..<100 where publisher.client.directBytesWritten == 0 {
                try await publisher.client.publish(to: topic, payload: Array("before".utf8), qos: .atMostOnce)
                try await Task.sleep(for: .milliseconds(10))
            }
            let before = publisher.client.directBytesWritten
            #expect(before > 0)
            try await broker.restart()
            let lost = try #require(await publisher.events.firstIndex { $0.isDisconnected })
            // Published while disconnected: QoS 0 is dropped (not written to a dead or new socket).
            try? await publisher.client.publish(to: topic, payload: Array("while down".utf8), qos: .atMostOnce)
            #expect(await publisher.events.firstIndex(from: lost + 1) { $0.isConnected } != nil)
            let subscriber = try await ConnectedClient(configuration(broker))
            try await subscriber.client.subscribe(to: topic, qos: .atLeastOnce)
            // A byte before CONNECT would make the broker drop the connection: it stays up, and
            // the values go through the lane again.
            var got: MQTTMessage?
            for index in 0..<50 where got == nil {
                try await publisher.client.publish(to: topic, payload: Array("after \(index)".utf8), qos: .atMostOnce)
                got = await subscriber.messages.first(timeout: .milliseconds(100)) { $0.topic == topic }
            }
            #expect(got?.payloadString?.hasPrefix("after") == true)
            #expect(publisher.client.directBytesWritten > before)
            #expect(publisher.client.isConnected)
            #expect(publisher.events.all.filter(\.isDisconnected).count == 1, "\(publisher.events.all)")
            await subscriber.client.disconnect()
            await publisher.client.disconnect()
        }
    }
}

/// The payloads of the PUBLISH packets to `topic` in a client's byte stream, in order.
func publishedPayloads(in bytes: [UInt8], topic: String, version: MQTTVersion) -> [String] {
    var payloads: [String] = []
    var at = 0
    while at < bytes.count {
        let header = bytes[at]
        var length = 0, shift = 0, index = at + 1
        while index < bytes.count {
            length |= Int(bytes[index] & 0x7F) << shift
            shift += 7
            index += 1
            if bytes[index - 1] & 0x80 == 0 { break }
        }
        let end = index + length
        guard end <= bytes.count else { break }
        if header >> 4 == 3 {
            let qos = (header >> 1) & 3
            var p = index
            let topicLength = Int(bytes[p]) << 8 | Int(bytes[p + 1])
            let name = String(decoding: bytes[(p + 2)..<(p + 2 + topicLength)], as: UTF8.self)
            p += 2 + topicLength + (qos > 0 ? 2 : 0)
            if version == .v5 {
                var propertiesLength = 0, propertiesShift = 0
                while true {
                    let byte = bytes[p]
                    p += 1
                    propertiesLength |= Int(byte & 0x7F) << propertiesShift
                    propertiesShift += 7
                    if byte & 0x80 == 0 { break }
                }
                p += propertiesLength
            }
            if name == topic { payloads.append(String(decoding: bytes[p..<end], as: UTF8.self)) }
        }
        at = end
    }
    return payloads
}

import Foundation
import PacerCore
import PacerTestSupport
import Testing

/// The plain topics' own connection on a real node and a real broker
/// (`publish.plain_connection`).
@Suite("The plain topics' own connection (real processes)")
struct PlainConnectionTests {
    static let config = "timers:\n  - {id: c, name: C, spec: {kind: countdown, duration: 1h}}\n"

    @Test("two connections by default: the flips come over the second, whose client id the broker logs")
    func twoConnections() async throws {
        try await withTestBroker { broker in
            try await withNode(.init(config: Self.config, brokerPort: broker.port)) { node in
                let start = node.probe.count
                let reply = try await node.send(["action": "start"], timer: "c")
                #expect(reply.ok, "\(reply)")
                try await node.probe.waitFor(node.topic("c", "remaining"), from: start, timeout: .seconds(5)) { $0.text == "3598" }
                #expect(broker.log.contains("as pacer-\(node.nodeID)-plain "), "\(broker.log)")
                #expect(node.log.contains("the plain topics' connection is up"))
            }
        }
    }

    @Test("a broker that takes one connection fewer than the node needs: the main one is made first, and after 3 s the plain topics go over it")
    func connectionLimit() async throws {
        // The node reaches the broker through a proxy that, like `max_connections`, closes a
        // connection beyond the first without a CONNACK (the probe connects directly).
        try await withTestBroker { broker in
            let gate = try TCPProxy.start(forwardingTo: broker.port)
            defer { gate.stop() }
            gate.setMaxOpenConnections(1)
            var options = NodeOptions(config: Self.config, brokerPort: broker.port)
            options.nodeBrokerPort = gate.port
            try await withNode(options) { node in
                let start = node.probe.count  // (a plain topic may arrive before the reply)
                let reply = try await node.send(["action": "start"], timer: "c")
                #expect(reply.ok, "\(reply)")
                try await node.probe.waitFor(node.topic("c", "phase"), from: start, timeout: .seconds(15)) { $0.text == "countdown" }
                let flip = try await node.probe.waitFor(node.topic("c", "remaining"), from: node.probe.count, timeout: .seconds(5))
                #expect(Int(flip.text).map { $0 < 3600 } == true, "\(flip.text)")
                #expect(node.log.contains("is not up 3 s after the main one"), "\(node.log)")
                #expect(!node.log.contains("the plain topics' connection is up"))
                #expect(broker.log.contains("as pacer-\(node.nodeID) "), "the main connection was made: \(broker.log)")
                #expect(!broker.log.contains("-plain"), "\(broker.log)")
            }
        }
    }

    @Test("publish.plain_connection: shared makes one connection")
    func shared() async throws {
        try await withTestBroker { broker in
            try await withNode(.init(config: Self.config + "publish: {plain_connection: shared}\n", brokerPort: broker.port)) { node in
                // Counted from before the command, as above: on a loaded machine the reply can reach
                // the test after the first flips.
                let start = node.probe.count
                let reply = try await node.send(["action": "start"], timer: "c")
                #expect(reply.ok, "\(reply)")
                try await node.probe.waitFor(node.topic("c", "remaining"), from: start, timeout: .seconds(5)) { $0.text == "3598" }
                #expect(!broker.log.contains("-plain"), "\(broker.log)")
            }
        }
    }
}

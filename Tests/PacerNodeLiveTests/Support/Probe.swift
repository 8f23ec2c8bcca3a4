import PacerTestSupport
import Foundation
import Mosquitto
import PacerCore
import Synchronization

/// A message as the probe received it, with when it arrived.
struct Received: Sendable {
    var message: MQTTMessage
    /// Monotonic arrival instant (for measuring intervals).
    var arrival: ContinuousClock.Instant
    /// Wall-clock arrival in epoch ms (comparable with the node's `due_ms`, `ends_at_ms`).
    var wallMs: Int64

    var topic: String { message.topic }
    var text: String { String(decoding: message.payload, as: UTF8.self) }
    var json: JSONValue? { decodeJSON(message.payload) }
}


/// The test's own MQTT client: subscribes, records every message it receives (in arrival
/// order, with arrival times), publishes, and sends requests whose replies come back on its
/// own MQTT 5 response topic, matched by correlation data.
///
/// Threading: the record is behind a `Mutex`; one background task consumes `messages`.
final class Probe: Sendable {
    let client: MQTTClient
    /// The probe's private reply topic (used as the MQTT 5 response topic of requests).
    let replyTopic: String
    private let received = Mutex<[Received]>([])

    private init(client: MQTTClient, replyTopic: String) {
        self.client = client
        self.replyTopic = replyTopic
    }

    /// Connects to 127.0.0.1:`port`, subscribes to `filters` (and its reply topic with MQTT 5).
    static func connect(port: Int, version: MQTTVersion = .v5, subscribe filters: [String]) async throws -> Probe {
        PoolStallWatch.ensureStarted()
        let name = uniqueName("probe-")
        let configuration = MQTTConfiguration(
            host: "127.0.0.1", port: port, clientID: name, version: version, cleanStart: true,
            sessionExpiryInterval: 0,
            reconnect: MQTTReconnectPolicy(initialDelay: .milliseconds(100), maximumDelay: .milliseconds(500)),
            connectTimeout: .seconds(10))
        let client = try MQTTClient(configuration: configuration)
        let probe = Probe(client: client, replyTopic: "pacer-test-replies/\(name)")
        let messages = client.messages
        Task { [probe] in
            for await message in messages {
                let item = Received(message: message, arrival: .now, wallMs: wallNowMs())
                probe.received.withLock { $0.append(item) }
            }
        }
        try await client.connect()
        for filter in filters { try await client.subscribe(to: filter, qos: .atLeastOnce) }
        if version == .v5 { try await client.subscribe(to: probe.replyTopic, qos: .atLeastOnce) }
        return probe
    }

    func disconnect() async {
        await client.disconnect()
    }

    /// Everything received so far, in arrival order.
    var all: [Received] { received.withLock { $0 } }
    /// How many messages were received so far (an index for `from:`).
    var count: Int { received.withLock { $0.count } }

    func messages(on topic: String, from start: Int = 0) -> [Received] {
        received.withLock { items in
            items[min(start, items.count)...].filter { $0.topic == topic }
        }
    }

    /// The last message received on `topic`.
    func latest(_ topic: String) -> Received? {
        received.withLock { $0.last { $0.topic == topic } }
    }

    /// The first message on `topic` (from index `from` on) that satisfies `predicate`, waiting
    /// up to `timeout`; throws with what was seen on the topic when none comes.
    @discardableResult
    func waitFor(
        _ topic: String, from start: Int = 0, timeout: Duration = .seconds(10),
        where predicate: (Received) -> Bool = { _ in true }
    ) async throws -> Received {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let found = messages(on: topic, from: start).first(where: predicate) { return found }
            if ContinuousClock.now >= deadline {
                let seen = messages(on: topic, from: start).suffix(8).map { "'\($0.text.prefix(300))'" }
                throw HarnessError("no matching message on \(topic) within \(timeout); the last ones seen: \(seen.isEmpty ? "none" : seen.joined(separator: ", "))")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits until `condition` holds over the probe's record; throws `message()` after `timeout`.
    func waitUntil(
        timeout: Duration = .seconds(10), _ message: @autoclosure () -> String, _ condition: () -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            if ContinuousClock.now >= deadline { throw HarnessError("timed out after \(timeout): \(message())") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    func publish(_ topic: String, _ payload: [UInt8], retain: Bool = false, properties: MQTTProperties = .none) async throws {
        try await client.publish(to: topic, payload: payload, qos: .atLeastOnce, retain: retain, properties: properties)
    }

    func publish(_ topic: String, _ text: String, retain: Bool = false) async throws {
        try await publish(topic, Array(text.utf8), retain: retain)
    }

    /// Publishes `payload` to `topic` with the probe's response topic and a fresh
    /// correlation data, and returns the reply that carries that correlation data.
    func request(
        _ payload: [UInt8], on topic: String, correlation: [UInt8] = Array(UUID().uuidString.utf8),
        timeout: Duration = .seconds(10)
    ) async throws -> Received {
        let start = count
        try await publish(topic, payload, properties: MQTTProperties(responseTopic: replyTopic, correlationData: correlation))
        return try await waitFor(replyTopic, from: start, timeout: timeout) { $0.message.properties.correlationData == correlation }
    }
}

/// What retained messages a brand-new subscriber gets for `filters` right now.
///
/// Subscribes with a fresh client, then publishes to a private barrier topic it also
/// subscribed to: the broker delivers retained messages of a subscription before anything
/// published after it on the same connection, so once the barrier arrives, every retained
/// message is in. Returns topic → payload (only messages flagged retained).
func retainedMessages(port: Int, _ filters: [String]) async throws -> [String: [UInt8]] {
    let probe = try await Probe.connect(port: port, subscribe: filters)
    do {
        let barrier = "pacer-test-barrier/\(uniqueName("b"))"
        try await probe.client.subscribe(to: barrier, qos: .atLeastOnce)
        try await probe.publish(barrier, "barrier")
        try await probe.waitFor(barrier)
        var result: [String: [UInt8]] = [:]
        for item in probe.all where item.message.retain && item.topic != barrier {
            result[item.topic] = item.message.payload
        }
        await probe.disconnect()
        return result
    } catch {
        await probe.disconnect()
        throw error
    }
}

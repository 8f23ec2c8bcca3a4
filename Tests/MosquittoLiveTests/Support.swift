import Foundation
@testable import Mosquitto
import PacerTestSupport
import Synchronization
import Testing

/// A unique name for topics and client ids, so tests never see each other's traffic.
func unique(_ prefix: String) -> String {
    "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
}

/// Collects what an async sequence produces, in the background, so a test can wait for
/// an element with a bound instead of blocking on `next()`.
final class Collector<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])
    private let finished = Mutex(false)

    init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Element, S.Failure == Never {
        Task { [self] in
            for await item in sequence {
                self.items.withLock { $0.append(item) }
            }
            self.finished.withLock { $0 = true }
        }
    }

    var all: [Element] { items.withLock { $0 } }
    var isFinished: Bool { finished.withLock { $0 } }

    /// The first collected element (from index `from` on) that matches, waiting up to `timeout`.
    func first(
        from start: Int = 0, timeout: Duration = .seconds(10), where matches: (Element) -> Bool
    ) async -> Element? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let snapshot = all
            if start < snapshot.count, let found = snapshot[start...].first(where: matches) { return found }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The first element, waiting up to `timeout` for it.
    func firstElement(timeout: Duration = .seconds(10)) async -> Element? {
        await first(timeout: timeout) { _ in true }
    }

    /// The index of the first collected element (from `start` on) that matches, waiting up to `timeout`.
    func firstIndex(
        from start: Int = 0, timeout: Duration = .seconds(10), where matches: (Element) -> Bool
    ) async -> Int? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let snapshot = all
            if start < snapshot.count, let found = snapshot[start...].firstIndex(where: matches) { return found }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits until the sequence has finished.
    func waitUntilFinished(timeout: Duration = .seconds(10)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !isFinished {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }
}

extension Collector where Element == MQTTMessage {
    func message(on topic: String, from start: Int = 0, timeout: Duration = .seconds(10)) async -> MQTTMessage? {
        await first(from: start, timeout: timeout) { $0.topic == topic }
    }
}

/// A configuration for a test broker, with quick reconnects.
func configuration(
    _ broker: TestBroker, version: MQTTVersion = .v5, clientID: String = unique("client"), port: Int? = nil
) -> MQTTConfiguration {
    MQTTConfiguration(
        host: broker.host, port: port ?? broker.port, clientID: clientID, version: version,
        reconnect: MQTTReconnectPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(1)),
        connectTimeout: .seconds(10))
}

/// A connected client and collectors of its messages and events.
struct ConnectedClient {
    let client: MQTTClient
    let messages: Collector<MQTTMessage>
    let events: Collector<MQTTConnectionEvent>

    init(_ configuration: MQTTConfiguration, connect: Bool = true) async throws {
        client = try MQTTClient(configuration: configuration)
        messages = Collector(client.messages)
        events = Collector(client.connectionEvents)
        if connect { try await client.connect() }
    }

    /// Waits (at most 10 s) until the flush after the CONNACK has ended; false if it has not. The
    /// connect returns on the CONNACK, and a loaded network thread may take a while to run the
    /// flush: QoS 1 publishes made before it ends wait behind it, and QoS 0 ones overtake them.
    func flushEnded() async -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while client.connectFlushPending {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }
}

extension MQTTConnectionEvent {
    var isConnected: Bool {
        if case .connected = self { return true }
        return false
    }

    var isDisconnected: Bool {
        if case .disconnected = self { return true }
        return false
    }
}

extension ConnectedClient {
    /// Publishes and waits until this client receives its own message back (it must be
    /// subscribed to `topic`): then the broker has processed it (and stored it, if retained).
    func publishAndWaitForEcho(
        to topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = false
    ) async throws -> Bool {
        let start = messages.all.count
        try await client.publish(to: topic, payload: payload, qos: qos, retain: retain)
        return await messages.first(from: start) { $0.topic == topic && $0.payload == payload } != nil
    }

    /// Publishes at QoS 1; false when refused as not connected, other errors thrown.
    private func publishUnlessRefusedWhileDown(to topic: String, string: String) async throws -> Bool {
        do {
            try await client.publish(to: topic, string: string, qos: .atLeastOnce)
            return true
        } catch {
            guard error.code == .notConnected else { throw error }
            return false
        }
    }

    /// Publishes numbered messages to `topic` every 100 ms until `receiver` gets one
    /// (bounded). For checks right after a reconnect, when the receiver's SUBSCRIBE may
    /// still be on its way to the broker.
    func publishUntilReceived(
        to topic: String, by receiver: ConnectedClient, timeout: Duration = .seconds(10)
    ) async throws -> MQTTMessage? {
        let deadline = ContinuousClock.now + timeout
        let start = receiver.messages.all.count
        var counter = 0
        while ContinuousClock.now < deadline {
            counter += 1
            // Right after a reconnect the publishes kept while down (at most 1,000) may still be
            // on their way, and a full queue refuses more: then try again once it has drained.
            if try await !publishUnlessRefusedWhileDown(to: topic, string: "ping \(counter)") {
                try await Task.sleep(for: .milliseconds(50))
                continue
            }
            if let message = await receiver.messages.first(from: start, timeout: .milliseconds(100), where: { $0.topic == topic }) {
                return message
            }
        }
        return nil
    }
}

/// How long `body` took.
func measure(_ body: () async throws -> Void) async rethrows -> Duration {
    let start = ContinuousClock.now
    try await body()
    return ContinuousClock.now - start
}

/// Waits until the broker's log contains `text` at least `times` times.
/// Waits until the broker's log holds `times` lines, in all, that contain one of `texts`.
func waitForLog(of broker: TestBroker, toContainAnyOf texts: [String], times: Int, timeout: Duration = .seconds(10)) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while texts.map({ broker.log.components(separatedBy: $0).count - 1 }).reduce(0, +) < times {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return true
}

func waitForLog(of broker: TestBroker, toContain text: String, times: Int, timeout: Duration = .seconds(10)) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while broker.log.components(separatedBy: text).count - 1 < times {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return true
}

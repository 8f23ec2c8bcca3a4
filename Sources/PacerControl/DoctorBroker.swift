import Foundation
import Mosquitto
import PacerCore
import PacerProtocol
import Synchronization

/// One MQTT connection of `pacer doctor`: it connects like a control command (a client id of
/// its own, clean start, no will), keeps the last message of every topic it hears with the
/// instant it came, and asks the node for its clock on `<base>/time`, the topic even a
/// read-only account may use.
///
/// Threading: `Sendable`; what was heard is behind a `Mutex`, written by one routing task.
final class DoctorBrokerConnection: Sendable {
    /// A message as heard, with this machine's clock when it came.
    struct Heard: Sendable {
        var message: MQTTMessage
        var atMs: Millis
    }

    let mqtt: MQTTClient
    let topics: Topics
    private let heard = Mutex<[String: Heard]>([:])
    private let replies = Mutex<[String: Heard]>([:])
    private let counter = Atomic<Int>(0)

    init(configuration: MQTTConfiguration, baseTopic: String) throws(MQTTError) {
        mqtt = try MQTTClient(configuration: configuration)
        topics = Topics(base: baseTopic)
    }

    /// The private reply topic (MQTT 5) under `<base>/reply`.
    var privateReplyTopic: String { topics.reply(clientID: mqtt.configuration.clientID) }

    /// Subscribes to the node's status, info and replies, and connects.
    func connect() async throws(MQTTError) {
        let messages = mqtt.messages
        Task { [self] in
            for await message in messages { route(message) }
        }
        try await mqtt.subscribe(to: topics.status)
        try await mqtt.subscribe(to: topics.info)
        try await mqtt.subscribe(to: topics.reply)
        try await mqtt.subscribe(to: privateReplyTopic)
        try await mqtt.connect()
    }

    private func route(_ message: MQTTMessage) {
        let entry = Heard(message: message, atMs: LocalClock.nowMs())
        if topics.isReplyTopic(message.topic) {
            let json = try? JSONValue.parse(message.payload)
            let id = message.properties.correlationData.flatMap { String(validating: $0, as: UTF8.self) } ?? json.flatMap(Reply.init)?.id
            if let id { replies.withLock { $0[id] = entry } }
            return
        }
        heard.withLock { $0[message.topic] = entry }
    }

    /// The last message heard on `topic`.
    func last(_ topic: String) -> Heard? { heard.withLock { $0[topic] } }

    /// Every topic heard that `filter` (with `+` and `#`) matches, with its last message.
    func heard(matching filter: String) -> [String: Heard] {
        heard.withLock { $0.filter { Self.matches(filter, $0.key) } }
    }

    /// Subscribes to more topics; returns the filters the broker refused.
    func subscribe(_ filters: [String]) async -> [String] {
        var refused: [String] = []
        for filter in filters {
            do { try await mqtt.subscribe(to: filter) } catch { refused.append(filter) }
        }
        return refused
    }

    /// Waits until `done` holds or `timeout` passes; returns whether it held.
    func wait(upTo timeout: Duration, until done: @Sendable () -> Bool) async -> Bool {
        let end = ContinuousClock.now + timeout
        while !done() {
            guard ContinuousClock.now < end else { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// One clock sample: a request on `<base>/time` (or the `time` command on `<base>/cmd` for
    /// a node without the topic), answered with the node's `now_ms`. Nil when no answer came.
    func timeSample(onTimeTopic: Bool, timeout: Duration) async -> ClockOffset.Sample? {
        let id = "\(mqtt.configuration.clientID)-t\(counter.add(1, ordering: .relaxed).newValue)"
        let request = NodeCommand(requestID: id, request: .time).json
        let payload: JSONValue = onTimeTopic ? .object([WireField.id.rawValue: .string(id)]) : request
        let properties = mqtt.protocolVersion == .v5
            ? MQTTProperties(responseTopic: privateReplyTopic, correlationData: Array(id.utf8)) : .none
        let sent = LocalClock.nowMs()
        do {
            try await mqtt.publish(to: onTimeTopic ? topics.time : topics.command, payload: payload.jsonBytes,
                                   qos: .atLeastOnce, properties: properties)
        } catch {
            return nil
        }
        guard await wait(upTo: timeout, until: { self.replies.withLock { $0[id] != nil } }),
              let reply = replies.withLock({ $0[id] }),
              let json = try? JSONValue.parse(reply.message.payload),
              let nodeMs = Reply(json)?.nowMs
        else { return nil }
        return ClockOffset.Sample(sentMs: sent, nodeMs: nodeMs, receivedMs: reply.atMs)
    }

    /// Disconnects (bounded by the configuration's shutdown timeout).
    func disconnect() async {
        await mqtt.disconnect()
    }

    /// Whether an MQTT topic filter matches a topic.
    static func matches(_ filter: String, _ topic: String) -> Bool {
        let f = filter.split(separator: "/", omittingEmptySubsequences: false)
        let t = topic.split(separator: "/", omittingEmptySubsequences: false)
        for (i, level) in f.enumerated() {
            if level == "#" { return true }
            guard i < t.count else { return false }
            if level != "+" && level != t[i] { return false }
        }
        return f.count == t.count
    }
}

import Foundation
public import Mosquitto
public import PacerCore
public import PacerProtocol
import Synchronization

/// What a ``ControlClient`` hears besides replies: messages on the topics it subscribed to,
/// and changes of its broker connection. `pacer watch` draws from these.
public enum ControlUpdate: Sendable, Equatable {
    case message(topic: String, payload: [UInt8], retained: Bool)
    case connection(MQTTConnectionEvent)
}

/// Sends commands to a Pacer node and waits for their replies (docs/API.md, "Commands").
///
/// Each command carries a fresh request `id`. With MQTT 5 the client subscribes to a private
/// response topic (`<base>/reply/<client id>`, readable under the ACL example's `pacer/#`)
/// and sends it with the request id as correlation data; with MQTT 3.1.1 it listens on
/// `<base>/reply` and matches the echoed `id`. It also follows the node's retained
/// `<base>/status`, so a command that gets no reply says whether the node is offline.
///
/// Threading: `Sendable`; the state (waiting requests, the node status) is behind a `Mutex`;
/// one task routes the client's messages and one its connection events.
public final class ControlClient: Sendable {
    /// The node's topics (base `pacer/<node>`).
    public let topics: Topics
    /// The node's base topic (`pacer/<node>`).
    public var baseTopic: String { topics.base }
    /// The MQTT client underneath (for subscriptions of its own, e.g. `pacer watch`).
    public let mqtt: MQTTClient
    /// Where replies come: the private response topic (MQTT 5) or `<base>/reply` (3.1.1,
    /// configured or chosen when the broker would not speak 5).
    public var replyTopic: String { state.withLock { $0.replyTopic } }
    /// Everything heard that is not a reply to one of our requests.
    public let updates: AsyncStream<ControlUpdate>

    private let updatesContinuation: AsyncStream<ControlUpdate>.Continuation
    private let requestPrefix: String

    private struct State {
        var waiters: [String: AsyncStream<JSONValue>.Continuation] = [:]
        var nodeStatus: String?
        var counter = 0
        var routing = false
        /// MQTT 5: requests name `replyTopic` as their response topic.
        var usesResponseTopic: Bool
        var replyTopic: String
    }
    private let state: Mutex<State>

    /// Creates the client; does not connect.
    ///
    /// - Parameters:
    ///   - configuration: the broker connection (the tool's client id, no will, clean start).
    ///   - baseTopic: the node's base topic.
    /// - Throws: ``ControlError`` of kind `.connection` when the configuration is unusable.
    public init(configuration: MQTTConfiguration, baseTopic: String) throws(ControlError) {
        do {
            mqtt = try MQTTClient(configuration: configuration)
        } catch {
            throw ControlError(.connection, "cannot set up the MQTT client: \(error)")
        }
        topics = Topics(base: baseTopic)
        let usesResponseTopic = configuration.version == .v5
        state = Mutex(State(usesResponseTopic: usesResponseTopic,
                            replyTopic: usesResponseTopic ? topics.reply(clientID: configuration.clientID) : topics.reply))
        requestPrefix = "\(configuration.clientID)-"
        (updates, updatesContinuation) = AsyncStream.makeStream(of: ControlUpdate.self)
    }

    /// A client id for one run of the tool: `pacer-cli-<node>-<random>`.
    public static func makeClientID(node: String) -> String {
        let random = UInt32.random(in: 0...UInt32.max)
        let hex = String(random, radix: 16)
        return "pacer-cli-\(node.prefix(40))-\(String(repeating: "0", count: 8 - hex.count))\(hex)"
    }

    /// The node's last `status` (`online`/`offline`), nil while none was heard.
    public var nodeStatus: String? { state.withLock { $0.nodeStatus } }

    /// Subscribes to the reply and status topics and connects.
    ///
    /// - Throws: ``ControlError`` of kind `.connection` naming the broker and what to check.
    public func connect() async throws(ControlError) {
        startRouting()
        let broker = "\(mqtt.configuration.tls == nil ? "mqtt" : "mqtts")://\(mqtt.configuration.host):\(mqtt.configuration.port)"
        do {
            try await mqtt.subscribe(to: replyTopic, qos: .atLeastOnce)
            try await mqtt.subscribe(to: topics.status, qos: .atLeastOnce)
            try await mqtt.connect()
            if mqtt.protocolVersion == .v3_1_1, state.withLock({ $0.usesResponseTopic }) {
                // The broker would not speak MQTT 5: no response topics, replies on <base>/reply.
                try await mqtt.subscribe(to: topics.reply, qos: .atLeastOnce)
                state.withLock {
                    $0.usesResponseTopic = false
                    $0.replyTopic = topics.reply
                }
            }
        } catch {
            let hint: String = switch error.code {
            case .badCredentials, .notAuthorized: "check --username and --password-file (PACER_USERNAME, PACER_PASSWORD_FILE)"
            case .tls: "check --ca-file (PACER_CA_FILE) and the broker's certificate"
            case .timeout where mqtt.configuration.version == .v5 && !mqtt.configuration.fallsBackToV3_1_1,
                 .protocolError where mqtt.configuration.version == .v5 && !mqtt.configuration.fallsBackToV3_1_1:
                "the broker took the connection but did not accept MQTT 5: if it speaks only 3.1.1, pass --mqtt-version 3.1.1, or leave it unset to let pacer fall back by itself"
            default: "is the broker running? check --broker (PACER_BROKER) or the config file's broker.url"
            }
            throw ControlError(.connection, "cannot connect to the broker at \(broker): \(error); \(hint)")
        }
    }

    /// Subscribes to more topics; their messages come on ``updates``.
    public func subscribe(_ filters: [String]) async throws(ControlError) {
        for filter in filters {
            do {
                try await mqtt.subscribe(to: filter, qos: .atLeastOnce)
            } catch {
                throw ControlError(.connection, "cannot subscribe to \(filter): \(error)")
            }
        }
    }

    /// Sends `command` and returns the node's reply (`ok` true or false).
    ///
    /// - Parameters:
    ///   - command: the command; a request `id` is added.
    ///   - at: when the person acted, in the node's clock (epoch ms), sent as `at`; nil: none
    ///     (the node takes its own now).
    ///   - timeout: how long to wait for the reply.
    /// - Throws: ``ControlError``: `.timeout` when no reply comes (the message says whether
    ///   the node is offline), `.connection` when the broker refuses the publish.
    public func request(_ command: ControlCommand, at: Millis? = nil, timeout: Duration) async throws(ControlError) -> JSONValue {
        let id = state.withLock { s -> String in
            s.counter += 1
            return "\(requestPrefix)\(s.counter)"
        }
        var sent = command.command
        sent.requestID = id
        sent.at = at
        let topic = sent.topic(in: topics)
        let (stream, continuation) = AsyncStream.makeStream(of: JSONValue.self)
        state.withLock { $0.waiters[id] = continuation }
        defer { _ = state.withLock { $0.waiters.removeValue(forKey: id) } }
        let (usesResponseTopic, replyTopic) = state.withLock { ($0.usesResponseTopic, $0.replyTopic) }
        let properties = usesResponseTopic ? MQTTProperties(responseTopic: replyTopic, correlationData: Array(id.utf8)) : .none
        do {
            try await mqtt.publish(to: topic, payload: sent.json.jsonBytes,
                                   qos: .atLeastOnce, properties: properties)
        } catch {
            throw ControlError(.connection, "cannot send the command to \(topic): \(error)")
        }
        let reply = await value(within: timeout) {
            var iterator = stream.makeAsyncIterator()
            return await iterator.next()
        }
        guard let reply else { throw timeoutError(timeout) }
        return reply
    }

    /// Sends `command` and returns its reply when `ok`; a refusal becomes a ``ControlError``
    /// of kind `.refused` with the node's code and message.
    public func send(_ command: ControlCommand, at: Millis? = nil, timeout: Duration) async throws(ControlError) -> Reply {
        let json = try await request(command, at: at, timeout: timeout)
        guard let reply = Reply(json) else {
            throw ControlError(.refused(code: "bad_reply"), "the node's reply is not a reply (no \"ok\"): \(printable(json.description, limit: 200))")
        }
        if case .failure(let refusal) = reply.outcome { throw ControlError(.refused(code: refusal.code), refusal.message) }
        return reply
    }

    /// Estimates the node's clock offset from `samples` `time` commands sent one after the
    /// other (the one with the smallest round trip wins).
    public func measureOffset(samples: Int = 5, timeout: Duration) async throws(ControlError) -> ClockOffset {
        var taken: [ClockOffset.Sample] = []
        for _ in 0..<max(1, samples) {
            let sent = LocalClock.nowMs()
            let reply = try await send(.time, timeout: timeout)
            let received = LocalClock.nowMs()
            guard let nodeMs = reply.nowMs else {
                throw ControlError(.refused(code: "bad_reply"), "the node's time reply has no now_ms: \(reply.outcome)")
            }
            taken.append(.init(sentMs: sent, nodeMs: nodeMs, receivedMs: received))
        }
        return ClockOffset(samples: taken)!
    }

    /// Disconnects (bounded by the client's shutdown timeout) and ends ``updates``.
    public func disconnect() async {
        await mqtt.disconnect()
        updatesContinuation.finish()
    }

    // MARK: - Routing

    private func startRouting() {
        let start = state.withLock { s -> Bool in
            defer { s.routing = true }
            return !s.routing
        }
        guard start else { return }
        let messages = mqtt.messages
        let events = mqtt.connectionEvents
        Task { [self] in
            for await message in messages { route(message) }
        }
        Task { [updatesContinuation] in
            for await event in events { updatesContinuation.yield(.connection(event)) }
        }
    }

    private func route(_ message: MQTTMessage) {
        let (usesResponseTopic, replyTopic) = state.withLock { ($0.usesResponseTopic, $0.replyTopic) }
        if message.topic == replyTopic {
            // MQTT 5: the correlation data is our request id; 3.1.1 (or a node that drops
            // it): the echoed "id".
            let json = try? JSONValue.parse(message.payload)
            let id = message.properties.correlationData.flatMap { String(validating: $0, as: UTF8.self) } ?? json.flatMap(Reply.init)?.id
            if let id, let json, let waiter = state.withLock({ $0.waiters[id] }) {
                waiter.yield(json)
                return
            }
            if usesResponseTopic { return }  // a late reply to a request that timed out
        }
        if message.topic == topics.status {
            state.withLock { $0.nodeStatus = message.payloadString }
        }
        updatesContinuation.yield(.message(topic: message.topic, payload: message.payload, retained: message.retain))
    }

    private func timeoutError(_ timeout: Duration) -> ControlError {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        let within = seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
        let hint: String = switch nodeStatus.flatMap(NodeStatus.init(rawValue:)) {
        case .offline?: "the node is offline (\(topics.status) says so): start it, e.g. `pacer run` or `systemctl start pacer`"
        case .online?: "the node says it is online but did not answer: it may be overloaded; try again or raise --timeout"
        case nil: "nothing was ever published on \(topics.status): check the node id (--node) or the base topic (--base-topic), and that the node runs"
        }
        return ControlError(.timeout, "no reply from the node at \(baseTopic) within \(within); \(hint)")
    }
}

/// The local wall clock in epoch milliseconds.
public enum LocalClock {
    public static func nowMs() -> Millis {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Millis(ts.tv_sec) * 1000 + Millis(ts.tv_nsec) / 1_000_000
    }
}

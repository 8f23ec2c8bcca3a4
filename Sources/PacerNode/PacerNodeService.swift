import Foundation
public import Logging
import Mosquitto
import PacerCore
import PacerStore
public import ServiceLifecycle

/// The node as a `Service`: opens the store, restores the timers, connects to the broker,
/// runs the engine, and on graceful shutdown publishes `offline` and disconnects.
public struct PacerNodeService: Service {
    public let configuration: NodeConfiguration
    public let logger: Logger

    public init(configuration: NodeConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// The node's concurrent parts, as its task group reports their ends.
    private enum Part: Sendable { case engine, stream, watchdog }

    /// How long the engine may take to finish its current input after a shutdown request
    /// before the client is disconnected under it.
    static let engineStopGrace = Duration.milliseconds(800)

    /// Why the node stopped when it could not go on.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public func run() async throws {
        let topics = Topics(base: configuration.baseTopic)
        let (store, storageProblem) = try openStore()
        let client: MQTTClient
        do {
            client = try MQTTClient(configuration: mqttConfiguration(topics: topics))
        } catch {
            throw Failure(description: "cannot set up the MQTT client: \(error)")
        }
        let engine = NodeEngine(configuration: configuration, transport: MQTTTransport(client: client), store: store, logger: logger,
                                storageProblem: storageProblem)
        await engine.restore()

        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Part.self) { group in
                group.addTask { await engine.run(); return .engine }
                group.addTask {
                    for await message in client.messages { engine.submit(.message(message)) }
                    return .stream
                }
                group.addTask {
                    for await report in client.deliveries { engine.submit(.delivered(report)) }
                    return .stream
                }
                group.addTask {
                    for await event in client.connectionEvents {
                        engine.submit(.connection(event))
                        if case .loopExited(let error) = event {
                            engine.finish()
                            throw Failure(description: "the MQTT network thread stopped: \(error)")
                        }
                    }
                    return .stream
                }
                // Shutdown always ends: once it is requested, the engine has a moment to finish
                // the input in hand; then the client is disconnected, which settles any wait on
                // the broker (a SUBACK that never comes) and lets the engine loop end.
                group.addTask {
                    do { try await gracefulShutdown() } catch { return .watchdog }  // cancelled: the node ended
                    try? await Task.sleep(for: Self.engineStopGrace)
                    await client.disconnect()
                    return .watchdog
                }
                do {
                    // Connecting (and backing off between attempts) stops at once on shutdown.
                    try await cancelWhenGracefulShutdown { try await connect(client, topics: topics) }
                } catch {
                    engine.finish()
                    await client.disconnect()
                    group.cancelAll()
                    if Task.isShuttingDownGracefully {
                        logger.info("stopping before the broker connection was made")
                        try await group.waitForAll()
                        return
                    }
                    throw error
                }
                // The engine loop ends on graceful shutdown (or a fatal connection error).
                while let part = try await group.next(), part != .engine {}
                logger.info("stopping: publishing offline and disconnecting")
                do {
                    try await client.publish(to: topics.status, string: "offline", qos: .atLeastOnce, retain: true)
                } catch {
                    logger.debug("could not publish offline; the broker's will does it", metadata: ["error": "\(error)"])
                }
                await client.disconnect()
                group.cancelAll()
                try await group.waitForAll()
            }
        } onGracefulShutdown: {
            engine.finish()
        }
        if let store { try? store.close() }
        logger.info("stopped")
    }

    /// Opens the database. A directory that cannot be used does not stop the node (that would
    /// only make systemd restart it in a loop): it runs without durability, says so loudly in
    /// the log and in `info`, and keeps timing. Another node on the same directory is fatal.
    private func openStore() throws -> (PacerDatabase?, String?) {
        do {
            let (database, recovery) = try PacerDatabase.open(directory: configuration.dataDirectory)
            if let recovery { logger.error("\(recovery)") }
            logger.info("database open", metadata: ["path": "\(database.path)"])
            return (database, nil)
        } catch where error.kind == .locked || error.kind == .schema {
            throw Failure(description: "\(error)")
        } catch {
            logger.critical("running WITHOUT a database: timers will not survive a restart", metadata: ["error": "\(error)"])
            return (nil, error.description)
        }
    }

    /// Subscribes, then connects, retrying with a capped backoff while the broker is
    /// unreachable; a refused login or a TLS failure stops the node with a clear error.
    ///
    /// The subscriptions are registered before connecting: the client sends them inside its
    /// CONNACK handling, before the engine hears `.connected` and publishes `online`, so a
    /// command sent as soon as `online` appears is never missed (the broker handles our
    /// SUBSCRIBE before our PUBLISH on the same connection).
    private func connect(_ client: MQTTClient, topics: Topics) async throws {
        do {
            try await client.subscribe(to: topics.command, qos: .atLeastOnce)
            try await client.subscribe(to: topics.timerCommandFilter, qos: .atLeastOnce)
            for source in configuration.heartRate.sources {
                try await client.subscribe(to: source.topic, qos: .atMostOnce)
            }
        } catch {
            throw Failure(description: "cannot subscribe to the command topics: \(error)")
        }
        var delay = Duration.seconds(1)
        while true {
            do {
                try await client.connect()
                break
            } catch {
                switch error.code {
                case .badCredentials, .notAuthorized, .tls, .invalidArgument:
                    throw Failure(description: "cannot connect to \(configuration.broker.url): \(error)")
                default:
                    try Task.checkCancellation()  // shutdown: no retry
                    logger.warning("broker not reachable; retrying", metadata: ["broker": "\(configuration.broker.url)", "error": "\(error)", "retry_in": "\(delay)"])
                    try await Task.sleep(for: delay)
                    delay = min(delay * 2, .seconds(30))
                }
            }
        }
        let b = configuration.broker
        logger.notice("ready: watch with `mosquitto_sub -h \(b.host) -p \(b.port) -t '\(topics.base)/#' -v`, command with `mosquitto_pub -h \(b.host) -p \(b.port) -t \(topics.base)/timers/<id>/cmd -m start`")
    }

    func mqttConfiguration(topics: Topics) -> MQTTConfiguration {
        let b = configuration.broker
        var c = MQTTConfiguration(clientID: configuration.clientID)
        c.host = b.host
        c.port = b.port
        c.version = b.mqttVersion == "3.1.1" ? .v3_1_1 : .v5
        c.keepAlive = b.keepAliveSeconds
        c.username = b.username
        c.password = b.password
        if b.tls {
            c.tls = MQTTTLSConfiguration(caFile: b.caFile, caDirectory: b.caFile == nil ? "/etc/ssl/certs" : nil,
                                         certificateFile: b.certificateFile, keyFile: b.keyFile,
                                         verifyHostname: b.verifyHostname)
        }
        c.will = MQTTWill(topic: topics.status, payload: Array("offline".utf8), qos: .atLeastOnce, retain: true)
        c.cleanStart = false
        // Bounds `disconnect()` when the network thread is stuck in a blocking connect, so a
        // shutdown in that state still ends within 2 s.
        c.shutdownTimeout = .seconds(1)
        return c
    }
}

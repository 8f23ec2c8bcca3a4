import Foundation
public import Logging
import Mosquitto
import PacerCore
import PacerDisplays
import PacerSound
import PacerStore
public import ServiceLifecycle
import PacerProtocol

/// The node: its store opened, its MQTT client made, its engine built. Run its `services`
/// in one `ServiceGroup` (in that order: on shutdown the engine stops first, then the
/// connection publishes `offline` and disconnects), then `close()` it.
public struct PacerNode: Sendable {
    public let configuration: NodeConfiguration
    let logger: Logger
    let store: PacerDatabase?
    let client: MQTTClient
    /// The plain topics' own connection (`publish.plain_connection: separate`, the default).
    let plainClient: MQTTClient?
    let engine: NodeEngine
    /// The speaker's cues, with `sound:` in the configuration.
    let sound: SoundPlayer?

    /// Why the node stopped when it could not go on.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Opens the store and makes the client; connects nothing yet.
    /// - Throws: `Failure` when another node holds the data directory, the database is of a
    ///   newer Pacer, or the MQTT client cannot be set up.
    public init(configuration: NodeConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        let topics = Topics(base: configuration.baseTopic)
        let (store, storageProblem) = try Self.openStore(configuration, logger: logger)
        self.store = store
        do {
            client = try MQTTClient(configuration: Self.mqttConfiguration(configuration, topics: topics))
            plainClient = configuration.plainTopicsConnection == .separate
                ? try MQTTClient(configuration: Self.plainMQTTConfiguration(configuration)) : nil
        } catch {
            try? store?.close()
            throw Failure(description: "cannot set up the MQTT client: \(error)")
        }
        // Spoken cues (`sound.speech`): the phrase table is read now; a broken one (the
        // configuration check names it first) leaves the node beeping, said in the log.
        var spoken: SpokenCues?
        if let settings = configuration.sound, settings.enabled, let speech = settings.speech, let directory = configuration.speechCacheDirectory {
            do { spoken = try SpokenCues(settings: speech, cacheDirectory: directory, logger: logger) } catch {
                logger.error("sound: spoken cues are off, the node beeps instead: \(error)")
            }
        }
        sound = configuration.sound.flatMap { $0.enabled ? SoundPlayer(settings: $0, logger: logger, speech: spoken?.cache) : nil }
        engine = NodeEngine(configuration: configuration, transport: MQTTTransport(client: client, plainClient: plainClient),
                            store: store.map(EngineThreadStore.init), logger: logger,
                            storageProblem: storageProblem, sound: sound, speech: spoken)
        if let spoken {
            // Each clip's real length reaches the machine (the cue-ahead announcement says it).
            spoken.cache.observe { [weak engine] text, durationMs in engine?.submit(.speechReady(text: text, durationMs: durationMs)) }
        }
        // The engine's thread reads the command connection itself: a command reaches the
        // engine with no thread switch (Mosquitto/LoopHost.swift, docs/architecture.md).
        if configuration.broker.ioThread == .engine { client.serveConnections(on: engine.thread) }
    }

    /// The node's services, in start order: the sound player (with `sound:`), the broker
    /// connection, then the engine loop.
    public var services: [any Service] {
        // The sound player first: the group stops services in reverse, so it outlives the engine.
        var services: [any Service] = sound.map { [SoundService(player: $0)] } ?? []
        services.append(MQTTConnectionService(configuration: configuration, client: client, engine: engine, logger: logger))
        if let plainClient {
            // After the main connection: the group stops it before, so `offline` is the last word.
            services.append(PlainTopicsConnectionService(client: plainClient, mainClient: client, engine: engine))
        }
        services.append(EngineService(engine: engine, client: client, statusTopic: Topics(base: configuration.baseTopic).status))
        return services
    }

    /// Closes the store (after the services ended).
    public func close() {
        try? store?.close()
        logger.info("stopped")
    }

    /// Opens the database. A directory that cannot be used does not stop the node (that would
    /// only make systemd restart it in a loop): it runs without durability, says so loudly in
    /// the log and in `info`, and keeps timing. Another node on the same directory is fatal.
    private static func openStore(_ configuration: NodeConfiguration, logger: Logger) throws -> (PacerDatabase?, String?) {
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

    /// Attempts while the broker is away are at most 0.75 s apart, so the node is back within a
    /// second of the broker accepting connections again (after a broker restart, and when the
    /// broker appears after the node: docs/RELIABILITY.md). An attempt against a broker that is
    /// down costs one refused TCP connect; a node logs the outage once, not per attempt.
    static let reconnectPolicy = MQTTReconnectPolicy(initialDelay: .milliseconds(250), maximumDelay: .milliseconds(750))

    static func mqttConfiguration(_ configuration: NodeConfiguration, topics: Topics) -> MQTTConfiguration {
        var c = configuration.mqttConfiguration(
            clientID: configuration.clientID,
            will: MQTTWill(topic: topics.status, payload: NodeStatus.offline.payload, qos: .atLeastOnce, retain: true),
            cleanStart: false)
        // Bounds `disconnect()` when the network thread is stuck in a blocking connect, so a
        // shutdown in that state still ends within 2 s.
        c.shutdownTimeout = .seconds(1)
        c.reconnect = reconnectPolicy
        // `engine`: the engine's thread writes its states, events and replies to the socket at
        // the end of each batch: no wake-up of the network thread between a command and its answer.
        c.ioProfile = ioProfile(configuration)
        return c
    }

    /// The plain topics' own connection: the same broker, account and TLS, its own client id,
    /// a clean start (nothing to keep: every plain topic is republished when it connects), no
    /// will (the main connection's `offline` speaks for the node). Its QoS 0 values are written
    /// by the engine's thread, one `send` per instant (the `engine` profile's direct lane).
    static func plainMQTTConfiguration(_ configuration: NodeConfiguration) -> MQTTConfiguration {
        var c = configuration.mqttConfiguration(clientID: configuration.plainClientID, will: nil, cleanStart: true)
        c.shutdownTimeout = .seconds(1)
        c.reconnect = reconnectPolicy
        c.ioProfile = ioProfile(configuration)
        return c
    }

    /// `broker.io_thread` as the MQTT client's profile.
    static func ioProfile(_ configuration: NodeConfiguration) -> MQTTIOProfile {
        switch configuration.broker.ioThread {
        case .engine: .engine
        case .library: .library
        }
    }
}

/// The engine loop as a service: restores the timers, then handles inputs until graceful
/// shutdown, after which it finishes the input in hand and stops.
struct EngineService: Service {
    let engine: NodeEngine
    let client: MQTTClient
    /// `<base>/status`: set `offline` before the client is disconnected under a stuck engine
    /// (a clean DISCONNECT does not fire the will).
    let statusTopic: String

    /// How long the engine may take to finish its current input after a shutdown request
    /// before the client is disconnected under it (which settles any wait on the broker, a
    /// SUBACK that never comes, and lets the loop end).
    static let stopGrace = Duration.milliseconds(800)

    func run() async throws {
        await engine.restore()
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    do { try await gracefulShutdown() } catch { return }  // cancelled: the loop ended
                    try? await Task.sleep(for: Self.stopGrace)
                    if Task.isCancelled { return }
                    try? await client.publish(to: statusTopic, string: NodeStatus.offline.rawValue, qos: .atLeastOnce, retain: true)
                    await client.disconnect()
                }
                await engine.run()
                group.cancelAll()
            }
        } onGracefulShutdown: {
            engine.finish()
        }
    }
}

/// The broker connection as a service: subscribes and connects (retrying while the broker is
/// unreachable, stopping at once on shutdown), hands the client's messages, deliveries and
/// connection events to the engine, and on shutdown publishes `offline` and disconnects.
struct MQTTConnectionService: Service {
    let configuration: NodeConfiguration
    let client: MQTTClient
    let engine: NodeEngine
    let logger: Logger

    typealias Failure = PacerNode.Failure

    /// The pause between two `connect()` calls that timed out (each retries inside it too).
    static let retryDelay = PacerNode.reconnectPolicy.maximumDelay

    func run() async throws {
        let topics = Topics(base: configuration.baseTopic)
        try await withThrowingTaskGroup(of: Void.self) { group in
            // The client's streams go straight into the engine's one input queue, which keeps
            // their order and handles one input at a time.
            // Messages and deliveries are read on the engine's thread (`NodeEngine.forward`).
            group.addTask { await engine.forward(client.messages, as: NodeInput.message) }
            group.addTask { await engine.forward(client.deliveries, as: NodeInput.delivered) }
            group.addTask {
                for await event in client.connectionEvents {
                    engine.submit(.connection(event))
                    if case .loopExited(let error) = event {
                        throw Failure(description: "the MQTT network thread stopped: \(error)")
                    }
                }
            }
            do {
                // Connecting (and backing off between attempts) stops at once on shutdown.
                try await cancelWhenGracefulShutdown { try await connect(topics: topics) }
            } catch {
                await client.disconnect()
                group.cancelAll()
                if Task.isShuttingDownGracefully {
                    logger.info("stopping before the broker connection was made")
                    return
                }
                throw error
            }
            group.addTask { try await gracefulShutdown() }
            do {
                // Until shutdown, the network thread's death, or the client ended under a stuck engine.
                _ = try await group.next()
            } catch {
                await client.disconnect()
                throw error
            }
            // The client may have been disconnected under a stuck engine (EngineService): this
            // service still ends only in its turn, after the engine, as the group expects.
            try? await gracefulShutdown()
            logger.info("stopping: publishing offline and disconnecting")
            // The clocks and lights the node drives go blank now (a node that dies instead is
            // cleared by the AWTRIX apps' lifetime).
            var displays = DisplayOutputs(configuration.displays)
            for message in displays.shutdown() {
                try? await client.publish(to: message.topic, payload: message.payload, qos: .atLeastOnce, retain: message.retain)
            }
            do {
                try await client.publish(to: topics.status, string: NodeStatus.offline.rawValue, qos: .atLeastOnce, retain: true)
            } catch {
                logger.debug("could not publish offline; the broker's will does it", metadata: ["error": "\(error)"])
            }
            await client.disconnect()
            group.cancelAll()
        }
    }

    /// Subscribes, then connects, retrying with a capped backoff while the broker is
    /// unreachable; a refused login or a TLS failure stops the node with a clear error.
    ///
    /// The subscriptions are registered before connecting: the client sends them inside its
    /// CONNACK handling, before the engine hears `.connected` and publishes `online`, so a
    /// command sent as soon as `online` appears is never missed (the broker handles our
    /// SUBSCRIBE before our PUBLISH on the same connection).
    private func connect(topics: Topics) async throws {
        do {
            try await client.subscribe(to: topics.command, qos: .atLeastOnce)
            try await client.subscribe(to: topics.timerCommandFilter, qos: .atLeastOnce)
            try await client.subscribe(to: topics.time, qos: .atLeastOnce)
            // The retained next classes, to clear one whose schedule is gone (EngineMachine).
            try await client.subscribe(to: topics.timerNextFilter, qos: .atMostOnce)
            for source in configuration.heartRate.sources {
                try await client.subscribe(to: source.topic, qos: .atMostOnce)
            }
            if let athletes = configuration.heartRate.athletes {  // a class
                try await client.subscribe(to: athletes.topic, qos: .atMostOnce)
            }
            if configuration.homeAssistant.enabled {  // its birth message asks for the discovery configs
                try await client.subscribe(to: "\(configuration.homeAssistant.prefix)/status", qos: .atLeastOnce)
            }
        } catch {
            throw Failure(description: "cannot subscribe to the command topics: \(error)")
        }
        logger.info("connecting to the broker", metadata: ["broker": "\(configuration.broker.url)"])
        // `connect()` itself retries a broker that is not there yet (the reconnect policy: at
        // most 0.75 s apart) until its connect timeout; this loop calls it again. The outage
        // is logged when first seen and then once a minute, not per attempt.
        let waitingSince = ContinuousClock.now
        var lastLogged: ContinuousClock.Instant?
        var attempts = 0
        while true {
            do {
                try await client.connect()
                if lastLogged != nil {
                    logger.notice("the broker is reachable again", metadata: ["broker": "\(configuration.broker.url)",
                                                                            "waited": "\(ContinuousClock.now - waitingSince)"])
                }
                break
            } catch {
                switch error.code {
                case .badCredentials, .notAuthorized, .tls, .invalidArgument:
                    throw Failure(description: "cannot connect to \(configuration.broker.url): \(error)")
                default:
                    try Task.checkCancellation()  // shutdown: no retry
                    attempts += 1
                    let now = ContinuousClock.now
                    if let last = lastLogged {
                        if now - last >= .seconds(60) {
                            lastLogged = now
                            logger.warning("broker still not reachable; retrying", metadata: [
                                "broker": "\(configuration.broker.url)", "error": "\(error)", "waited": "\(now - waitingSince)", "calls": "\(attempts)"])
                        }
                    } else {
                        lastLogged = now
                        var hint = "is the broker running and is broker.url (--broker) right?"
                        if configuration.broker.mqttVersion == "5", error.code == .timeout || error.code == .protocolError {
                            hint = "if the broker speaks only MQTT 3.1.1, set broker.mqtt_version to 3.1.1 or auto (--mqtt-version)"
                        }
                        logger.warning("broker not reachable; retrying", metadata: [
                            "broker": "\(configuration.broker.url)", "error": "\(error)", "check": "\(hint)",
                            "retry_every": "\(Self.retryDelay)", "logged": "once a minute while it lasts"])
                    }
                    try await Task.sleep(for: Self.retryDelay)
                }
            }
        }
        if let reason = client.versionFallbackReason {
            logger.notice("speaking MQTT 3.1.1: \(reason); MQTT 5's extras (response topics) are off, replies go to <base>/reply. broker.mqtt_version: 3.1.1 (--mqtt-version 3.1.1) skips the MQTT 5 attempt")
        } else if configuration.broker.mqttVersion == "auto" {
            logger.info("speaking MQTT 5", metadata: ["broker": "\(configuration.broker.url)"])
        }
        let b = configuration.broker
        logger.notice("ready: watch with `mosquitto_sub -h \(b.host) -p \(b.port) -t '\(topics.base)/#' -v`, command with `mosquitto_pub -h \(b.host) -p \(b.port) -t \(topics.base)/timers/<id>/cmd -m start`")
    }

}

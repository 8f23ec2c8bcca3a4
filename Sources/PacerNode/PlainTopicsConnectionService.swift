import Mosquitto
import ServiceLifecycle

/// The plain topics' own broker connection as a service (`publish.plain_connection:
/// separate`, BrokerLink.swift): connects (retrying quietly while the broker is
/// away or refuses it: the main connection is the one that reports outages and stops the
/// node on a bad password), hands its connection events to the engine, and disconnects on
/// shutdown. It subscribes to nothing and publishes only what the engine gives it.
struct PlainTopicsConnectionService: Service {
    let client: MQTTClient
    /// The node's main client: this connection is made only once that one is up, so a broker
    /// with a connection limit gives its last free slot to the main connection, not to this one.
    let mainClient: MQTTClient
    let engine: NodeEngine

    /// The pause before connecting again after the broker refused this connection.
    static let refusedRetryDelay = Duration.seconds(10)

    func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in client.connectionEvents {
                    engine.submit(.plainLink(event))
                    if case .loopExited(let error) = event {
                        throw PacerNode.Failure(description: "the plain topics' MQTT network thread stopped: \(error)")
                    }
                }
            }
            do {
                try await cancelWhenGracefulShutdown { try await connect() }
            } catch {
                await client.disconnect()
                group.cancelAll()
                if Task.isShuttingDownGracefully || error is CancellationError { return }
                throw error
            }
            group.addTask { try await gracefulShutdown() }
            do {
                _ = try await group.next()  // shutdown, or the network thread's death
            } catch {
                await client.disconnect()
                throw error
            }
            await client.disconnect()
            group.cancelAll()
        }
    }

    /// Connects once the main connection is up, retrying until it works: an unreachable broker every 0.75 s at most (the
    /// client's reconnect policy, as for the main connection), a refusal every 10 s. The
    /// client reports each refusal as a connection event; the engine logs it once, with the fix.
    private func connect() async throws {
        while !mainClient.isConnected {
            try await Task.sleep(for: .milliseconds(50))
        }
        // The same broker: no second MQTT 5 attempt when the main connection had to use 3.1.1.
        client.startNegotiation(like: mainClient)
        while true {
            do {
                try await client.connect()
                return
            } catch {
                try Task.checkCancellation()
                switch error.code {
                case .cancelled, .shutdown:
                    throw CancellationError()
                case .badCredentials, .notAuthorized, .invalidArgument, .tls:
                    // A refused CONNACK also reaches the engine as a `.refused` event (logged once).
                    try await Task.sleep(for: Self.refusedRetryDelay)
                default:
                    try await Task.sleep(for: PacerNode.reconnectPolicy.maximumDelay)
                }
            }
        }
    }
}

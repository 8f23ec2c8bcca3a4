import Foundation
import Mosquitto
import PacerTestSupport
import Testing

/// Shutdown that always ends: `connect()` returns promptly when its task is cancelled, and
/// `disconnect()` returns within a bound in every state, whatever the network thread is
/// doing. Every configuration below has delays (reconnect, connect timeout, shutdown
/// timeout) of 30 s or more, so a quick return shows the wait was ended, not run out.
extension BrokerTests {
    /// A configuration whose every wait is long.
    /// "At once", with room for a loaded CI machine (one run took 3.1 s while the whole live
    /// suite ran beside it): far below the 60 s connect timeout the client would otherwise wait.
    static let promptly = Duration.seconds(10)

    func patientConfiguration(host: String = "127.0.0.1", port: Int, clientID: String = unique("patient")) -> MQTTConfiguration {
        var config = MQTTConfiguration(
            host: host, port: port, clientID: clientID,
            reconnect: MQTTReconnectPolicy(initialDelay: .seconds(30), maximumDelay: .seconds(60)),
            connectTimeout: .seconds(60))
        config.shutdownTimeout = .seconds(30)
        return config
    }

    /// Starts `connect()` in a task, lets it get going for `after`, cancels the task and
    /// returns the error it threw and how long it took to return after the cancel.
    func cancelConnect(_ client: MQTTClient, after delay: Duration = .milliseconds(400)) async throws -> (MQTTError?, Duration) {
        let connecting = Task { () -> MQTTError? in
            do throws(MQTTError) {
                try await client.connect()
                return nil
            } catch {
                return error
            }
        }
        try await Task.sleep(for: delay)
        let start = ContinuousClock.now
        connecting.cancel()
        let error = await connecting.value
        return (error, ContinuousClock.now - start)
    }

    /// Starts `connect()` in a task and returns it (it ends with the error `connect()` threw).
    func startConnect(_ client: MQTTClient) -> Task<MQTTError?, Never> {
        Task { () -> MQTTError? in
            do throws(MQTTError) {
                try await client.connect()
                return nil
            } catch {
                return error
            }
        }
    }

    // MARK: connect() cancelled

    @Test("a cancelled connect() returns at once while it waits to retry (nothing listens), and the client stops trying")
    func connectCancelledWhileBackingOff() async throws {
        let client = try MQTTClient(configuration: patientConfiguration(port: try freeLocalPort()))
        let (error, elapsed) = try await cancelConnect(client)
        print("connect() cancelled while backing off returned after \(elapsed)")
        #expect(error?.code == .cancelled, "\(String(describing: error))")
        #expect(error?.message.contains("cancelled") == true)
        #expect(elapsed < Self.promptly, "took \(elapsed)")
        #expect(!client.isConnected)
        let disconnecting = await measure { await client.disconnect() }
        #expect(disconnecting < Self.promptly, "disconnect() after the cancel took \(disconnecting)")
    }

    @Test("a cancelled connect() returns at once while the TCP connect hangs")
    func connectCancelledWhileTCPConnectHangs() async throws {
        let stalled = try StalledListener.start()
        defer { stalled.close() }
        let client = try MQTTClient(configuration: patientConfiguration(port: stalled.port))
        let (error, elapsed) = try await cancelConnect(client)
        print("connect() cancelled in a hanging TCP connect returned after \(elapsed)")
        #expect(error?.code == .cancelled, "\(String(describing: error))")
        #expect(elapsed < Self.promptly, "took \(elapsed)")
        // The network thread is still in the blocking connect: disconnect() does not wait for it.
        let disconnecting = await measure { await client.disconnect() }
        #expect(disconnecting < Self.promptly, "disconnect() after the cancel took \(disconnecting)")
    }

    @Test("a cancelled connect() returns at once while it waits for a CONNACK that never comes")
    func connectCancelledWhileWaitingForConnack() async throws {
        let silent = try SilentListener.start()
        defer { silent.close() }
        let client = try MQTTClient(configuration: patientConfiguration(port: silent.port))
        let (error, elapsed) = try await cancelConnect(client)
        print("connect() cancelled while waiting for the CONNACK returned after \(elapsed)")
        #expect(error?.code == .cancelled, "\(String(describing: error))")
        #expect(elapsed < Self.promptly, "took \(elapsed)")
        let disconnecting = await measure { await client.disconnect() }
        #expect(disconnecting < Self.promptly, "disconnect() after the cancel took \(disconnecting)")
    }

    @Test("connect() in a task already cancelled throws at once and does not connect")
    func connectAlreadyCancelled() async throws {
        try await withTestBroker { broker in
            let id = unique("never")
            let client = try MQTTClient(configuration: configuration(broker, clientID: id))
            let connecting = Task { () -> MQTTError? in
                withUnsafeCurrentTask { $0?.cancel() }
                do throws(MQTTError) {
                    try await client.connect()
                    return nil
                } catch {
                    return error
                }
            }
            let error = await connecting.value
            #expect(error?.code == .cancelled, "\(String(describing: error))")
            try await Task.sleep(for: .milliseconds(500))
            #expect(!client.isConnected)
            #expect(!broker.log.contains(id), "the broker saw the client: \(broker.log)")
            await client.disconnect()
        }
    }

    @Test("a cancelled connect() made while the client reconnects returns at once; the client keeps reconnecting")
    func connectCancelledWhileReconnecting() async throws {
        try await withTestBroker { broker in
            let node = try await ConnectedClient(configuration(broker))
            _ = try #require(await node.events.firstIndex { $0.isConnected })
            await broker.kill()
            let lost = try #require(await node.events.firstIndex { $0.isDisconnected })
            let (error, elapsed) = try await cancelConnect(node.client)
            print("connect() cancelled while reconnecting returned after \(elapsed)")
            #expect(error?.code == .cancelled, "\(String(describing: error))")
            #expect(elapsed < Self.promptly, "took \(elapsed)")
            // A connection was made before: the cancel did not stop the reconnects.
            try await broker.restart()
            #expect(await node.events.firstIndex(from: lost + 1) { $0.isConnected } != nil)
            await node.client.disconnect()
        }
    }

    // MARK: disconnect() in every state

    @Test("disconnect() returns at once before any connect(), and after a refused connect() stopped the thread")
    func disconnectWhenNoThreadRuns() async throws {
        try await withTestBroker(TestBrokerOptions(users: ["pacer": "s3cret"])) { broker in
            var config = configuration(broker)
            config.shutdownTimeout = .seconds(30)
            let idle = try await ConnectedClient(config, connect: false)
            let idleTook = await measure { await idle.client.disconnect() }
            #expect(idleTook < .seconds(2), "idle: took \(idleTook)")
            #expect(await idle.events.waitUntilFinished())

            config.username = "pacer"
            config.password = "wrong"
            let refused = try await ConnectedClient(config, connect: false)
            await #expect(throws: MQTTError.self) { try await refused.client.connect() }
            let refusedTook = await measure { await refused.client.disconnect() }
            #expect(refusedTook < .seconds(2), "after a refusal: took \(refusedTook)")
            #expect(await refused.events.waitUntilFinished())
        }
    }

    @Test("disconnect() wakes a connect() waiting to retry (nothing listens) and returns at once")
    func disconnectWhileBackingOff() async throws {
        let client = try MQTTClient(configuration: patientConfiguration(port: try freeLocalPort()))
        let connecting = startConnect(client)
        try await Task.sleep(for: .milliseconds(400))
        let elapsed = await measure { await client.disconnect() }
        print("disconnect() while backing off took \(elapsed)")
        #expect(elapsed < Self.promptly, "took \(elapsed)")
        #expect(await connecting.value?.code == .shutdown)
    }

    @Test("disconnect() does not wait for a network thread stuck in a TCP connect")
    func disconnectWhileTCPConnectHangs() async throws {
        let stalled = try StalledListener.start()
        defer { stalled.close() }
        let client = try MQTTClient(configuration: patientConfiguration(port: stalled.port))
        let messages = Collector(client.messages)
        let connecting = startConnect(client)
        try await Task.sleep(for: .milliseconds(400))
        let elapsed = await measure { await client.disconnect() }
        print("disconnect() in a hanging TCP connect took \(elapsed)")
        // Far below shutdownTimeout (30 s): nothing waited for the thread.
        #expect(elapsed < Self.promptly, "took \(elapsed)")
        #expect(await connecting.value?.code == .shutdown)
        #expect(await messages.waitUntilFinished())
    }

    @Test("disconnect() ends a connection whose CONNACK never comes, at once")
    func disconnectWhileWaitingForConnack() async throws {
        let silent = try SilentListener.start()
        defer { silent.close() }
        let client = try MQTTClient(configuration: patientConfiguration(port: silent.port))
        let connecting = startConnect(client)
        try await Task.sleep(for: .milliseconds(400))
        let elapsed = await measure { await client.disconnect() }
        print("disconnect() while waiting for the CONNACK took \(elapsed)")
        #expect(elapsed < Self.promptly, "took \(elapsed)")
        #expect(await connecting.value?.code == .shutdown)
    }

    @Test("disconnect() after the broker was killed returns at once while the client waits to reconnect")
    func disconnectWhileReconnecting() async throws {
        try await withTestBroker { broker in
            let node = try await ConnectedClient(patientConfiguration(port: broker.port))
            await broker.kill()
            _ = try #require(await node.events.firstIndex { $0.isDisconnected })
            let elapsed = await measure { await node.client.disconnect() }
            print("disconnect() while reconnecting took \(elapsed)")
            #expect(elapsed < Self.promptly, "took \(elapsed)")
            #expect(await node.events.waitUntilFinished())
            #expect(await node.messages.waitUntilFinished())
        }
    }

    @Test("disconnect() while connected to a broker that stopped answering (SIGSTOP) returns at once")
    func disconnectWhileBrokerIsFrozen() async throws {
        try await withTestBroker { broker in
            let node = try await ConnectedClient(patientConfiguration(port: broker.port))
            let pid = broker.pid
            try #require(pid > 0)
            kill(pid, SIGSTOP)
            defer { kill(pid, SIGCONT) }
            let elapsed = await measure { await node.client.disconnect() }
            print("disconnect() from a frozen broker took \(elapsed)")
            // DISCONNECT fits in the socket buffer; libmosquitto closes after writing it.
            #expect(elapsed < Self.promptly, "took \(elapsed)")
            #expect(await node.events.waitUntilFinished())
        }
    }
}

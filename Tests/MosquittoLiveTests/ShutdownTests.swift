import Foundation
import Mosquitto
import PacerTestSupport
import Testing

extension BrokerTests {
    @Test("disconnect() is bounded in time when the broker is gone, finishes both streams, and is idempotent")
    func disconnectWithBrokerGone() async throws {
        try await withTestBroker { broker in
            let node = try await ConnectedClient(configuration(broker))
            try await node.client.subscribe(to: unique("t"))
            await broker.stop()
            _ = try #require(await node.events.firstIndex { $0.isDisconnected })

            let elapsed = await measure { await node.client.disconnect() }
            print("disconnect() with the broker gone took \(elapsed)")
            #expect(elapsed < .seconds(5))
            #expect(!node.client.isConnected)
            #expect(await node.messages.waitUntilFinished())
            #expect(await node.events.waitUntilFinished())

            await node.client.disconnect()  // again: nothing happens
            let afterPublish = await #expect(throws: MQTTError.self) {
                try await node.client.publish(to: "x", string: "y", qos: .atLeastOnce)
            }
            #expect(afterPublish?.code == .shutdown)
            let afterConnect = await #expect(throws: MQTTError.self) { try await node.client.connect() }
            #expect(afterConnect?.code == .shutdown)
        }
    }

    @Test("disconnect() while connected is quick and clean")
    func disconnectWhileConnected() async throws {
        try await withTestBroker { broker in
            let id = unique("node")
            var config = configuration(broker, clientID: id)
            config.shutdownTimeout = .seconds(60)
            let node = try await ConnectedClient(config)
            let elapsed = await measure { await node.client.disconnect() }
            // About 0.1 s; far below shutdownTimeout, so the network thread really ended.
            #expect(elapsed < .seconds(20), "took \(elapsed)")
            #expect(await broker.waitForLog(containing: "Client \(id) disconnected"))
            #expect(await node.events.waitUntilFinished())
            #expect(!node.events.all.contains { $0.isDisconnected })
        }
    }

    @Test("disconnect() stays bounded while the network thread is stuck in a blocking TCP connect")
    func disconnectWhileConnectIsStuck() async throws {
        let stalled = try StalledListener.start()
        defer { stalled.close() }
        var config = MQTTConfiguration(port: stalled.port, clientID: unique("stuck"), connectTimeout: .seconds(30))
        config.shutdownTimeout = .seconds(1)
        let client = try MQTTClient(configuration: config)
        let connecting = Task { () -> MQTTError? in
            do throws(MQTTError) {
                try await client.connect()
                return nil
            } catch {
                return error
            }
        }
        try await Task.sleep(for: .milliseconds(500))
        #expect(!client.isConnected)
        let elapsed = await measure { await client.disconnect() }
        print("disconnect() with a stuck connect took \(elapsed)")
        // At once (a thread with no connection yet is not waited for); never more than the
        // 1 s bound (a little later on a loaded machine), far below connectTimeout (30 s).
        #expect(elapsed < .seconds(10), "took \(elapsed)")
        let error = await connecting.value
        #expect(error?.code == .shutdown)
    }

    @Test("connect() gives up after connectTimeout with the last error when nothing listens")
    func connectTimeout() async throws {
        let port = try freeLocalPort()
        let config = MQTTConfiguration(
            port: port, clientID: unique("lonely"),
            reconnect: MQTTReconnectPolicy(initialDelay: .milliseconds(100), maximumDelay: .milliseconds(300)),
            connectTimeout: .seconds(1))
        let client = try MQTTClient(configuration: config)
        var thrown: MQTTError?
        let elapsed = await measure {
            thrown = await #expect(throws: MQTTError.self) { try await client.connect() }
        }
        let error = try #require(thrown)
        #expect(error.code == .timeout)
        #expect(error.message.contains("127.0.0.1:\(port)"))
        #expect(error.message.contains("Connection refused"), "\(error.message)")
        #expect(elapsed >= .milliseconds(900) && elapsed < .seconds(10), "took \(elapsed)")
        // The attempt stopped; a later connect() may try again (and time out again).
        await client.disconnect()
    }

    @Test("dropping the last reference without disconnect() stops the client (the broker sees it go)")
    func deinitStopsClient() async throws {
        try await withTestBroker { broker in
            let id = unique("dropped")
            var client: MQTTClient? = try MQTTClient(configuration: configuration(broker, clientID: id))
            try await client?.connect()
            client = nil
            #expect(await broker.waitForLog(containing: "Client \(id) disconnected"))
        }
    }

    @MainActor
    @Test("usable from the main actor: nothing blocks it and no callback needs it")
    func mainActorUse() async throws {
        try await withTestBroker { broker in
            let node = try await ConnectedClient(configuration(broker))
            let topic = unique("main")
            try await node.client.subscribe(to: topic)
            #expect(try await node.publishAndWaitForEcho(to: topic, payload: Array("from main".utf8)))
            let nodeFirstEvent = await node.events.firstElement()
            #expect(nodeFirstEvent == .connected(sessionPresent: false))
            await node.client.disconnect()
        }
    }
}

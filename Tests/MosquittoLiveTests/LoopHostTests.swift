import Foundation
import Glibc
@testable import Mosquitto
import PacerTestSupport
import Synchronization
import Testing

/// A loop host for tests: a thread of its own that waits in `poll` on the adopted connection
/// and a pipe, and can be paused (it then stops turning the connection) and stopped.
final class TestLoopHost: MQTTLoopHost, @unchecked Sendable {
    // @unchecked Sendable: `state` is a Mutex; the pipe's descriptors are made in init and
    // closed in deinit, after the thread returned (it holds a strong reference while it runs).
    private struct State {
        var loop: MQTTHostedLoop?
        var adoptions = 0
        var turns = 0
        var paused = false
        var stopping = false
        var stopped = false
    }

    private let state = Mutex(State())
    private let pipe: [Int32]

    /// What each descriptor of the host's wait is.
    private enum Descriptor: Equatable {
        case hostPipe
        case connection(MQTTConnectionDescriptor)
    }

    init() {
        var fds: [Int32] = [-1, -1]
        _ = Glibc.pipe(&fds)
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        pipe = fds
        Thread { [self] in run() }.start()
    }

    deinit {
        for fd in pipe { close(fd) }
    }

    func adopt(_ loop: MQTTHostedLoop) -> Bool {
        let taken = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.loop = loop
            state.adoptions += 1
            return true
        }
        if taken { wake() }
        return taken
    }

    var adoptions: Int { state.withLock { $0.adoptions } }
    var turns: Int { state.withLock { $0.turns } }
    var serving: Bool { state.withLock { $0.loop != nil } }
    var stopped: Bool { state.withLock { $0.stopped } }

    /// While paused, the host neither waits on the connection nor turns it.
    func pause(_ paused: Bool) {
        state.withLock { $0.paused = paused }
        wake()
    }

    /// Stops the host: it releases the connection it serves to the network thread.
    func stop() {
        state.withLock { $0.stopping = true }
        wake()
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(pipe[1], &byte, 1)
    }

    private func run() {
        while true {
            let (loop, paused, stopping) = state.withLock { ($0.loop, $0.paused, $0.stopping) }
            if stopping {
                state.withLock { $0.loop = nil }
                loop?.release()
                state.withLock { $0.stopped = true }
                return
            }
            let active = paused ? nil : loop
            // Each descriptor by its role: the host's own pipe, then the connection's two.
            var set = PollSet<Descriptor>()
            set.add(.hostPipe, fd: pipe[0], events: Int16(POLLIN))
            active?.addDescriptors(to: &set, as: Descriptor.connection)
            set.wait(timeoutMs: active?.millisecondsToNextTurn() ?? -1)
            if set.readiness(of: .hostPipe) != 0 {
                var drain = [UInt8](repeating: 0, count: 64)
                while read(pipe[0], &drain, drain.count) > 0 {}
            }
            guard let active else { continue }
            state.withLock { $0.turns += 1 }
            if !active.turn(after: set, as: Descriptor.connection) {
                state.withLock { state in if state.loop === active { state.loop = nil } }
            }
        }
    }
}

/// `MQTTClient.serveConnections(on:)`: another thread serves the connection in its own wait.
extension BrokerTests {
    private func eventually(_ timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    @Test("a loop host serves the connection: it reads, writes and acknowledges; paused, nothing is read; stopped, the network thread takes over")
    func loopHostServes() async throws {
        try await withTestBroker { broker in
            let host = TestLoopHost()
            defer { host.stop() }
            var c = configuration(broker)
            c.ioProfile = .engine
            let hosted = try MQTTClient(configuration: c)
            hosted.serveConnections(on: host)
            let received = Collector(hosted.messages)
            let deliveries = Collector(hosted.deliveries)
            try await hosted.connect()
            #expect(host.adoptions == 1)
            #expect(host.serving)
            let peer = try await ConnectedClient(configuration(broker))
            let inbound = unique("host-in"), outbound = unique("host-out")
            try await hosted.subscribe(to: inbound, qos: .atLeastOnce)
            try await peer.client.subscribe(to: outbound, qos: .atLeastOnce)

            // Both ways, QoS 0 and 1, while the host serves.
            for index in 0..<50 {
                try await peer.client.publish(to: inbound, string: "in \(index)", qos: index % 2 == 0 ? .atLeastOnce : .atMostOnce)
                _ = try await hosted.publishTracked(to: outbound, payload: Array("out \(index)".utf8), qos: .atLeastOnce)
            }
            #expect(await received.firstIndex(from: 49, timeout: .seconds(10)) { _ in true } != nil, "\(received.all.count) of 50 read")
            #expect(Set(received.all.compactMap(\.payloadString)) == Set((0..<50).map { "in \($0)" }))
            #expect(await peer.messages.firstIndex(from: 49, timeout: .seconds(10)) { _ in true } != nil)
            #expect(peer.messages.all.compactMap(\.payloadString) == (0..<50).map { "out \($0)" })
            // Every PUBACK read by the host.
            #expect(await deliveries.firstIndex(from: 49, timeout: .seconds(10)) { _ in true } != nil)
            let turnsBefore = host.turns
            #expect(turnsBefore > 0)

            // Paused, the host reads nothing: the reading is its own, not the network thread's.
            host.pause(true)
            try await Task.sleep(for: .milliseconds(50))
            let countBefore = received.all.count
            try await peer.client.publish(to: inbound, string: "held", qos: .atLeastOnce)
            try await Task.sleep(for: .milliseconds(400))
            #expect(received.all.count == countBefore, "read while the host was paused")
            host.pause(false)
            #expect(await received.first(from: countBefore, timeout: .seconds(5)) { $0.payloadString == "held" } != nil)

            // Stopped, the host gives the connection back: the network thread serves it.
            host.stop()
            #expect(await eventually { host.stopped })
            let turnsAtStop = host.turns
            let start = received.all.count
            try await peer.client.publish(to: inbound, string: "after the host", qos: .atLeastOnce)
            #expect(await received.first(from: start, timeout: .seconds(5)) { $0.payloadString == "after the host" } != nil)
            _ = try await hosted.publishTracked(to: outbound, payload: Array("back".utf8), qos: .atLeastOnce)
            #expect(await peer.messages.first(from: 50, timeout: .seconds(5)) { $0.payloadString == "back" } != nil)
            #expect(host.turns == turnsAtStop)
            #expect(hosted.isConnected)
            let took = await measure { await hosted.disconnect() }
            #expect(took < .seconds(2))
            await peer.client.disconnect()
        }
    }

    @Test("a connection lost while hosted goes back to the network thread, which reconnects and hands the next one to the host; disconnect() ends a hosted connection")
    func loopHostReconnects() async throws {
        try await withTestBroker { broker in
            let host = TestLoopHost()
            defer { host.stop() }
            var c = configuration(broker)
            c.ioProfile = .engine
            let hosted = try MQTTClient(configuration: c)
            hosted.serveConnections(on: host)
            let received = Collector(hosted.messages)
            let events = Collector(hosted.connectionEvents)
            try await hosted.connect()
            let topic = unique("host-reconnect")
            try await hosted.subscribe(to: topic, qos: .atLeastOnce)
            #expect(host.adoptions == 1)

            try await broker.restart()
            #expect(await events.firstIndex(timeout: .seconds(15)) { _ in events.all.filter(\.isConnected).count >= 2 } != nil,
                    "\(events.all)")
            #expect(await eventually { host.adoptions >= 2 && host.serving }, "adoptions: \(host.adoptions)")
            // The subscription is redone on the new connection, and the host reads it.
            let peer = try await ConnectedClient(configuration(broker))
            let start = received.all.count
            try await peer.client.publish(to: topic, string: "after the restart", qos: .atLeastOnce)
            #expect(await received.first(from: start, timeout: .seconds(10)) { $0.payloadString == "after the restart" } != nil)

            // disconnect() while the host serves: DISCONNECT written from its turn, the connection
            // handed back to the network thread, which ends; within the bound.
            let took = await measure { await hosted.disconnect() }
            #expect(took < .seconds(2), "disconnect took \(took)")
            #expect(await eventually { !host.serving })
            #expect(await broker.waitForLog(containing: "Client \(hosted.configuration.clientID) disconnected"))
            await peer.client.disconnect()
        }
    }
}

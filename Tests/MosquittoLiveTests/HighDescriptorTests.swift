import Foundation
import Glibc
import Mosquitto
import PacerTestSupport
import Testing

/// A process with many descriptors open (the whole test suite, `pacer watch`, an app) gives a
/// new connection a descriptor number of 1024 or more. select() cannot watch such a descriptor
/// (FD_SETSIZE), and libmosquitto's `mosquitto_loop` refuses it with MOSQ_ERR_INVAL: the client
/// must not depend on it.
extension BrokerTests {
    @Test("a client whose socket is above select's FD_SETSIZE (1024) connects, subscribes, round-trips QoS 0 and 1 and disconnects cleanly",
          arguments: MQTTIOProfile.allCases, [MQTTVersion.v5, .v3_1_1])
    func socketAboveSelectLimit(profile: MQTTIOProfile, version: MQTTVersion) async throws {
        try await withTestBroker { broker in
            var config = configuration(broker, version: version, clientID: unique("high"))
            config.ioProfile = profile
            try await checkAboveSelectLimit(config, broker: broker, payload: Array("one".utf8))
        }
    }

    @Test("over TLS too, with a payload of many TLS records: a client whose socket is above FD_SETSIZE (1024) works")
    func tlsSocketAboveSelectLimit() async throws {
        try await withTestBroker(TestBrokerOptions(tls: true)) { broker in
            var config = configuration(broker, clientID: unique("high-tls"))
            let caFile: String = try #require(broker.caFile)
            config.tls = MQTTTLSConfiguration(caFile: caFile)
            try await checkAboveSelectLimit(config, broker: broker, payload: (0..<200_000).map { UInt8(truncatingIfNeeded: $0) })
        }
    }
}

/// Connects a client with `config` whose descriptors lie at 1100 and above, then checks on that one
/// connection a subscription, a QoS 0 and a QoS 1 round trip (`payload`) with its PUBACK, and a
/// clean disconnect (the broker logs "disconnected", no connection event comes).
private func checkAboveSelectLimit(_ config: MQTTConfiguration, broker: TestBroker, payload: [UInt8]) async throws {
    let node = try await connectAboveSelectLimit(config, broker: broker)
    let socket = try #require(descriptors(connectedToPort: broker.port).first)
    #expect(socket >= selectLimit, "the client's socket is \(socket)")
    let topic = unique("fd")
    try await node.client.subscribe(to: "\(topic)/#", qos: .atLeastOnce)
    #expect(try await node.publishAndWaitForEcho(to: "\(topic)/0", payload: Array("zero".utf8), qos: .atMostOnce))
    let reports = Collector(node.client.deliveries)
    let token = try await node.client.publishTracked(to: "\(topic)/1", payload: payload, qos: .atLeastOnce)
    #expect(await reports.first { $0.token == token }?.isAccepted == true)
    let echo = await node.messages.message(on: "\(topic)/1")
    #expect(echo?.payload == payload && echo?.qos == .atLeastOnce)
    // One connection all along: the socket checked above.
    #expect(!node.events.all.contains { $0.isDisconnected }, "\(node.events.all)")
    #expect(descriptors(connectedToPort: broker.port) == [socket])
    await node.client.disconnect()
    #expect(await broker.waitForLog(containing: "Client \(config.clientID) disconnected"))
    #expect(await node.events.waitUntilFinished())
    #expect(!node.events.all.contains { $0.isDisconnected }, "\(node.events.all)")
}

/// select()'s limit: descriptors from this number on cannot be in an `fd_set`.
private let selectLimit: Int32 = 1024

/// Makes the client and connects it while every free descriptor below 1100 is held, so that its
/// wake-up pipe, libmosquitto's socket pair and its socket all get numbers of 1100 or more. The
/// placeholders are held only until the socket exists (milliseconds), so tests running beside this
/// one in the process are not starved of low numbers for long. Tests beside this one close
/// descriptors meanwhile: every poll fills those holes again, and a socket that still got a low
/// number (a hole opened and taken within one poll) is not counted and the attempt is made again.
private func connectAboveSelectLimit(_ config: MQTTConfiguration, broker: TestBroker) async throws -> ConnectedClient {
    let attempts = 20
    for _ in 1...attempts {
        let node: ConnectedClient
        let connecting: Task<Void, any Error>
        var first: Int32?
        do {
            var placeholders = try DescriptorPlaceholders(below: 1100)
            defer { placeholders.close() }
            node = try await ConnectedClient(config, connect: false)
            try placeholders.fillHoles()
            let client = node.client
            connecting = Task { try await client.connect() }
            let deadline = ContinuousClock.now + .seconds(10)
            while first == nil && ContinuousClock.now < deadline {
                try placeholders.fillHoles()
                first = descriptors(connectedToPort: broker.port).first
                if first == nil { try await Task.sleep(for: .microseconds(200)) }
            }
        }
        let socket = try #require(first, "no connection to the broker within 10 s")
        if socket >= selectLimit {
            try await connecting.value
            return node
        }
        // Another test closed a descriptor below 1024 while the placeholders were held: again.
        connecting.cancel()
        await node.client.disconnect()
    }
    throw TestSupportError("the client's socket never landed at 1024 or above in \(attempts) attempts")
}

/// Descriptors of /dev/null (close-on-exec: a child started meanwhile inherits none) on every free
/// number below `floor`: the next descriptors the process opens get `floor` or more. Close them
/// exactly once.
private struct DescriptorPlaceholders {
    private let floor: Int32
    private let null: Int32
    private var held: [Int32]

    init(below floor: Int32) throws {
        // Room for the placeholders and for every other test: the soft limit up to the hard one.
        var limit = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(floor) * 4 {
            limit.rlim_cur = min(limit.rlim_max, rlim_t(floor) * 4)
            _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        }
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard null >= 0 else { throw TestSupportError("cannot open /dev/null: \(String(cString: strerror(errno)))") }
        self.floor = floor
        self.null = null
        held = [null]
        do { try fillHoles() } catch { close(); throw error }
    }

    /// Holds every number below the floor that is free now, those that other code closed since
    /// included.
    mutating func fillHoles() throws {
        while true {
            let fd = fcntl(null, F_DUPFD_CLOEXEC, 0)  // the lowest free number
            guard fd >= 0 else {
                throw TestSupportError("cannot hold descriptors up to \(floor): \(String(cString: strerror(errno)))")
            }
            if fd >= floor {
                Glibc.close(fd)
                return
            }
            held.append(fd)
        }
    }

    func close() {
        for fd in held { Glibc.close(fd) }
    }
}

/// This process's descriptors whose TCP peer is 127.0.0.1:`port`, in order.
private func descriptors(connectedToPort port: Int) -> [Int32] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return names.compactMap { Int32($0) }.sorted().filter { fd in
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        return rc == 0 && address.sin_family == sa_family_t(AF_INET) && Int(UInt16(bigEndian: address.sin_port)) == port
            && address.sin_addr.s_addr == UInt32(0x7F00_0001).bigEndian
    }
}

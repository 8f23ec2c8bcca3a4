import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A stand-in for a broker that speaks only MQTT 3.1.1, in front of a real one: it reads each
/// connection's CONNECT, forwards a 3.1.1 connection to 127.0.0.1:`targetPort` untouched, and
/// answers an MQTT 5 one as the brokers of the matrix do (docs/deployment.md): RabbitMQ before
/// 3.13 closes it, amqtt never answers, an old mosquitto refuses with a 3.1.1-form CONNACK
/// (return code 1, unacceptable protocol version).
///
/// Threading: an accept thread and, per connection, a thread that reads the CONNECT and then
/// pumps one way while a second pumps the other; `state` (a `Mutex`) holds the open sockets.
public final class V3OnlyGate: Sendable {
    public enum Answer: Sendable {
        case close, silent, refuse
    }

    public let port: Int
    let targetPort: Int
    let answer: Answer
    private let listener: Int32
    private struct State {
        var sockets: [Int32] = []
        var versions: [Int] = []
        var stopped = false
    }
    private let state = Mutex(State())

    /// The protocol level of each CONNECT read so far, in order (5 for MQTT 5, 4 for 3.1.1).
    public var connectLevels: [Int] { state.withLock { $0.versions } }

    public static func start(forwardingTo targetPort: Int, answeringMQTT5With answer: Answer) throws -> V3OnlyGate {
        let (fd, port) = try listenOnLoopback(backlog: 16, reuseAddress: true)
        let gate = V3OnlyGate(listener: fd, port: port, targetPort: targetPort, answer: answer)
        let thread = Thread { gate.acceptLoop() }
        thread.name = "v3-only-gate"
        thread.start()
        return gate
    }

    private init(listener: Int32, port: Int, targetPort: Int, answer: Answer) {
        self.listener = listener
        self.port = port
        self.targetPort = targetPort
        self.answer = answer
    }

    /// Closes the listener and every connection.
    public func stop() {
        let sockets = state.withLock { s -> [Int32] in
            s.stopped = true
            defer { s.sockets = [] }
            return s.sockets
        }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in sockets { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func track(_ fd: Int32) -> Bool {
        state.withLock { s in
            if s.stopped { return false }
            s.sockets.append(fd)
            return true
        }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            guard track(client) else { close(client); return }
            let thread = Thread { self.serve(client) }
            thread.name = "v3-only-gate-conn"
            thread.start()
        }
    }

    /// Reads bytes until the CONNECT's protocol level is known; nil if the client went away.
    private func readConnectHead(_ fd: Int32) -> (bytes: [UInt8], level: Int)? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            // Fixed header (1), remaining length (1-4), protocol name (2 + 4), level (1).
            var index = 1
            var complete = false
            while index < bytes.count, index <= 4 {
                if bytes[index] & 0x80 == 0 { complete = true; break }
                index += 1
            }
            if complete, bytes.count > index + 7 { return (bytes, Int(bytes[index + 7])) }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return nil }
            bytes += buffer[0..<n]
        }
    }

    private func serve(_ client: Int32) {
        guard let (head, level) = readConnectHead(client) else { close(client); return }
        state.withLock { $0.versions.append(level) }
        if level == 5 {
            switch answer {
            case .close:
                shutdown(client, Int32(SHUT_RDWR))
            case .silent:
                // Reads and drops everything until the client goes.
                var buffer = [UInt8](repeating: 0, count: 4096)
                while buffer.withUnsafeMutableBytes({ read(client, $0.baseAddress, $0.count) }) > 0 {}
            case .refuse:
                let connack: [UInt8] = [0x20, 0x02, 0x00, 0x01]
                _ = connack.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                shutdown(client, Int32(SHUT_WR))
                var buffer = [UInt8](repeating: 0, count: 4096)
                while buffer.withUnsafeMutableBytes({ read(client, $0.baseAddress, $0.count) }) > 0 {}
            }
            close(client)
            return
        }
        let upstream = connectToLoopback(port: targetPort)
        guard upstream >= 0, track(upstream) else { close(client); return }
        _ = head.withUnsafeBytes { write(upstream, $0.baseAddress, $0.count) }
        let other = Thread { Self.pump(from: upstream, to: client) }
        other.start()
        Self.pump(from: client, to: upstream)
    }

    private static func pump(from source: Int32, to sink: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            var sent = 0
            while sent < n {
                let w = buffer[sent..<n].withUnsafeBytes { write(sink, $0.baseAddress, $0.count) }
                if w <= 0 { break }
                sent += w
            }
        }
        shutdown(sink, Int32(SHUT_RDWR))
        shutdown(source, Int32(SHUT_RDWR))
    }
}

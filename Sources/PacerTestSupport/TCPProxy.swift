import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A TCP forwarder on 127.0.0.1 that a test can cut: it stands between a client and a
/// broker so the test can drop the connection without the client's cooperation (the
/// broker then sees a vanished client: it publishes the will and keeps the session), or
/// refuse new connections for a while (the broker looks down to the client).
///
/// Threading: one accept thread and one pump thread per connection; the table of open
/// connections is behind a `Mutex`, and a socket is shut down only while it is in that
/// table (a pump removes its pair before closing the sockets), so no closed descriptor
/// is ever touched.
public final class TCPProxy: Sendable {
    /// The port clients connect to.
    public let port: Int
    /// Where connections are forwarded (127.0.0.1).
    public let targetPort: Int

    private struct State {
        var accepting = true
        /// Connections beyond this many open ones are closed at once (nil: no limit).
        var maxOpen: Int?
        var paused = false
        var stopped = false
        var nextID = 0
        var pairs: [Int: (client: Int32, upstream: Int32)] = [:]
        var acceptedCount = 0
        /// Every byte clients sent through the proxy, in order (one client at a time for this to mean much).
        var fromClients: [UInt8] = []
    }

    private let listener: Int32
    private let state = Mutex(State())

    /// Starts forwarding from a free local port to 127.0.0.1:`targetPort`.
    public static func start(forwardingTo targetPort: Int) throws -> TCPProxy {
        let (fd, port) = try listenOnLoopback(backlog: 16, reuseAddress: true)
        let proxy = TCPProxy(listener: fd, port: port, targetPort: targetPort)
        let thread = Thread { proxy.acceptLoop() }
        thread.name = "tcp-proxy-accept"
        thread.start()
        return proxy
    }

    private init(listener: Int32, port: Int, targetPort: Int) {
        self.listener = listener
        self.port = port
        self.targetPort = targetPort
    }

    /// The bytes clients have sent through the proxy so far, as they went on (tests read a
    /// client's packets in the order it wrote them, before the broker could reorder anything).
    public var bytesFromClients: [UInt8] { state.withLock { $0.fromClients } }

    /// How many connections are being forwarded now.
    public var openConnections: Int { state.withLock { $0.pairs.count } }

    /// How many connections were accepted and forwarded so far.
    public var acceptedConnections: Int { state.withLock { $0.acceptedCount } }

    /// Whether new connections are forwarded (`true`) or closed at once (`false`).
    public func setAccepting(_ accepting: Bool) {
        state.withLock { $0.accepting = accepting }
    }

    /// Closes a new connection at once while `limit` connections are open, as a broker's
    /// `max_connections` does (nil: no limit).
    public func setMaxOpenConnections(_ limit: Int?) {
        state.withLock { $0.maxOpen = limit }
    }

    /// Stops (`true`) or resumes forwarding bytes on every connection, without closing any:
    /// a broker that stops reading, so a client's socket buffer fills up.
    public func setPaused(_ paused: Bool) {
        state.withLock { $0.paused = paused }
    }

    /// Drops every forwarded connection abruptly (both sides see the socket close; no
    /// MQTT DISCONNECT is sent, so the broker treats the client as vanished).
    public func cutConnections() {
        state.withLock { state in
            for (_, pair) in state.pairs {
                Self.abort(pair.client)
                Self.abort(pair.upstream)
            }
        }
    }

    /// Stops listening and drops every connection.
    public func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        cutConnections()
        shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit {
        stop()
    }

    /// RST instead of FIN when closed, and wake every reader of the socket now.
    private static func abort(_ fd: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        shutdown(fd, Int32(SHUT_RDWR))
    }

    private func acceptLoop() {
        defer { close(listener) }
        while true {
            let client = accept(listener, nil, nil)
            if client >= 0 { _ = fcntl(client, F_SETFD, FD_CLOEXEC) }
            if state.withLock({ $0.stopped }) {
                if client >= 0 { close(client) }
                return
            }
            guard client >= 0 else {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            guard state.withLock({ state in state.accepting && (state.maxOpen.map { state.pairs.count < $0 } ?? true) }) else {
                Self.abort(client)
                close(client)
                continue
            }
            let upstream = connectToLoopback(port: targetPort)
            guard upstream >= 0 else {
                Self.abort(client)
                close(client)
                continue
            }
            let id = state.withLock { state -> Int in
                state.nextID += 1
                state.acceptedCount += 1
                state.pairs[state.nextID] = (client, upstream)
                return state.nextID
            }
            let thread = Thread { self.pump(id: id, client: client, upstream: upstream) }
            thread.name = "tcp-proxy-pump"
            thread.start()
        }
    }

    private func pump(id: Int, client: Int32, upstream: Int32) {
        var fds = [pollfd(fd: client, events: Int16(POLLIN), revents: 0), pollfd(fd: upstream, events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 16_384)
        loop: while true {
            if state.withLock({ $0.paused && !$0.stopped }) {
                usleep(10_000)
                continue
            }
            let ready = poll(&fds, 2, 100)
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            if ready == 0 { continue }
            for index in 0..<2 where fds[index].revents != 0 {
                let from = fds[index].fd
                let to = fds[1 - index].fd
                let count = read(from, &buffer, buffer.count)
                if count <= 0 { break loop }
                if index == 0 { state.withLock { $0.fromClients.append(contentsOf: buffer[0..<count]) } }
                var written = 0
                while written < count {
                    let n = buffer.withUnsafeBytes { write(to, $0.baseAddress! + written, count - written) }
                    if n <= 0 { break loop }
                    written += n
                }
            }
        }
        state.withLock { state in
            state.pairs[id] = nil
        }
        Self.abort(client)
        Self.abort(upstream)
        close(client)
        close(upstream)
    }
}

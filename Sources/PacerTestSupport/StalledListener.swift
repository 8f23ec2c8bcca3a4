import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A port on 127.0.0.1 where a TCP connect hangs: it listens but never accepts, and its
/// accept queue is filled at once, so the kernel drops further SYNs and a blocking
/// `connect()` waits in SYN retries (about two minutes). For testing that shutdown stays
/// bounded while a client's network thread is stuck in a blocking connect.
///
/// Threading: immutable after `start`; `close()` is idempotent behind a `Mutex`.
public final class StalledListener: Sendable {
    /// The port that stalls connects.
    public let port: Int
    private let descriptors: Mutex<[Int32]>

    /// Listens with a backlog of 0 and fills the queue with its own connections.
    public static func start() throws -> StalledListener {
        let (listener, port) = try listenOnLoopback(backlog: 0)
        var descriptors = [listener]
        // Fill the accept queue (backlog 0 holds one, sometimes two) with non-blocking connects.
        for _ in 0..<3 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { continue }
            var target = loopbackAddress(port: port)
            _ = withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            descriptors.append(fd)
        }
        return StalledListener(port: port, descriptors: descriptors)
    }

    private init(port: Int, descriptors: [Int32]) {
        self.port = port
        self.descriptors = Mutex(descriptors)
    }

    /// Closes the listener and its filler connections.
    public func close() {
        let open = descriptors.withLock { descriptors -> [Int32] in
            defer { descriptors = [] }
            return descriptors
        }
        for fd in open { Glibc.close(fd) }
    }

    deinit {
        close()
    }
}

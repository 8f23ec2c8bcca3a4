import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A port on 127.0.0.1 that completes TCP connections but never answers: it listens and
/// never calls `accept()`, so the kernel finishes the handshake and buffers what the
/// client sends (an MQTT CONNECT) while no CONNACK ever comes. For testing a client that
/// waits for a CONNACK (unlike ``StalledListener``, where the TCP connect itself hangs).
///
/// Threading: immutable after `start`; `close()` is idempotent behind a `Mutex`.
public final class SilentListener: Sendable {
    /// The port that takes connections and stays silent.
    public let port: Int
    private let descriptor: Mutex<Int32?>

    /// Listens on a free port with room for a few pending connections.
    public static func start() throws -> SilentListener {
        let (listener, port) = try listenOnLoopback(backlog: 16)
        return SilentListener(port: port, descriptor: listener)
    }

    private init(port: Int, descriptor: Int32) {
        self.port = port
        self.descriptor = Mutex(descriptor)
    }

    /// Closes the listener (pending connections are reset).
    public func close() {
        let open = descriptor.withLock { descriptor -> Int32? in
            defer { descriptor = nil }
            return descriptor
        }
        if let open { Glibc.close(open) }
    }

    deinit {
        close()
    }
}

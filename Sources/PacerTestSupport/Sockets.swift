import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP port on 127.0.0.1 that is free right now (the kernel picks it: bind to port 0).
///
/// Another process could take it before it is used; callers that bind it retry on
/// "address in use".
public func freeLocalPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw TestSupportError("socket() failed: \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var address = loopbackAddress(port: 0)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard bound == 0 else { throw TestSupportError("bind(127.0.0.1:0) failed: \(String(cString: strerror(errno)))") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard named == 0 else { throw TestSupportError("getsockname failed: \(String(cString: strerror(errno)))") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Whether something accepts TCP connections on 127.0.0.1:`port` right now.
public func localPortAcceptsConnections(_ port: Int) -> Bool {
    let fd = connectToLoopback(port: port)
    if fd >= 0 {
        close(fd)
        return true
    }
    return false
}

/// A blocking TCP connection to 127.0.0.1:`port`, or -1.
func connectToLoopback(port: Int) -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return -1 }
    var address = loopbackAddress(port: port)
    let rc = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    if rc != 0 {
        close(fd)
        return -1
    }
    return fd
}

/// A listening TCP socket on a free port of 127.0.0.1 (`SO_REUSEADDR` when `reuseAddress`),
/// with the given accept backlog: its descriptor and port.
func listenOnLoopback(backlog: Int32, reuseAddress: Bool = false) throws -> (descriptor: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw TestSupportError("socket() failed: \(String(cString: strerror(errno)))") }
    if reuseAddress {
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = loopbackAddress(port: 0)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard bound == 0, named == 0, listen(fd, backlog) == 0 else {
        let message = String(cString: strerror(errno))
        close(fd)
        throw TestSupportError("cannot listen on 127.0.0.1: \(message)")
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

func loopbackAddress(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr = in_addr(s_addr: inet_addr("127.0.0.1"))
    return address
}

/// An error of the test support code, with a message that says what to look at.
public struct TestSupportError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

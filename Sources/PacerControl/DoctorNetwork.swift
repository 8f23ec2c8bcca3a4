import Dispatch
import Foundation
import Synchronization

/// Why a TCP exchange of `pacer doctor` failed, in plain words.
public enum DoctorNetError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The name does not resolve.
    case unknownHost(String, String)
    /// Nothing listens there (connection refused).
    case refused(String)
    /// No answer before the deadline.
    case timedOut(String)
    /// The connection was closed before the answer was complete.
    case closed(String)
    /// Any other socket error.
    case failed(String)

    public var description: String {
        switch self {
        case .unknownHost(let host, let why): "cannot find \(host): \(why)"
        case .refused(let address): "nothing listens on \(address) (connection refused)"
        case .timedOut(let what): "no answer from \(what) in time"
        case .closed(let address): "\(address) closed the connection"
        case .failed(let why): why
        }
    }
}

/// A TCP connection whose every wait is bounded by one deadline: connect, send and receive
/// poll the socket and give up when the deadline passes.
///
/// Threading: not shared; one task uses it and closes it (also in `deinit`). The blocking
/// waits run through ``doctorBlocking(_:)``, off Swift's cooperative threads.
final class DoctorSocket {
    let fd: Int32
    let address: String
    let deadline: ContinuousClock.Instant

    private init(fd: Int32, address: String, deadline: ContinuousClock.Instant) {
        self.fd = fd
        self.address = address
        self.deadline = deadline
    }

    deinit { close(fd) }

    /// Milliseconds left before the deadline (0 once it passed).
    private var remainingMs: Int32 {
        let left = deadline - ContinuousClock.now
        guard left > .zero else { return 0 }
        return Int32(min(Int64(Int32.max), left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
    }

    /// Connects to `host:port`, trying each address the name resolves to.
    static func connect(host: String, port: Int, deadline: ContinuousClock.Instant) throws(DoctorNetError) -> DoctorSocket {
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw .unknownHost(host, String(cString: gai_strerror(rc)))
        }
        defer { freeaddrinfo(list) }
        var lastError: DoctorNetError = .refused(address)
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.pointee.ai_protocol)
            guard fd >= 0 else { continue }
            let connection = DoctorSocket(fd: fd, address: address, deadline: deadline)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return connection }
            guard errno == EINPROGRESS else { lastError = connection.error(errno); continue }
            var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&pfd, 1, connection.remainingMs)
            if ready == 0 { lastError = .timedOut(address); continue }
            var soError: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &length)
            if ready > 0, soError == 0 { return connection }
            lastError = connection.error(soError == 0 ? errno : soError)
        }
        throw lastError
    }

    private func error(_ code: Int32) -> DoctorNetError {
        switch code {
        case ECONNREFUSED: .refused(address)
        case ETIMEDOUT: .timedOut(address)
        case EHOSTUNREACH, ENETUNREACH: .failed("\(address) cannot be reached (\(String(cString: strerror(code))))")
        case ECONNRESET, EPIPE: .closed(address)
        default: .failed("\(address): \(String(cString: strerror(code)))")
        }
    }

    /// Sends all of `bytes`.
    func send(_ bytes: [UInt8]) throws(DoctorNetError) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent > 0 { offset += sent; continue }
            if sent < 0, errno != EAGAIN, errno != EINTR { throw error(errno) }
            var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            if poll(&pfd, 1, remainingMs) == 0 { throw .timedOut(address) }
        }
    }

    /// Up to `limit` bytes as soon as some come; empty at the end of the stream.
    func receive(limit: Int = 65_536) throws(DoctorNetError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: limit)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, limit, 0) }
            if count >= 0 { return Array(buffer[0..<count]) }
            if errno != EAGAIN, errno != EINTR { throw error(errno) }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, remainingMs) == 0 { throw .timedOut(address) }
        }
    }
}

/// Runs blocking work (sockets, processes) on a thread of its own and waits for it, so the
/// cooperative threads the MQTT client's streams need stay free.
func doctorBlocking<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: body()) }
    }
}

/// An HTTP GET over a plain connection, and the reading of its answer.
public enum DoctorHTTP {
    /// An HTTP response: status, headers (names lowercased) and body.
    public struct Response: Sendable, Equatable {
        public var status: Int
        public var headers: [String: String]
        public var body: [UInt8]

        public init(status: Int, headers: [String: String], body: [UInt8]) {
            self.status = status
            self.headers = headers
            self.body = body
        }
    }

    /// The largest answer read (a page's module is a few hundred KB).
    static let maxBytes = 4 << 20

    /// Reads a whole response (`Content-Length`, chunked, or up to the close); nil while it is
    /// incomplete or when it is not HTTP.
    public static func parse(_ bytes: [UInt8], complete: Bool) -> Response? {
        guard let end = headerEnd(bytes) else { return nil }
        let head = String(decoding: bytes[0..<end], as: UTF8.self)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        guard !lines.isEmpty else { return nil }
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/"), let status = Int(statusLine[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingWhitespace().lowercased()
            let value = String(line[line.index(after: colon)...].trimmingWhitespace())
            headers[name] = headers[name].map { "\($0), \(value)" } ?? value
        }
        let body = Array(bytes[(end + 4)...])
        if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            guard let decoded = dechunk(body) else { return complete ? Response(status: status, headers: headers, body: body) : nil }
            return Response(status: status, headers: headers, body: decoded)
        }
        if let length = headers["content-length"].flatMap({ Int($0) }) {
            guard body.count >= length else { return complete ? Response(status: status, headers: headers, body: body) : nil }
            return Response(status: status, headers: headers, body: Array(body.prefix(length)))
        }
        if status == 204 || status == 304 || (100..<200).contains(status) { return Response(status: status, headers: headers, body: []) }
        return complete ? Response(status: status, headers: headers, body: body) : nil
    }

    /// Where the header ends (the index of its blank line's `\r\n\r\n`).
    static func headerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }

    /// A chunked body decoded; nil until its last chunk came.
    static func dechunk(_ body: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        var i = 0
        while true {
            guard let lineEnd = (i..<max(i, body.count - 1)).first(where: { body[$0] == 13 && body[$0 + 1] == 10 }) else { return nil }
            let sizeText = String(decoding: body[i..<lineEnd], as: UTF8.self).split(separator: ";").first.map(String.init) ?? ""
            guard let size = Int(sizeText.trimmingWhitespace(), radix: 16) else { return nil }
            i = lineEnd + 2
            if size == 0 { return out }
            guard i + size <= body.count else { return nil }
            out += body[i..<(i + size)]
            i += size + 2
        }
    }

    /// GETs `url` (`http://` here; `https://` through `curl`, when installed), within `deadline`.
    static func get(_ url: URL, deadline: ContinuousClock.Instant) async -> Result<Response, DoctorNetError> {
        if url.scheme == "https" { return await getWithCurl(url, deadline: deadline) }
        guard url.scheme == "http", let host = url.host else { return .failure(.failed("\(url.absoluteString) is not an http:// or https:// address")) }
        let port = url.port ?? 80
        var path = url.path.isEmpty ? "/" : url.path
        if url.absoluteString.hasSuffix("/"), !path.hasSuffix("/") { path += "/" }
        if let query = url.query { path += "?" + query }
        let hostHeader = url.port.map { "\(host):\($0)" } ?? host
        let request = "GET \(path) HTTP/1.1\r\nHost: \(hostHeader)\r\nUser-Agent: pacer-doctor\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        return await doctorBlocking {
            do throws(DoctorNetError) {
                let socket = try DoctorSocket.connect(host: host, port: port, deadline: deadline)
                try socket.send(Array(request.utf8))
                var received: [UInt8] = []
                while received.count < maxBytes {
                    let chunk = try socket.receive()
                    if chunk.isEmpty { break }
                    received += chunk
                    if parse(received, complete: false) != nil { break }
                }
                guard let response = parse(received, complete: true) else {
                    throw received.isEmpty ? DoctorNetError.closed(socket.address) : .failed("\(socket.address) does not answer HTTP")
                }
                return .success(response)
            } catch {
                return .failure(error)
            }
        }
    }

    /// An HTTPS GET through `curl` (the certificate checked as curl does).
    private static func getWithCurl(_ url: URL, deadline: ContinuousClock.Instant) async -> Result<Response, DoctorNetError> {
        let left = deadline - ContinuousClock.now
        let seconds = max(0.2, Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18)
        let run = await DoctorProcess.run(["curl", "-sS", "-i", "--raw", "--http1.1", "--max-time", String(format: "%.1f", seconds), url.absoluteString],
                                          timeout: left + .milliseconds(500))
        guard let run else { return .failure(.failed("cannot check an https:// page here: curl is not installed (sudo apt install curl)")) }
        guard run.status == 0, let response = parse(run.output, complete: true) else {
            let why = String(decoding: run.errorOutput, as: UTF8.self).split(separator: "\n").first?.trimmingWhitespace() ?? ""
            return .failure(.failed(why.isEmpty ? "curl could not fetch \(url.absoluteString)" : String(why)))
        }
        return .success(response)
    }
}

/// A child process with a bounded run time, for the system's own tools (`timedatectl`,
/// `chronyc`, `aplay -L`, `curl`).
enum DoctorProcess {
    struct Result: Sendable {
        var status: Int32
        var output: [UInt8]
        var errorOutput: [UInt8]
        var text: String { String(decoding: output, as: UTF8.self) }
    }

    /// Runs `arguments` (the first found on `PATH`); nil when the tool is not installed.
    /// A process still running after `timeout` is killed and reported with status -1.
    static func run(_ arguments: [String], timeout: Duration) async -> Result? {
        guard let tool = find(arguments[0]) else { return nil }
        return await doctorBlocking {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = Array(arguments.dropFirst())
            process.standardInput = FileHandle.nullDevice
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            do { try process.run() } catch { return nil }
            let pid = process.processIdentifier
            let killer = DispatchWorkItem { kill(pid, SIGKILL) }
            let ms = Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(ms), execute: killer)
            // Both pipes read to their end, the error pipe on another thread, so neither fills up.
            let errorData = LockedData()
            let group = DispatchGroup()
            DispatchQueue.global().async(group: group) { errorData.set(err.fileHandleForReading.readDataToEndOfFile()) }
            let output = out.fileHandleForReading.readDataToEndOfFile()
            group.wait()
            process.waitUntilExit()
            killer.cancel()
            let killed = process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL
            return Result(status: killed ? -1 : process.terminationStatus, output: Array(output.prefix(1 << 20)),
                          errorOutput: Array(errorData.get().prefix(64 << 10)))
        }
    }

    /// The executable `name` on `PATH` (and the sbin folders, which a user's `PATH` may lack).
    static func find(_ name: String) -> String? {
        if name.hasPrefix("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin") + ":/usr/sbin:/sbin"
        for dir in path.split(separator: ":") where !dir.isEmpty {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}

/// Bytes handed from one thread to another.
private final class LockedData: Sendable {
    private let data = Mutex(Data())
    func set(_ value: Data) { data.withLock { $0 = value } }
    func get() -> Data { data.withLock { $0 } }
}

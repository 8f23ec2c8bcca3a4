#if canImport(Glibc)
import Glibc
#endif

/// A connection to an MPD server over its text protocol (https://mpd.readthedocs.io, "Protocol"):
/// just what ducking needs, `password`, `status` (the volume) and `setvol`.
///
/// Every call is bounded in time: connecting (name lookup included) and each reply wait at
/// most `timeoutMs`. Errors are `SoundError`s that name the server and the cause.
///
/// Threading: used by one thread at a time (the music ducker's, MusicDucker.swift); it owns
/// a plain socket descriptor and no shared state.
final class MPDClient {
    let host: String
    let port: Int
    let timeoutMs: Int32
    private var fd: Int32 = -1
    private var buffer: [UInt8] = []

    /// The server's protocol version from its greeting (`OK MPD 0.23.5`).
    private(set) var version = ""

    init(host: String, port: Int, timeoutMs: Int32 = 1_000) {
        self.host = host
        self.port = port
        self.timeoutMs = timeoutMs
    }

    deinit { close() }

    var isConnected: Bool { fd >= 0 }
    var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Connects, reads the greeting and, with a password, logs in.
    func connect(password: String?) throws(SoundError) {
        close()
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let list else {
            throw SoundError("cannot find the MPD server \(address): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let info = entry {
            entry = info.pointee.ai_next
            let s = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard s >= 0 else { lastError = Self.errnoText(); continue }
            if Glibc.connect(s, info.pointee.ai_addr, info.pointee.ai_addrlen) != 0 {
                guard errno == EINPROGRESS, wait(s, for: Int16(POLLOUT)) else {
                    lastError = errno == EINPROGRESS ? "no answer within \(timeoutMs) ms" : Self.errnoText()
                    Glibc.close(s)
                    continue
                }
                var err: Int32 = 0
                var len = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len)
                guard err == 0 else {
                    lastError = String(cString: strerror(err))
                    Glibc.close(s)
                    continue
                }
            }
            fd = s
            break
        }
        guard fd >= 0 else { throw SoundError("cannot connect to the MPD server \(address): \(lastError)") }
        buffer = []
        let greeting = try readLine()
        guard greeting.hasPrefix("OK MPD ") else {
            close()
            throw SoundError("\(address) is not an MPD server (it said '\(greeting.prefix(60))')")
        }
        version = String(greeting.dropFirst(7))
        if let password {
            _ = try command("password \(Self.quote(password))")
        }
    }

    /// `status`: the volume (0...100), or nil when MPD has no volume control (no mixer, or
    /// nothing playing on an output whose mixer needs it).
    func volume() throws(SoundError) -> Int? {
        for line in try command("status") where line.hasPrefix("volume: ") {
            let value = Int(line.dropFirst(8)) ?? -1
            return value >= 0 ? value : nil
        }
        return nil
    }

    /// `setvol`: sets the volume (clamped to 0...100).
    func setVolume(_ volume: Int) throws(SoundError) {
        _ = try command("setvol \(max(0, min(100, volume)))")
    }

    /// Sends `line` and returns the reply's lines before `OK`. An `ACK` throws with MPD's text.
    func command(_ line: String) throws(SoundError) -> [String] {
        guard fd >= 0 else { throw SoundError("not connected to the MPD server \(address)") }
        let bytes = Array((line + "\n").utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBufferPointer { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK, wait(fd, for: Int16(POLLOUT)) { continue }
                let reason = Self.errnoText()
                close()
                throw SoundError("lost the MPD server \(address): \(reason)")
            }
            sent += n
        }
        var lines: [String] = []
        while true {
            let reply = try readLine()
            if reply == "OK" { return lines }
            if reply.hasPrefix("ACK ") {
                let name = line.split(separator: " ").first.map(String.init) ?? line
                let advice = reply.contains("{password}") || reply.contains("permission")
                    ? " (check sound.music.password)" : ""
                throw SoundError("the MPD server \(address) refused '\(name)': \(reply.dropFirst(4))\(advice)")
            }
            lines.append(reply)
        }
    }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
        buffer = []
    }

    // MARK: - Internals

    /// One line of the reply (without its newline), waiting at most `timeoutMs` for data.
    private func readLine() throws(SoundError) -> String {
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            guard buffer.count < 65_536 else {
                close()
                throw SoundError("the MPD server \(address) sent a line longer than 64 KiB")
            }
            guard wait(fd, for: Int16(POLLIN)) else {
                close()
                throw SoundError("the MPD server \(address) did not answer within \(timeoutMs) ms")
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBufferPointer { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
            guard n > 0 else {
                let reason = n == 0 ? "it closed the connection" : Self.errnoText()
                close()
                throw SoundError("lost the MPD server \(address): \(reason)")
            }
            buffer += chunk[..<n]
        }
    }

    /// Waits until `descriptor` is ready for `events`, at most `timeoutMs`.
    private func wait(_ descriptor: Int32, for events: Int16) -> Bool {
        var p = pollfd(fd: descriptor, events: events, revents: 0)
        while true {
            let rc = poll(&p, 1, timeoutMs)
            if rc < 0, errno == EINTR { continue }
            return rc > 0
        }
    }

    /// An argument in MPD's quoting: double quotes, with `"` and `\` escaped.
    static func quote(_ text: String) -> String {
        var out = "\""
        for c in text {
            if c == "\"" || c == "\\" { out.append("\\") }
            out.append(c)
        }
        return out + "\""
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }
}

public import Foundation

/// The wall clock's way to its broker, tried as the page tries it: a WebSocket upgrade with
/// the `mqtt` subprotocol at the page's broker address, then an MQTT 3.1.1 CONNECT in a
/// WebSocket frame, answered by a CONNACK.
public enum DoctorWebSocket {
    /// How the attempt ended.
    public enum Outcome: Sendable, Equatable {
        /// The broker answered the CONNECT: return code 0 (accepted) or its refusal.
        case connack(UInt8)
        /// The server answered the upgrade with this HTTP status instead of 101.
        case notUpgraded(status: Int, server: String?)
        /// It upgraded but no CONNACK came (what did come, in words).
        case noConnack(String)
        /// The connection itself failed.
        case network(DoctorNetError)
        /// Not tried (a `wss://` address needs TLS, which this check does not speak).
        case notTried(String)
    }

    /// The HTTP request that asks `url` (`ws://host:port/path`) for a WebSocket speaking MQTT.
    public static func upgradeRequest(_ url: URL, key: String) -> [UInt8] {
        let host = url.host ?? "localhost"
        let hostHeader = url.port.map { "\(host):\($0)" } ?? host
        let path = (url.path.isEmpty ? "/" : url.path) + (url.query.map { "?\($0)" } ?? "")
        return Array(("GET \(path) HTTP/1.1\r\nHost: \(hostHeader)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mqtt\r\n"
            + "Origin: http://\(hostHeader)\r\nUser-Agent: pacer-doctor\r\n\r\n").utf8)
    }

    /// A client's frame (FIN set, masked as a client must): binary by default.
    public static func frame(_ payload: [UInt8], opcode: UInt8 = 0x2, mask: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x80 | opcode]
        let n = payload.count
        if n < 126 {
            out.append(0x80 | UInt8(n))
        } else if n <= 0xFFFF {
            out += [0x80 | 126, UInt8(n >> 8), UInt8(n & 0xFF)]
        } else {
            out.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((UInt64(n) >> UInt64(shift)) & 0xFF)) }
        }
        out += mask
        for (i, byte) in payload.enumerated() { out.append(byte ^ mask[i % 4]) }
        return out
    }

    /// The first whole frame in `bytes` (a server's, unmasked or masked): its opcode, payload
    /// and length; nil while incomplete.
    public static func parseFrame(_ bytes: [UInt8]) -> (opcode: UInt8, payload: [UInt8], length: Int)? {
        guard bytes.count >= 2 else { return nil }
        let opcode = bytes[0] & 0x0F
        let masked = bytes[1] & 0x80 != 0
        var length = Int(bytes[1] & 0x7F)
        var i = 2
        if length == 126 {
            guard bytes.count >= 4 else { return nil }
            length = Int(bytes[2]) << 8 | Int(bytes[3])
            i = 4
        } else if length == 127 {
            guard bytes.count >= 10 else { return nil }
            length = 0
            for k in 2..<10 { length = length << 8 | Int(bytes[k]) }
            i = 10
            guard length < 1 << 24 else { return nil }
        }
        var mask: [UInt8] = []
        if masked {
            guard bytes.count >= i + 4 else { return nil }
            mask = Array(bytes[i..<(i + 4)])
            i += 4
        }
        guard bytes.count >= i + length else { return nil }
        var payload = Array(bytes[i..<(i + length)])
        if masked { for k in payload.indices { payload[k] ^= mask[k % 4] } }
        return (opcode, payload, i + length)
    }

    /// An MQTT 3.1.1 CONNECT: clean session, keep-alive 10 s, with the account when given.
    public static func mqttConnect(clientID: String, username: String?, password: String?) -> [UInt8] {
        func string(_ s: String) -> [UInt8] {
            let b = Array(s.utf8)
            return [UInt8(b.count >> 8), UInt8(b.count & 0xFF)] + b
        }
        var flags: UInt8 = 0x02
        var payload = string(clientID)
        if let username {
            flags |= 0x80
            payload += string(username)
            if let password {
                flags |= 0x40
                payload += string(password)
            }
        }
        let variable: [UInt8] = string("MQTT") + [0x04, flags, 0x00, 0x0A]
        var remaining = variable.count + payload.count
        var length: [UInt8] = []
        repeat {
            var byte = UInt8(remaining % 128)
            remaining /= 128
            if remaining > 0 { byte |= 0x80 }
            length.append(byte)
        } while remaining > 0
        return [0x10] + length + variable + payload
    }

    /// The return code of an MQTT 3.1.1 CONNACK at the start of `bytes`; nil when it is not one.
    public static func connackReturnCode(_ bytes: [UInt8]) -> UInt8? {
        guard bytes.count >= 4, bytes[0] == 0x20, bytes[1] == 0x02 else { return nil }
        return bytes[3]
    }

    /// Judges the attempt at `url`.
    public static func verdict(_ outcome: Outcome, url: String) -> DoctorCheck {
        let listenerFix = "give mosquitto a WebSocket listener for the page: the lines `listener 9001` and `protocol websockets` in /etc/mosquitto/conf.d/pacer.conf (as deploy/mosquitto/pacer.conf; keep a plain `listener 1883` beside it), then sudo systemctl restart mosquitto"
        switch outcome {
        case .connack(0):
            return .ok("websocket", "\(url): WebSocket upgrade and MQTT CONNACK, as the page connects")
        case .connack(let code) where code == 4 || code == 5:
            return .warning("websocket", "\(url) reaches the broker, which refuses anonymous clients (CONNACK \(code)): wall screens need an account",
                            fix: "sign in on the page, or give a display account in a kiosk's address (?user=display&pass=…; docs/dashboard.md), or set allow_anonymous true with the ACL's read-only section (deploy/mosquitto/acl.example)")
        case .connack(let code):
            return .problem("websocket", "\(url): the broker refused the connection (CONNACK return code \(code))",
                            fix: "see the broker's log: journalctl -u mosquitto -n 50")
        case .notUpgraded(let status, let server) where (500...599).contains(status):
            return .problem("websocket", "\(url) answers HTTP \(status)\(server.map { " (\($0))" } ?? ""): the page's server passes /mqtt on, but nothing answers behind it, so the wall clock cannot reach the broker",
                            fix: listenerFix)
        case .notUpgraded(404, let server):
            return .problem("websocket", "\(url) answers HTTP 404\(server.map { " (\($0))" } ?? ""): the page's server does not pass /mqtt on to the broker",
                            fix: "serve the page with lighttpd as deploy/lighttpd/pacer.conf does (its /mqtt block passes WebSockets on to mosquitto's listener), or open the page with ?broker=ws://<broker host>:9001")
        case .notUpgraded(let status, let server):
            return .problem("websocket", "\(url) answers HTTP \(status)\(server.map { " (\($0))" } ?? "") instead of upgrading to a WebSocket",
                            fix: "serve the page with lighttpd as deploy/lighttpd/pacer.conf does, or open the page with ?broker=ws://<broker host>:9001")
        case .noConnack(let what):
            return .problem("websocket", "\(url) upgraded to a WebSocket but no MQTT CONNACK came (\(what)): is it a broker's WebSocket listener?",
                            fix: listenerFix)
        case .network(.refused(let address)):
            return .problem("websocket", "\(url): nothing listens on \(address)", fix: listenerFix)
        case .network(let error):
            return .problem("websocket", "\(url): \(error)", fix: listenerFix)
        case .notTried(let why):
            return .skipped("websocket", "\(url): not checked: \(why)")
        }
    }

    /// Tries `url` within `deadline`.
    static func probe(_ url: URL, clientID: String, username: String?, password: String?,
                      deadline: ContinuousClock.Instant) async -> Outcome {
        guard url.scheme == "ws" else {
            return .notTried(url.scheme == "wss" ? "pacer doctor speaks WebSocket over plain HTTP only; try the page's http:// address with --page"
                                                 : "not a ws:// address")
        }
        guard let host = url.host else { return .notTried("no host in the address") }
        let port = url.port ?? 80
        return await doctorBlocking {
            do throws(DoctorNetError) {
                let socket = try DoctorSocket.connect(host: host, port: port, deadline: deadline)
                let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
                try socket.send(upgradeRequest(url, key: key))
                var received: [UInt8] = []
                var headerEnd: Int?
                while headerEnd == nil {
                    let chunk = try socket.receive()
                    if chunk.isEmpty { return .noConnack("the server closed the connection before answering") }
                    received += chunk
                    headerEnd = DoctorHTTP.headerEnd(received)
                    if received.count > 65_536 { return .noConnack("an endless header") }
                }
                let head = DoctorHTTP.parse(Array(received[0..<(headerEnd! + 4)]), complete: true)
                guard let head, head.status == 101 else {
                    let response = DoctorHTTP.parse(received, complete: true)
                    return .notUpgraded(status: response?.status ?? 0, server: response?.headers["server"])
                }
                var rest = Array(received[(headerEnd! + 4)...])
                let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
                try socket.send(frame(mqttConnect(clientID: clientID, username: username, password: password), mask: mask))
                var mqtt: [UInt8] = []
                while mqtt.count < 4 {
                    while let (opcode, payload, length) = parseFrame(rest) {
                        rest.removeFirst(length)
                        if opcode == 0x8 { return .noConnack("the server closed the WebSocket") }
                        if opcode == 0x2 || opcode == 0x0 { mqtt += payload }
                    }
                    if mqtt.count >= 4 { break }
                    let chunk = try socket.receive()
                    if chunk.isEmpty { return .noConnack("the connection closed") }
                    rest += chunk
                }
                guard let code = connackReturnCode(mqtt) else { return .noConnack("it answered something else") }
                // A clean goodbye: MQTT DISCONNECT, then the WebSocket close.
                try? socket.send(frame([0xE0, 0x00], mask: mask) + frame([0x03, 0xE8], opcode: 0x8, mask: mask))
                return .connack(code)
            } catch {
                return .network(error)
            }
        }
    }
}

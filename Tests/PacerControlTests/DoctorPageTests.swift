import Foundation
@testable import PacerControl
import PacerTestSupport
import Testing

@Suite("pacer doctor: the page, its scripts' types and its way to the broker")
struct DoctorPageTests {
    static let dashboard = testsDirectory().deletingLastPathComponent().appendingPathComponent("examples/dashboard")

    @Test func onlyJavaScriptTypesRunAsModules() {
        #expect(DoctorPage.isJavaScript("text/javascript; charset=utf-8"))
        #expect(DoctorPage.isJavaScript("application/javascript"))
        #expect(DoctorPage.isJavaScript("Text/JavaScript"))
        #expect(!DoctorPage.isJavaScript("application/octet-stream"))
        #expect(!DoctorPage.isJavaScript("text/plain"))
        #expect(!DoctorPage.isJavaScript(nil))
        #expect(!DoctorPage.isJavaScript(""))
        #expect(DoctorPage.mediaType(" text/html ; charset=utf-8") == "text/html")
    }

    @Test func thePagesOwnFilesAreFollowedFromItsPagesToEveryScript() throws {
        // From the three pages, through every script they load and every module those import,
        // the doctor reaches each script of examples/dashboard: none is left unchecked.
        let dir = Self.dashboard
        var queue: [String] = []
        for page in ["index.html", "frontdesk.html", "class.html"] {
            let html = try String(contentsOf: dir.appendingPathComponent(page), encoding: .utf8)
            queue += DoctorPage.scriptReferences(html: html)
        }
        #expect(queue.contains("boot.js") && queue.contains("app.js"), "index.html loads boot.js and app.js: \(queue)")
        var reached: Set<String> = []
        while let next = queue.popLast() {
            let name = next.hasPrefix("./") ? String(next.dropFirst(2)) : next
            guard reached.insert(name).inserted else { continue }
            let script = try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)
            queue += DoctorPage.moduleReferences(script: script)
        }
        let all = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".js") }
        #expect(Set(all) == reached, "not reached: \(Set(all).subtracting(reached).sorted()); unknown: \(reached.subtracting(all).sorted())")
    }

    @Test func importsOfEveryShapeAreFound() {
        let script = """
            import * as A from "./a.js";
            import { b, c } from './b.js'; // a comment
            import {
              d,
            } from "./d.js";
            import "./side.js";
            export { e } from "./e.js";
            const lazy = await import("./lazy.js");
            const important = 1; reimport("./not.js");
            navigator.serviceWorker.register("sw.js");
            fetch("./data.json");
            """
        #expect(DoctorPage.moduleReferences(script: script) == ["./a.js", "./b.js", "./d.js", "./side.js", "./e.js", "./lazy.js", "sw.js"])
    }

    @Test func referencesResolveOnThePagesOwnServerOnly() {
        let page = URL(string: "http://gym.local:8080/wall/?node=gym&timer=main")!
        #expect(DoctorPage.resolve("app.js", against: page)?.absoluteString == "http://gym.local:8080/wall/app.js")
        #expect(DoctorPage.resolve("../x.js#top", against: page)?.absoluteString == "http://gym.local:8080/x.js")
        #expect(DoctorPage.resolve("https://cdn.example/x.js", against: page) == nil)
    }

    @Test func thePageFindsItsBrokerBesideItselfAsMqttJsDoes() {
        #expect(DoctorPage.brokerURL(page: URL(string: "http://127.0.0.1:8080/?node=demo&timer=tabata")!)?.absoluteString == "ws://127.0.0.1:8080/mqtt")
        #expect(DoctorPage.brokerURL(page: URL(string: "https://gym.local/wall/index.html")!)?.absoluteString == "wss://gym.local/wall/mqtt")
        #expect(DoctorPage.brokerURL(page: URL(string: "http://ha.local:8123/local/pacer/index.html?broker=ws://ha.local:1884&node=gym")!)?.absoluteString == "ws://ha.local:1884")
    }

    @Test func scriptsServedAsOctetStreamAreTheHttpDirProblem() {
        let index = DoctorPage.Fetched(url: "http://gym.local:9001/", status: 200, contentType: nil)
        let scripts = ["app.js", "mqtt.js", "clock.js"].map {
            DoctorPage.Fetched(url: "http://gym.local:9001/\($0)", status: 200, contentType: "application/octet-stream")
        }
        let check = DoctorPage.verdict(index: index, scripts: scripts, source: "--page")
        #expect(check.status == .problem)
        #expect(check.message.contains("(app.js, mqtt.js, clock.js) are served as application/octet-stream"))
        #expect(check.message.contains("mosquitto's http_dir"))
        #expect(check.fix?.contains("lighttpd") == true)
        #expect(check.fix?.contains("install.sh --broker-only") == true)
        let none = DoctorPage.verdict(index: index, scripts: [.init(url: "http://h/app.js", status: 200, contentType: nil)], source: "--page")
        #expect(none.message.contains("served with no Content-Type"))
    }

    @Test func aMissingFileOrServerIsAProblemAndTypedScriptsAreFine() {
        let index = DoctorPage.Fetched(url: "http://h/", status: 200, contentType: "text/html")
        let good = DoctorPage.Fetched(url: "http://h/app.js", status: 200, contentType: "text/javascript; charset=utf-8")
        #expect(DoctorPage.verdict(index: index, scripts: [good], source: "s").status == .ok)
        let missing = DoctorPage.verdict(index: index, scripts: [good, .init(url: "http://h/mqtt.js", status: 404, contentType: "text/html")], source: "s")
        #expect(missing.status == .problem)
        #expect(missing.message.contains("mqtt.js (loaded by the page) answers HTTP 404"))
        let down = DoctorPage.verdict(index: .init(url: "http://h/", status: nil, contentType: nil, failure: "nothing listens on h:80 (connection refused)"), scripts: [], source: "s")
        #expect(down.status == .problem)
        #expect(down.fix?.contains("systemctl start lighttpd") == true)
    }

    // MARK: - HTTP

    @Test func responsesAreReadWithLengthChunksOrClose() {
        let plain = Array("HTTP/1.1 200 OK\r\nContent-Type: text/javascript\r\nContent-Length: 5\r\n\r\nhello".utf8)
        #expect(DoctorHTTP.parse(plain, complete: false) == .init(status: 200, headers: ["content-type": "text/javascript", "content-length": "5"], body: Array("hello".utf8)))
        #expect(DoctorHTTP.parse(Array(plain.dropLast(2)), complete: false) == nil)
        let chunked = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n".utf8)
        #expect(DoctorHTTP.parse(chunked, complete: false)?.body == Array("abcde".utf8))
        #expect(DoctorHTTP.parse(Array(chunked.prefix(60)), complete: false) == nil)
        let closed = Array("HTTP/1.0 404 Not Found\r\nServer: x\r\n\r\ngone".utf8)
        #expect(DoctorHTTP.parse(closed, complete: false) == nil)
        #expect(DoctorHTTP.parse(closed, complete: true)?.status == 404)
        #expect(DoctorHTTP.parse(Array("SSH-2.0-OpenSSH\r\n\r\n".utf8), complete: true) == nil)
    }

    // MARK: - WebSocket and MQTT

    @Test func aClientFrameIsMaskedAndReadsBack() throws {
        let mask: [UInt8] = [1, 2, 3, 4]
        for size in [0, 5, 125, 126, 300, 70_000] {
            let payload = (0..<size).map { UInt8($0 & 0xFF) }
            let frame = DoctorWebSocket.frame(payload, mask: mask)
            #expect(frame[1] & 0x80 != 0, "a client's frame is masked")
            let (opcode, read, length) = try #require(DoctorWebSocket.parseFrame(frame))
            #expect(opcode == 2)
            #expect(read == payload)
            #expect(length == frame.count)
            #expect(DoctorWebSocket.parseFrame(Array(frame.dropLast())) == nil)
        }
        // A server's unmasked CONNACK frame.
        let (_, connack, _) = try #require(DoctorWebSocket.parseFrame([0x82, 0x04, 0x20, 0x02, 0x00, 0x00]))
        #expect(DoctorWebSocket.connackReturnCode(connack) == 0)
    }

    @Test func theConnectPacketIsMQTT311() {
        #expect(DoctorWebSocket.mqttConnect(clientID: "d", username: nil, password: nil)
                == [0x10, 13, 0, 4, 0x4D, 0x51, 0x54, 0x54, 4, 0x02, 0, 10, 0, 1, 0x64])
        let withLogin = DoctorWebSocket.mqttConnect(clientID: "d", username: "u", password: "p")
        #expect(withLogin[9] == 0xC2)
        #expect(Array(withLogin.suffix(6)) == [0, 1, 0x75, 0, 1, 0x70])
        #expect(DoctorWebSocket.connackReturnCode([0x20, 0x02, 0x00, 0x05]) == 5)
        #expect(DoctorWebSocket.connackReturnCode([0x30, 0x02, 0x00, 0x00]) == nil)
        let request = String(decoding: DoctorWebSocket.upgradeRequest(URL(string: "ws://127.0.0.1:8080/mqtt")!, key: "k"), as: UTF8.self)
        #expect(request.hasPrefix("GET /mqtt HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"))
        #expect(request.contains("Sec-WebSocket-Protocol: mqtt\r\n"))
    }

    @Test func eachWebSocketOutcomeNamesItsFix() {
        let url = "ws://127.0.0.1:8080/mqtt"
        #expect(DoctorWebSocket.verdict(.connack(0), url: url).status == .ok)
        #expect(DoctorWebSocket.verdict(.connack(5), url: url).status == .warning)
        let proxyOnly = DoctorWebSocket.verdict(.notUpgraded(status: 503, server: "lighttpd/1.4.69"), url: url)
        #expect(proxyOnly.status == .problem)
        #expect(proxyOnly.fix?.contains("`protocol websockets`") == true)
        let noProxy = DoctorWebSocket.verdict(.notUpgraded(status: 404, server: nil), url: url)
        #expect(noProxy.fix?.contains("deploy/lighttpd/pacer.conf") == true)
        #expect(DoctorWebSocket.verdict(.network(.refused("127.0.0.1:9001")), url: url).message.contains("nothing listens on 127.0.0.1:9001"))
        #expect(DoctorWebSocket.verdict(.notTried("wss"), url: url).status == .skipped)
    }
}

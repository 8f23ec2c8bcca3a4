import Foundation
import Mosquitto
import PacerCore
import PacerTestSupport
import Synchronization

/// How a node under test is started.
struct NodeOptions: Sendable {
    /// The YAML configuration file's text (node id, base topic, broker and data dir are
    /// given as flags, which win over the file).
    var config = ""
    /// The broker's port on 127.0.0.1; nil: the shared test broker.
    var brokerPort: Int?
    /// `--mqtt-version` for the node (nil: its default, MQTT 5).
    var mqttVersion: String?
    var logLevel = "info"
    /// Extra filters the probe subscribes to besides `<base>/#` (e.g. heart-rate topics).
    var probeFilters: [String] = []
    /// Whether `start` launches the process (false: the test calls `launch()` itself).
    var launch = true
    /// Extra environment variables for the node process. (It inherits the test's
    /// environment without any `PACER_…` variable: a CI machine's settings must not
    /// reconfigure the nodes under test.)
    var environment: [String: String] = [:]
    /// A command that runs the node (e.g. `setpriv` with another user): the process
    /// launched is `commandPrefix[0]` with the rest of it, then the pacer executable and
    /// its arguments.
    var commandPrefix: [String] = []
    /// The pacer executable to run (nil: the one built beside the tests).
    var executable: String?
    /// The port the node (not the probe) connects to, e.g. a ``TCPProxy`` in front of the
    /// broker that the test can cut (nil: `brokerPort`).
    var nodeBrokerPort: Int?

    init(config: String = "", brokerPort: Int? = nil, mqttVersion: String? = nil, logLevel: String = "info",
         probeFilters: [String] = [], launch: Bool = true) {
        self.config = config
        self.brokerPort = brokerPort
        self.mqttVersion = mqttVersion
        self.logLevel = logLevel
        self.probeFilters = probeFilters
        self.launch = launch
    }
}

/// A reply to a command, as the probe received it.
struct Reply: Sendable, CustomStringConvertible {
    let received: Received
    let json: JSONValue

    var id: JSONValue? { json["id"] }
    var ok: Bool { json["ok"]?.bool == true }
    var code: String? { json["error"]?["code"]?.string }
    var message: String? { json["error"]?["message"]?.string }
    var revision: Int? { json["revision"]?.int }
    var state: JSONValue? { json["state"] }
    var status: String? { json["state"]?["status"]?.string }
    var description: String { json.description }
}

/// One real `pacer run` process with its own node id, base topic (`pacer-test/<node>`),
/// temporary data directory and configuration file, watched by a ``Probe`` subscribed to
/// `<base>/#` from before the node started.
final class TestNode: Sendable {
    let nodeID: String
    let base: String
    let directory: URL
    let dataDirectory: URL
    let configFile: URL
    let logFile: URL
    let brokerPort: Int
    let options: NodeOptions
    let probe: Probe
    private let current = Mutex<TestProcess?>(nil)

    private init(options: NodeOptions, brokerPort: Int, probe: Probe, nodeID: String, directory: URL) {
        self.options = options
        self.brokerPort = brokerPort
        self.probe = probe
        self.nodeID = nodeID
        self.base = "pacer-test/\(nodeID)"
        self.directory = directory
        self.dataDirectory = directory.appendingPathComponent("data", isDirectory: true)
        self.configFile = directory.appendingPathComponent("pacer.yaml")
        self.logFile = directory.appendingPathComponent("pacer.log")
    }

    /// Writes the configuration, connects the probe, launches the node and waits until it
    /// has published `online` and `info`.
    static func start(_ options: NodeOptions = .init()) async throws -> TestNode {
        let port: Int
        if let given = options.brokerPort { port = given } else { port = try await SharedBroker.shared.port() }
        let nodeID = uniqueName("n")
        let directory = try makeTemporaryDirectory("pacer-node-\(nodeID)")
        try options.config.write(to: directory.appendingPathComponent("pacer.yaml"), atomically: false, encoding: .utf8)
        let probe = try await Probe.connect(port: port, subscribe: ["pacer-test/\(nodeID)/#"] + options.probeFilters)
        let node = TestNode(options: options, brokerPort: port, probe: probe, nodeID: nodeID, directory: directory)
        do {
            if options.launch { try await node.launch() }
        } catch {
            await node.stop(clearRetained: false)
            throw error
        }
        return node
    }

    /// The arguments of `pacer run` for this node.
    var arguments: [String] {
        var arguments = [
            "run", "--config", configFile.path, "--broker", "mqtt://127.0.0.1:\(options.nodeBrokerPort ?? brokerPort)",
            "--node", nodeID, "--base-topic", base, "--data-dir", dataDirectory.path, "--log-level", options.logLevel,
        ]
        if let version = options.mqttVersion { arguments += ["--mqtt-version", version] }
        return arguments
    }

    /// Launches the process (again, with the same data directory) and waits until it is online.
    func launch(waitOnline: Bool = true) async throws {
        let start = probe.count
        let executable = try options.executable ?? PacerExecutable.require()
        let command = options.commandPrefix + [executable] + arguments
        let inherited = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PACER_") }
        let process = try TestProcess.launch(command[0], Array(command.dropFirst()), outputFile: logFile,
                                             environment: inherited.merging(options.environment) { _, new in new })
        current.withLock { $0 = process }
        guard waitOnline else { return }
        try await self.waitOnline(from: start, process: process)
        try await waitListening(process: process)
    }

    /// Waits until the node answers on the timer command topics. `online` is published on
    /// CONNACK, while the node subscribes to `<base>/cmd`, `<base>/timers/+/cmd` and the
    /// heart-rate sources one after the other, so a message sent at once can miss its
    /// subscription on a first start (no broker session yet). A refused pause of a timer that
    /// does not exist proves that both command subscriptions are live.
    func waitListening(process: TestProcess, timeout: Duration = .seconds(20)) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            // Answered on the probe's response topic, or on <base>/reply by a node speaking 3.1.1.
            let id = uniqueName("ready-")
            let start = probe.count
            try await probe.publish(topic("pacer-test-ready", "cmd"), Array(#"{"action":"pause","id":"\#(id)"}"#.utf8),
                                    properties: MQTTProperties(responseTopic: probe.replyTopic, correlationData: Array(id.utf8)))
            do {
                try await probe.waitUntil(timeout: .milliseconds(500), "no answer to \(id)") {
                    probe.all[start...].contains { ($0.topic == probe.replyTopic || $0.topic == topic("reply")) && $0.json?["id"]?.string == id }
                }
                return
            } catch {
                if !process.isRunning {
                    throw HarnessError("pacer ended (\(ProcessEnd(waitStatus: process.terminationStatus))) before it answered. Its log:\n\(log)")
                }
                if ContinuousClock.now >= deadline { throw HarnessError("pacer did not answer a command within \(timeout). Its log:\n\(log)") }
            }
        }
    }

    /// Waits for `online` on the status topic (and `info`) from record index `start` on.
    func waitOnline(from start: Int, process: TestProcess? = nil, timeout: Duration = .seconds(20)) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            let online = probe.messages(on: topic("status"), from: start).contains { $0.text == "online" }
            let info = !probe.messages(on: topic("info"), from: start).isEmpty
            if online && info { return }
            if let process = process ?? self.process, !process.isRunning {
                throw HarnessError("pacer ended (\(ProcessEnd(waitStatus: process.terminationStatus))) before it was online. Its log:\n\(log)")
            }
            if ContinuousClock.now >= deadline {
                throw HarnessError("pacer did not publish online and info within \(timeout). Its log:\n\(log)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The running process (nil after stop/kill).
    var process: TestProcess? { current.withLock { $0 } }

    /// Everything the node logged.
    var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// `<base>/<suffix>`.
    func topic(_ suffix: String) -> String { "\(base)/\(suffix)" }
    /// `<base>/timers/<timer>/<name>`.
    func topic(_ timer: String, _ name: String) -> String { "\(base)/timers/\(timer)/\(name)" }

    /// Stops the process: SIGTERM, then SIGKILL after 5 s.
    func terminate() async {
        let process = current.withLock { process -> TestProcess? in
            defer { process = nil }
            return process
        }
        await process?.terminate()
    }

    /// Stops the node and the probe; on the shared broker, clears every retained topic the
    /// node left so the broker does not fill up across the suite.
    func stop(clearRetained: Bool = true) async {
        await terminate()
        if clearRetained && options.brokerPort == nil {
            let topics = Set(probe.all.map(\.topic)).filter {
                $0.hasPrefix(base + "/") && !$0.hasSuffix("/cmd") && !$0.hasSuffix("/event") && $0 != topic("reply")
            }
            for topic in topics.sorted() { try? await probe.publish(topic, [], retain: true) }
            // The Home Assistant discovery configs under the default prefix, one per timer seen.
            let timers = Set(topics.compactMap { $0.dropFirst(base.count + 1).split(separator: "/").dropFirst().first.map(String.init) })
            for timer in timers.sorted() where topics.contains(topic(timer, "state")) {
                try? await probe.publish("homeassistant/device/\(nodeID)_\(timer)/config", [], retain: true)
            }
        }
        await probe.disconnect()
    }

    // MARK: Commands

    /// Sends a JSON command (on the timer's `cmd` topic, or `<base>/cmd` without a timer)
    /// with the probe's MQTT 5 response topic, and returns the reply. Adds a request `id`
    /// when the command has none, and checks that the reply echoes it.
    func send(_ command: JSONValue, timer: String? = nil, timeout: Duration = .seconds(10)) async throws -> Reply {
        var command = command
        if command["id"] == nil { command = command.adding("id", .string(uniqueName("r-"))) }
        let topic = timer.map { self.topic($0, "cmd") } ?? topic("cmd")
        let reply = try await sendRaw(Array(command.description.utf8), topic: topic, timeout: timeout)
        guard reply.id == command["id"] else {
            throw HarnessError("the reply to \(command) does not echo its id: \(reply)")
        }
        return reply
    }

    /// Sends a plain word on a timer's `cmd` topic (with the probe's response topic).
    func word(_ text: String, timer: String) async throws -> Reply {
        try await sendRaw(Array(text.utf8), topic: topic(timer, "cmd"))
    }

    /// Sends any payload to any topic with the probe's response topic; returns the reply.
    func sendRaw(_ payload: [UInt8], topic: String, timeout: Duration = .seconds(10)) async throws -> Reply {
        let received = try await probe.request(payload, on: topic, timeout: timeout)
        guard let json = received.json else {
            throw HarnessError("the reply on \(received.topic) is not JSON: '\(received.text)'")
        }
        return Reply(received: received, json: json)
    }

    // MARK: Observations

    /// The last `state` JSON the probe saw for `timer`.
    func state(_ timer: String) -> JSONValue? { probe.latest(topic(timer, "state"))?.json }

    /// The last payload the probe saw on `<base>/timers/<timer>/<name>`.
    func plain(_ timer: String, _ name: String) -> String? { probe.latest(topic(timer, name))?.text }

    /// Waits for a `state` of `timer` (from record index `start` on) satisfying `predicate`.
    @discardableResult
    func waitForState(
        _ timer: String, from start: Int = 0, timeout: Duration = .seconds(10), where predicate: @escaping (JSONValue) -> Bool
    ) async throws -> JSONValue {
        let found = try await probe.waitFor(topic(timer, "state"), from: start, timeout: timeout) { $0.json.map(predicate) ?? false }
        return found.json!
    }

    /// Events of `timer` received so far (from record index `start` on), in arrival order.
    func events(_ timer: String, from start: Int = 0) -> [JSONValue] {
        probe.messages(on: topic(timer, "event"), from: start).compactMap(\.json)
    }

    /// Waits for an event of `type` of `timer` (from record index `start` on).
    @discardableResult
    func waitForEvent(
        _ timer: String, _ type: String, from start: Int = 0, timeout: Duration = .seconds(10),
        where predicate: @escaping (JSONValue) -> Bool = { _ in true }
    ) async throws -> Received {
        try await probe.waitFor(topic(timer, "event"), from: start, timeout: timeout) {
            guard let json = $0.json else { return false }
            return json["type"]?.string == type && predicate(json)
        }
    }

    /// What a brand-new subscriber to `filters` gets as retained messages now.
    func retained(_ filters: [String]) async throws -> [String: [UInt8]] {
        try await retainedMessages(port: brokerPort, filters)
    }

    /// The retained `info` JSON as a new subscriber gets it now.
    func retainedInfo() async throws -> JSONValue {
        let retained = try await retained([topic("info")])
        guard let info = retained[topic("info")].flatMap(decodeJSON) else { throw HarnessError("no retained info") }
        return info
    }

    /// Waits until the node has handled everything sent before: a `time` command is answered
    /// only after every earlier command (one owner handles commands in arrival order).
    func barrier() async throws {
        let reply = try await send(["action": "time"])
        guard reply.ok else { throw HarnessError("the barrier command failed: \(reply)") }
    }
}

/// Starts a node, runs `body`, and stops the node also when `body` throws (then prints the
/// node's log so the failure can be understood).
func withNode<T>(
    _ options: NodeOptions = .init(),
    isolation: isolated (any Actor)? = #isolation,
    _ body: (TestNode) async throws -> T
) async throws -> T {
    let node = try await TestNode.start(options)
    do {
        let result = try await body(node)
        await node.stop()
        try? FileManager.default.removeItem(at: node.directory)
        return result
    } catch {
        await node.stop()
        print("--- log of pacer node \(node.nodeID) (\(node.directory.path)) ---\n\(node.log)")
        throw error
    }
}


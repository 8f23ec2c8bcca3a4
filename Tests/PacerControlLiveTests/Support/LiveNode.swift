import Foundation
import PacerTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// An error of the live test harness, saying what was expected and what was seen.
struct LiveError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The `pacer` executable built beside this test bundle (`swift build --build-tests` puts
/// both in the same bin directory); `PACER_EXECUTABLE` overrides it.
func pacerExecutable() throws -> String {
    let fm = FileManager.default
    if let explicit = ProcessInfo.processInfo.environment["PACER_EXECUTABLE"], !explicit.isEmpty { return explicit }
    var starts: [String] = []
    if let exe = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe") { starts.append(exe) }
    starts.append(CommandLine.arguments.first ?? "")
    for start in starts where !start.isEmpty {
        var directory = URL(fileURLWithPath: start).standardizedFileURL.deletingLastPathComponent()
        for _ in 0..<6 {
            let candidate = directory.appendingPathComponent("pacer").path
            var isDirectory: ObjCBool = false
            if fm.fileExists(atPath: candidate, isDirectory: &isDirectory), !isDirectory.boolValue, fm.isExecutableFile(atPath: candidate) {
                return candidate
            }
            directory = directory.deletingLastPathComponent()
        }
    }
    throw LiveError("the pacer executable was not found beside the test bundle; build with `swift build --build-tests` or set PACER_EXECUTABLE")
}

/// The broker of the live tests: the shared one of `scripts/test` (`PACER_TEST_BROKER_PORT`),
/// else one started on first use for this test process.
actor LiveBroker {
    static let shared = LiveBroker()
    private var starting: Task<TestBroker, any Error>?

    func port() async throws -> Int {
        if let text = ProcessInfo.processInfo.environment["PACER_TEST_BROKER_PORT"], let port = Int(text) { return port }
        if starting == nil { starting = Task { try await TestBroker.start() } }
        return try await starting!.value.port
    }
}

/// What a `pacer` command did: its exit status and its output (stdout and stderr together).
struct CommandResult: CustomStringConvertible {
    var status: Int32
    var output: String
    var elapsed: Duration
    var description: String { "exit \(status) after \(elapsed): \(output)" }
}

/// One real `pacer run` with its own node id and data directory on the live broker, and a
/// way to run the control commands against it as real processes.
final class LiveNode: Sendable {
    let nodeID: String
    let port: Int
    let directory: URL
    let mqttVersion: String?
    private let process: TestProcess

    private init(nodeID: String, port: Int, directory: URL, mqttVersion: String?, process: TestProcess) {
        self.nodeID = nodeID
        self.port = port
        self.directory = directory
        self.mqttVersion = mqttVersion
        self.process = process
    }

    /// The base topic: `pacer-ctl-test/<node>`.
    var base: String { "pacer-ctl-test/\(nodeID)" }

    /// Starts a node and waits until it answers `pacer list`.
    /// - Parameter config: the text of a YAML configuration file for the node (`<dir>/pacer.yaml`).
    static func start(mqttVersion: String? = nil, config: String? = nil) async throws -> LiveNode {
        let port = try await LiveBroker.shared.port()
        let nodeID = "c" + UUID().uuidString.prefix(8).lowercased()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pacer-ctl-\(nodeID)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var arguments = ["run", "--broker", "mqtt://127.0.0.1:\(port)", "--node", nodeID, "--base-topic", "pacer-ctl-test/\(nodeID)",
                         "--data-dir", directory.appendingPathComponent("data").path]
        if let mqttVersion { arguments += ["--mqtt-version", mqttVersion] }
        if let config {
            let file = directory.appendingPathComponent("pacer.yaml")
            try config.write(to: file, atomically: false, encoding: .utf8)
            arguments += ["--config", file.path]
        }
        let process = try TestProcess.launch(try pacerExecutable(), arguments, outputFile: directory.appendingPathComponent("node.log"),
                                             environment: LiveNode.environment)
        let node = LiveNode(nodeID: nodeID, port: port, directory: directory, mqttVersion: mqttVersion, process: process)
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let result = try await node.pacer(["list", "--timeout", "1"])
            if result.status == 0 { return node }
            if !process.isRunning || ContinuousClock.now > deadline {
                await node.stop()
                throw LiveError("the node did not answer `pacer list`: \(result); its log: \(process.output)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// The environment of every process: without the test machine's `PACER_…` settings.
    static var environment: [String: String] {
        ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PACER_") }
    }

    /// The flags that point a control command at this node.
    var connection: [String] {
        ["--broker", "mqtt://127.0.0.1:\(port)", "--node", nodeID, "--base-topic", base] + (mqttVersion.map { ["--mqtt-version", $0] } ?? [])
    }

    /// Runs `pacer ARGUMENTS --broker … --node …` to completion (at most 30 s).
    func pacer(_ arguments: [String], connect: Bool = true) async throws -> CommandResult {
        try await runPacer(arguments + (connect ? connection : []), in: directory)
    }

    /// The node's log so far.
    var log: String { process.output }

    /// Stops the node (SIGTERM: it publishes `offline`).
    func stop() async {
        await process.terminate()
    }

    /// Stops the node and removes its directory (keeps it when `keep`).
    func finish(keep: Bool = false) async {
        await stop()
        await clearRetained(port: port, base: base)
        if !keep { try? FileManager.default.removeItem(at: directory) }
    }
}

/// Runs the pacer executable with `arguments` to completion (at most 30 s), with its output in a file of `directory`.
func runPacer(_ arguments: [String], in directory: URL) async throws -> CommandResult {
    let output = directory.appendingPathComponent("cmd-\(UUID().uuidString.prefix(8)).log")
    defer { try? FileManager.default.removeItem(at: output) }
    let started = ContinuousClock.now
    let process = try TestProcess.launch(try pacerExecutable(), arguments, outputFile: output, environment: LiveNode.environment)
    guard await process.waitForExit(timeout: .seconds(30)) else {
        await process.kill()
        throw LiveError("pacer \(arguments.joined(separator: " ")) did not end within 30 s: \(process.output)")
    }
    let end = ProcessEnd(waitStatus: process.terminationStatus)
    guard case .exited(let status) = end else { throw LiveError("pacer \(arguments.joined(separator: " ")) ended by \(end)") }
    return CommandResult(status: status, output: process.output, elapsed: ContinuousClock.now - started)
}

/// Runs `body` with a fresh node; stops it afterwards, printing its log when `body` failed.
func withLiveNode<T>(mqttVersion: String? = nil, config: String? = nil, isolation: isolated (any Actor)? = #isolation,
                     _ body: (LiveNode) async throws -> T) async throws -> T {
    let node = try await LiveNode.start(mqttVersion: mqttVersion, config: config)
    do {
        let result = try await body(node)
        await node.finish()
        return result
    } catch {
        print("--- log of node \(node.nodeID) ---\n\(node.log)")
        await node.finish(keep: true)
        throw error
    }
}

import Mosquitto

/// Clears every retained message under `base/#` on the broker (the suite shares one broker).
func clearRetained(port: Int, base: String) async {
    guard let client = try? MQTTClient(configuration: .v5(port: port, clientID: "pacer-ctl-clean-\(UUID().uuidString.prefix(8))",
                                                          cleanStart: true, sessionExpiryInterval: 0)) else { return }
    let messages = client.messages
    let collector = Task<Set<String>, Never> {
        var topics = Set<String>()
        for await message in messages where message.retain && !message.payload.isEmpty { topics.insert(message.topic) }
        return topics
    }
    do {
        try await client.connect()
        try await client.subscribe(to: "\(base)/#", qos: .atLeastOnce)
        try await Task.sleep(for: .milliseconds(300))
    } catch {}
    await client.disconnect()
    let topics = await collector.value
    guard let cleaner = try? MQTTClient(configuration: .v5(port: port, clientID: "pacer-ctl-clean-\(UUID().uuidString.prefix(8))",
                                                           cleanStart: true, sessionExpiryInterval: 0)) else { return }
    do {
        try await cleaner.connect()
        for topic in topics { try await cleaner.publish(to: topic, payload: [], qos: .atLeastOnce, retain: true) }
        try await Task.sleep(for: .milliseconds(100))
    } catch {}
    await cleaner.disconnect()
}

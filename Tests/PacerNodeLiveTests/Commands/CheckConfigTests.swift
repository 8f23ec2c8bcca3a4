import Foundation
import PacerTestSupport
import Testing

/// A bad configuration (docs/configuration.md): `pacer check-config FILE` prints the file, line,
/// key and reason of each problem and fails; `pacer run` refuses a bad configuration at start.
@Suite("pacer check-config")
struct CheckConfigTests {
    /// Runs `pacer` with `arguments` to completion; returns its exit status and output.
    static func runPacer(_ arguments: [String], in directory: URL) async throws -> (status: ProcessEnd, output: String) {
        let output = directory.appendingPathComponent("out-\(UUID().uuidString.prefix(6)).txt")
        let process = try TestProcess.launch(try PacerExecutable.require(), arguments, outputFile: output)
        let exited = await process.waitForExit(timeout: .seconds(30))
        if !exited { await process.kill() }
        try #require(exited, "pacer \(arguments.joined(separator: " ")) did not exit within 30 s")
        return (ProcessEnd(waitStatus: process.terminationStatus), process.output)
    }

    static func write(_ text: String, _ name: String, in directory: URL) throws -> String {
        let path = directory.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    @Test("a good file: exit 0 and a summary")
    func goodFile() async throws {
        let directory = try makeTemporaryDirectory("pacer-check")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try Self.write("""
            node: gym
            base_topic: pacer/gym
            broker:
              url: mqtt://127.0.0.1:1883
              mqtt_version: "3.1.1"
            limits:
              max_timers: 50
              max_payload_bytes: 4096
            timing:
              lag_window: 1s
              cues: [3, 2, 1]
            heart_rate:
              stale_after: 5s
              max_hr: 190
              sources:
                - name: alice
                  topic: ble/hr/alice
            timers:
              - id: main
                name: Main clock
                spec: {preset: tabata}
              - id: tea
                spec: {kind: countdown, duration: "00:04:00", ack: true}
                restore: pause
            presets:
              hiit: {kind: interval, work: 45s, rest: 15s, rounds: 10, prepare: 10s}
            """, "good.yaml", in: directory)
        let (status, output) = try await Self.runPacer(["check-config", file], in: directory)
        #expect(status == .exited(0), "\(output)")
        #expect(output.contains("\(file): OK"), "\(output)")
        #expect(output.contains("node gym"))
        #expect(output.contains("MQTT 3.1.1"))
        #expect(output.contains("2 timer(s), 1 preset(s), 1 heart-rate source(s)"), "\(output)")
    }

    @Test("a bad file: every problem with file, line, key and reason; non-zero exit")
    func badFile() async throws {
        let directory = try makeTemporaryDirectory("pacer-check")
        defer { try? FileManager.default.removeItem(at: directory) }
        let lines = [
            /* 1 */ "node: gym/1",
            /* 2 */ "base_topic: pacer/#",
            /* 3 */ "broker:",
            /* 4 */ "  url: http://127.0.0.1:1883",
            /* 5 */ "limits:",
            /* 6 */ "  max_timers: lots",
            /* 7 */ "heart_rate:",
            /* 8 */ "  sorces: []",
            /* 9 */ "timers:",
            /* 10 */ "  - id: main",
            /* 11 */ "    spec: {kind: interval, work: 40s, rest: -5s}",
            /* 12 */ "  - id: tea",
            /* 13 */ "    spec: {kind: countdown, duration: 8d}",
        ]
        let file = try Self.write(lines.joined(separator: "\n") + "\n", "bad.yaml", in: directory)
        let (status, output) = try await Self.runPacer(["check-config", file], in: directory)
        #expect(status == .exited(1), "\(output)")
        let printed = output.split(separator: "\n").map(String.init)
        for (line, key, reason) in [
            (1, "node", "gym/1"),
            (2, "base_topic", "#"),
            (4, "broker.url", "http"),
            (6, "limits.max_timers", "whole number"),
            (8, "heart_rate.sorces", "unknown"),
            (11, "timers[0].spec.rest", "-5"),
            (13, "timers[1].spec.duration", "duration"),
        ] {
            let prefix = "\(file):\(line): \(key): "
            let match = printed.first { $0.hasPrefix(prefix) }
            #expect(match != nil, "no line starting '\(prefix)' in:\n\(output)")
            if let match {
                let text = String(match.dropFirst(prefix.count))
                #expect(text.count >= 10 && text.contains(reason), "the reason for \(key) should mention '\(reason)': '\(text)'")
            }
        }
        #expect(!output.contains("OK"))
    }

    @Test("unreadable YAML and a missing file are reported with the file name")
    func unreadable() async throws {
        let directory = try makeTemporaryDirectory("pacer-check")
        defer { try? FileManager.default.removeItem(at: directory) }
        let broken = try Self.write("node: gym\ntimers: [\n  {id: a, spec: {kind: countdown}\n", "broken.yaml", in: directory)
        let (status, output) = try await Self.runPacer(["check-config", broken], in: directory)
        #expect(status == .exited(1))
        #expect(output.contains(broken), "\(output)")
        #expect(output.range(of: #"broken\.yaml:\d+"#, options: .regularExpression) != nil, "no line number: \(output)")

        let missing = directory.appendingPathComponent("nope.yaml").path
        let (missingStatus, missingOutput) = try await Self.runPacer(["check-config", missing], in: directory)
        #expect(missingStatus == .exited(1))
        #expect(missingOutput.contains(missing), "\(missingOutput)")
    }

    @Test("pacer run with a bad configuration exits 2 at once, listing the problems")
    func runRefusesBadConfig() async throws {
        let directory = try makeTemporaryDirectory("pacer-check")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try Self.write("limits:\n  max_timers: 0\ntimers:\n  - id: Bad\n    spec: {kind: countdown, duration: 1m}\n", "run.yaml", in: directory)
        let port = try freeLocalPort()  // nothing listens: a bad config must fail before connecting
        let started = ContinuousClock.now
        let (status, output) = try await Self.runPacer(
            ["run", "--config", file, "--broker", "mqtt://127.0.0.1:\(port)", "--data-dir", directory.appendingPathComponent("data").path],
            in: directory)
        #expect(status == .exited(2), "\(output)")
        // "At once": not after trying the broker (nothing listens there; a node that got that
        // far would retry for ever). Generous: a loaded CI run took 13 s to start the debug binary.
        #expect(ContinuousClock.now - started < .seconds(60))
        #expect(output.contains("\(file):2: limits.max_timers:"), "\(output)")
        #expect(output.contains("timers[0].id"), "\(output)")
    }
}

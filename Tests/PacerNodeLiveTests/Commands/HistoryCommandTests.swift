import Foundation
import PacerCore
import PacerTestSupport
import Testing

/// History: `pacer history [--timer ID] [--since TIME] [--limit N] [--json]` reads
/// the node's database while the node runs, and refuses bad options with a clear message.
@Suite("pacer history")
struct HistoryCommandTests {
    static let config = """
        timers:
          - {id: egg, name: Egg, spec: {kind: countdown, duration: 1s}}
          - {id: tea, name: Tea, spec: {kind: countdown, duration: 2s}}
        """

    @Test("while the node runs: the table, --json, --timer, --limit and --since show what happened, newest first")
    func whileTheNodeRuns() async throws {
        try await withNode(.init(config: Self.config)) { node in
            for timer in ["egg", "tea"] {
                let reply = try await node.send(["action": "start"], timer: timer)
                #expect(reply.ok, "\(reply)")
            }
            let teaFinished = try await node.waitForEvent("tea", "finished", timeout: .seconds(10)).json!
            try await node.waitForEvent("egg", "finished", timeout: .seconds(10))
            try await node.barrier()
            #expect(node.process?.isRunning == true)
            let dataDir = ["--data-dir", node.dataDirectory.path]

            // --json: one event per line, exactly the payloads published, newest first.
            let json = try await Self.history(["--json"] + dataDir, in: node.directory)
            #expect(json.status == .exited(0), "\(json.output)")
            let events = json.lines.compactMap { decodeJSON(Array($0.utf8)) }
            #expect(events.count == json.lines.count, "not all lines are JSON: \(json.output)")
            let types = Set(events.compactMap { e in e["timer"]?.string.flatMap { t in e["type"]?.string.map { "\(t)/\($0)" } } })
            #expect(types.isSuperset(of: ["egg/started", "egg/finished", "tea/started", "tea/finished"]), "\(types)")
            #expect(events.first == teaFinished, "the newest event first: \(events.first?.description ?? "none") vs \(teaFinished)")
            #expect(!types.contains { $0.hasSuffix("/countdown") }, "cues are not history: \(types)")

            // --timer filters; --limit caps.
            let tea = try await Self.history(["--json", "--timer", "tea"] + dataDir, in: node.directory)
            #expect(!tea.lines.isEmpty && tea.lines.allSatisfy { $0.contains(#""timer":"tea""#) }, "\(tea.output)")
            let one = try await Self.history(["--json", "--limit", "1"] + dataDir, in: node.directory)
            #expect(one.lines.count == 1 && decodeJSON(Array(one.lines[0].utf8)) == teaFinished, "\(one.output)")

            // --since: a duration ago, and a future instant (nothing).
            let recent = try await Self.history(["--json", "--since", "10m"] + dataDir, in: node.directory)
            #expect(recent.lines.count == json.lines.count, "\(recent.output)")
            let future = try await Self.history(["--json", "--since", String(wallNowMs() + 3_600_000)] + dataDir, in: node.directory)
            #expect(future.status == .exited(0) && future.lines.isEmpty, "\(future.output)")

            // The table: a header, then one row per event with its time, timer, type and revision.
            let table = try await Self.history(["--timer", "egg"] + dataDir, in: node.directory)
            #expect(table.status == .exited(0))
            #expect(table.lines.first?.hasPrefix("time (UTC)") == true, "\(table.output)")
            let finishedRow = table.lines.first { $0.contains("finished") }
            #expect(finishedRow?.contains("egg") == true && finishedRow?.contains("T") == true, "\(table.output)")
            #expect(!table.lines.contains { $0.contains("tea") }, "\(table.output)")

            // The node was never disturbed.
            let again = try await node.send(["action": "start"], timer: "egg")
            #expect(again.ok, "\(again)")
        }
    }

    @Test("bad options and a missing database: a clear message and exit 1, nothing created")
    func badInput() async throws {
        let directory = try makeTemporaryDirectory("pacer-history")
        defer { try? FileManager.default.removeItem(at: directory) }
        let missing = directory.appendingPathComponent("nothing-here").path
        let cases: [([String], String)] = [
            (["--limit", "0", "--data-dir", directory.path], "--limit must be between 1 and 100000, got 0"),
            (["--since", "yesterday-ish", "--data-dir", directory.path], "--since takes a duration ago"),
            (["--timer", "Bad/Id", "--data-dir", directory.path], "Bad/Id"),
            (["--data-dir", missing], missing),
        ]
        for (arguments, expected) in cases {
            let result = try await Self.history(arguments, in: directory)
            #expect(result.status == .exited(1), "pacer history \(arguments): \(result.status) \(result.output)")
            #expect(result.output.contains("pacer history:") && result.output.contains(expected), "pacer history \(arguments): \(result.output)")
        }
        #expect(!FileManager.default.fileExists(atPath: missing), "a read-only command created the data directory")
    }

    /// Runs `pacer history ARGS`; its exit status, output, and output lines (without empty ones).
    static func history(_ arguments: [String], in directory: URL) async throws -> (status: ProcessEnd, output: String, lines: [String]) {
        let (status, output) = try await CheckConfigTests.runPacer(["history"] + arguments, in: directory)
        return (status, output, output.split(separator: "\n").map(String.init).filter { !$0.isEmpty })
    }
}

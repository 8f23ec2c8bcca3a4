import ArgumentParser
import Foundation
import PacerNode

extension Pacer {
    struct History: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the event history from the node's database (works while the node runs).")

        @Option(help: "Only this timer's events.")
        var timer: String?
        @Option(help: "Only events since TIME: a duration ago (10m, 2h), epoch ms, or ISO 8601.")
        var since: String?
        @Option(help: "At most N events (newest first).")
        var limit: Int = 50
        @Flag(help: "One JSON event per line instead of a table (class summaries included).")
        var json = false
        @Flag(help: "The class heart-rate summaries as CSV: a line per athlete and segment, and per athlete's run (--limit counts runs).")
        var csv = false
        @OptionGroup var options: NodeOptions

        func run() async throws {
            let (config, _) = try options.loadForControl()
            if json && csv {
                FileHandle.standardError.write(Data("pacer history: give --json or --csv, not both\n".utf8))
                throw ExitCode(64)
            }
            do {
                let lines = csv ? try HistoryReport.classCSV(dataDirectory: config.dataDirectory, timer: timer, since: since, limit: limit)
                    : try HistoryReport.lines(dataDirectory: config.dataDirectory, timer: timer, since: since,
                                                    limit: limit, json: json)
                for line in lines { print(line) }
            } catch {
                FileHandle.standardError.write(Data("pacer history: \(error)\n".utf8))
                throw ExitCode(1)
            }
        }
    }
}

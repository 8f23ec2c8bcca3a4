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
        @Flag(help: "One JSON event per line instead of a table.")
        var json = false
        @OptionGroup var options: NodeOptions

        func run() async throws {
            let config = try options.load()
            do {
                let lines = try HistoryReport.lines(dataDirectory: config.dataDirectory, timer: timer, since: since,
                                                    limit: limit, json: json)
                for line in lines { print(line) }
            } catch {
                FileHandle.standardError.write(Data("pacer history: \(error)\n".utf8))
                throw ExitCode(1)
            }
        }
    }
}

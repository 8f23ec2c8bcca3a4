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
        @Flag(help: "An athlete's class run as a TCX file (Strava, Garmin Connect): needs --athlete.")
        var tcx = false
        @Option(help: "With --tcx: the athlete's id.")
        var athlete: String?
        @Option(help: "With --tcx: the run going at TIME (ISO 8601 or epoch ms; the run_started column of --csv); default: the athlete's newest.")
        var run: String?
        @Option(help: "With --tcx: the file to write ('-': standard output); default: <timer>-<athlete>-<start>.tcx here.")
        var output: String?
        @OptionGroup var options: NodeOptions

        func run() async throws {
            let (config, _) = try options.loadForControl()
            if json && csv {
                FileHandle.standardError.write(Data("pacer history: give --json or --csv, not both\n".utf8))
                throw ExitCode(64)
            }
            if tcx || athlete != nil || run != nil || output != nil {
                try writeTCX(dataDirectory: config.dataDirectory)
                return
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

        private func writeTCX(dataDirectory: String) throws {
            func usage(_ text: String) throws -> Never {
                FileHandle.standardError.write(Data("pacer history: \(text)\n".utf8))
                throw ExitCode(64)
            }
            guard tcx else { try usage("--athlete, --run and --output go with --tcx") }
            guard !json && !csv else { try usage("give one of --json, --csv and --tcx") }
            guard let athlete else { try usage("--tcx needs --athlete ID (the athlete's id, as in `pacer history --csv`)") }
            do {
                let (name, xml) = try HistoryReport.classTCX(dataDirectory: dataDirectory, timer: timer, athlete: athlete, run: run)
                if output == "-" {
                    print(xml, terminator: "")
                    return
                }
                let path = output ?? name
                guard FileManager.default.createFile(atPath: path, contents: Data(xml.utf8)) else {
                    FileHandle.standardError.write(Data("pacer history: cannot write \(path) (does its directory exist, may it be written?)\n".utf8))
                    throw ExitCode(1)
                }
                print("wrote \(path)")
            } catch let error as HistoryReport.Failure {
                FileHandle.standardError.write(Data("pacer history: \(error)\n".utf8))
                throw ExitCode(1)
            }
        }
    }
}

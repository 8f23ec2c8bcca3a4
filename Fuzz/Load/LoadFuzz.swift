// libFuzzer target: `NodeConfiguration.load` itself, the whole YAML file -> configuration, as
// `pacer run --config` and `pacer check-config` call it. Built by SwiftPM on PacerNode with every
// dependency, like the engine's target (`fuzz-load` in Package.swift, with PACER_FUZZ_ENGINE=1):
// a loader that reads more of the node (the phrase table, the displays, the timetable) needs
// no list of files here. The input is written to a temporary file each run, and the loader reads
// it from there (files the YAML names, such as password_file, are read too; the loader refuses
// what is not a regular file).
import Foundation
import PacerCore
@testable import PacerNode

/// One file per fuzzing process, rewritten for every input.
nonisolated(unsafe) private var inputPath: String = {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pacer-fuzz-load-\(getpid()).yaml").path
    atexit { unlink(FileManager.default.temporaryDirectory.appendingPathComponent("pacer-fuzz-load-\(getpid()).yaml").path) }
    return path
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLoad(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    // Swift 6.3.1's FoundationEssentials leaks a 4 KiB buffer reading an empty file (LeakSanitizer:
    // `readBytesFromFile` under `String(contentsOfFile:)`): not Pacer's, and once per start, so the
    // empty file is left to ConfigurationTests and leak detection stays on for everything else.
    if size == 0 { return 0 }
    let path = inputPath
    guard FileManager.default.createFile(atPath: path, contents: Data(bytes: data, count: size)) else {
        fatalError("cannot write \(path)")
    }
    let config: NodeConfiguration
    do {
        config = try NodeConfiguration.load(flags: .init(configFile: path), environment: [:], hostname: "fuzz-host")
    } catch {
        // Refused: every problem names where and why, on one line.
        precondition(!error.problems.isEmpty, "a configuration error without a problem")
        for problem in error.problems {
            precondition(!problem.reason.isEmpty, "a problem without a reason: \(problem)")
            _ = problem.description
        }
        return 0
    }
    // Accepted: what the node then relies on holds.
    precondition(!config.nodeID.isEmpty && !config.baseTopic.isEmpty, "empty node id or base topic")
    precondition((1...65_535).contains(config.broker.port), "broker port \(config.broker.port)")
    precondition((1...100_000).contains(config.limits.maxTimers), "max_timers \(config.limits.maxTimers)")
    precondition(config.limits.maxPayloadBytes >= 1024 && config.limits.dedupWindowMs >= 1_000, "limits \(config.limits)")
    if let rate = config.limits.commandRate { precondition(rate.perSecond > 0 && rate.burst > 0, "rate \(rate)") }
    precondition(config.timers.count <= config.limits.maxTimers, "more timers than max_timers")
    var ids: Set<String> = []
    for timer in config.timers {
        // Every declared timer is one the node can create at start (what it does next).
        precondition(ids.insert(timer.id).inserted && (try? TimerMachine.validateID(timer.id)) != nil, "timer id \(timer.id)")
        let spec = try? TimerSpec(json: timer.spec, presets: config.presets)
        precondition(spec.flatMap { try? TimerMachine(id: timer.id, name: timer.name, spec: $0, settings: config.timerSettings) } != nil,
                     "declared timer \(timer.id) has a spec the core refuses: \(timer.spec)")
    }
    return 0
}

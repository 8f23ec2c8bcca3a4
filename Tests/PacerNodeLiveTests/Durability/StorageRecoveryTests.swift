import Foundation
import PacerCore
import PacerStore
import PacerTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Storage and restore (docs/storage.md, "Corruption and errors at open") with real processes: what
/// `pacer run` does with a bad, missing, unusable or busy data directory (never a crash loop), the
/// restore policies and `restore.max_age`, and a timer that reached zero while the node was down.
@Suite("Storage recovery and restore with real processes")
struct StorageRecoveryTests {
    // MARK: The data directory

    @Test("a corrupt pacer.sqlite is moved aside with a clear log line; the node runs empty and durable")
    func corruptDatabase() async throws {
        try await withNode(.init(launch: false)) { node in
            try FileManager.default.createDirectory(at: node.dataDirectory, withIntermediateDirectories: true)
            let garbage = Array("this is not a database, just garbage bytes\n".utf8) + (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let database = node.dataDirectory.appendingPathComponent("pacer.sqlite")
            try Data(garbage).write(to: database)

            try await node.launch()
            // A clear line: what, where it went, and that the node starts empty.
            let line = try #require(node.log.split(separator: "\n").first { $0.contains("could not be used") },
                                    "no log line about the unusable database:\n\(node.log)")
            #expect(line.contains(database.path) && line.contains("moved it to") && line.contains("empty"), "\(line)")
            let files = try FileManager.default.contentsOfDirectory(atPath: node.dataDirectory.path)
            let aside = try #require(files.first { $0.hasPrefix("pacer.sqlite.corrupt-") }, "nothing moved aside: \(files)")
            #expect(line.contains(aside), "the log line does not name \(aside): \(line)")
            #expect(try Data(contentsOf: node.dataDirectory.appendingPathComponent(aside)) == Data(garbage), "the moved file is not the garbage as it was")

            let info = try await node.retainedInfo()
            #expect(info["storage"]?["ok"] == true, "\(info)")
            #expect(info["timers"] == [], "the node did not start empty: \(info)")

            // It works, and the new database keeps what it is given.
            let started = try await node.send(["action": "start", "spec": ["kind": "countdown", "duration": "10m"]], timer: "fresh")
            #expect(started.ok, "\(started)")
            await node.terminate()
            let relaunch = node.probe.count
            try await node.launch()
            let restored = try await node.waitForState("fresh", from: relaunch) { $0["status"] == "running" && $0["revision"]?.int ?? 0 >= started.revision ?? 0 }
            #expect(restored["status"] == "running")
            #expect(node.process?.isRunning == true)
            // The file moved aside is never deleted.
            #expect(FileManager.default.fileExists(atPath: node.dataDirectory.appendingPathComponent(aside).path))
        }
    }

    @Test("a missing data directory is created, with its parents")
    func missingDirectory() async throws {
        try await withNode(.init(launch: false)) { node in
            let dataDirectory = node.directory.appendingPathComponent("not/there/yet/data", isDirectory: true)
            #expect(!FileManager.default.fileExists(atPath: dataDirectory.path))
            try await withCustomProcess(node, dataDirectory: dataDirectory.path) { _ in
                var isDirectory: ObjCBool = false
                #expect(FileManager.default.fileExists(atPath: dataDirectory.path, isDirectory: &isDirectory) && isDirectory.boolValue)
                #expect(FileManager.default.fileExists(atPath: dataDirectory.appendingPathComponent("pacer.sqlite").path))
                let info = try await node.retainedInfo()
                #expect(info["storage"]?["ok"] == true, "\(info)")
                #expect(info["storage"]?["path"]?.string?.hasPrefix(dataDirectory.path) == true, "\(info)")
                let reply = try await node.send(["action": "create", "timer": "kitchen", "spec": ["kind": "countdown", "duration": "5m"]])
                #expect(reply.ok, "\(reply)")
            }
        }
    }

    @Test("a data directory below a regular file: the node runs without durability, says so in its log and info, and keeps working")
    func directoryBelowAFile() async throws {
        try await withNode(.init(launch: false)) { node in
            let file = node.directory.appendingPathComponent("a-file")
            try Data("not a directory".utf8).write(to: file)
            try await expectRunsWithoutDatabase(node, dataDirectory: file.appendingPathComponent("data").path)
        }
    }

    /// Skipped as root (as in CI): permission bits do not stop root, so the directory below a
    /// regular file (above) is the unusable directory every run checks.
    @Test("a read-only data directory (chmod 0555): the node runs without durability",
          .enabled(if: getuid() != 0, "running as root: permission bits do not stop root from writing"))
    func readOnlyDirectory() async throws {
        try await withNode(.init(launch: false)) { node in
            let readOnly = node.directory.appendingPathComponent("read-only", isDirectory: true)
            try FileManager.default.createDirectory(at: readOnly, withIntermediateDirectories: true)
            chmod(readOnly.path, 0o555)
            defer { chmod(readOnly.path, 0o755) }
            try await expectRunsWithoutDatabase(node, dataDirectory: readOnly.path)
        }
    }

    /// The node does not exit (no crash loop under systemd): it runs, logs loudly, reports
    /// `"storage": {"ok": false, "error": ...}` in `info`, and answers commands.
    private func expectRunsWithoutDatabase(_ node: TestNode, dataDirectory: String) async throws {
        try await withCustomProcess(node, dataDirectory: dataDirectory) { process in
            #expect(node.log.contains("WITHOUT a database"), "no loud log line:\n\(node.log)")
            let info = try await node.retainedInfo()
            #expect(info["storage"]?["ok"] == false, "\(info)")
            let error = info["storage"]?["error"]?.string ?? ""
            #expect(error.contains(dataDirectory) || error.contains("data-dir"), "the storage error does not say what is wrong: \(info)")
            let started = try await node.send(["action": "start", "spec": ["kind": "countdown", "duration": "3s"]], timer: "volatile")
            #expect(started.ok, "\(started)")
            #expect(started.status == "running")
            try await node.waitForEvent("volatile", "finished", timeout: .seconds(10))
            let paused = try await node.send(["action": "pause"], timer: "volatile")
            #expect(paused.code == "invalid_state", "\(paused)")
            try await Task.sleep(for: .milliseconds(500))
            #expect(process.isRunning, "the node exited:\n\(node.log)")
        }
    }

    @Test("a second node on the same data directory exits non-zero with a message naming the lock holder")
    func secondNodeOnTheSameDirectory() async throws {
        try await withNode { first in
            let firstPID = try #require(first.process?.pid)
            try await withNode(.init(launch: false)) { second in
                var arguments = second.arguments
                let index = try #require(arguments.firstIndex(of: "--data-dir"))
                arguments[index + 1] = first.dataDirectory.path
                let process = try TestProcess.launch(try PacerExecutable.require(), arguments, outputFile: second.logFile)
                let exited = await process.waitForExit(timeout: .seconds(15))
                if !exited { await process.terminate() }
                #expect(exited, "the second node kept running on a directory in use:\n\(second.log)")
                let status = try #require(process.terminationStatus)
                let exitCode = (status >> 8) & 0xff, signal = status & 0x7f
                #expect(signal == 0 && exitCode != 0, "wait status \(status): exit code \(exitCode), signal \(signal)")
                let log = second.log
                #expect(log.contains("in use by another pacer process (pid \(firstPID))"), "the message does not name the holder:\n\(log)")
                #expect(log.contains(first.dataDirectory.path), "the message does not name the directory:\n\(log)")
                #expect(!second.probe.all.contains { $0.topic == second.topic("status") && $0.text == "online" }, "the second node went online")
            }
            // The first one is unharmed.
            let reply = try await first.send(["action": "create", "timer": "still", "spec": ["kind": "countdown", "duration": "1m"]])
            #expect(reply.ok, "\(reply)")
        }
    }

    // MARK: Restore policies

    @Test("restore policies: resume goes on through the outage, pause keeps the remaining time of the last write, discard resets")
    func restorePolicies() async throws {
        let config = """
            timers:
              - {id: keep, name: Keep, spec: {kind: countdown, duration: 60s}}
              - {id: hold, name: Hold, spec: {kind: countdown, duration: 60s}, restore: pause}
              - {id: short, name: Short, spec: {kind: countdown, duration: 3s}, restore: pause}
              - {id: drop, name: Drop, spec: {kind: countdown, duration: 60s}, restore: discard}
            """
        try await withNode(.init(config: config)) { node in
            var models: [String: TimerModel] = [:]
            for (id, duration) in [("keep", "60s"), ("hold", "60s"), ("short", "3s"), ("drop", "60s")] {
                models[id] = try TimerModel(id: id, name: id.capitalized, spec: ["kind": "countdown", "duration": .string(duration)], settings: .init())
            }
            func apply(_ action: String, _ operation: TimerOperation, _ timer: String) async throws -> Reply {
                let reply = try await node.send(["action": .string(action)], timer: timer)
                #expect(reply.ok, "\(reply)")
                let asOf = try #require(reply.state?["as_of_ms"]?.int64)
                models[timer]!.add(AcceptedCommand(requestID: reply.id?.string ?? "", operation: operation, asOfMs: asOf, revision: reply.revision ?? -1))
                return reply
            }
            for timer in ["keep", "hold", "drop"] { _ = try await apply("start", .start(spec: nil, startAt: nil, restart: false), timer) }
            // hold: paused and resumed, so its last write is the resume, 0.6 s into the run.
            try await Task.sleep(for: .milliseconds(600))
            _ = try await apply("pause", .pause, "hold")
            try await Task.sleep(for: .milliseconds(400))
            let resumed = try await apply("resume", .resume, "hold")
            let lastWriteMs = try #require(resumed.state?["as_of_ms"]?.int64)
            let holdRemainingAtLastWrite = try #require(resumed.state?["remaining_ms"]?.int64)
            try await Task.sleep(for: .milliseconds(300))

            // short (3 s) starts just before the kill and reaches zero while the node is down.
            _ = try await apply("start", .start(spec: nil, startAt: nil, restart: false), "short")
            await node.kill()
            try await Task.sleep(for: .milliseconds(3_800))
            let restart = node.probe.count
            try await node.launch()
            try await node.barrier()

            func restored(_ timer: String) throws -> JSONValue {
                try #require(node.probe.messages(on: node.topic(timer, "state"), from: restart).first?.json, "no state of \(timer) after the restart")
            }
            // resume: where the core says it is now, as if the node had never stopped.
            let keep = try restored("keep")
            let asOf = try #require(keep["as_of_ms"]?.int64)
            let differences = stateDifferences(node: keep, model: models["keep"]!.snapshot(asOfMs: asOf, revision: keep["revision"]?.int ?? -1))
            #expect(differences.isEmpty, "keep: \(differences)")
            #expect(keep["status"] == "running")

            // pause: paused at the remaining time it had at its last write (the resume).
            let hold = try restored("hold")
            #expect(hold["status"] == "paused", "\(hold)")
            #expect(hold["remaining_ms"]?.int64 == holdRemainingAtLastWrite, "hold: remaining \(hold["remaining_ms"]?.description ?? "none"), at the last write (\(lastWriteMs)) it was \(holdRemainingAtLastWrite)")
            // A pause-policy timer that would have run out while the node was down is paused
            // with the time it had at its last write (its start), and nothing finished.
            let short = try restored("short")
            #expect(short["status"] == "paused", "\(short)")
            #expect(short["remaining_ms"]?.int64 == 3_000, "short: \(short)")
            #expect(short["segment_elapsed_ms"]?.int64 == 0, "short: \(short)")
            #expect(!node.events("short").contains { $0["type"] == "finished" }, "short finished while it was to be restored paused: \(node.events("short"))")

            // discard: idle again, with a log line.
            let drop = try restored("drop")
            #expect(drop["status"] == "idle", "\(drop)")
            #expect(node.log.contains("its restore policy is discard"), "no log line for the discarded timer:\n\(node.log)")

            // A paused restore stays put: another restart later shows the same remaining time.
            try await Task.sleep(for: .milliseconds(1_000))
            await node.terminate()
            let again = node.probe.count
            try await node.launch()
            let held = try await node.waitForState("hold", from: again) { _ in true }
            #expect(held["status"] == "paused")
            #expect(held["remaining_ms"]?.int64 == holdRemainingAtLastWrite, "\(held)")
            let resumedAgain = try await node.send(["action": "resume"], timer: "hold")
            #expect(resumedAgain.ok && resumedAgain.state?["remaining_ms"]?.int64 == holdRemainingAtLastWrite, "\(resumedAgain)")
        }
    }

    @Test("restore.max_age: saved state older than the maximum age is discarded with a log line")
    func maximumAge() async throws {
        let config = """
            restore: {max_age: 1m}
            timers:
              - {id: old, name: Old, spec: {kind: countdown, duration: 10m}}
              - {id: recent, name: Recent, spec: {kind: countdown, duration: 10m}}
            """
        try await withNode(.init(config: config)) { node in
            for timer in ["old", "recent"] {
                let reply = try await node.send(["action": "start"], timer: timer)
                #expect(reply.ok, "\(reply)")
            }
            await node.terminate()
            // Age the record of "old" by two minutes. Waiting for real would take more than a
            // minute (the smallest max_age), so the test rewrites `updated_at_ms` of its row
            // through PacerStore while the node is stopped: the machine (its anchors) is left
            // as it is, only the time of the last write moves back.
            let (database, recovery) = try PacerDatabase.open(directory: node.dataDirectory.path)
            #expect(recovery == nil)
            var record = try #require(try database.loadTimers().first { $0.id == "old" })
            record.updatedAtMs -= 120_000
            var batch = StoreBatch()
            batch.upsertTimers = [record]
            try database.apply(batch)
            try database.close()

            let restart = node.probe.count
            try await node.launch()
            let old = try #require(node.probe.messages(on: node.topic("old", "state"), from: restart).first?.json)
            let recent = try #require(node.probe.messages(on: node.topic("recent", "state"), from: restart).first?.json)
            #expect(old["status"] == "idle", "\(old)")
            #expect(recent["status"] == "running", "\(recent)")
            let line = node.log.split(separator: "\n").first { $0.contains("saved state discarded") && $0.contains("old") }
            #expect(line?.contains("restore.max_age") == true, "no log line naming restore.max_age:\n\(node.log)")
        }
    }

    // MARK: A timer that reached zero while the node was down

    @Test("reached zero while down: finished/expired published once with late_ms, never again on later restarts")
    func reachedZeroWhileDown() async throws {
        let config = """
            timing: {auto_dismiss: 5m}
            timers:
              - {id: egg, name: Egg, spec: {kind: countdown, duration: 10s}}
              - {id: nap, name: Nap, spec: {kind: rest, duration: 10s, ack: true}}
            """
        try await withNode(.init(config: config)) { node in
            var due: [String: Millis] = [:]
            for timer in ["egg", "nap"] {
                let reply = try await node.send(["action": "start"], timer: timer)
                #expect(reply.ok, "\(reply)")
                due[timer] = try #require(reply.state?["ends_at_ms"]?.int64)
            }
            try await Task.sleep(for: .milliseconds(300))
            await node.kill()
            // Killed before either reached zero (10 s leave room for a loaded machine: 5 s once
            // did not, with a thousand power cuts running beside the suite): nothing
            // was published for it live.
            let live = node.events("egg").filter { $0["type"] == "finished" } + node.events("nap").filter { $0["type"] == "expired" }
            try #require(live.isEmpty, "the node was killed only after a timer reached zero, so this run tests nothing: \(live)")
            // Down until 2.5 s after both reached zero: more than the lag window (2 s) before the
            // node is back. (An event due less than the lag window ago is not late: the core's
            // rule, docs/timer-core.md "Late events"; it carries no late_ms.)
            try await Task.sleep(until: waitTarget(due.values.max()! + 2_500))
            let restartMs = wallNowMs()
            let restart = node.probe.count
            try await node.launch()

            let finished = try await node.waitForEvent("egg", "finished", timeout: .seconds(10)).json!
            let expired = try await node.waitForEvent("nap", "expired", timeout: .seconds(10)).json!
            for (event, timer) in [(finished, "egg"), (expired, "nap")] {
                let dueMs = try #require(due[timer])
                #expect(event["due_ms"]?.int64 == dueMs, "\(event)")
                let late = try #require(event["late_ms"]?.int64, "no late_ms: \(event)")
                #expect(late >= restartMs - dueMs - 50 && late == (event["at_ms"]?.int64 ?? 0) - dueMs, "late_ms \(late): \(event)")
            }
            #expect(finished["reason"] == "completed")
            #expect(finished["finished_at_ms"]?.int64 == due["egg"])
            // The restored states show it (published right after their events).
            try await node.waitForState("egg", from: restart) { $0["status"] == "finished" && $0["revision"] == finished["revision"] }
            try await node.waitForState("nap", from: restart) { $0["status"] == "expired" && $0["revision"] == expired["revision"] }

            // Killed again (after the outbox settled), stopped cleanly, started: never again.
            try await Task.sleep(for: .seconds(2))
            await node.kill()
            try await node.launch()
            try await Task.sleep(for: .seconds(2))
            await node.terminate()
            let last = node.probe.count
            try await node.launch()
            try await Task.sleep(for: .seconds(2))
            // The restored states are out (held back while an outbox check runs): anything this
            // run would publish for these timers came before them.
            for timer in ["egg", "nap"] { try await node.waitForState(timer, from: last) { _ in true } }
            try await node.barrier()
            #expect(node.events("egg").filter { $0["type"] == "finished" }.count == 1, "\(node.events("egg"))")
            #expect(node.events("nap").filter { $0["type"] == "expired" }.count == 1, "\(node.events("nap"))")
            #expect(node.state("egg")?["status"] == "finished")
            #expect(node.state("nap")?["status"] == "expired")
            #expect(node.probe.messages(on: node.topic("nap", "state"), from: last).first?.json?["revision"] == expired["revision"])

            // And acknowledging the expired rest timer now finishes it once.
            let ack = try await node.send(["action": "ack"], timer: "nap")
            #expect(ack.ok && ack.status == "finished", "\(ack)")
        }
    }

    @Test("reached zero while down, and killed again right after it came back: the late event is never lost, and not repeated once its state reached the broker")
    func killedWhileSettlingTheOutbox() async throws {
        let config = """
            timers:
              - {id: egg, name: Egg, spec: {kind: countdown, duration: 1s}}
            """
        try await withNode(.init(config: config)) { node in
            for round in 1...4 {
                let start = try await node.send(["action": "start"], timer: "egg")
                #expect(start.ok, "\(start)")
                let revision = try #require(start.revision)
                await node.kill()
                try await Task.sleep(for: .milliseconds(1_500))
                // Back up, and killed again the moment it says `online` (odd rounds) or its
                // restored state reaches the broker (even rounds): before, or while, the outbox
                // (the late `finished`) is settled. (Before the fix of the outbox, the restored
                // state went out first and a kill then lost the finished for good.)
                let restart = node.probe.count
                try await node.launch(waitOnline: false)
                let deadline = ContinuousClock.now + .seconds(20)
                func backUp() -> Bool {
                    if round % 2 == 1 {
                        return node.probe.messages(on: node.topic("status"), from: restart).contains { $0.text == "online" }
                    }
                    return node.probe.messages(on: node.topic("egg", "state"), from: restart).contains { $0.json?["revision"]?.int ?? 0 > revision }
                }
                while !backUp() {
                    if ContinuousClock.now > deadline { throw HarnessError("no restored state of egg:\n\(node.log)") }
                    try await Task.sleep(for: .milliseconds(1))
                }
                await node.kill()
                let final = node.probe.count
                try await node.launch()
                // Wait until this run has settled egg: its restored state goes out only after the
                // outbox check is decided, after any event that check publishes (on the same
                // connection, so the probe gets them in that order); then a short settle.
                let online = try await node.probe.waitFor(node.topic("status"), from: final) { $0.text == "online" }
                let onlineIndex = node.probe.all[final...].firstIndex { $0.topic == online.topic && $0.text == "online" } ?? final
                try await node.waitForState("egg", from: onlineIndex) { $0["revision"]?.int ?? 0 > revision }
                _ = try? await node.probe.waitFor(node.topic("egg", "event"), timeout: .seconds(10)) {
                    $0.json?["type"] == "finished" && ($0.json?["revision"]?.int ?? 0) > revision
                }
                try await Task.sleep(for: .milliseconds(300))
                try await node.barrier()
                let records = node.probe.all
                let copies = records.indices.filter {
                    records[$0].topic == node.topic("egg", "event") && records[$0].json?["type"] == "finished"
                        && (records[$0].json?["revision"]?.int ?? 0) > revision
                }
                if copies.isEmpty {
                    // Never published: say what the database holds (the node's files are kept).
                    let history = (try? PacerDatabase.openReadOnly(directory: node.dataDirectory.path).history(HistoryQuery(timer: "egg", limit: 10))) ?? []
                    let rows = history.map { "\($0.type) r\($0.revision) due \($0.dueMs) at \($0.atMs) published \($0.published)" }
                    throw HarnessError("round \(round): the late finished (revision > \(revision)) was never published; the database has: \(rows)")
                }
                // A second copy is acceptable only as the duplicate no MQTT publisher can rule
                // out: killed between the event and the state that proves it reached the broker.
                for copy in copies.dropFirst() {
                    let unproven = isUnprovenRepublish(records, first: copies[0], second: copy,
                                                       stateTopic: node.topic("egg", "state"), statusTopic: node.topic("status"))
                    #expect(unproven, "round \(round): the late finished was published again although its state had reached the broker: \(copies.map { records[$0].text })")
                    if unproven { print("StorageRecoveryTests: round \(round): the late finished was published again after a kill between it and its state (allowed)") }
                }
            }
        }
    }

    // MARK: Helpers

}

/// Launches `pacer run` for `node` with another data directory, waits until it is online,
/// runs `body`, and stops the process (the harness only stops the processes it launched).
func withCustomProcess(_ node: TestNode, dataDirectory: String, _ body: (TestProcess) async throws -> Void) async throws {
    var arguments = node.arguments
    if let index = arguments.firstIndex(of: "--data-dir") { arguments[index + 1] = dataDirectory }
    let start = node.probe.count
    let process = try TestProcess.launch(try PacerExecutable.require(), arguments, outputFile: node.logFile)
    do {
        try await node.waitOnline(from: start, process: process)
        try await body(process)
        await process.terminate()
    } catch {
        await process.terminate()
        throw error
    }
}

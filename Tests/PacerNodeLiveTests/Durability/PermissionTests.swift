import Foundation
import PacerCore
import PacerTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A read-only directory: a data directory or database the node's user cannot write.
/// Permission bits do not stop root (CI runs as root), so the node runs as `nobody` here
/// (`setpriv`), on a copy of the executable in a directory `nobody` can reach. As another
/// user, the checks run the same way.
@Suite("Data the node's user cannot write", .serialized)
struct PermissionTests {
    static let nobody: (uid: UInt32, gid: UInt32) = (65_534, 65_534)

    /// Options that run the node as `nobody` when this is root (else as this user).
    static func unprivileged(_ node: URL) throws -> NodeOptions {
        var options = NodeOptions(launch: false)
        guard getuid() == 0 else { return options }
        // The node's directory (config, executable copy) must be reachable by nobody.
        #expect(chmod(node.path, 0o755) == 0)
        let copy = node.appendingPathComponent("pacer-bin").path
        try FileManager.default.copyItem(atPath: try PacerExecutable.require(), toPath: copy)
        #expect(chmod(copy, 0o755) == 0)
        options.executable = copy
        options.commandPrefix = ["/usr/bin/setpriv", "--reuid=\(nobody.uid)", "--regid=\(nobody.gid)", "--clear-groups", "--"]
        return options
    }

    /// A node (not launched yet) that runs as `nobody`, with its files reachable by it.
    func withUnprivilegedNode(_ body: (TestNode) async throws -> Void) async throws {
        let scratch = try makeTemporaryDirectory("pacer-perm")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let options = try Self.unprivileged(scratch)
        try await withNode(options) { node in
            #expect(chmod(node.directory.path, 0o755) == 0)
            #expect(chmod(node.configFile.path, 0o644) == 0)
            try await body(node)
        }
    }

    @Test("a data directory the node cannot write: it runs without durability, says why in its log and info, and keeps working")
    func readOnlyDataDirectory() async throws {
        try await withUnprivilegedNode { node in
            try FileManager.default.createDirectory(at: node.dataDirectory, withIntermediateDirectories: true)
            if getuid() != 0 { #expect(chmod(node.dataDirectory.path, 0o555) == 0) }
            defer { _ = chmod(node.dataDirectory.path, 0o755) }
            try await node.launch()
            #expect(node.log.contains("WITHOUT a database"), "no loud log line:\n\(node.log)")
            #expect(node.log.contains("is read-only"), "the log does not say the directory is read-only:\n\(node.log)")
            let info = try await node.retainedInfo()
            #expect(info["storage"]?["ok"] == false, "\(info)")
            let error = info["storage"]?["error"]?.string ?? ""
            #expect(error.contains(node.dataDirectory.path) && error.contains("read-only"), "\(info)")
            try await expectWorks(node)
            #expect(try FileManager.default.contentsOfDirectory(atPath: node.dataDirectory.path).isEmpty)
        }
    }

    @Test("a database file the node cannot write: it runs without durability, the file is not moved aside, and its data is intact")
    func readOnlyDatabaseFile() async throws {
        try await withUnprivilegedNode { node in
            // A first run as the test's own user writes the database.
            let privileged = try TestProcess.launch(try PacerExecutable.require(), node.arguments, outputFile: node.logFile)
            try await node.waitOnline(from: 0, process: privileged)
            try await node.waitListening(process: privileged)
            let created = try await node.send(["action": "start", "spec": ["kind": "countdown", "duration": "10m"]], timer: "kept")
            #expect(created.ok, "\(created)")
            await privileged.terminate()
            let database = node.dataDirectory.appendingPathComponent("pacer.sqlite").path
            let before = try Data(contentsOf: URL(fileURLWithPath: database))
            // Now the directory and its lock file belong to the node's user (as after a
            // half-done `chown`), but the database file does not.
            if getuid() == 0 {
                #expect(chown(node.dataDirectory.path, Self.nobody.uid, Self.nobody.gid) == 0)
                #expect(chown(node.dataDirectory.appendingPathComponent("pacer.lock").path, Self.nobody.uid, Self.nobody.gid) == 0)
            } else {
                #expect(chmod(database, 0o444) == 0)
            }
            defer { _ = chmod(database, 0o644) }

            let start = node.probe.count
            try await node.launch()
            #expect(node.log.contains("WITHOUT a database"), "no loud log line:\n\(node.log)")
            let info = try await node.retainedInfo()
            #expect(info["storage"]?["ok"] == false, "\(info)")
            let error = info["storage"]?["error"]?.string ?? ""
            #expect(error.contains("database file \(database) cannot be written") && error.contains("owner uid"), "\(info)")
            // Nothing was restored from a file it cannot keep in step: it starts empty, and says so.
            #expect(node.probe.messages(on: node.topic("kept", "state"), from: start).isEmpty)
            try await expectWorks(node)
            await node.terminate()

            // Never moved aside, never changed: a later run as the right user finds it all.
            let files = try FileManager.default.contentsOfDirectory(atPath: node.dataDirectory.path)
            #expect(!files.contains { $0.contains("corrupt") }, "\(files)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: database)) == before)
            let again = try TestProcess.launch(try PacerExecutable.require(), node.arguments, outputFile: node.logFile)
            let relaunched = node.probe.count
            try await node.waitOnline(from: relaunched, process: again)
            let restored = try await node.waitForState("kept", from: relaunched) { _ in true }
            #expect(restored["status"] == "running", "\(restored)")
            await again.terminate()
        }
    }

    @Test("a data directory first used by another user: the error names the lock file, its owner and the fix",
          .enabled(if: getuid() == 0, "needs root to leave files of another user behind"))
    func dataDirectoryOfAnotherUser() async throws {
        try await withUnprivilegedNode { node in
            let privileged = try TestProcess.launch(try PacerExecutable.require(), node.arguments, outputFile: node.logFile)
            try await node.waitOnline(from: 0, process: privileged)
            await privileged.terminate()
            #expect(chown(node.dataDirectory.path, Self.nobody.uid, Self.nobody.gid) == 0)
            try await node.launch()
            let info = try await node.retainedInfo()
            let error = info["storage"]?["error"]?.string ?? ""
            let lock = node.dataDirectory.appendingPathComponent("pacer.lock").path
            #expect(error.contains("cannot open lock file \(lock)") && error.contains("owner uid 0") && error.contains("chown -R"), "\(info)")
            try await expectWorks(node)
        }
    }

    /// It answers commands and runs timers (in memory).
    private func expectWorks(_ node: TestNode) async throws {
        let started = try await node.send(["action": "start", "spec": ["kind": "countdown", "duration": "2s"]], timer: "volatile")
        #expect(started.ok && started.status == "running", "\(started)")
        try await node.waitForEvent("volatile", "finished", timeout: .seconds(10))
        #expect(node.process?.isRunning == true, "the node exited:\n\(node.log)")
    }

}

import Foundation
import PacerCore
import PacerTestSupport
import Testing

/// `broker.io_thread: library`: each client's network thread serves its connection in the client's
/// loop (the `library` profile: poll, then libmosquitto's read, write and keep-alive) and does the sockets' I/O (the canonical sequence) instead of the engine's thread (the
/// `engine` profile, which every other node test runs). The node works the same: commands are
/// answered, states and per-second values published, a run ends.
@Suite("The broker connection on libmosquitto's own thread (broker.io_thread: library)")
struct IOThreadTests {
    @Test("commands, states, flips and the end of a run, with io_thread: library")
    func libraryThread() async throws {
        try await withNode(.init(config: "broker:\n  io_thread: library\n")) { node in
            let start = node.probe.count
            let sent = ContinuousClock.now
            let started = try await node.send(["action": "start", "spec": ["kind": "countdown", "duration": "3s"]], timer: "lib")
            #expect(started.ok, "\(started)")
            let startAnswered = ContinuousClock.now
            let paused = try await node.send(["action": "pause"], timer: "lib")
            // The countdown is 3 s: the round trips say whether the machine stalled that long.
            #expect(paused.state?["status"] == "paused",
                    "\(paused); start answered in \(startAnswered - sent), pause in \(ContinuousClock.now - startAnswered)")
            _ = try await node.send(["action": "resume"], timer: "lib")
            _ = try await node.waitForState("lib", from: start, timeout: .seconds(15)) { $0["status"] == "finished" }
            let remaining = node.probe.messages(on: node.topic("lib", "remaining"), from: start).map(\.text)
            #expect(remaining.contains("2") && remaining.contains("1") && remaining.last == "0", "\(remaining)")
        }
    }
}

import Foundation
import PacerCore
import PacerTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The node's life on the broker (docs/architecture.md, "Services and shutdown"): the `offline`
/// will, clean shutdown on signals, and republishing every retained topic after the broker comes
/// back.
@Suite("Process lifecycle")
struct LifecycleTests {
    @Test("SIGKILL: the broker publishes the offline will")
    func killPublishesWill() async throws {
        try await withNode { node in
            _ = try await node.send(["action": "start", "spec": ["kind": "countdown", "duration": "10m"]], timer: "k")
            let process = try #require(node.process)
            let start = node.probe.count
            let killedAt = ContinuousClock.now
            process.send(SIGKILL)
            let offline = try await node.probe.waitFor(node.topic("status"), from: start, timeout: .seconds(10)) { $0.text == "offline" }
            #expect(offline.arrival - killedAt < .seconds(5))
            #expect(await process.waitForExit(timeout: .seconds(5)))
            #expect(ProcessEnd(waitStatus: process.terminationStatus) == .signalled(SIGKILL))
            #expect(!node.log.contains("publishing offline"), "a killed process cannot have published offline itself")
            let retained = try await node.retained([node.topic("status")])
            #expect(retained[node.topic("status")] == Array("offline".utf8))
        }
    }

    @Test("SIGTERM and SIGINT: offline published by the node, clean exit 0 within 2 s", arguments: [SIGTERM, SIGINT])
    func gracefulShutdown(signal: Int32) async throws {
        try await withNode { node in
            // Something running, so the scheduler has a deadline armed when the signal comes.
            _ = try await node.send(["action": "start", "spec": ["kind": "interval", "work": "20s", "rest": "10s", "rounds": 8]], timer: "busy")
            let process = try #require(node.process)
            let start = node.probe.count
            let signalled = ContinuousClock.now
            process.send(signal)
            let exited = await process.waitForExit(timeout: .seconds(10))
            let elapsed = ContinuousClock.now - signalled
            #expect(exited, "pacer did not exit within 10 s of signal \(signal)")
            #expect(elapsed < .seconds(3), "pacer took \(elapsed) to exit (the bound is 2 s)")
            #expect(ProcessEnd(waitStatus: process.terminationStatus) == .exited(0))
            let offline = try await node.probe.waitFor(node.topic("status"), from: start, timeout: .seconds(5)) { $0.text == "offline" }
            #expect(offline.arrival - signalled < .seconds(3))
            #expect(node.log.contains("publishing offline"), "the node itself should publish offline:\n\(node.log)")
            let retained = try await node.retained([node.topic("status")])
            #expect(retained[node.topic("status")] == Array("offline".utf8))
            print("pacer exited \(elapsed) after signal \(signal)")
        }
    }

    @Test("after the broker restarts (losing every retained message), the node republishes all of them")
    func republishAfterBrokerRestart() async throws {
        try await withTestBroker { broker in
            try await withNode(.init(brokerPort: broker.port)) { node in
                _ = try await node.send(["action": "start", "spec": ["kind": "countdown", "duration": "10m"]], timer: "run")
                _ = try await node.send(["action": "start", "spec": ["kind": "interval", "work": "30s", "rest": "10s", "rounds": 3]], timer: "held")
                _ = try await node.send(["action": "pause"], timer: "held")
                _ = try await node.send(["action": "create", "timer": "idle", "name": "Idle one", "spec": ["kind": "stopwatch"]])
                let list = try await node.send(["action": "list"])
                let revisions = Dictionary(uniqueKeysWithValues: (list.json["timers"]?.array ?? []).compactMap { t in
                    t["id"]?.string.map { ($0, t["revision"]?.int ?? -1) }
                })
                #expect(revisions.count == 3)
                let endsAt = try #require(node.state("run")?["ends_at_ms"]?.int64)
                let before = try await node.retained([node.topic("#")])
                #expect(before[node.topic("status")] == Array("online".utf8))

                try await broker.restart()

                // The node reconnects and republishes status, info and every timer's retained topics.
                let deadline = ContinuousClock.now + .seconds(20)
                var after: [String: [UInt8]] = [:]
                let expected = ["status", "info"] + ["run", "held", "idle"].flatMap { id in
                    ["state", "remaining", "display", "phase", "round", "rounds"].map { "timers/\(id)/\($0)" }
                }
                while ContinuousClock.now < deadline {
                    after = try await node.retained([node.topic("#")])
                    if expected.allSatisfy({ after[node.topic($0)] != nil }) { break }
                    try await Task.sleep(for: .milliseconds(200))
                }
                for suffix in expected {
                    #expect(after[node.topic(suffix)] != nil, "\(suffix) was not republished")
                }
                #expect(after[node.topic("status")] == Array("online".utf8))
                let info = after[node.topic("info")].flatMap(decodeJSON)
                #expect(info?["timers"]?.array?.compactMap { $0["id"]?.string } == ["held", "idle", "run"])

                // The republished state is the live state: same revisions, same anchors.
                func state(_ id: String) -> JSONValue? { after[node.topic(id, "state")].flatMap(decodeJSON) }
                func text(_ id: String, _ name: String) -> String? { after[node.topic(id, name)].map { String(decoding: $0, as: UTF8.self) } }
                for (id, revision) in revisions {
                    #expect(state(id)?["revision"]?.int == revision, "\(id)")
                }
                #expect(state("run")?["status"] == "running")
                #expect(state("run")?["ends_at_ms"]?.int64 == endsAt)
                #expect(state("held")?["status"] == "paused")
                #expect(text("held", "phase") == "paused")
                #expect(text("idle", "phase") == "idle")
                #expect(text("run", "phase") == "countdown")
                #expect(text("held", "rounds") == "3")
                let remaining = try #require(text("run", "remaining").flatMap { Int64($0) })
                let expectedRemaining = (endsAt - wallNowMs() + 999) / 1000
                #expect(abs(remaining - expectedRemaining) <= 2, "remaining \(remaining) s, expected about \(expectedRemaining) s")

                // The restarted broker kept nothing (no persistence): every retained topic the fresh
                // subscriber got above was published again by the node after it reconnected.
                #expect(!broker.options.persistence)

                // And it still takes commands (once the probe's own reply subscription is back).
                try await node.probe.waitUntil(timeout: .seconds(10), "the probe did not reconnect") { node.probe.client.isConnected }
                let paused = try await node.send(["action": "pause"], timer: "run", timeout: .seconds(20))
                #expect(paused.ok && paused.revision == (revisions["run"] ?? 0) + 1, "\(paused)")
            }
        }
    }
}

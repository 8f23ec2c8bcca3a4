import Foundation
import PacerStore
import PacerTestSupport
import Testing

/// Exactly-once events: a written event is marked published when the broker
/// acknowledges it (PUBACK), so after a crash the outbox holds only events whose delivery is
/// really unknown.
@Suite("Events marked published on the broker's acknowledgement")
struct AcknowledgementTests {
    @Test("an acknowledged event is marked published within seconds, with no later write to carry it; a restart has nothing to settle")
    func markedOnAcknowledgement() async throws {
        let config = """
            timers:
              - {id: t, name: T, spec: {kind: countdown, duration: 1s}}
            """
        try await withNode(.init(config: config)) { node in
            let reply = try await node.send(["action": "start"], timer: "t")
            #expect(reply.ok, "\(reply)")
            _ = try await node.waitForEvent("t", "finished", timeout: .seconds(10))
            // Nothing follows the finished event (no command, no transition): only the marks
            // deadline (2 s after the acknowledgement) writes its mark.
            let store = try PacerDatabase.openReadOnly(directory: node.dataDirectory.path)
            let deadline = ContinuousClock.now + .seconds(15)
            var unpublished = try store.unpublishedEvents()
            while !unpublished.isEmpty, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                unpublished = try store.unpublishedEvents()
            }
            #expect(unpublished.isEmpty, "still in the outbox 15 s later: \(unpublished.map { "\($0.timer)/\($0.type)/\($0.revision)" })")
            // A crash now: the restarted node finds no event of unknown fate (before, events
            // of the last ~65 s were left to the outbox check and its retained-state proof).
            await node.kill()
            try await node.launch()
            try await Task.sleep(for: .seconds(2))  // longer than the outbox check's window
            #expect(!node.log.contains("event outbox settled"), "\(node.log)")
        }
    }
}

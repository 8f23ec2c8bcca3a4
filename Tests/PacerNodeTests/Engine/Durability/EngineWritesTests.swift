import Foundation
import PacerCore
@testable import PacerNode
import PacerStore
import PacerTestSupport
import Testing

/// What the node writes (an SD card lives longer without a write per transition). A phase
/// transition is derived from the timer's last written state and the timing model, so it is
/// published, never written; a command and an outcome that must not repeat (`expired`, `finished`)
/// are written before they are published.
@Suite("Engine writes: commands and outcomes, not transitions (in-process)")
struct EngineWritesTests {
    static let config = """
        timers:
          - {id: hiit, name: HIIT, spec: {kind: interval, work: 10s, rest: 5s, rounds: 3}}
        """

    func writes(_ h: EngineHarness, from start: Int) -> [(timers: [String], events: [String])] {
        h.journal.since(start).compactMap { step in
            if case .write(let timers, let events, _) = step { (timers, events) } else { nil }
        }
    }

    func events(_ h: EngineHarness, from start: Int) -> [JSONValue] {
        h.published(h.topic("hiit", "event"), from: start).compactMap(\.json)
    }

    @Test("a workout's transitions are published and not written; its start and its finish are")
    func transitionsAreNotWritten() async throws {
        let h = try await EngineHarness.make(config: Self.config)
        await h.connect()
        var start = h.journal.count
        try await h.send(["action": "start"], timer: "hiit")
        #expect(writes(h, from: start).map(\.timers) == [["hiit"]], "the start is written: \(h.journal.since(start))")

        // 10 s of work and 5 s of rest, twice, then the last work: four transitions, every one
        // published, none written.
        start = h.journal.count
        await h.pass(31_000)
        let phases = events(h, from: start).filter { $0["type"] == "phase" }
        #expect(phases.map { $0["phase"]?.string } == ["rest", "work", "rest", "work"], "\(phases)")
        #expect(h.state("hiit")?["round"] == 3)
        // Acknowledged events' marks may still ride on a write of their own; no timer and no
        // event is written while only time passes.
        #expect(writes(h, from: start).allSatisfy { $0.timers.isEmpty && $0.events.isEmpty }, "\(writes(h, from: start))")

        // The last work ends the run: `finished` is an outcome, written before it is published.
        start = h.journal.count
        await h.pass(9_000)
        #expect(writes(h, from: start).contains { $0.timers == ["hiit"] && $0.events == ["finished"] }, "\(h.journal.since(start))")
        let finished = try #require(events(h, from: start).first { $0["type"] == "finished" })
        #expect(finished["late_ms"] == nil)
        #expect(try h.store.loadTimers().first?.revision == finished["revision"]?.int)
    }

    @Test("after a crash the restore recomputes where the workout is from its last written state; the phase it reached comes again with the key of its first publication")
    func restoreRecomputes() async throws {
        let h = try await EngineHarness.make(config: Self.config)
        await h.connect()
        let started = try await h.send(["action": "start"], timer: "hiit")
        let endsAt = try #require(started["state"]?["ends_at_ms"]?.int64)  // the first work's end
        let written = try #require(try h.store.loadTimers().first)
        await h.pass(12_000)  // in the first rest
        let rest = try #require(events(h, from: 0).last { $0["type"] == "phase" })
        let before = try #require(h.state("hiit"))
        #expect(before["phase"] == "rest")
        #expect(try h.store.loadTimers().first == written, "the transition was not written")

        // A crash now (nothing shut down), back 1 s later.
        h.time.pass(1_000)
        let again = try await h.restart(config: Self.config)
        let start = again.journal.count
        await again.connect()
        await again.pass(EventOutbox.checkWindowMs)  // the start's event, unacknowledged, holds it until then
        let state = try #require(again.state("hiit"))
        #expect(state["phase"] == "rest" && state["revision"] == before["revision"], "\(state)")
        #expect(state["ends_at_ms"]?.int64 == endsAt + 5_000, "the rest ends when it would have before the crash: \(state)")
        // The phase event, recomputed: the same (timer, type, revision, due_ms), 3 s late.
        let recomputed = try #require(events(again, from: start).first { $0["type"] == "phase" }, "\(again.journal.since(start))")
        #expect(recomputed["revision"] == rest["revision"] && recomputed["due_ms"] == rest["due_ms"], "\(recomputed) vs \(rest)")
        #expect(recomputed["late_ms"]?.int64 == 3_000, "\(recomputed)")
        // It was not written then either; the workout goes on and finishes, written once.
        #expect(try again.store.loadTimers().first == written)
        await again.pass(30_000)
        #expect(again.state("hiit")?["status"] == "finished")
        let finished = events(again, from: start).filter { $0["type"] == "finished" }
        #expect(finished.count == 1, "\(finished)")
    }
}

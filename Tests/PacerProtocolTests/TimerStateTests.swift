import PacerCore
import PacerProtocol
import Testing

/// The state reader's edges that the examples do not reach.
@Suite("Reading a state (TimerState)")
struct TimerStateTests {
    static let base: JSONValue = ["id": "sw", "status": "running", "phase": "session", "kind": "stopwatch", "counts_up": true,
                                  "remaining": 61, "as_of_ms": 100_000, "revision": 3]

    func with(_ members: [String: JSONValue]) throws -> TimerState {
        guard case .object(var o) = Self.base else { throw HarnessFailure() }
        for (key, value) in members { o[key] = value }
        return try #require(TimerState(state: .object(o)))
    }
    struct HarnessFailure: Error {}

    @Test("a stopwatch without its segment's start shows its remaining, never a countdown to its target")
    func countingUpNeedsTheStart() throws {
        let state = try with(["ends_at_ms": 200_000])
        #expect(state.shownSeconds(at: 150_000) == 61)
        #expect(state.nextFlip(after: 150_000) == nil)
        #expect(!state.isCounting)
    }

    @Test("before its start (an offset's error) a stopwatch shows 0, and flips to 1 a second after the start")
    func beforeTheStart() throws {
        let state = try with(["segment_started_at_ms": 100_000])
        #expect(state.shownSeconds(at: 99_000) == 0)
        #expect(state.nextFlip(after: 99_000) == 101_000)
        #expect(state.shownSeconds(at: 101_000) == 1)
    }

    @Test("an unknown status is not a state this client can show; an unknown kind or phase is tolerated")
    func unknownValues() throws {
        #expect(TimerState(state: ["id": "x", "status": "hibernating"]) == nil)
        let state = try with(["kind": "yoga", "phase": "breathing"])
        #expect(state.kind == nil)
        #expect(state.phase == .idle)
    }
}

import PacerCore
@testable import PacerSound
import Testing

/// The music's duck plan: windows merged, the duck and restore instants, missed windows.
@Suite("Duck plan")
struct DuckPlanTests {
    let ms: Int64 = 1_000_000

    @Test("one cue: wait, duck at its start, hold, restore at its end")
    func oneWindow() {
        var plan = DuckPlan()
        #expect(plan.next(nowNs: 0, ducked: false) == .idle)
        plan.add(startNs: 5_000 * ms, endNs: 5_600 * ms)
        #expect(plan.next(nowNs: 0, ducked: false) == .wait(untilNs: 5_000 * ms))
        #expect(plan.next(nowNs: 4_999 * ms, ducked: false) == .wait(untilNs: 5_000 * ms))
        #expect(plan.next(nowNs: 5_000 * ms, ducked: false) == .duck(untilNs: 5_600 * ms))
        #expect(plan.next(nowNs: 5_300 * ms, ducked: true) == .hold(untilNs: 5_600 * ms))
        #expect(plan.next(nowNs: 5_600 * ms, ducked: true) == .restore)
        #expect(plan.windows.isEmpty)
        #expect(plan.next(nowNs: 5_600 * ms, ducked: false) == .idle)
    }

    @Test("overlapping and touching windows merge into one duck; a gap keeps them apart")
    func merging() {
        var plan = DuckPlan()
        plan.add(startNs: 1_000 * ms, endNs: 1_600 * ms)
        plan.add(startNs: 3_000 * ms, endNs: 3_600 * ms)
        plan.add(startNs: 1_500 * ms, endNs: 2_000 * ms)  // overlaps the first
        plan.add(startNs: 2_000 * ms, endNs: 2_200 * ms)  // touches it
        #expect(plan.windows == [.init(startNs: 1_000 * ms, endNs: 2_200 * ms), .init(startNs: 3_000 * ms, endNs: 3_600 * ms)])
        plan.add(startNs: 2_100 * ms, endNs: 3_100 * ms)  // bridges both
        #expect(plan.windows == [.init(startNs: 1_000 * ms, endNs: 3_600 * ms)])
        plan.add(startNs: 500 * ms, endNs: 400 * ms)  // empty: ignored
        #expect(plan.windows.count == 1)
    }

    @Test("a window added while ducked extends the duck (one restore, after the last cue)")
    func extendWhileDucked() {
        var plan = DuckPlan()
        plan.add(startNs: 1_000 * ms, endNs: 1_600 * ms)
        #expect(plan.next(nowNs: 1_000 * ms, ducked: false) == .duck(untilNs: 1_600 * ms))
        plan.add(startNs: 1_500 * ms, endNs: 2_500 * ms)
        #expect(plan.next(nowNs: 1_600 * ms, ducked: true) == .hold(untilNs: 2_500 * ms))
        #expect(plan.next(nowNs: 2_500 * ms, ducked: true) == .restore)
    }

    @Test("a window that ended before the music could go down is dropped; ducked with nothing left restores")
    func missed() {
        var plan = DuckPlan()
        plan.add(startNs: 1_000 * ms, endNs: 1_600 * ms)
        plan.add(startNs: 3_000 * ms, endNs: 3_600 * ms)
        #expect(plan.next(nowNs: 2_000 * ms, ducked: false) == .wait(untilNs: 3_000 * ms))
        #expect(plan.windows.count == 1)
        var empty = DuckPlan()
        #expect(empty.next(nowNs: 0, ducked: true) == .restore)
    }
}

import Foundation
import PacerCore
@testable import PacerNode
import Synchronization
import PacerTestSupport
import Testing
import PacerProtocol

/// Pure parts of the node: the deadline queue, the clock, heart rate, JSON coding.
@Suite struct DeadlineQueueTests {
    @Test func popsInDeadlineOrderAndOnlyWhenDue() {
        var q = DeadlineQueue()
        q.set(.timer("b"), at: 200)
        q.set(.timer("a"), at: 100)
        q.set(.heartRate("hr"), at: 150)
        #expect(q.earliest() == 100)
        #expect(q.popDue(now: 99).isEmpty)
        #expect(q.popDue(now: 150) == [.timer("a"), .heartRate("hr")])
        #expect(q.earliest() == 200)
        #expect(q.popDue(now: 1_000) == [.timer("b")])
        #expect(q.earliest() == nil)
    }

    @Test func eachOwnerHasOneDeadline() {
        var q = DeadlineQueue()
        q.set(.timer("a"), at: 100)
        q.set(.timer("a"), at: 300)   // replaces 100
        q.set(.timer("b"), at: 200)
        #expect(q.earliest() == 200)
        #expect(q.popDue(now: 250) == [.timer("b")])
        q.set(.timer("a"), at: nil)   // cleared
        #expect(q.earliest() == nil)
        #expect(q.popDue(now: 10_000).isEmpty)
        #expect(q.count == 0)
    }

    @Test func shiftMovesEveryDeadline() {
        var q = DeadlineQueue()
        q.set(.timer("a"), at: 100)
        q.set(.heartRate("hr"), at: 150)
        q.set(.outbox, at: 120)
        q.shift(by: 1_000)
        #expect(q.popDue(now: 1_099).isEmpty)
        #expect(q.popDue(now: 1_120) == [.timer("a"), .outbox])
        q.set(.outbox, at: 1_500)   // a set after the shift is not moved again
        q.shift(by: -500)   // hr 1150 -> 650, outbox 1500 -> 1000
        #expect(q.popDue(now: 649).isEmpty && q.earliest() == 650)
        #expect(q.popDue(now: 1_000) == [.heartRate("hr"), .outbox])
        #expect(q.earliest() == nil)
    }

    @Test func manyReschedulesKeepMemoryBounded() {
        var q = DeadlineQueue()
        for i in 0..<10_000 { q.set(.timer("t\(i % 10)"), at: Millis(i)) }
        #expect(q.count == 10)
        let due = q.popDue(now: 100_000)
        #expect(Set(due).count == 10 && due.count == 10)
    }
}

@Suite struct NodeClockTests {
    /// A wall clock that advances with the monotonic clock, as a real one does (NodeClock's
    /// monotonic clock cannot be injected), from 1_000_000 ms, plus the steps made with `step`.
    /// The timeline and this clock move together however long the test thread is descheduled
    /// between two lines; only the steps make them differ.
    final class FakeWall: Sendable {
        let origin = ContinuousClock.now
        let stepped = Mutex<Millis>(0)
        func read() -> Millis { 1_000_000 + stepped.withLock { $0 } + NodeClock.milliseconds(origin.duration(to: .now)) }
        func step(_ delta: Millis) { stepped.withLock { $0 += delta } }
    }

    /// How far apart the timeline and the fake wall clock may read without a step: NodeClock reads
    /// its monotonic clock and the wall clock one after the other (at its start and in each
    /// check), and each reading is truncated to the millisecond. Far below the 1 s threshold
    /// unless the thread is descheduled right between two of those reads.
    static let readSlackMs: Millis = 500

    @Test func aWallClockStepIsReportedOnceAndReanchors() {
        let wall = FakeWall()
        var clock = NodeClock(wall: { wall.read() }, jumpThresholdMs: 1_000)
        let before = clock.now()
        #expect(clock.checkForJump() == nil)
        wall.step(3_600_000)  // NTP steps the clock an hour forward
        let delta = clock.checkForJump()
        #expect(delta != nil)
        #expect(abs((delta ?? 0) - 3_600_000) <= Self.readSlackMs, "\(delta ?? 0)")
        // Re-anchored: the timeline moved by the step (plus the time that passed), and follows
        // the wall clock from there without another report.
        #expect(clock.now() - before >= 3_600_000, "\(clock.now() - before)")
        let (wallBefore, now, wallAfter) = (wall.read(), clock.now(), wall.read())
        #expect(now >= wallBefore - 1 && now <= wallAfter + Self.readSlackMs, "\(wallBefore) \(now) \(wallAfter)")
        #expect(clock.checkForJump() == nil)
    }

    @Test func smallDifferencesAreNotJumps() {
        let wall = FakeWall()
        var clock = NodeClock(wall: { wall.read() }, jumpThresholdMs: 1_000)
        wall.step(500)
        #expect(clock.checkForJump() == nil)
        wall.step(-900)  // 400 ms behind the timeline now
        #expect(clock.checkForJump() == nil)
    }

    @Test("the system timeline maps an instant to the monotonic clock to well under a millisecond")
    func systemTimelineIsPrecise() {
        let ns = NodeClock.nanoseconds
        // Fresh clocks at 40 different phases of the millisecond. Anchored on readings cut to
        // whole milliseconds, a clock's alarms were off by a constant of up to ±1 ms.
        var worstNs: Int64 = 0
        for _ in 0..<40 {
            let clock = NodeClock()
            let (wall, mono) = (ns(CLOCK_REALTIME), ns(CLOCK_BOOTTIME))
            let target = clock.now() + 1_000
            // Where CLOCK_BOOTTIME is when CLOCK_REALTIME reaches `target`, from two readings
            // taken together.
            let exact = mono + (target * 1_000_000 - wall)
            worstNs = max(worstNs, abs(clock.monotonicNs(at: target) - exact))
            #expect(abs(clock.now() - wall / 1_000_000) <= 1)
            usleep(137)
        }
        // Two pairs of readings a few µs apart (more if the thread is descheduled between them).
        #expect(worstNs < 200_000, "the timeline is \(worstNs) ns off the wall clock")
    }

    @Test func delaysFollowTheInjectedMonotonicClock() {
        let mono = Mutex<Millis>(50)
        var clock = NodeClock(wall: { 1_000_000 }, monotonic: { mono.withLock { $0 } })
        #expect(clock.now() == 1_000_000)
        #expect(clock.delay(until: 1_002_000) == .milliseconds(2_000))
        mono.withLock { $0 += 500 }
        #expect(clock.now() == 1_000_500)
        #expect(clock.delay(until: 1_002_000) == .milliseconds(1_500))
        #expect(clock.delay(until: 1_000_000) == .zero, "a past deadline is due at once")
        // The wall clock stood still while the timeline moved 500 ms: under the threshold.
        #expect(clock.checkForJump() == nil)
    }
}

@Suite struct HeartRateMonitorTests {
    let settings = HeartRateSettings(
        sources: [
            HeartRateSource(name: "alice", topic: "hr/alice", field: nil),
            HeartRateSource(name: "watch", topic: "watch/state", field: ["heart_rate", "bpm"]),
        ],
        staleAfterMs: 10_000, maxHR: 200)

    @Test func plainAndJSONReadings() {
        var m = HeartRateMonitor(settings: settings)
        #expect(m.receive(topic: "hr/alice", payload: Array("142".utf8), now: 0) == .accepted(source: "alice", bpm: 142, changed: true))
        #expect(m.receive(topic: "hr/alice", payload: Array(" 142.4\n".utf8), now: 1) == .accepted(source: "alice", bpm: 142, changed: false))
        #expect(m.receive(topic: "watch/state", payload: Array(#"{"heart_rate":{"bpm":97}}"#.utf8), now: 0)
                == .accepted(source: "watch", bpm: 97, changed: true))
        #expect(m.receive(topic: "watch/state", payload: Array(#"{"heart_rate":{"bpm":"101"}}"#.utf8), now: 0)
                == .accepted(source: "watch", bpm: 101, changed: true))
        #expect(m.receive(topic: "other", payload: Array("1".utf8), now: 0) == .notASource)
    }

    @Test func unreadableAndOutOfRangeReadingsAreIgnored() {
        var m = HeartRateMonitor(settings: settings)
        _ = m.receive(topic: "hr/alice", payload: Array("120".utf8), now: 0)
        #expect(m.receive(topic: "hr/alice", payload: Array("300".utf8), now: 1) == .outOfRange(source: "alice", bpm: 300))
        #expect(m.receive(topic: "hr/alice", payload: Array("0".utf8), now: 1) == .outOfRange(source: "alice", bpm: 0))
        if case .unreadable = m.receive(topic: "hr/alice", payload: Array("fast".utf8), now: 1) {} else { Issue.record("expected unreadable") }
        if case .unreadable = m.receive(topic: "watch/state", payload: Array(#"{"bpm":90}"#.utf8), now: 1) {} else { Issue.record("expected unreadable") }
        #expect(m.current("alice", now: 2)?.bpm == 120)  // the bad readings changed nothing
    }

    /// Found by fuzzing: a reading too large for an Int trapped when it was converted before
    /// its range was checked (one message on a heart-rate topic stopped the node).
    @Test(arguments: ["1e20", "444444444444444444444", "-1e300", "9223372036854775808"])
    func hugeReadingsAreOutOfRangeNotACrash(_ text: String) {
        var m = HeartRateMonitor(settings: settings)
        #expect(m.receive(topic: "hr/alice", payload: Array(text.utf8), now: 0) == .outOfRange(source: "alice", bpm: Double(text)!))
        let json = Array(#"{"heart_rate":{"bpm":\#(text)}}"#.utf8)
        if case .outOfRange = m.receive(topic: "watch/state", payload: json, now: 0) {} else { Issue.record("expected out of range for \(text)") }
        #expect(m.current("alice", now: 1) == nil)
    }

    @Test func staleReadingsAreUnknownNeverZeroOrOld() {
        var m = HeartRateMonitor(settings: settings)
        _ = m.receive(topic: "hr/alice", payload: Array("150".utf8), now: 1_000)
        #expect(m.current("alice", now: 10_999)?.bpm == 150)
        #expect(m.current("alice", now: 11_000) == nil)
        #expect(m.staleAt("alice") == 11_000)
        #expect(m.current("watch", now: 0) == nil)
    }

    @Test func zonesByPercentOfMax() {
        let m = HeartRateMonitor(settings: settings)
        #expect(m.zone(for: 90) == nil)     // 45 %
        #expect(m.zone(for: 100) == 1)      // 50 %
        #expect(m.zone(for: 139) == 2)
        #expect(m.zone(for: 140) == 3)
        #expect(m.zone(for: 170) == 4)
        #expect(m.zone(for: 180) == 5)
        #expect(HeartRateMonitor(settings: HeartRateSettings()).zone(for: 150) == nil)
    }

    @Test func timersReadTheirSourceOrTheFirst() {
        let m = HeartRateMonitor(settings: settings)
        #expect(m.sourceName(for: nil) == "alice")
        #expect(m.sourceName(for: "watch") == "watch")
        #expect(HeartRateMonitor(settings: HeartRateSettings()).sourceName(for: nil) == nil)
    }
}

@Suite struct JSONCodingTests {
    @Test func exactOutputForTheCommonShapes() {
        let value: JSONValue = ["b": 42, "a": [true, .null, 0.25, -3], "c": "x\"y\\z/\n\u{1}é"]
        #expect(String(decoding: JSONCoding.encode(value), as: UTF8.self)
                == #"{"a":[true,null,0.25,-3],"b":42,"c":"x\"y\\z/\n\u0001é"}"#)
        #expect(String(decoding: JSONCoding.encode(.number(1_795_321_339_792)), as: UTF8.self) == "1795321339792")
        #expect(String(decoding: JSONCoding.encode(.number(.nan)), as: UTF8.self) == "null")
    }

    @Test func roundTripsThroughFoundation() throws {
        let values: [JSONValue] = [
            ["progress": 1.6666666666666667e-06, "ends_at_ms": 1_795_321_941_691, "label": "Burpees 💪", "hr": .null],
            [["nested": ["deep": [1, 2.5, "three"]]], [:], []],
            .string("\t tab and \r return and \u{7f}"),
        ]
        for value in values {
            let bytes = JSONCoding.encode(value)
            let back = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
            #expect(back == value, "\(String(decoding: bytes, as: UTF8.self))")
        }
    }
}

import Foundation
public import PacerCore

/// The node's timeline: epoch milliseconds that advance with a monotonic clock.
///
/// At start the wall clock gives the anchor; after that, "now" is the anchor plus the
/// monotonic time elapsed, so lag, throttling or a wall-clock step cannot make a running
/// timer gain or lose time. `checkForJump()` compares the wall clock with that timeline; a
/// difference over the threshold (NTP stepping a Pi that booted without a real-time clock)
/// re-anchors the timeline and returns the step, so the node can move `ends_at` of running
/// timers by the same amount (remaining time unchanged) and republish.
///
/// The anchors are read in nanoseconds: a timeline anchored on two readings cut to whole
/// milliseconds is off the wall clock by a constant of up to ±1 ms for the life of the
/// process (the two cut-off fractions), and so was every alarm set from it (flips 0–1 ms late
/// from one start to the next). Injected clocks tick in whole milliseconds.
///
/// Not thread-safe by itself: owned by the node's single engine loop.
public struct NodeClock: Sendable {
    /// Reads the wall clock in epoch ms (injectable for tests).
    public typealias WallClock = @Sendable () -> Millis
    /// Reads a monotonic clock in ms from an arbitrary origin (injectable for tests: the
    /// in-process engine harness drives both clocks by hand).
    public typealias MonotonicClock = @Sendable () -> Millis

    private let wallNs: @Sendable () -> Int64
    private let monotonicNs: @Sendable () -> Int64
    private var anchorWallNs: Int64
    private var anchorMonoNs: Int64
    /// A wall clock that differs from the timeline by more than this is a jump.
    public var jumpThresholdMs: Millis

    /// - Parameters:
    ///   - wall: a wall clock in epoch ms; nil: the system's (`CLOCK_REALTIME`, read in ns).
    ///   - monotonic: a monotonic clock in ms; nil: the system's (`CLOCK_BOOTTIME`, read in ns).
    public init(wall: WallClock? = nil, monotonic: MonotonicClock? = nil, jumpThresholdMs: Millis = 1_000) {
        if let wall {
            wallNs = { wall() * 1_000_000 }
        } else {
            wallNs = { NodeClock.nanoseconds(CLOCK_REALTIME) }
        }
        if let monotonic {
            monotonicNs = { monotonic() * 1_000_000 }
        } else {
            monotonicNs = { NodeClock.nanoseconds(CLOCK_BOOTTIME) }
        }
        self.jumpThresholdMs = jumpThresholdMs
        anchorWallNs = wallNs()
        anchorMonoNs = monotonicNs()
    }

    /// A reading of `clock` in ns (`CLOCK_BOOTTIME`: the engine thread's alarm).
    static func nanoseconds(_ clock: clockid_t) -> Int64 {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// Whole milliseconds of `ns`, rounded down (also before 1970).
    private static func floorMs(_ ns: Int64) -> Millis {
        let (q, r) = ns.quotientAndRemainder(dividingBy: 1_000_000)
        return r < 0 ? q - 1 : q
    }

    /// The system wall clock (`CLOCK_REALTIME`) in epoch ms.
    public static let systemWallClock: WallClock = { floorMs(nanoseconds(CLOCK_REALTIME)) }

    /// The system monotonic clock in ms (`CLOCK_BOOTTIME`, like `ContinuousClock` on Linux: it counts a suspend).
    public static let systemMonotonicClock: MonotonicClock = { floorMs(nanoseconds(CLOCK_BOOTTIME)) }

    /// Now on the node's timeline, in epoch ms.
    public func now() -> Millis {
        Self.floorMs(anchorWallNs + (monotonicNs() - anchorMonoNs))
    }

    /// How long from now until the timeline reaches `ms` (for sleeping until a deadline).
    public func delay(until ms: Millis) -> Duration {
        .milliseconds(max(0, ms - now()))
    }

    /// The reading of the monotonic clock, in ns, at which the timeline reaches `ms` (the
    /// engine thread's alarm is an absolute instant of `CLOCK_BOOTTIME`, to the nanosecond).
    public func monotonicNs(at ms: Millis) -> Int64 {
        ms * 1_000_000 - anchorWallNs + anchorMonoNs
    }

    /// Re-anchors on the wall clock when it moved away from the timeline; returns the step in ms.
    public mutating func checkForJump() -> Millis? {
        let monoNow = monotonicNs()
        let expected = anchorWallNs + (monoNow - anchorMonoNs)
        let actual = wallNs()
        let delta = Self.floorMs(actual) - Self.floorMs(expected)
        guard abs(delta) > jumpThresholdMs else { return nil }
        anchorWallNs = actual
        anchorMonoNs = monoNow
        return delta
    }

    static func milliseconds(_ d: Duration) -> Millis {
        let (seconds, attoseconds) = d.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

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
/// Not thread-safe by itself: owned by the node's single engine loop.
public struct NodeClock: Sendable {
    /// Reads the wall clock in epoch ms (injectable for tests).
    public typealias WallClock = @Sendable () -> Millis
    /// Reads a monotonic clock in ms from an arbitrary origin (injectable for tests: the
    /// in-process engine harness drives both clocks by hand).
    public typealias MonotonicClock = @Sendable () -> Millis

    private let wall: WallClock
    private let monotonic: MonotonicClock
    private var anchorWall: Millis
    private var anchorMono: Millis
    /// A wall clock that differs from the timeline by more than this is a jump.
    public var jumpThresholdMs: Millis

    public init(wall: @escaping WallClock = NodeClock.systemWallClock,
                monotonic: @escaping MonotonicClock = NodeClock.systemMonotonicClock,
                jumpThresholdMs: Millis = 1_000) {
        self.wall = wall
        self.monotonic = monotonic
        self.jumpThresholdMs = jumpThresholdMs
        anchorWall = wall()
        anchorMono = monotonic()
    }

    /// The system wall clock (`CLOCK_REALTIME`) in epoch ms.
    public static let systemWallClock: WallClock = {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Millis(ts.tv_sec) * 1000 + Millis(ts.tv_nsec) / 1_000_000
    }

    /// The system monotonic clock in ms (`CLOCK_BOOTTIME`, like `ContinuousClock` on Linux: it counts a suspend).
    public static let systemMonotonicClock: MonotonicClock = {
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        return Millis(ts.tv_sec) * 1000 + Millis(ts.tv_nsec) / 1_000_000
    }

    /// Now on the node's timeline, in epoch ms.
    public func now() -> Millis {
        anchorWall + (monotonic() - anchorMono)
    }

    /// How long from now until the timeline reaches `ms` (for sleeping until a deadline).
    public func delay(until ms: Millis) -> Duration {
        .milliseconds(max(0, ms - now()))
    }

    /// The reading of the monotonic clock at which the timeline reaches `ms` (the engine
    /// thread's alarm waits on the monotonic clock, with sub-millisecond precision).
    public func monotonicMs(at ms: Millis) -> Millis {
        ms - anchorWall + anchorMono
    }

    /// Re-anchors on the wall clock when it moved away from the timeline; returns the step in ms.
    public mutating func checkForJump() -> Millis? {
        let monoNow = monotonic()
        let expected = anchorWall + (monoNow - anchorMono)
        let actual = wall()
        let delta = actual - expected
        guard abs(delta) > jumpThresholdMs else { return nil }
        anchorWall = actual
        anchorMono = monoNow
        return delta
    }

    static func milliseconds(_ d: Duration) -> Millis {
        let (seconds, attoseconds) = d.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

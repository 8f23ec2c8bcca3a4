public import PacerCore

/// The offset between the node's clock and ours, estimated NTP-style from `time` commands.
///
/// A sample is a request sent at local `sentMs`, answered with the node's `nodeMs`, and
/// received at local `receivedMs`. Assuming the reply was made half-way through the round
/// trip, the node's clock reads `nodeMs` at local `(sentMs + receivedMs) / 2`, so
/// `offset = nodeMs - (sentMs + receivedMs) / 2`; its error is at most half the round trip.
/// Of several samples, the one with the smallest round trip wins. A display then shows
/// `ends_at_ms - (localNow + offset)`.
public struct ClockOffset: Sendable, Equatable {
    /// One `time` exchange.
    public struct Sample: Sendable, Equatable {
        public var sentMs: Millis
        public var nodeMs: Millis
        public var receivedMs: Millis

        public init(sentMs: Millis, nodeMs: Millis, receivedMs: Millis) {
            self.sentMs = sentMs
            self.nodeMs = nodeMs
            self.receivedMs = receivedMs
        }

        /// The round trip (never negative).
        public var roundTripMs: Millis { max(0, receivedMs - sentMs) }
        /// Node clock minus local clock, from this sample alone.
        public var offsetMs: Millis { nodeMs - (sentMs + (receivedMs - sentMs) / 2) }
    }

    /// Node clock minus local clock, in ms: node now = local now + `offsetMs`.
    public var offsetMs: Millis
    /// The round trip of the sample it came from; the offset is right within half of it.
    public var roundTripMs: Millis

    public init(offsetMs: Millis, roundTripMs: Millis) {
        self.offsetMs = offsetMs
        self.roundTripMs = roundTripMs
    }

    /// No offset (before any sample).
    public static let zero = ClockOffset(offsetMs: 0, roundTripMs: .max)

    /// The estimate from the sample with the smallest round trip; nil without samples.
    public init?(samples: [Sample]) {
        guard let best = samples.min(by: { $0.roundTripMs < $1.roundTripMs }) else { return nil }
        self.init(offsetMs: best.offsetMs, roundTripMs: best.roundTripMs)
    }

    /// The node's clock at local time `localMs`.
    public func nodeTime(atLocal localMs: Millis) -> Millis { localMs + offsetMs }
}

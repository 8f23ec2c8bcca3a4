/// One of a client's output streams: a named `AsyncSequence` over a private `AsyncStream`.
///
/// It has one consumer: iterate it from one task only. Elements are buffered without limit
/// until consumed, and the sequence ends when the client is shut down
/// (``MQTTClient/disconnect()`` or deinit).
public struct MQTTStream<Element: Sendable>: AsyncSequence, Sendable {
    public typealias Failure = Never

    private let stream: AsyncStream<Element>

    init(_ stream: AsyncStream<Element>) {
        self.stream = stream
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator())
    }

    /// The iterator of an ``MQTTStream``.
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Failure = Never

        var base: AsyncStream<Element>.Iterator

        public mutating func next() async -> Element? {
            await base.next()
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
            await base.next(isolation: actor)
        }
    }
}

/// The messages received on all of a client's subscriptions, in arrival order.
public typealias MQTTMessages = MQTTStream<MQTTMessage>

/// The client's connection events (connected, lost, refused, loop exited), in order.
public typealias MQTTConnectionEvents = MQTTStream<MQTTConnectionEvent>

/// The broker's acknowledgements of tracked publishes
/// (``MQTTClient/publishTracked(to:payload:qos:retain:properties:)``), in arrival order.
public typealias MQTTDeliveries = MQTTStream<MQTTDeliveryReport>

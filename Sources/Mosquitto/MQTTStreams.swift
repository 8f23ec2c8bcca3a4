/// The messages received on all of a client's subscriptions, in arrival order.
///
/// A named `AsyncSequence` over a private `AsyncStream`. It has one consumer: iterate it
/// from one task only. Messages are buffered without limit until consumed, and the
/// sequence ends when the client is shut down (``MQTTClient/disconnect()`` or deinit).
public struct MQTTMessages: AsyncSequence, Sendable {
    public typealias Element = MQTTMessage
    public typealias Failure = Never

    private let stream: AsyncStream<MQTTMessage>

    init(_ stream: AsyncStream<MQTTMessage>) {
        self.stream = stream
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator())
    }

    /// The iterator of ``MQTTMessages``.
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Element = MQTTMessage
        public typealias Failure = Never

        var base: AsyncStream<MQTTMessage>.Iterator

        public mutating func next() async -> MQTTMessage? {
            await base.next()
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> MQTTMessage? {
            await base.next(isolation: actor)
        }
    }
}

/// The client's connection events (connected, lost, refused, loop exited), in order.
///
/// A named `AsyncSequence` over a private `AsyncStream`; one consumer; buffered without
/// limit; ends when the client is shut down.
public struct MQTTConnectionEvents: AsyncSequence, Sendable {
    public typealias Element = MQTTConnectionEvent
    public typealias Failure = Never

    private let stream: AsyncStream<MQTTConnectionEvent>

    init(_ stream: AsyncStream<MQTTConnectionEvent>) {
        self.stream = stream
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator())
    }

    /// The iterator of ``MQTTConnectionEvents``.
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Element = MQTTConnectionEvent
        public typealias Failure = Never

        var base: AsyncStream<MQTTConnectionEvent>.Iterator

        public mutating func next() async -> MQTTConnectionEvent? {
            await base.next()
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> MQTTConnectionEvent? {
            await base.next(isolation: actor)
        }
    }
}

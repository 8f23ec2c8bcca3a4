import Testing

@testable import Mosquitto

@Suite("SubscriptionRegistry (no broker)")
struct SubscriptionRegistryTests {
    typealias Waiter = SubscriptionRegistry.Waiter

    /// Whether `waiter` already holds a value (a later fulfil is refused).
    func isSettled(_ waiter: Waiter) -> Bool {
        !waiter.fulfil(.failure(MQTTError(.other, "probe")))
    }

    @Test("filters are remembered, replaced and forgotten; every CONNACK redoes them all, sorted")
    func remembered() {
        var registry = SubscriptionRegistry()
        registry.add("b/#", qos: .atMostOnce)
        registry.add("a", qos: .atLeastOnce)
        registry.add("b/#", qos: .exactlyOnce)
        #expect(registry.resubscriptions().map(\.filter) == ["a", "b/#"])
        #expect(registry.resubscriptions().map(\.qos) == [.atLeastOnce, .exactlyOnce])
        registry.remove("a")
        #expect(registry.resubscriptions().map(\.filter) == ["b/#"])
    }

    @Test("a waiter gets its acknowledgement, whether it registered before or after it came")
    func acknowledgements() {
        var registry = SubscriptionRegistry()
        let before = Waiter()
        registry.awaitAcknowledgement(of: 1, sentOn: 1, latest: 1, isUp: true, before)
        let found = registry.acknowledgementReceived(messageID: 1, result: .success(()))
        #expect(found === before)
        let refusal = MQTTError(.notAuthorized, "no")
        #expect(registry.acknowledgementReceived(messageID: 2, result: .failure(refusal)) == nil)
        let after = Waiter()
        registry.awaitAcknowledgement(of: 2, sentOn: 1, latest: 1, isUp: true, after)
        #expect(registry.waiterCount == 0)
        #expect(isSettled(after))
    }

    @Test("a waiter whose connection already ended is settled at once; one whose connection ends is handed back")
    func neverLeftWaiting() {
        var registry = SubscriptionRegistry()
        let late = Waiter()
        registry.awaitAcknowledgement(of: 5, sentOn: 1, latest: 1, isUp: false, late)
        #expect(isSettled(late))
        let older = Waiter()
        registry.awaitAcknowledgement(of: 6, sentOn: 1, latest: 2, isUp: true, older)
        #expect(isSettled(older))
        let pending = Waiter()
        registry.awaitAcknowledgement(of: 7, sentOn: 2, latest: 2, isUp: true, pending)
        #expect(registry.waiterCount == 1)
        let orphaned = registry.connectionEnded()
        #expect(orphaned.count == 1 && orphaned.first === pending)
        #expect(registry.waiterCount == 0)
        let closing = Waiter()
        registry.awaitAcknowledgement(of: 8, sentOn: 2, latest: 2, isUp: true, closing)
        #expect(registry.close().first === closing)
    }

    @Test("acknowledgements of on_connect's resubscriptions are nobody's, and a CONNACK starts message ids over")
    func ignoredAndReset() {
        var registry = SubscriptionRegistry()
        registry.ignoreAcknowledgement(of: 3)
        #expect(registry.acknowledgementReceived(messageID: 3, result: .success(())) == nil)
        // Not stored as early either: a later caller with id 3 waits for its own.
        let caller = Waiter()
        registry.awaitAcknowledgement(of: 3, sentOn: 1, latest: 1, isUp: true, caller)
        #expect(registry.waiterCount == 1)
        _ = registry.connectionEnded()
        // An early acknowledgement from an old connection is not given to a new caller.
        #expect(registry.acknowledgementReceived(messageID: 9, result: .failure(MQTTError(.notAuthorized, "old"))) == nil)
        registry.connackReceived()
        let fresh = Waiter()
        registry.awaitAcknowledgement(of: 9, sentOn: 2, latest: 2, isUp: true, fresh)
        #expect(registry.waiterCount == 1, "took the old connection's acknowledgement")
    }
}

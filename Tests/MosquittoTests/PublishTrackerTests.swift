import Testing

@testable import Mosquitto

@Suite("PublishTracker (no broker)")
struct PublishTrackerTests {
    func publish(_ topic: String, _ qos: MQTTQoS = .atLeastOnce, token: MQTTDeliveryToken? = nil) -> PublishTracker.PendingPublish {
        .init(topic: topic, payload: [1], qos: qos, retain: false, properties: .none, token: token)
    }

    @Test("where the connection is decides: up sends, flushing keeps QoS 1/2 behind the flush, down keeps them, closed refuses")
    func decisions() {
        var tracker = PublishTracker(endpoint: "h:1")
        #expect(tracker.publishRequested(publish("a"), link: .up(generation: 3)) == .publishNow(generation: 3))
        #expect(tracker.publishRequested(publish("b", .atMostOnce), link: .flushing(generation: 3)) == .publishNow(generation: 3))
        #expect(tracker.publishRequested(publish("c", .exactlyOnce), link: .flushing(generation: 3)) == .queued)
        #expect(tracker.publishRequested(publish("d"), link: .down) == .queued)
        guard case .fail(let qos0) = tracker.publishRequested(publish("e", .atMostOnce), link: .down) else {
            Issue.record("QoS 0 cannot be kept"); return
        }
        #expect(qos0.code == .notConnected && qos0.message.contains("h:1"), "\(qos0)")
        guard case .fail(let closed) = tracker.publishRequested(publish("f"), link: .closed) else {
            Issue.record("nothing is kept after shutdown"); return
        }
        #expect(closed.code == .shutdown)
        #expect(tracker.takeKept().map(\.topic) == ["c", "d"])
        #expect(tracker.takeKept().isEmpty)
    }

    @Test("the kept list is bounded, in order, and dropped at shutdown")
    func keptLimit() {
        var tracker = PublishTracker(endpoint: "h:1", keptLimit: 2)
        #expect(tracker.publishRequested(publish("1"), link: .down) == .queued)
        #expect(tracker.publishRequested(publish("2"), link: .down) == .queued)
        guard case .fail(let full) = tracker.publishRequested(publish("3"), link: .down) else {
            Issue.record("the limit must hold"); return
        }
        #expect(full.message.contains("2 publishes already wait"))
        #expect(tracker.kept.map(\.topic) == ["1", "2"])
        tracker.close()
        #expect(tracker.kept.isEmpty)
    }

    @Test("'no connection' from libmosquitto: QoS 1/2 is libmosquitto's now; QoS 0 goes on a newer connection or fails")
    func noConnection() {
        var tracker = PublishTracker(endpoint: "h:1")
        #expect(tracker.publishFoundNoConnection(publish("q1"), generation: 1, link: .up(generation: 1)) == .queued)
        #expect(tracker.publishFoundNoConnection(publish("q1"), generation: 1, link: .down) == .queued)
        #expect(tracker.kept.isEmpty, "a second copy would reach the broker twice")
        #expect(tracker.publishFoundNoConnection(publish("q0", .atMostOnce), generation: 1, link: .flushing(generation: 2))
                == .publishNow(generation: 2))
        guard case .fail(let same) = tracker.publishFoundNoConnection(publish("q0", .atMostOnce), generation: 2, link: .up(generation: 2)) else {
            Issue.record("a QoS 0 publish on the connection going down fails"); return
        }
        #expect(same.code == .notConnected)
        guard case .fail(let closed) = tracker.publishFoundNoConnection(publish("q1"), generation: 2, link: .closed) else {
            Issue.record("after shutdown it fails"); return
        }
        #expect(closed.code == .shutdown)
    }

    @Test("on_publish and the message id meet once, whichever comes first; only tracked publishes report")
    func registry() {
        var tracker = PublishTracker(endpoint: "h:1")
        let a = tracker.makeDeliveryToken()
        let b = tracker.makeDeliveryToken()
        #expect(a != b)
        #expect(tracker.publishSent(messageID: 1, qos: .atLeastOnce, token: a) == nil)
        #expect(tracker.publishAcknowledged(messageID: 1, reasonCode: 0) == MQTTDeliveryReport(token: a, reasonCode: 0))
        #expect(tracker.publishAcknowledged(messageID: 1, reasonCode: 0) == nil, "reported twice")
        tracker = PublishTracker(endpoint: "h:1")
        #expect(tracker.publishAcknowledged(messageID: 2, reasonCode: 0x87) == nil)
        #expect(tracker.earlyAcknowledgements == [2: 0x87])
        let report = tracker.publishSent(messageID: 2, qos: .exactlyOnce, token: b)
        #expect(report == MQTTDeliveryReport(token: b, reasonCode: 0x87) && report?.isAccepted == false)
        #expect(tracker.publishSent(messageID: 3, qos: .atLeastOnce, token: nil) == nil)
        #expect(tracker.publishAcknowledged(messageID: 3, reasonCode: 0) == nil)
        #expect(tracker.sent.isEmpty && tracker.earlyAcknowledgements.isEmpty)
    }

    @Test("a connection's end forgets unwritten QoS 0 packets and keeps QoS 1/2 ones for their report after the reconnect")
    func connectionEnd() {
        var tracker = PublishTracker(endpoint: "h:1")
        let token = tracker.makeDeliveryToken()
        _ = tracker.publishSent(messageID: 1, qos: .atMostOnce, token: nil)
        _ = tracker.publishSent(messageID: 2, qos: .atLeastOnce, token: token)
        _ = tracker.publishSent(messageID: 3, qos: .exactlyOnce, token: nil)
        tracker.connectionEnded()
        #expect(tracker.sent.keys.sorted() == [2, 3])
        #expect(tracker.publishAcknowledged(messageID: 2, reasonCode: 0) == MQTTDeliveryReport(token: token, reasonCode: 0))
    }
}

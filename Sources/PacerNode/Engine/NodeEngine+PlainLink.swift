import Logging
import Mosquitto
import PacerCore

extension NodeEngine {
    /// A connect's last state, tracked: the plain topics' republish waits for its PUBACK.
    func publishStateHoldingPlainTopics(_ topic: String, _ payload: [UInt8], now: Millis) async {
        do {
            let token = try await transport.publishTracked(to: topic, payload: payload, retain: true)
            plainHold.hold(token)
            deadlines.set(.plainHold, at: now.saturatingAdd(PlainRepublishHold.limitMs))
        } catch {
            publishFailed(topic, error)
        }
    }

    /// The broker acknowledged the connect's last state: the plain topics' republish, if one
    /// waited, goes out now. False for any other token.
    func plainHoldDelivered(_ token: MQTTDeliveryToken, now: Millis) async -> Bool {
        guard plainHold.isHeld(by: token) else { return false }
        deadlines.set(.plainHold, at: nil)
        if plainHold.release() {
            transport.beginBatch()
            await republishPlainTopics(now: now)
            transport.endBatch()
        }
        return true
    }

    /// The connection the plain topics go over now: their own (nil when they have none, or
    /// it was refused and they use the main one).
    var plainLane: (any PlainTopicsTransport)? {
        plainLink.usesMainConnection ? nil : transport.plainTopics
    }

    /// Whether the plain topics can go out now, over the connection they use.
    var plainLinkUp: Bool { plainLane == nil ? linkUp : plainLink.isUp }

    func plainLinkChanged(_ event: MQTTConnectionEvent, now: Millis, into output: inout EngineOutput) {
        performPlainLink(plainLink.event(event), into: &output)
        if plainLink.isUp {
            deadlines.set(.plainFallback, at: nil)
        } else {
            armPlainFallback(now: now)
        }
    }

    /// While the main connection is up and the plain topics' own is not, they go over the main
    /// one after `PlainLink.fallbackDelayMs` (a `.plainFallback` deadline).
    func armPlainFallback(now: Millis) {
        guard transport.plainTopics != nil, plainLink.state == .down else { return }
        deadlines.set(.plainFallback, at: now.saturatingAdd(PlainLink.fallbackDelayMs))
    }

    /// The `.plainFallback` deadline.
    func plainLinkStayedDown(into output: inout EngineOutput) {
        guard linkUp else { return }  // armed again when the main connection is back
        performPlainLink(plainLink.mainStayedAlone(), into: &output)
    }

    private func performPlainLink(_ actions: [PlainLink.Action], into output: inout EngineOutput) {
        for action in actions {
            switch action {
            case .republish: output.republishPlain = true
            case .log(let level, let message): logger.log(level: level, "\(message)")
            }
        }
    }

    /// Every timer's plain topics again (forced), over the connection they now use: after a
    /// connect's states (`publishEverything`), when their own connection came up, or when they
    /// moved to the main one. Handed to the network thread every `republishChunk` timers.
    /// Timers held by the outbox check get theirs when they are released.
    func republishPlainTopics(now: Millis) async {
        if plainLane != nil, plainHold.deferRepublish() { return }  // after the connect's states
        let ids = timers.ids.filter { !outbox.isHolding($0) }
        for (index, id) in ids.enumerated() {
            await publishPlainTopics(id, now: now)
            if index % Self.republishChunk == Self.republishChunk - 1 { transport.endBatch(); transport.beginBatch() }
        }
    }

    /// A deleted timer's retained topics cleared (empty payloads): `state` on the main
    /// connection, the plain topics on theirs at QoS 1, which the client keeps while
    /// disconnected and sends after the reconnect, so a deletion during an outage leaves no
    /// ghost values.
    func clearRetainedTopics(of id: String) async {
        let t = topics.timer(id)
        await publish(to: t.state, [], retain: true)
        for topic in t.plain {
            if let lane = plainLane {
                do {
                    try await lane.publish(to: topic, payload: [], qos: .atLeastOnce)
                } catch {
                    publishFailed(topic, error, linkUp: plainLink.isUp)
                }
            } else {
                await publish(to: topic, [], retain: true)
            }
        }
    }
}

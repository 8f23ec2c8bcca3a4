import Logging
import PacerCore

extension EngineMachine {
    /// A connect's last state, tracked: the plain topics' republish waits for its PUBACK.
    mutating func publishStateHoldingPlainTopics(_ topic: String, _ payload: [UInt8], now: Millis) {
        let token = nextToken()
        emit(.publishTracked(topic: topic, payload: payload, retain: true, token: token))
        plainHold.hold(token)
        deadlines.set(.plainHold, at: now.saturatingAdd(PlainRepublishHold.limitMs))
    }

    /// The broker acknowledged the connect's last state: the plain topics' republish, if one
    /// waited, goes out now. False for any other token.
    mutating func plainHoldDelivered(_ token: PublishToken, now: Millis) -> Bool {
        guard plainHold.isHeld(by: token) else { return false }
        deadlines.set(.plainHold, at: nil)
        if plainHold.release() { republishPlainTopics(now: now) }
        return true
    }

    /// Whether the plain topics go over their own connection now (false when they have none,
    /// or it was refused and they use the main one).
    var usesPlainLane: Bool { hasPlainConnection && !plainLink.usesMainConnection }

    /// Whether the plain topics can go out now, over the connection they use.
    var plainLinkUp: Bool { usesPlainLane ? plainLink.isUp : linkUp }

    mutating func plainLinkChanged(_ event: LinkEvent, now: Millis, into output: inout EngineOutput) {
        performPlainLink(plainLink.event(event), into: &output)
        if plainLink.isUp {
            deadlines.set(.plainFallback, at: nil)
        } else {
            armPlainFallback(now: now)
        }
    }

    /// While the main connection is up and the plain topics' own is not, they go over the main
    /// one after `PlainLink.fallbackDelayMs` (a `.plainFallback` deadline).
    mutating func armPlainFallback(now: Millis) {
        guard hasPlainConnection, plainLink.state == .down else { return }
        deadlines.set(.plainFallback, at: now.saturatingAdd(PlainLink.fallbackDelayMs))
    }

    /// The `.plainFallback` deadline.
    mutating func plainLinkStayedDown(into output: inout EngineOutput) {
        guard linkUp else { return }  // armed again when the main connection is back
        performPlainLink(plainLink.mainStayedAlone(), into: &output)
    }

    private mutating func performPlainLink(_ actions: [PlainLink.Action], into output: inout EngineOutput) {
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
    mutating func republishPlainTopics(now: Millis) {
        if usesPlainLane, plainHold.deferRepublish() { return }  // after the connect's states
        let ids = timers.ids.filter { !outbox.isHolding($0) }
        for (index, id) in ids.enumerated() {
            publishPlainTopics(id, now: now)
            if index % Self.republishChunk == Self.republishChunk - 1 { emit(.flush) }
        }
    }

    /// A deleted timer's retained topics cleared (empty payloads): `state` on the main
    /// connection, the plain topics on theirs at QoS 1, which the client keeps while
    /// disconnected and sends after the reconnect, so a deletion during an outage leaves no
    /// ghost values.
    mutating func clearRetainedTopics(of id: String) {
        let t = topics.timer(id)
        publish(to: t.state, [], retain: true)
        publish(to: t.classSummary, [], retain: true)  // a class summary (EngineMachine+Athletes.swift), if any
        for topic in t.plain {
            if usesPlainLane {
                emit(.publishPlain(topic: topic, payload: [], confirmed: true))
            } else {
                publish(to: topic, [], retain: true)
            }
        }
    }
}

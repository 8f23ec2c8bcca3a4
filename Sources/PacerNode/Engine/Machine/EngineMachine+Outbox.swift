import Logging
import PacerCore
import PacerStore

/// The machine's side of the `EventOutbox`: feeding it and carrying out its actions.
extension EngineMachine {
    var stateFilter: String { "\(topics.base)/timers/+/state" }

    /// Up to this many held timers, the check subscribes to each one's `state` topic; above,
    /// to the `timers/+/state` filter. A few held timers among 10,000 then bring back a few
    /// retained states, not 10,000 (each an input of the engine).
    static let maxStateTopics = 32

    /// The topic filters the outbox check reads the held timers' retained states from.
    func stateFilters(for held: [String]) -> [String] {
        held.count > Self.maxStateTopics ? [stateFilter] : held.map { topics.timer($0).state }
    }

    /// Whether the engine has taken the broker connection's `.connected` (and not yet its
    /// end). Everything the engine publishes follows this, not the client's own flag: between
    /// a CONNACK and the engine handling it, a state must not reach the broker before the
    /// outbox check has started, or it would count as proof for events never sent. It cannot
    /// change in the middle of an input, so an event and its state are published together
    /// or held back together.
    var linkUp: Bool { outbox.isLinkUp }

    /// A new connection: starts the check with the store's unpublished events (`pending`,
    /// read after the write that marked the acknowledged ones), subscribing before anything is
    /// republished, so the broker sends the retained states of the previous run before our
    /// new ones replace them.
    mutating func beginOutboxCheck(pending: [EventRecord], now: Millis) {
        perform(outbox.connected(pending: pending, now: now), now: now)
        // A connect republishes every retained topic (and Home Assistant's configs): a burst
        // of messages freed once sent. Their pages go back to the system afterwards.
        emit(.trimHeap)
    }

    /// The acknowledged events to mark published in the write about to be made; clears the
    /// `.marks` deadline.
    mutating func takeMarks() -> [Int64] {
        deadlines.set(.marks, at: nil)
        return outbox.takeMarks()
    }

    /// A message on one of our own `state` topics: during the outbox check, a retained state.
    mutating func retainedState(_ message: InboundMessage, timer id: String, now: Millis, into output: inout EngineOutput) {
        // Only a held timer's state settles anything: the others are not decoded.
        guard message.retain, outbox.isHolding(id) else { return }
        // `.int` is nil for a number that is not a whole Int (a retained `1e19` trapped here).
        let revision = JSONCoding.decode(message.payload)?[.revision]?.int
        if outbox.retainedState(timer: id, revision: revision) { output.settleOutbox = true }
    }

    /// The broker acknowledged a tracked publish (`token` is the machine's own). A connect's
    /// last state ends the plain topics' hold (EngineMachine+PlainLink.swift). An event reached
    /// the broker, so it is marked published in the next write (or at the `.marks` deadline).
    /// Unmarked until then, a restart settles it by the outbox check, which is right either way.
    mutating func delivered(_ report: PublishAck, now: Millis) {
        if plainHoldDelivered(report.token, now: now) { return }
        switch outbox.delivered(token: report.token, accepted: report.isAccepted, now: now) {
        case .unknown:
            return
        case .refused(let seq):
            // 135 (0x87) is "not authorized": the broker's ACL does not let the node's user
            // publish there, which only the broker's configuration can change.
            let fix = report.reasonCode == 0x87
                ? "the broker's ACL does not let the node's user publish its event topics: allow it `topic readwrite pacer/#` (deploy/mosquitto/acl.example)"
                : "see the reason code in the MQTT 5 specification (PUBACK reason codes)"
            logger.error("the broker refused an event; it stays in the outbox and is retried at the next connect",
                         metadata: ["seq": "\(seq)", "reason": "\(report.reasonCode)", "fix": "\(fix)"])
        case .accepted(let actions):
            perform(actions, now: now)
        }
    }

    /// Carries out the outbox's actions, in order.
    mutating func perform(_ actions: [EventOutbox.Action], now: Millis) {
        for action in actions {
            switch action {
            case .subscribeToStates(let held):
                for filter in stateFilters(for: held) { emit(.subscribe(filter: filter)) }
            case .publish(let record):
                guard let seq = record.seq else { continue }
                publishWrittenEvent(topics.timer(record.timer).event, record.payload, seq: seq)
            case .mark(let seqs):
                if hasStore && !seqs.isEmpty { emit(.writeMarks(seqs)) }
            case .release(let timers):
                for id in timers { publishTimer(id, now: now, force: true) }
            case .unsubscribeFromStates(let held):
                for filter in stateFilters(for: held) { emit(.unsubscribe(filter: filter)) }
            case .windowEnds(let at):
                deadlines.set(.outbox, at: at)
            case .marksDue(let at):
                deadlines.set(.marks, at: at)
            }
        }
    }

    /// Decides the outbox check: publishes the pending events that did not reach the broker,
    /// then the retained topics held back for them, and marks the proven ones.
    mutating func settleOutbox(now: Millis) {
        let actions = outbox.settle()
        guard !actions.isEmpty else { return }
        perform(actions, now: now)
        let published = actions.filter { if case .publish = $0 { true } else { false } }.count
        let proven = actions.reduce(0) { if case .mark(let seqs) = $1 { $0 + seqs.count } else { $0 } }
        logger.info("event outbox settled", metadata: ["published": "\(published)", "already_delivered": "\(proven)"])
    }
}

import Logging
import Mosquitto
import PacerCore
import PacerStore

/// The engine's side of the `EventOutbox`: feeding it and carrying out its actions.
extension NodeEngine {
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

    /// A new connection: marks what the broker acknowledged, reads the store's outbox and
    /// starts the check (subscribing before anything is republished, so the broker sends the
    /// retained states of the previous run before our new ones replace them).
    func beginOutboxCheck(now: Millis) async {
        var pending: [EventRecord] = []
        if let store {
            // Events the broker already acknowledged are delivered: marked before the check
            // reads the outbox, so it never publishes them again.
            await writeMarks(takeMarks(), to: store)
            do { pending = try store.unpublishedEvents() } catch {
                logger.error("could not read the event outbox", metadata: ["error": "\(error)"])
            }
        }
        await perform(outbox.connected(pending: pending, now: now), now: now)
        // A connect republishes every retained topic (and Home Assistant's configs): a burst
        // of messages freed once sent. Their pages go back to the system afterwards.
        HeapTrim.later()
    }

    /// The acknowledged events to mark published in the write about to be made; clears the
    /// `.marks` deadline.
    func takeMarks() -> [Int64] {
        deadlines.set(.marks, at: nil)
        return outbox.takeMarks()
    }

    /// Marks events published in a write of their own (the outbox check cannot wait for one).
    private func writeMarks(_ seqs: [Int64], to store: any EngineStore) async {
        guard !seqs.isEmpty else { return }
        var marks = StoreBatch()
        marks.markPublished = seqs
        do { _ = try await store.commit(marks) } catch {
            logger.error("could not mark events as published", metadata: ["error": "\(error)"])
        }
    }

    /// A message on one of our own `state` topics: during the outbox check, a retained state.
    func retainedState(_ message: MQTTMessage, timer id: String, now: Millis, into output: inout EngineOutput) {
        // Only a held timer's state settles anything: the others are not decoded.
        guard message.retain, outbox.isHolding(id) else { return }
        // `.int` is nil for a number that is not a whole Int (a retained `1e19` trapped here).
        let revision = JSONCoding.decode(message.payload)?["revision"]?.int
        if outbox.retainedState(timer: id, revision: revision) { output.settleOutbox = true }
    }

    /// The broker acknowledged a tracked publish. A connect's last state ends the plain topics'
    /// hold (NodeEngine+PlainLink.swift). An event reached the broker, so it is marked
    /// published in the next write (or at the `.marks` deadline). Unmarked until then, a
    /// restart settles it by the outbox check, which is right either way.
    func deliveryReported(_ report: MQTTDeliveryReport, now: Millis) async {
        if await plainHoldDelivered(report.token, now: now) { return }
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
            await perform(actions, now: now)
        }
    }

    /// Carries out the outbox's actions, in order.
    func perform(_ actions: [EventOutbox.Action], now: Millis) async {
        for action in actions {
            switch action {
            case .subscribeToStates(let held):
                for filter in stateFilters(for: held) {
                    do { try await transport.subscribe(to: filter, qos: .atMostOnce) } catch {
                        logger.warning("could not read back the retained states; publishing the outbox as is", metadata: ["error": "\(error)"])
                    }
                }
            case .publish(let record):
                guard let seq = record.seq else { continue }
                await publishWrittenEvent(topics.timer(record.timer).event, record.payload, seq: seq)
            case .mark(let seqs):
                if let store { await writeMarks(seqs, to: store) }
            case .release(let timers):
                for id in timers { await publishTimer(id, now: now, force: true) }
            case .unsubscribeFromStates(let held):
                for filter in stateFilters(for: held) {
                    do { try await transport.unsubscribe(from: filter) } catch {
                        logger.debug("unsubscribe failed", metadata: ["error": "\(error)"])
                    }
                }
            case .windowEnds(let at):
                deadlines.set(.outbox, at: at)
            case .marksDue(let at):
                deadlines.set(.marks, at: at)
            }
        }
    }

    /// Decides the outbox check: publishes the pending events that did not reach the broker,
    /// then the retained topics held back for them, and marks the proven ones.
    func settleOutbox(now: Millis) async {
        let actions = outbox.settle()
        guard !actions.isEmpty else { return }
        await perform(actions, now: now)
        let published = actions.filter { if case .publish = $0 { true } else { false } }.count
        let proven = actions.reduce(0) { if case .mark(let seqs) = $1 { $0 + seqs.count } else { $0 } }
        logger.info("event outbox settled", metadata: ["published": "\(published)", "already_delivered": "\(proven)"])
    }
}

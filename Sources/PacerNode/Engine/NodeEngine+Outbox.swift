import Logging
import Mosquitto
import PacerCore
import PacerStore

/// The event outbox: transition events are written (unpublished) before they are
/// published and marked published right after. A crash between the two leaves events
/// whose fate is unknown. On the next connect the node reads its own retained `state`
/// topics as the broker kept them: `commit` always publishes an input's events before the
/// timer's state on the same connection, so a retained state with a revision at or past an
/// event's revision proves that event reached the broker. Those are marked published; the
/// others are published now. No event is published twice, and none is lost.
///
/// While the check runs, the retained topics of the timers with pending events are held
/// back: publishing their new state first would make it "proof" for events that never
/// reached the broker, and a crash before the check is decided would lose those events.
struct OutboxCheck {
    var pending: [EventRecord]
    /// Timers with pending events: their retained topics wait until the check is decided.
    var held: Set<String>
    /// Timers with pending events whose retained state has not arrived yet.
    var waiting: Set<String>
    /// The highest retained state revision seen per timer.
    var seen: [String: Int] = [:]
}

extension NodeEngine {
    /// How long to wait for the broker's retained states before deciding.
    static let outboxCheckWindowMs: Millis = 1_500

    var stateFilter: String { "\(topics.base)/timers/+/state" }

    func beginOutboxCheck(now: Millis) async {
        guard let store, outboxCheck == nil else { return }
        // Events the broker already acknowledged are delivered: marked before the check reads
        // the outbox, so it never publishes them again.
        writeMarks(takeMarkable(), to: store)
        let pending: [EventRecord]
        do { pending = try store.unpublishedEvents() } catch {
            logger.error("could not read the event outbox", metadata: ["error": "\(error)"])
            return
        }
        guard !pending.isEmpty else { return }
        outboxCheck = OutboxCheck(pending: pending, held: Set(pending.map(\.timer)), waiting: Set(pending.map(\.timer)))
        do {
            try await transport.subscribe(to: stateFilter, qos: .atMostOnce)
        } catch {
            logger.warning("could not read back the retained states; publishing the outbox as is", metadata: ["error": "\(error)"])
        }
        deadlines.set(.outbox, at: now + Self.outboxCheckWindowMs)
    }

    /// Marks events published in a write of their own (the outbox check cannot wait for one).
    private func writeMarks(_ seqs: [Int64], to store: any EngineStore) {
        guard !seqs.isEmpty else { return }
        var marks = StoreBatch()
        marks.markPublished = seqs
        do { _ = try store.commit(marks) } catch {
            logger.error("could not mark events as published", metadata: ["error": "\(error)"])
        }
    }

    /// A message on one of our own `state` topics during the outbox check.
    func retainedState(_ message: MQTTMessage, timer id: String, now: Millis, into output: inout EngineOutput) {
        guard message.retain, var check = outboxCheck else { return }
        if case .number(let revision)? = JSONCoding.decode(message.payload)?["revision"] {
            check.seen[id] = max(check.seen[id] ?? -1, Int(revision))
        }
        check.waiting.remove(id)
        outboxCheck = check
        if check.waiting.isEmpty { output.resolveOutbox = true }
    }

    /// Whether the timer's retained topics are held back until the outbox check is decided.
    func isHeldByOutbox(_ id: String) -> Bool {
        outboxCheck?.held.contains(id) ?? false
    }

    /// Publishes the pending events that did not reach the broker, then the retained topics
    /// held back for them, and marks all of them published.
    func resolveOutbox(now: Millis) async {
        guard linkUp, let check = outboxCheck, let store else { return }
        outboxCheck = nil
        deadlines.set(.outbox, at: nil)
        var resent: [Int64] = []
        var delivered: [Int64] = []
        for event in check.pending {
            guard let seq = event.seq else { continue }
            if (check.seen[event.timer] ?? -1) < event.revision {
                await publishWrittenEvent(topics.timer(event.timer).event, event.payload, seq: seq)
                resent.append(seq)
            } else {
                delivered.append(seq)
            }
        }
        for id in check.held.sorted() { await publishTimer(id, now: now, force: true) }
        // Proven delivered: marked now. Published now: marked on the broker's acknowledgement.
        writeMarks(delivered, to: store)
        logger.info("event outbox settled", metadata: ["published": "\(resent.count)", "already_delivered": "\(delivered.count)"])
        do { try await transport.unsubscribe(from: stateFilter) } catch {
            logger.debug("unsubscribe failed", metadata: ["error": "\(error)"])
        }
    }
}

import PacerCore
import PacerStore

/// The event outbox, as a pure state machine: inputs in, actions out, no I/O.
///
/// Transition events are written to the store (unpublished) before they are published, and
/// marked published once the broker acknowledged them. A crash in between leaves events
/// whose fate is unknown. On every connect the node reads back its own retained `state`
/// topics: `commit` publishes an input's events before the timer's state on the same
/// connection, so a retained state whose revision is at or past an event's proves that event
/// reached the broker. Those are marked; the others are published now. None is published
/// twice after its proof, and none is lost.
///
/// While the check runs, the retained topics of the timers with pending events are held
/// back: their new state would be "proof" for events that never reached the broker.
///
/// The engine feeds it: `connected`, `written`, `sent`, `retainedState`, `delivered`,
/// `settle` (all states seen, or the window ended), `linkDown`; and carries out the
/// `Action`s it returns (`perform` in BrokerLink.swift).
struct EventOutbox {
    /// How long to wait for the broker's retained states before deciding.
    static let checkWindowMs: Millis = 1_500
    /// How long an acknowledged event may wait for a write to carry its mark before one is
    /// made for it: marks ride on the writes of commands and transitions, and a burst of
    /// events gets one small write, not one each.
    static let markDelayMs: Millis = 2_000

    /// The outbox check after a connect: the events to settle and what has been seen.
    struct Check: Equatable {
        var pending: [EventRecord]
        /// Timers with pending events: their retained topics wait until the check is decided.
        var held: Set<String>
        /// Timers with pending events whose retained state has not arrived yet.
        var waiting: Set<String>
        /// The highest retained state revision seen per timer.
        var seen: [String: Int] = [:]
    }

    enum State: Equatable {
        /// No connection (or none the engine has taken yet): written events wait in the store.
        case linkDown
        /// Connected, nothing held back: written events are published at once.
        case linkUp
        /// Connected, reading back the retained states to settle `Check.pending`.
        case checking(Check)
    }

    /// What the engine must do, in order.
    enum Action: Equatable {
        /// Subscribe to the retained `state` of these timers (the held ones), so they come back:
        /// each topic when they are few, the node's `timers/+/state` filter otherwise.
        case subscribeToStates([String])
        /// Publish a written event, tracked; report the token with `sent(seq:token:)`.
        case publish(EventRecord)
        /// Mark these events published now, in a write of their own.
        case mark([Int64])
        /// Publish these timers' retained topics (held back during the check).
        case release([String])
        /// Unsubscribe from what `subscribeToStates` subscribed (the client would resubscribe it
        /// on every reconnect).
        case unsubscribeFromStates([String])
        /// Set (or clear) the check's deadline: `settle()` is due then.
        case windowEnds(at: Millis?)
        /// Set (or clear) the deadline by which the acknowledged events are marked.
        case marksDue(at: Millis?)
    }

    /// What a delivery report meant.
    enum Delivery: Equatable {
        /// Not a token of ours (or reported twice).
        case unknown
        /// The broker refused the event: it stays in the outbox for the next connect.
        case refused(seq: Int64)
        /// Acknowledged: to be marked.
        case accepted([Action])
    }

    private(set) var state: State = .linkDown
    /// Written events published with a token, awaiting the broker's acknowledgement. Kept
    /// across a reconnect: libmosquitto resends them and their acknowledgement still counts.
    private var awaiting: [PublishToken: Int64] = [:]
    /// Events the broker acknowledged, not yet marked published.
    private(set) var unmarked: [Int64] = []
    /// Events of the restore whose write failed: published from memory at the first connect.
    private var unwritten: [TimerEvent] = []

    var isLinkUp: Bool { state != .linkDown }

    /// Whether the timer's retained topics are held back until the check is decided.
    func isHolding(_ timer: String) -> Bool {
        if case .checking(let check) = state { return check.held.contains(timer) }
        return false
    }

    /// The engine took a new connection. `pending` is the store's outbox, read after the
    /// marks of `takeMarks()` were written.
    mutating func connected(pending: [EventRecord], now: Millis) -> [Action] {
        var actions = linkDown()
        guard !pending.isEmpty else {
            state = .linkUp
            return actions
        }
        let timers = Set(pending.map(\.timer))
        state = .checking(Check(pending: pending, held: timers, waiting: timers))
        actions += [.subscribeToStates(timers.sorted()), .windowEnds(at: now + Self.checkWindowMs)]
        return actions
    }

    /// The connection ended. A check in progress is abandoned, never decided on half the
    /// retained states; the next connect starts a new one from the store.
    mutating func linkDown() -> [Action] {
        defer { state = .linkDown }
        if case .checking(let check) = state { return [.unsubscribeFromStates(check.held.sorted()), .windowEnds(at: nil)] }
        return []
    }

    /// An event was written: publish it now (`.publish`), or nil: it waits, in the store
    /// while disconnected, or behind its timer's older pending events during the check.
    mutating func written(_ record: EventRecord) -> Action? {
        switch state {
        case .linkDown:
            return nil
        case .linkUp:
            return .publish(record)
        case .checking(var check):
            guard check.held.contains(record.timer) else { return .publish(record) }
            check.pending.append(record)
            state = .checking(check)
            return nil
        }
    }

    /// A `.publish` action was carried out with this delivery token.
    mutating func sent(seq: Int64, token: PublishToken) {
        awaiting[token] = seq
    }

    /// A retained state of one of our timers came back. Returns true when every held timer
    /// has been seen: `settle()` is due now.
    mutating func retainedState(timer: String, revision: Int?) -> Bool {
        guard case .checking(var check) = state else { return false }
        if let revision { check.seen[timer] = max(check.seen[timer] ?? -1, revision) }
        check.waiting.remove(timer)
        state = .checking(check)
        return check.waiting.isEmpty
    }

    /// Decides the check (all retained states seen, or the window ended): publishes the
    /// pending events no retained state proves, releases the held timers, marks the proven.
    mutating func settle() -> [Action] {
        guard case .checking(let check) = state else { return [] }
        state = .linkUp
        var actions: [Action] = []
        var proven: [Int64] = []
        for event in check.pending {
            guard let seq = event.seq else { continue }
            if (check.seen[event.timer] ?? -1) < event.revision {
                actions.append(.publish(event))
            } else {
                proven.append(seq)
            }
        }
        actions.append(.release(check.held.sorted()))
        if !proven.isEmpty { actions.append(.mark(proven)) }
        actions += [.unsubscribeFromStates(check.held.sorted()), .windowEnds(at: nil)]
        return actions
    }

    /// The broker acknowledged (or refused) a tracked publish.
    mutating func delivered(token: PublishToken, accepted: Bool, now: Millis) -> Delivery {
        guard let seq = awaiting.removeValue(forKey: token) else { return .unknown }
        guard accepted else { return .refused(seq: seq) }
        return .accepted(awaitMark([seq], now: now))
    }

    /// Events to mark: carried by the next write, or by the `.marksDue` deadline.
    mutating func awaitMark(_ seqs: [Int64], now: Millis) -> [Action] {
        guard !seqs.isEmpty else { return [] }
        defer { unmarked += seqs }
        return unmarked.isEmpty ? [.marksDue(at: now + Self.markDelayMs)] : []
    }

    /// The acknowledged events, for the write about to be made (the caller clears the
    /// `.marksDue` deadline; a failed write gives them back with `awaitMark`).
    mutating func takeMarks() -> [Int64] {
        defer { unmarked.removeAll() }
        return unmarked
    }

    /// Restored events whose write failed: published from memory at the first connect.
    mutating func keepUnwritten(_ events: [TimerEvent]) {
        unwritten += events
    }

    mutating func takeUnwritten() -> [TimerEvent] {
        defer { unwritten.removeAll() }
        return unwritten
    }
}

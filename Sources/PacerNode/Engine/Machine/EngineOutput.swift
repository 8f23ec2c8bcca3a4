import PacerCore
import PacerStore
import PacerProtocol

/// What handling one input decided to write and publish, inside the machine: its write is
/// made from it (`EngineMachine.batch`), and what follows the write (`afterWrite`) reads it.
struct EngineOutput {
    struct Reply {
        var topic: String
        /// The request's id (`null` without one): an error reply in its place keeps it (`refuse`).
        var id: JSONValue
        /// The reply's JSON, written once, before the store write: a recorded reply shares these
        /// bytes with the ledger and the store.
        var payload: [UInt8]
        var correlationData: [UInt8]?
        /// A `history` request: the shell reads the store and writes `payload` from it.
        var history: HistoryQuery?

        init(topic: String, id: JSONValue, payload: [UInt8], correlationData: [UInt8]?, history: HistoryQuery? = nil) {
            self.topic = topic
            self.id = id
            self.payload = payload
            self.correlationData = correlationData
            self.history = history
        }

        /// A reply written from its value; its `id` member is kept.
        init(topic: String, body: JSONValue, correlationData: [UInt8]?) {
            self.init(topic: topic, id: body["id"] ?? .null, payload: JSONCoding.encode(body), correlationData: correlationData)
        }
    }

    /// What must follow the write besides the timers' topics and the replies.
    struct FollowUps: OptionSet {
        let rawValue: UInt8
        /// The retained `info` (a timer made, renamed or deleted; its deadline).
        static let infoChanged = FollowUps(rawValue: 1 << 0)
        /// A (re)connect: publish every retained topic again.
        static let republishAll = FollowUps(rawValue: 1 << 1)
        /// The plain topics' own connection came up: publish every plain topic again over it.
        static let republishPlain = FollowUps(rawValue: 1 << 2)
        /// Home Assistant came online: publish every discovery config again.
        static let republishDiscovery = FollowUps(rawValue: 1 << 3)
        /// Only time passed (a deadline): no timer was made, renamed or given another kind, so
        /// Home Assistant's configs, which show only those, are not compared (at 1,000 running
        /// timers that compare ran 1,000 times a second).
        static let onlyTimePassed = FollowUps(rawValue: 1 << 4)
        /// The `.marks` deadline: write the acknowledged events' marks even without other writes.
        static let flushMarks = FollowUps(rawValue: 1 << 5)
        /// The outbox check can be decided (all retained states seen, or its window ended).
        static let settleOutbox = FollowUps(rawValue: 1 << 6)
    }

    /// Undo information for a command: if its write fails, nothing it changed may stay.
    /// `requestID` is the id it recorded in the ledger, if any (forgotten on rollback; no
    /// copy of the whole ledger per command).
    struct Rollback {
        var timers: [String: TimerTable.Entry?]
        var requestID: String?
    }

    /// The timers the input changed and their events.
    var changes = TimerChanges()
    var replies: [Reply] = []
    var requests: [RequestRecord] = []
    var follow: FollowUps = []
    /// The outbox's actions for a link that went down (before anything else is published).
    var linkActions: [EventOutbox.Action] = []
    /// The undo information of the command being handled.
    var rollback: Rollback?
    /// The undo information of each earlier command of a group (`EngineMachine.commands`).
    private(set) var groupRollbacks: [Rollback] = []

    /// The undo information of every command in this output, in the order they were handled.
    var rollbacks: [Rollback] {
        groupRollbacks + (rollback.map { [$0] } ?? [])
    }

    /// Adds what one more command decided (a group: several commands, one write).
    mutating func absorb(_ other: EngineOutput) {
        changes.absorb(other.changes)
        replies += other.replies
        requests += other.requests
        follow.formUnion(other.follow)
        linkActions += other.linkActions
        groupRollbacks += other.rollbacks
    }

    /// A command whose write failed: what it changed (`timers`, its request id) is dropped
    /// and each reply becomes `error`; the rest of the input (a clock jump) stays.
    mutating func refuse(_ timers: Set<String>, _ error: ReplyError) {
        changes.drop(timers)
        requests = []
        replies = replies.map { reply in
            var reply = reply
            reply.payload = JSONCoding.encode(error.reply(id: reply.id))
            reply.history = nil
            return reply
        }
    }
}

/// The timers one input changed, and their events: which are written and which only published.
struct TimerChanges {
    /// Timers whose state may have changed, in first-touched order.
    private(set) var timers: [String] = []
    private var changedSet: Set<String> = []
    /// Timers to write even without a new revision: a clock jump moves an idle timer's
    /// cursors without one. (A new timer needs no flag: it has never been written.)
    private(set) var forcePersist: Set<String> = []
    /// Events in the order they happened.
    private(set) var events: [TimerEvent] = []
    /// Timers changed only by the passage of time: where they are follows from their last
    /// written state and the timing model, so they are published, not written (a
    /// phase transition is not news; an SD card lives longer without a write per transition).
    private(set) var derivedOnly: Set<String> = []
    /// Events that follow from the timing model (`phase`, a scheduled `started`): published,
    /// not written. After a crash the restore recomputes them (docs/API.md, "Events after a restart").
    private(set) var derivedEvents: Set<EventKey> = []
    var deleted: [String] = []

    /// A timer changed by a command, a restore decision or a clock jump: written (when its
    /// revision moved, or `force`) with its events, then published.
    mutating func timerChanged(_ id: String, events newEvents: [TimerEvent], forcePersist force: Bool = false) {
        if changedSet.insert(id).inserted { timers.append(id) }
        derivedOnly.remove(id)
        if force { forcePersist.insert(id) }
        events += newEvents
    }

    /// A timer moved on by the passage of time. Its transitions are derived, so neither it nor
    /// their events are written, unless they include an outcome that must not repeat
    /// (`expired`, `finished`; `TimerEvent.isOutcome`): then it is written like a command's change.
    mutating func timerAdvanced(_ id: String, events newEvents: [TimerEvent]) {
        if newEvents.contains(where: \.isOutcome) {
            timerChanged(id, events: newEvents)
            return
        }
        if changedSet.insert(id).inserted {
            timers.append(id)
            derivedOnly.insert(id)
        }
        for event in newEvents where !event.isCue { derivedEvents.insert(EventKey(event)) }
        events += newEvents
    }

    /// Whether `event` is written before it is published (not a cue, not derived).
    func writes(_ event: TimerEvent) -> Bool {
        !event.isCue && (derivedEvents.isEmpty || !derivedEvents.contains(EventKey(event)))
    }

    /// The changed timers that are written (those not changed by time alone).
    var writtenTimers: [String] {
        derivedOnly.isEmpty ? timers : timers.filter { !derivedOnly.contains($0) }
    }

    mutating func absorb(_ other: TimerChanges) {
        for id in other.timers where changedSet.insert(id).inserted {
            timers.append(id)
            if other.derivedOnly.contains(id) { derivedOnly.insert(id) }
        }
        derivedOnly.subtract(other.timers.filter { !other.derivedOnly.contains($0) })
        derivedEvents.formUnion(other.derivedEvents)
        forcePersist.formUnion(other.forcePersist)
        events += other.events
        deleted += other.deleted
    }

    /// Forgets what happened to `ids` (their commands were undone).
    mutating func drop(_ ids: Set<String>) {
        timers.removeAll { ids.contains($0) }
        changedSet.subtract(ids)
        derivedOnly.subtract(ids)
        forcePersist.subtract(ids)
        events.removeAll { ids.contains($0.timer) }
        deleted.removeAll { ids.contains($0) }
    }
}

/// The identity of an event in the store (its unique key).
struct EventKey: Hashable {
    var timer: String
    var type: String
    var revision: Int
    var dueMs: Millis
}

extension EventKey {
    init(_ event: TimerEvent) {
        self.init(timer: event.timer, type: event.type.rawValue, revision: event.revision, dueMs: event.dueMs)
    }

    init(_ record: EventRecord) {
        self.init(timer: record.timer, type: record.type, revision: record.revision, dueMs: record.dueMs)
    }
}

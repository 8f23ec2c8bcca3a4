/// One timer as the store keeps it.
///
/// The store does not understand timers: `machine` is the core's `TimerMachine`
/// encoded as JSON by the node, stored and returned byte for byte.
public struct TimerRecord: Sendable, Equatable {
    /// The timer id (primary key).
    public var id: String
    /// JSON blob of the core's `TimerMachine` (spec, program, run state).
    public var machine: [UInt8]
    /// The timer's revision at the time of the write.
    public var revision: Int
    /// `"resume"`, `"pause"` or `"discard"`; `nil` means the node's default.
    /// Anything else is rejected by a CHECK constraint (the whole batch fails).
    public var restorePolicy: String?
    /// Node wall clock (epoch ms) of the write; the node's maximum-age rule uses it.
    public var updatedAtMs: Int64

    public init(id: String, machine: [UInt8], revision: Int, restorePolicy: String? = nil, updatedAtMs: Int64) {
        self.id = id
        self.machine = machine
        self.revision = revision
        self.restorePolicy = restorePolicy
        self.updatedAtMs = updatedAtMs
    }
}

/// One timer event (`started`, `phase`, `finished`, ...) in the history and the outbox.
public struct EventRecord: Sendable, Equatable {
    /// Assigned by the store when the event is appended (strictly increasing, never
    /// reused, also after pruning). Ignored on input to `apply`.
    public var seq: Int64?
    /// The timer id. Not a foreign key: history outlives deleted timers.
    public var timer: String
    /// The event type, e.g. `"finished"`.
    public var type: String
    /// The timer revision the event belongs to.
    public var revision: Int
    /// The instant the event was due (epoch ms).
    public var dueMs: Int64
    /// The node wall clock when the event was emitted (epoch ms). History's
    /// `sinceMs` and retention's `maxAgeMs` use it.
    public var atMs: Int64
    /// The event JSON as published.
    public var payload: [UInt8]
    /// Whether the event has been published (see `StoreBatch.markPublished`).
    public var published: Bool

    public init(
        seq: Int64? = nil, timer: String, type: String, revision: Int,
        dueMs: Int64, atMs: Int64, payload: [UInt8], published: Bool = false
    ) {
        self.seq = seq
        self.timer = timer
        self.type = type
        self.revision = revision
        self.dueMs = dueMs
        self.atMs = atMs
        self.payload = payload
        self.published = published
    }
}

/// A processed command request id and the reply it got, for deduplication
/// across restarts.
public struct RequestRecord: Sendable, Equatable {
    /// The request id (primary key). The node decides its scope (e.g. prefix it
    /// with the timer id); the store treats it as opaque.
    public var id: String
    /// The reply JSON that was sent.
    public var reply: [UInt8]
    /// Node wall clock (epoch ms) when the request was processed.
    public var atMs: Int64

    public init(id: String, reply: [UInt8], atMs: Int64) {
        self.id = id
        self.reply = reply
        self.atMs = atMs
    }
}

/// Everything one accepted command or one transition writes, applied in ONE
/// transaction by `PacerDatabase.apply(_:)`.
///
/// Within the transaction the parts are applied in this order: `upsertTimers`,
/// `deleteTimers`, `appendEvents`, `shiftRequestsMs`, `requests`, `markPublished`, `meta`.
public struct StoreBatch: Sendable {
    /// Inserted, or replacing the stored timer with the same id.
    public var upsertTimers: [TimerRecord] = []
    /// Timer ids to delete (unknown ids are ignored). Their events stay in the history.
    public var deleteTimers: [String] = []
    /// Events to append. An event whose (timer, type, revision, dueMs) is already
    /// stored is a duplicate: it is ignored and gets no seq.
    public var appendEvents: [EventRecord] = []
    /// Moves the `atMs` of every stored request by this many milliseconds, before `requests`
    /// are inserted: after a wall-clock jump the dedup window is measured on the moved
    /// timeline, so a stored request keeps its age across a restart.
    public var shiftRequestsMs: Int64 = 0
    /// Processed requests. A request id already stored keeps its first reply.
    public var requests: [RequestRecord] = []
    /// Seqs of events that have been published (unknown seqs are ignored).
    public var markPublished: [Int64] = []
    /// Meta keys to set in the same transaction (e.g. the last wall clock seen).
    public var meta: [String: String] = [:]

    public init() {}

    /// True when applying the batch would write nothing.
    public var isEmpty: Bool {
        upsertTimers.isEmpty && deleteTimers.isEmpty && appendEvents.isEmpty
            && shiftRequestsMs == 0 && requests.isEmpty && markPublished.isEmpty && meta.isEmpty
    }
}

/// What `PacerDatabase.commit(_:)` did with a batch's events.
public struct StoreCommit: Sendable, Equatable {
    /// The appended events that were new, in batch order, with their assigned `seq`.
    public var appended: [EventRecord]
    /// The appended events that were duplicates of stored ones and were ignored
    /// (their `seq` is nil). They must not be published again.
    public var duplicates: [EventRecord]

    public init(appended: [EventRecord] = [], duplicates: [EventRecord] = []) {
        self.appended = appended
        self.duplicates = duplicates
    }
}

/// A history query. Results are newest first (by seq, i.e. the order in which
/// events were committed).
public struct HistoryQuery: Sendable, Equatable {
    /// Only this timer's events; nil for all timers.
    public var timer: String?
    /// Only events with `atMs >= sinceMs`; nil for no lower bound.
    public var sinceMs: Int64?
    /// Only events with `seq < beforeSeq` (paging backwards); nil for no bound.
    public var beforeSeq: Int64?
    /// At most this many events (the newest ones). Zero or negative returns nothing.
    public var limit: Int = 100

    public init(timer: String? = nil, sinceMs: Int64? = nil, beforeSeq: Int64? = nil, limit: Int = 100) {
        self.timer = timer
        self.sinceMs = sinceMs
        self.beforeSeq = beforeSeq
        self.limit = limit
    }
}

/// What `PacerDatabase.prune(_:nowMs:)` removes. Unpublished events are never
/// pruned: they are the outbox.
public struct RetentionPolicy: Sendable, Equatable {
    /// Published events with `atMs` older than `nowMs - maxAgeMs` are removed.
    public var maxAgeMs: Int64 = 30 * 24 * 3_600_000
    /// Then the oldest published events are removed until at most this many
    /// events remain (or only unpublished ones).
    public var maxEvents: Int = 100_000
    /// Requests with `atMs` older than `nowMs - requestWindowMs` are removed.
    public var requestWindowMs: Int64 = 10 * 60_000

    public init(maxAgeMs: Int64 = 30 * 24 * 3_600_000, maxEvents: Int = 100_000, requestWindowMs: Int64 = 10 * 60_000) {
        self.maxAgeMs = maxAgeMs
        self.maxEvents = maxEvents
        self.requestWindowMs = requestWindowMs
    }
}

/// How many rows `PacerDatabase.prune(_:nowMs:)` removed.
public struct PruneResult: Sendable, Equatable {
    public var eventsByAge: Int
    public var eventsByCount: Int
    public var requests: Int

    public init(eventsByAge: Int = 0, eventsByCount: Int = 0, requests: Int = 0) {
        self.eventsByAge = eventsByAge
        self.eventsByCount = eventsByCount
        self.requests = requests
    }
}

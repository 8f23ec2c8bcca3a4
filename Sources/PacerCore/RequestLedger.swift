/// Deduplication of request ids (docs/API.md, "Commands"): remembers the first reply to each id for
/// `windowMs` (default 10 min), keeping at most `capacity` ids (the oldest are evicted).
///
/// Usage: `if let reply = ledger.reply(for: id, now: now) { answer reply } else { apply;
/// ledger.record(id: id, reply: reply, now: now) }`.
///
/// With a `decoder` set (the node sets one: the core has no JSON parser), replies are kept as
/// their JSON bytes, a fraction of a decoded `JSONValue`'s memory, and decoded only when a
/// repeat asks for one; a restart loads the stored replies as bytes, without decoding any.
public struct RequestLedger: Sendable, Equatable {
    public let windowMs: Millis
    public let capacity: Int
    private var replies: [String: Entry] = [:]
    /// Ids in recording order; `head` is the first live element.
    private var order: [String] = []
    private var head = 0
    /// Turns a reply kept as JSON bytes back into a value; nil: replies are kept decoded.
    public var decoder: (@Sendable ([UInt8]) -> JSONValue?)?

    /// A reply as recorded: decoded, or its JSON bytes (decoded when a repeat asks).
    enum Reply: Sendable, Equatable {
        case value(JSONValue)
        case encoded([UInt8])
    }

    struct Entry: Sendable, Equatable {
        var reply: Reply
        var atMs: Millis
    }

    /// Equal when they remember the same ids with the same replies (the decoder is not compared).
    public static func == (a: RequestLedger, b: RequestLedger) -> Bool {
        a.windowMs == b.windowMs && a.capacity == b.capacity && a.replies == b.replies && a.order == b.order && a.head == b.head
    }

    public init(windowMs: Millis = 600_000, capacity: Int = 10_000) {
        self.windowMs = windowMs
        self.capacity = max(1, capacity)
    }

    /// Number of remembered ids.
    public var count: Int { replies.count }

    /// Moves every entry's instant by `delta`: after a wall-clock step re-anchored the
    /// timeline, an id answered 1 min ago still counts as answered 1 min ago.
    public mutating func shiftTimes(by delta: Millis) {
        for id in replies.keys { replies[id]!.atMs = replies[id]!.atMs.saturatingAdd(delta) }
    }

    /// The first reply recorded for `id` within the window, if any.
    public mutating func reply(for id: String, now: Millis) -> JSONValue? {
        purge(now: now)
        switch replies[id]?.reply {
        case .value(let value)?: return value
        case .encoded(let bytes)?: return decoder?(bytes)
        case nil: return nil
        }
    }

    /// Records the reply to `id` (a second record of a known id keeps the first reply). Kept as
    /// its JSON bytes when a `decoder` is set: `encoded` when the caller already wrote them
    /// (`reply.jsonBytes`, also published and stored), else written here.
    public mutating func record(id: String, reply: JSONValue, encoded: [UInt8]? = nil, now: Millis) {
        guard decoder != nil else { return insert(id: id, reply: .value(reply), now: now) }
        // Copied out of the writer's growing buffer: kept at its size, not the buffer's capacity.
        insert(id: id, reply: .encoded(Array((encoded ?? reply.jsonBytes)[...])), now: now)
    }

    /// Records a reply given as JSON bytes (a stored one, loaded at a restart), decoded by
    /// `decoder` only when a repeat asks for it. An undecodable one then counts as unknown.
    public mutating func record(id: String, encodedReply: [UInt8], now: Millis) {
        insert(id: id, reply: .encoded(encodedReply), now: now)
    }

    private mutating func insert(id: String, reply: Reply, now: Millis) {
        purge(now: now)
        guard replies[id] == nil else { return }
        replies[id] = Entry(reply: reply, atMs: now)
        order.append(id)
        while replies.count > capacity { evictOldest() }
        compact()
    }

    /// Forgets `id` (a command whose write failed: its reply was never given). O(1) for the
    /// id recorded last, which is the only one a rollback forgets.
    public mutating func forget(id: String) {
        guard replies.removeValue(forKey: id) != nil else { return }
        if order.last == id, order.count > head { order.removeLast() }
    }

    private mutating func purge(now: Millis) {
        while head < order.count {
            let id = order[head]
            guard let entry = replies[id] else { head += 1; continue }
            if now.saturatingAdd(-entry.atMs) >= windowMs {
                replies[id] = nil
                head += 1
            } else {
                break
            }
        }
        compact()
    }

    private mutating func evictOldest() {
        while head < order.count {
            let id = order[head]
            head += 1
            if replies.removeValue(forKey: id) != nil { return }
        }
    }

    private mutating func compact() {
        if head > 64 && head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
    }
}

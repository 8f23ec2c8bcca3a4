import PacerCore

/// A token bucket: `burst` commands at once, refilled at `perSecond`. Pure arithmetic on the
/// instants it is given (the engine's clock; tests inject their own), no I/O.
struct TokenBucket: Sendable, Equatable {
    let perSecond: Int
    let burst: Int
    /// Tokens in thousandths (a whole number, so refills never drift).
    private(set) var milliTokens: Int64
    private(set) var lastMs: Millis

    /// A full bucket at `now`.
    init(perSecond: Int, burst: Int, now: Millis) {
        precondition(perSecond > 0 && burst > 0, "a token bucket needs a rate and a burst")
        self.perSecond = perSecond
        self.burst = burst
        self.milliTokens = Int64(burst) * 1_000
        self.lastMs = now
    }

    /// Refills for the time since the last call. A clock that went back refills nothing and
    /// counts on from its new reading (else a step back of an hour would lock a sender out for
    /// an hour).
    private mutating func refill(now: Millis) {
        guard now > lastMs else {
            lastMs = now
            return
        }
        let cap = Int64(burst) * 1_000
        let elapsed = Int64(now - lastMs)
        // rate per second = rate thousandths per ms; capped before multiplying so it cannot overflow.
        let added = elapsed >= cap ? cap : min(cap, elapsed * Int64(perSecond))
        milliTokens = min(cap, milliTokens + added)
        lastMs = now
    }

    /// Takes one token: nil when allowed, else how many ms until one is there.
    mutating func take(now: Millis) -> Millis? {
        refill(now: now)
        if milliTokens >= 1_000 {
            milliTokens -= 1_000
            return nil
        }
        let missing = 1_000 - milliTokens
        return Millis((missing + Int64(perSecond) - 1) / Int64(perSecond))
    }

    /// True when the bucket is full again at `now` (it can be forgotten: a new one is the same).
    func isFull(now: Millis) -> Bool {
        var copy = self
        copy.refill(now: now)
        return copy.milliTokens >= Int64(burst) * 1_000
    }
}

/// The optional command rate limit (`limits.command_rate`): one token bucket per sender key.
///
/// MQTT gives the node no publisher identity, so the key is the best it has: the command's
/// MQTT 5 response topic (per client, when the client sets one), else the command topic (the
/// node's `cmd` or a timer's `cmd`). A client that changes its response topic on every command
/// gets a new bucket each time: this limit stops a runaway or misconfigured client from
/// crowding out the others, not a hostile one (docs/SECURITY.md).
struct CommandRateLimiter: Sendable {
    let limit: CommandRateLimit
    private var buckets: [String: TokenBucket] = [:]
    /// At most this many keys are remembered; full buckets are forgotten first.
    static let maxKeys = 4_096

    init(_ limit: CommandRateLimit) {
        self.limit = limit
    }

    /// Takes a token of `key`'s bucket: nil when the command may go ahead, else the ms until
    /// the next one would be accepted.
    mutating func take(key: String, now: Millis) -> Millis? {
        if buckets[key] == nil, buckets.count >= Self.maxKeys {
            buckets = buckets.filter { !$0.value.isFull(now: now) }
            if buckets.count >= Self.maxKeys {
                // Every key is busy: forget the one idle longest.
                if let oldest = buckets.min(by: { $0.value.lastMs < $1.value.lastMs })?.key { buckets[oldest] = nil }
            }
        }
        var bucket = buckets[key] ?? TokenBucket(perSecond: limit.perSecond, burst: limit.burst, now: now)
        let wait = bucket.take(now: now)
        buckets[key] = bucket
        return wait
    }

    /// How many keys are remembered (tests).
    var keyCount: Int { buckets.count }
}

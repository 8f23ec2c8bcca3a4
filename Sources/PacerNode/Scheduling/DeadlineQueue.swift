import HeapModule
import PacerCore

/// What a deadline belongs to: a timer, a heart-rate source going stale, or the end of the
/// outbox check after a reconnect.
enum DeadlineOwner: Hashable, Sendable {
    case timer(String)
    case heartRate(String)
    /// A class's athlete going stale or leaving (HeartRatePart.swift).
    case athlete(String)
    case outbox
    /// Acknowledged events to mark published (see `EventOutbox.markDelayMs`).
    case marks
    /// A held-back `info` (see `NodeInfo.minIntervalMs`).
    case info
    /// The next chunk of Home Assistant configs after a connect (DiscoveryPart.swift).
    case discovery
    /// The plain topics' own connection still down while the main one is up (BrokerLink.swift).
    case plainFallback
    /// The time limit of a connect's hold on the plain topics' republish (BrokerLink.swift).
    case plainHold
    /// A timer's next cue, announced `publish.cue_ahead` before it (SoundPart.swift).
    case cueAhead(String)
    /// The next instant a timer's AWTRIX clocks or WLED lights need an update by themselves
    /// (a flip of the shown second, a pulse step; DisplayPart.swift).
    case display(String)
    /// The timetable's next decision (a class due, a grace running out; SchedulePart.swift).
    case schedule
    /// A rest that waits for recovery began: its rule is judged at once (EngineMachine+Recovery.swift).
    case recovery
}

/// One deadline queue for everything the node waits for (one scheduler for all timers:
/// docs/architecture.md, "Scheduling").
///
/// A min-heap of `(instant, owner)` with lazy deletion: each owner has at most one current
/// deadline (kept in `current`); superseded heap entries are skipped when they surface.
/// All operations are O(log n).
struct DeadlineQueue {
    private struct Entry: Comparable {
        var at: Millis
        var owner: DeadlineOwner
        static func < (a: Entry, b: Entry) -> Bool { a.at < b.at }
        static func == (a: Entry, b: Entry) -> Bool { a.at == b.at && a.owner == b.owner }
    }

    private var heap = Heap<Entry>()
    private var current: [DeadlineOwner: Millis] = [:]

    /// Sets (or clears, with nil) the one deadline of `owner`.
    mutating func set(_ owner: DeadlineOwner, at: Millis?) {
        // One hash of the owner either way (a timer's id, several times a second per timer).
        if let at {
            guard current.updateValue(at, forKey: owner) != at else { return }
            heap.insert(Entry(at: at, owner: owner))
        } else {
            guard current.removeValue(forKey: owner) != nil else { return }
        }
        compactIfNeeded()
    }

    /// The earliest live deadline.
    mutating func earliest() -> Millis? {
        dropStale()
        return heap.min?.at
    }

    /// Removes and returns every owner whose deadline is at or before `now`.
    mutating func popDue(now: Millis) -> [DeadlineOwner] {
        var due: [DeadlineOwner] = []
        while let top = heap.min, top.at <= now {
            heap.removeMin()
            // One hash per entry: live when it is still its owner's deadline, else superseded.
            if let index = current.index(forKey: top.owner), current.values[index] == top.at {
                current.remove(at: index)
                due.append(top.owner)
            }
        }
        return due
    }

    var count: Int { current.count }

    /// Moves every deadline by `delta` (the node's timeline was re-anchored after a
    /// wall-clock step: what was due in 5 s is still due in 5 s).
    mutating func shift(by delta: Millis) {
        let moved = current.mapValues { $0.saturatingAdd(delta) }
        current = moved
        heap = Heap(moved.map { Entry(at: $0.value, owner: $0.key) })
    }

    private mutating func dropStale() {
        while let top = heap.min, current[top.owner] != top.at {
            heap.removeMin()
        }
    }

    /// Rebuilds the heap when superseded entries outnumber live ones (bounded memory).
    private mutating func compactIfNeeded() {
        guard heap.count > 64, heap.count > 4 * current.count else { return }
        heap = Heap(current.map { Entry(at: $0.value, owner: $0.key) })
    }
}

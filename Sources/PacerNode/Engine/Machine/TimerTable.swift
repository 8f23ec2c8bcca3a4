import Foundation
import PacerCore
import PacerStore
import PacerProtocol

/// Every timer the node owns, with what the store and the broker last got of each.
///
/// The engine changes a timer only through this table, so the rules that keep the store and
/// the retained topics in step live here: a timer is written when its revision moved (or it
/// must be, after a clock jump or a failed write), and a plain retained topic is republished
/// only when its value changed.
struct TimerTable {
    struct Entry {
        var machine: TimerMachine
        var restore: RestorePolicy
        /// The revision last written to the store (-1: never written).
        fileprivate(set) var persistedRevision: Int
        /// Last value published on each plain retained topic (only changes are republished),
        /// by the topic's last level (`PlainLeaf`): short strings, stored inline, no topic copy.
        fileprivate var lastPlain = PlainSlots()
        /// What the last published `state` showed that a per-second tick cannot change.
        fileprivate var lastState: StateKey?

        init(machine: TimerMachine, restore: RestorePolicy, persistedRevision: Int = -1) {
            self.machine = machine
            self.restore = restore
            self.persistedRevision = persistedRevision
        }
    }

    /// The entries in an array, found through `position`: an array element is read in place,
    /// where a dictionary's `values[index]` getter copied the whole entry (a retain of every
    /// string and array of its machine, and a release after) on every per-second read.
    private var slots: ContiguousArray<Entry> = []
    /// `slots[i]`'s timer id (a removal moves the last slot into the gap).
    private var slotIDs: ContiguousArray<String> = []
    private var position: [String: Int] = [:]
    /// Timers whose last write failed: written with the next write, changed or not.
    private var unwritten: Set<String> = []

    var count: Int { slots.count }
    /// The timer ids, sorted (the order of `info` and `list`).
    var ids: [String] { slotIDs.sorted() }
    /// A copy of one timer's entry (cold paths: the per-second paths use `read`, which copies nothing).
    subscript(id: String) -> Entry? { position[id].map { slots[$0] } }

    func contains(_ id: String) -> Bool { position[id] != nil }

    /// Reads one timer's entry in place: no copy of it (a copy retains every string and
    /// array of its machine, and the per-second paths read 1,000s of entries a second).
    func read<R>(_ id: String, _ body: (Entry) throws -> R) rethrows -> R? {
        guard let index = position[id] else { return nil }
        return try body(slots[index])
    }

    /// Room for `count` timers in all, made once: a restore of 10,000 then fills one buffer
    /// of the right size, where growing by doubling held the old buffer and the new (half of
    /// it empty) at once, a few MB each.
    mutating func reserveCapacity(_ count: Int) {
        slots.reserveCapacity(count)
        slotIDs.reserveCapacity(count)
        position.reserveCapacity(count)
    }

    /// Adds (or, for a rollback, puts back or removes) a timer.
    mutating func set(_ id: String, _ entry: Entry?) {
        guard let entry else {
            _ = remove(id)
            return
        }
        if let index = position[id] {
            slots[index] = entry
        } else {
            position[id] = slots.count
            slots.append(entry)
            slotIDs.append(id)
        }
    }

    mutating func remove(_ id: String) -> Bool {
        guard let index = position.removeValue(forKey: id) else { return false }
        let last = slots.count - 1
        if index != last {
            slots.swapAt(index, last)
            slotIDs.swapAt(index, last)
            position[slotIDs[index]] = index
        }
        slots.removeLast()
        slotIDs.removeLast()
        return true
    }

    /// Changes one timer's machine; nil when there is no such timer.
    mutating func update<R>(_ id: String, _ change: (inout TimerMachine) -> R) -> R? {
        guard let index = position[id] else { return nil }
        return change(&slots[index].machine)
    }

    /// Moves every timer's anchors by a wall-clock step (their remaining time is unchanged).
    mutating func shiftAnchors(by delta: Millis) {
        for index in slots.indices { slots[index].machine.shiftAnchors(by: delta) }
    }

    /// The timer's one deadline, from the core's `nextDeadline`.
    ///
    /// Asked from the instant the machine was last advanced to, not from now: a transition
    /// that fell due since then (while the node was starting, or the loop was busy) is then due
    /// at once, instead of being skipped and its events never emitted.
    func nextDeadline(of id: String, now: Millis) -> Millis? {
        read(id) { $0.machine.nextDeadline(after: min(now, $0.machine.advancedToMs)) } ?? nil
    }

    /// The parts of a state snapshot that only a change moves (a transition or command
    /// moves the revision; a heart-rate reading the hr; a clock jump `ends_at_ms`). A
    /// per-second tick moves none of them, so its state is not republished: displays count
    /// locally from `ends_at_ms`.
    struct StateKey: Equatable {
        var revision: Int
        var endsAtMs: Millis?
        var startAtMs: Millis?
        var hr: Int?
        var hrZone: Int?

        init(_ snap: TimerSnapshot) {
            revision = snap.revision
            endsAtMs = snap.endsAtMs
            startAtMs = snap.startAtMs
            hr = snap.hr
            hrZone = snap.hrZone
        }
    }

    // MARK: Retained topics

    /// Whether the `state` showing `snap` must be published (it changed, or `force`); remembers it.
    mutating func stateNeedsPublish(_ id: String, _ snap: TimerSnapshot, force: Bool) -> Bool {
        guard let index = position[id] else { return false }
        let key = StateKey(snap)
        if !force, slots[index].lastState == key { return false }
        slots[index].lastState = key
        return true
    }

    /// Whether `value` must be published on the plain topic (changed, or `force`); remembers it.
    mutating func plainNeedsPublish(_ id: String, _ leaf: PlainLeaf, value: String, force: Bool) -> Bool {
        guard let index = position[id] else { return false }
        if !force, slots[index].lastPlain[leaf] == value { return false }
        slots[index].lastPlain[leaf] = value
        return true
    }

    /// The last values of one timer's plain topics, kept small: 10,000 timers keep six each.
    /// Their values are short strings, which Swift stores inline: no allocation per timer. (An
    /// array allocated at a timer's first publish, amid a connect's burst of messages, pinned
    /// pages of that burst for good.)
    struct PlainSlots {
        private var remaining, display, phase, round, rounds, hr: String?

        subscript(leaf: PlainLeaf) -> String? {
            get {
                switch leaf {
                case .remaining: remaining
                case .display: display
                case .phase: phase
                case .round: round
                case .rounds: rounds
                case .hr: hr
                }
            }
            set {
                switch leaf {
                case .remaining: remaining = newValue
                case .display: display = newValue
                case .phase: phase = newValue
                case .round: round = newValue
                case .rounds: rounds = newValue
                case .hr: hr = newValue
                }
            }
        }
    }

    // MARK: Persistence

    /// The records to write for `changed` (and every timer whose last write failed): those
    /// whose revision moved, those in `force`. Counts them as written; `writeFailed` undoes that.
    mutating func records(changed: [String], force: Set<String>, now: Millis) -> [TimerRecord] {
        var records: [TimerRecord] = []
        let retry = unwritten.filter { !changed.contains($0) }.sorted()
        for id in retry.isEmpty ? changed : changed + retry {
            // In place: a per-second tick lists its timer here, unchanged, 1,000s of times a second.
            guard let index = position[id] else { continue }
            let revision = slots[index].machine.revision
            if revision != slots[index].persistedRevision || (!force.isEmpty && force.contains(id))
                || (!unwritten.isEmpty && unwritten.contains(id)) {
                records.append(Self.record(for: slots[index], now: now))
                slots[index].persistedRevision = revision
            }
        }
        return records
    }

    /// The write of these timers succeeded.
    mutating func written(_ ids: [String]) {
        unwritten.subtract(ids)
    }

    /// The write of these timers failed: they are written with the next write.
    mutating func writeFailed(_ ids: [String]) {
        unwritten.formUnion(ids)
    }

    private static func record(for entry: Entry, now: Millis) -> TimerRecord {
        TimerRecord(id: entry.machine.id, machine: entry.machine.persistedBytes, revision: entry.machine.revision,
                    restorePolicy: entry.restore.rawValue, updatedAtMs: now)
    }
}

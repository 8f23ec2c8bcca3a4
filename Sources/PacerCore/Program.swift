/// The kind of a program segment; each maps to the phase of the same name.
public enum SegmentKind: String, Sendable, CaseIterable {
    case prepare, work, rest, setRest = "set_rest", cooldown, countdown, session

    /// The phase shown while a segment of this kind runs.
    public var phase: Phase {
        switch self {
        case .prepare: .prepare
        case .work: .work
        case .rest: .rest
        case .setRest: .setRest
        case .cooldown: .cooldown
        case .countdown: .countdown
        case .session: .session
        }
    }

    /// Shortest allowed duration: work, countdown and session segments last at least 1 s;
    /// the others may be 0 s (and are then dropped from the program).
    public var minimumMs: Millis {
        switch self {
        case .work, .countdown, .session: 1000
        case .prepare, .rest, .setRest, .cooldown: 0
        }
    }

    /// Whether a `halfway` event is raised in segments of this kind (work and countdown).
    public var hasHalfway: Bool {
        switch self {
        case .work, .countdown: true
        case .prepare, .rest, .setRest, .cooldown, .session: false
        }
    }
}

/// One step of a program.
public struct Segment: Sendable, Equatable {
    public var kind: SegmentKind
    /// Duration in ms; nil = open-ended (runs until skipped or finished).
    public var durationMs: Millis?
    /// Exercise or station name.
    public var label: String?
    /// 1-based round.
    public var round: Int
    /// 1-based set.
    public var set: Int
    /// A rest that ends on recovery (`{"until_hr": {...}}` in place of its duration): then
    /// `durationMs` is the rule's `maxMs`, by which the segment is timed until recovery is known.
    public var untilHR: RecoveryRule?

    /// A segment; with `untilHR`, its duration is the rule's max (`durationMs` is not used).
    public init(kind: SegmentKind, durationMs: Millis?, label: String? = nil, round: Int = 1, set: Int = 1, untilHR: RecoveryRule? = nil) {
        self.kind = kind
        self.durationMs = untilHR?.maxMs ?? durationMs
        self.label = label
        self.round = round
        self.set = set
        self.untilHR = untilHR
    }

    public var isOpenEnded: Bool { durationMs == nil }
}

/// A compiled timer: the ordered segments plus derived indexes (prefix sums of the
/// durations, positions of open-ended segments, next labels) so that any instant can be
/// located with a binary search.
public struct Program: Sendable, Equatable {
    /// The segments, in order. Setting them rebuilds the indexes.
    public var segments: [Segment] { didSet { rebuildIndexes() } }
    /// Number of rounds (the largest round of any segment).
    public var rounds: Int
    /// Number of sets (the largest set of any segment).
    public var sets: Int
    /// A stopwatch: the display counts up, and the end of the last segment (the target)
    /// leads into `overtime` instead of completing the timer.
    public var countsUp: Bool
    /// `next_label` shown during the last segment (a rest timer's `next`).
    public var finalNextLabel: String? { didSet { rebuildIndexes() } }

    /// prefixMs[i] = sum of the durations of segments 0..<i (open-ended counted as 0).
    public private(set) var prefixMs: [Millis] = [0]
    /// Whether any segment is a rest that ends on recovery (`untilHR`): the node judges only
    /// such timers' rests.
    public private(set) var hasRecoveryRests = false
    /// Indices of open-ended segments, ascending.
    private(set) var openIndices: [Int] = []
    /// nextLabels[i] = label of the first labelled segment after i (else finalNextLabel).
    private(set) var nextLabels: [String?] = []

    public init(segments: [Segment], rounds: Int? = nil, sets: Int? = nil, countsUp: Bool = false, finalNextLabel: String? = nil) {
        self.segments = segments
        self.rounds = rounds ?? max(1, segments.map(\.round).max() ?? 1)
        self.sets = sets ?? max(1, segments.map(\.set).max() ?? 1)
        self.countsUp = countsUp
        self.finalNextLabel = finalNextLabel
        rebuildIndexes()
    }

    private mutating func rebuildIndexes() {
        hasRecoveryRests = segments.contains { $0.untilHR != nil }
        var prefix: [Millis] = [0]
        prefix.reserveCapacity(segments.count + 1)
        var open: [Int] = []
        for (index, segment) in segments.enumerated() {
            if let duration = segment.durationMs {
                prefix.append(prefix[index] + duration)
            } else {
                prefix.append(prefix[index])
                open.append(index)
            }
        }
        var labels = [String?](repeating: nil, count: segments.count)
        var upcoming = finalNextLabel
        for index in segments.indices.reversed() {
            labels[index] = upcoming
            if let label = segments[index].label { upcoming = label }
        }
        prefixMs = prefix
        openIndices = open
        nextLabels = labels
    }

    /// Number of segments.
    public var count: Int { segments.count }

    /// Total duration, or nil when any segment is open-ended.
    public var totalMs: Millis? { openIndices.isEmpty ? prefixMs[segments.count] : nil }

    /// Whether any segment is open-ended.
    public var isOpenEnded: Bool { !openIndices.isEmpty }

    /// Sum of the durations of the segments after `index`; nil if any of them is open-ended.
    public func remainingAfter(_ index: Int) -> Millis? {
        if let open = firstOpenIndex(after: index), open < segments.count { return nil }
        return prefixMs[segments.count] - prefixMs[index + 1]
    }

    /// Label of the next labelled segment after `index` (or `finalNextLabel`).
    public func nextLabel(after index: Int) -> String? {
        nextLabels.indices.contains(index) ? nextLabels[index] : nil
    }

    /// The first open-ended segment with an index greater than `index` (binary search).
    public func firstOpenIndex(after index: Int) -> Int? {
        var low = 0
        var high = openIndices.count
        while low < high {
            let mid = (low + high) / 2
            if openIndices[mid] <= index { low = mid + 1 } else { high = mid }
        }
        return low < openIndices.count ? openIndices[low] : nil
    }

    /// The largest j in `range` with prefixMs[j] <= value (binary search; prefixMs is
    /// non-decreasing). Returns range.lowerBound when none qualifies.
    func lastIndex(prefixAtMost value: Millis, in range: ClosedRange<Int>) -> Int {
        var low = range.lowerBound
        var high = range.upperBound
        if prefixMs[low] > value { return low }
        while low < high {
            let mid = (low + high + 1) / 2
            if prefixMs[mid] <= value { low = mid } else { high = mid - 1 }
        }
        return low
    }
}

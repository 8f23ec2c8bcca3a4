import PacerCore
import PacerProtocol

/// A class's heart rate through one run of a timer with `class_hr`: per athlete and
/// per segment the average and peak bpm, the time in each zone and, for rests, the recovery;
/// and a downsampled series per athlete for the chart.
///
/// A pure value held in memory while the run goes (the machine feeds it every athlete reading
/// with the timer's segment at that instant). Nothing is written until the run ends: then
/// `summary` is written once, as one event. A crash loses the samples, never a command.
///
/// The rules (docs/API.md, "Class summary"):
/// - a reading counts only while the timer runs (not while paused or scheduled);
/// - its time is the gap since the athlete's previous reading in the same segment (or since
///   the segment's start for its first one), at most `staleAfterMs`: the zone of a reading
///   holds for that time (`zone_ms`, index 0 below zone 1 or without a max HR);
/// - `avg_bpm` is the mean of the readings, to 0.1; `peak_bpm` the highest;
/// - a rest's (`rest`, `set_rest`) `recovery_bpm` is its first reading minus its last (positive:
///   the heart rate fell), with at least two readings;
/// - a rest's `recovery_ms` is the time from the rest's start (running time: a pause is not
///   counted) to the athlete's first reading in it below `recovery_target_bpm` (RecoveryTarget,
///   `heart_rate.recovery`), or null when no reading in the rest got below it; both are left out
///   for an athlete without a target (a % of max HR and no max HR);
/// - `effort_points` are the athlete's whole points for the run: time in each zone × the zone's
///   points per minute (EffortPoints, `heart_rate.effort_points`), rounded down once;
/// - at most `ProtocolLimits.maxClassSegments` segments are broken down (readings in later ones
///   count in the totals and the series), at most `ProtocolLimits.maxAthletes` athletes, and the
///   series has at most `ProtocolLimits.maxClassSeriesPoints` points (buckets that double in width).
struct ClassRecorder: Equatable {
    /// Where a timer was when a reading came (from its snapshot).
    struct Segment: Equatable {
        var index: Int
        var phase: Phase
        var label: String?
        var round: Int
        var set: Int
        var startMs: Millis
        var endMs: Millis?
    }

    /// Running figures of readings.
    struct Figures: Equatable {
        var samples = 0
        var sum = 0
        var peak = 0
        var first = 0
        var last = 0
        /// Time per zone, index 0 below zone 1 (or no max HR), 1…5 the zones.
        var zoneMs = [Millis](repeating: 0, count: 6)

        mutating func add(_ bpm: Int, zone: Int?, ms: Millis) {
            if samples == 0 { first = bpm }
            samples += 1
            sum += bpm
            peak = max(peak, bpm)
            last = bpm
            zoneMs[zone ?? 0] += ms
        }

        var average: Double { samples == 0 ? 0 : (Double(sum) * 10 / Double(samples)).rounded() / 10 }
    }

    struct Athlete: Equatable {
        var total = Figures()
        /// By position in `segments`.
        var bySegment: [Int: Figures] = [:]
        var lastSampleMs: Millis?
        var lastSegment: Int?
        /// Per bucket of the series: sum and count of readings.
        var buckets: [(sum: Int, count: Int)] = []
        var maxHR: Int?
        /// Per rest (by position in `segments`): the recovery target at its first reading, and
        /// the running time into the rest of the first reading below it (nil: not yet).
        var recovery: [Int: (target: Int, reachedMs: Millis?)] = [:]

        static func == (a: Athlete, b: Athlete) -> Bool {
            a.total == b.total && a.bySegment == b.bySegment && a.lastSampleMs == b.lastSampleMs
                && a.buckets.map(\.sum) == b.buckets.map(\.sum) && a.buckets.map(\.count) == b.buckets.map(\.count)
                && a.recovery.mapValues(\.target) == b.recovery.mapValues(\.target)
                && a.recovery.mapValues(\.reachedMs) == b.recovery.mapValues(\.reachedMs)
        }
    }

    let timer: String
    private(set) var startedAtMs: Millis
    /// Recording began after the run's start (the node restarted during the run).
    let partial: Bool
    let staleAfterMs: Millis
    private(set) var segments: [Segment] = []
    private(set) var athletes: [String: Athlete] = [:]
    /// The series' bucket width (starts at 1 s, doubles when the run outgrows the points).
    private(set) var bucketMs: Millis = 1_000
    /// When a rest counts as recovered (`heart_rate.recovery`).
    let recoveryTarget: RecoveryTarget
    /// Points per minute by zone (`heart_rate.effort_points`).
    let effortPoints: EffortPoints

    init(timer: String, startedAtMs: Millis, partial: Bool, staleAfterMs: Millis,
         recoveryTarget: RecoveryTarget = .standard, effortPoints: EffortPoints = .standard) {
        self.timer = timer
        self.startedAtMs = startedAtMs
        self.partial = partial
        self.staleAfterMs = staleAfterMs
        self.recoveryTarget = recoveryTarget
        self.effortPoints = effortPoints
    }

    /// A recording with the node's heart-rate settings: its staleness window, recovery target and
    /// effort points (`heart_rate.stale_after`, `recovery`, `effort_points`).
    init(timer: String, startedAtMs: Millis, partial: Bool, heartRate: HeartRateSettings) {
        self.init(timer: timer, startedAtMs: startedAtMs, partial: partial, staleAfterMs: heartRate.staleAfterMs,
                  recoveryTarget: heartRate.recovery, effortPoints: heartRate.effortPoints)
    }

    /// The athlete's whole effort points in this run so far (for their tile); nil before their
    /// first reading in it.
    func livePoints(of athlete: String) -> Int? {
        athletes[athlete].map { effortPoints.points(zoneMs: $0.total.zoneMs) }
    }

    /// The athlete's live points in the run of `runs` that started last (several `class_hr`
    /// timers may record at once; a tile shows one figure), nil when none records the athlete.
    static func livePoints(of athlete: String, in runs: some Sequence<ClassRecorder>) -> Int? {
        runs.filter { $0.athletes[athlete] != nil }.max { ($0.startedAtMs, $0.timer) < ($1.startedAtMs, $1.timer) }?.livePoints(of: athlete)
    }

    var sampleCount: Int { athletes.values.reduce(0) { $0 + $1.total.samples } }

    /// The timer entered `segment` (a transition, or a reading in a segment not seen yet): it is
    /// listed even when no reading comes in it, so the chart's bands and the table follow the
    /// timer, not the straps. Returns its position in `segments` (nil beyond the limit).
    @discardableResult
    mutating func enter(_ segment: Segment) -> Int? {
        // The same index is the same segment (a pause and resume moves its start instant).
        if let last = segments.indices.last, segments[last].index == segment.index { return last }
        guard segments.count < ProtocolLimits.maxClassSegments else { return nil }
        if let last = segments.indices.last, segments[last].endMs == nil { segments[last].endMs = max(segment.startMs, segments[last].startMs) }
        segments.append(segment)
        return segments.count - 1
    }

    /// One reading of `athlete` at `atMs`, while the timer is in `segment`.
    mutating func record(_ athlete: String, bpm: Int, atMs: Millis, segment: Segment, maxHR: Int?) {
        guard atMs >= startedAtMs else { return }
        if athletes[athlete] == nil && athletes.count >= ProtocolLimits.maxAthletes { return }
        let position = enter(segment)
        var a = athletes[athlete] ?? Athlete()
        a.maxHR = maxHR
        let zone = HeartRateZones.zone(bpm: bpm, maxHR: maxHR)
        // The reading's time: since the previous one in this segment, else since the segment began.
        let segmentStart = max(segment.startMs, startedAtMs)
        let from = (a.lastSegment == segment.index ? a.lastSampleMs : nil) ?? segmentStart
        let ms = min(max(atMs - from, 0), staleAfterMs)
        a.total.add(bpm, zone: zone, ms: ms)
        if let position { a.bySegment[position, default: Figures()].add(bpm, zone: zone, ms: ms) }
        if let position, Self.isRest(segment.phase) {
            if a.recovery[position] == nil, let target = recoveryTarget.target(maxHR: maxHR) { a.recovery[position] = (target, nil) }
            if let r = a.recovery[position], r.reachedMs == nil, bpm < r.target {
                a.recovery[position]!.reachedMs = max(atMs - segment.startMs, 0)
            }
        }
        a.lastSampleMs = atMs
        a.lastSegment = segment.index
        athletes[athlete] = a
        addToSeries(athlete, bpm: bpm, atMs: atMs)
    }

    private mutating func addToSeries(_ athlete: String, bpm: Int, atMs: Millis) {
        var index = Int((atMs - startedAtMs) / bucketMs)
        while index >= ProtocolLimits.maxClassSeriesPoints {
            // Twice as wide: pairs of buckets become one, for every athlete.
            bucketMs *= 2
            for id in athletes.keys {
                let old = athletes[id]!.buckets
                athletes[id]!.buckets = stride(from: 0, to: old.count, by: 2).map { i in
                    i + 1 < old.count ? (old[i].sum + old[i + 1].sum, old[i].count + old[i + 1].count) : old[i]
                }
            }
            index = Int((atMs - startedAtMs) / bucketMs)
        }
        var buckets = athletes[athlete]!.buckets
        while buckets.count <= index { buckets.append((0, 0)) }
        buckets[index].sum += bpm
        buckets[index].count += 1
        athletes[athlete]!.buckets = buckets
    }

    /// Moves every instant by `delta` (a wall-clock step).
    mutating func shiftTimes(by delta: Millis) {
        startedAtMs = startedAtMs.saturatingAdd(delta)
        for i in segments.indices {
            segments[i].startMs = segments[i].startMs.saturatingAdd(delta)
            segments[i].endMs = segments[i].endMs.map { $0.saturatingAdd(delta) }
        }
        for id in athletes.keys { athletes[id]!.lastSampleMs = athletes[id]!.lastSampleMs.map { $0.saturatingAdd(delta) } }
    }

    static func isRest(_ phase: Phase) -> Bool { phase == .rest || phase == .setRest }

    /// The summary at the run's end (`ended`: finished, cancelled, reset, restarted).
    /// - Parameter profile: each athlete's name and colour, as they are now.
    func summary(endedAtMs: Millis, ended: String, revision: Int, profile: (String) -> AthleteProfile) -> JSONValue {
        var segs = segments
        if let last = segs.indices.last, segs[last].endMs == nil { segs[last].endMs = max(endedAtMs, segs[last].startMs) }
        let segmentsJSON: [JSONValue] = segs.map { s in
            .object(["index": .int(s.index), "phase": .string(s.phase.rawValue), "label": .optional(s.label), "round": .int(s.round),
                     "set": .int(s.set), "start_ms": .int(s.startMs), "end_ms": .optional(s.endMs)])
        }
        let athletesJSON: [JSONValue] = athletes.keys.sorted().map { id in
            let a = athletes[id]!
            let p = profile(id)
            let perSegment: [JSONValue] = a.bySegment.keys.sorted().map { position in
                let f = a.bySegment[position]!
                var o: [String: JSONValue] = ["segment": .int(position), "samples": .int(f.samples), "avg_bpm": .number(f.average),
                                              "peak_bpm": .int(f.peak), "zone_ms": .array(f.zoneMs.map { .int($0) })]
                if Self.isRest(segs[position].phase), f.samples >= 2 { o["recovery_bpm"] = .int(f.first - f.last) }
                if let r = a.recovery[position] {
                    o["recovery_target_bpm"] = .int(r.target)
                    o["recovery_ms"] = .optional(r.reachedMs)
                }
                return .object(o)
            }
            let series: [JSONValue] = a.buckets.map { $0.count == 0 ? .null : .number((Double($0.sum) * 10 / Double($0.count)).rounded() / 10) }
            return .object([
                "id": .string(id), "name": .string(p.name ?? id), "colour": .optional(p.colour), "max_hr": .optional(a.maxHR),
                "leaderboard": .bool(p.leaderboard ?? true), "effort_points": .int(effortPoints.points(zoneMs: a.total.zoneMs)),
                "samples": .int(a.total.samples), "avg_bpm": .number(a.total.average), "peak_bpm": .int(a.total.peak),
                "zone_ms": .array(a.total.zoneMs.map { .int($0) }), "segments": .array(perSegment), "series": .array(series),
            ])
        }
        var summary = TimerEvent.envelope(type: Self.eventType, timer: timer, revision: revision, dueMs: endedAtMs, atMs: endedAtMs)
        summary.merge([
            "started_at_ms": .int(startedAtMs), "ended": .string(ended), "partial": .bool(partial),
            "zones": .array((0...5).map { .string(HeartRateZones.name($0 == 0 ? nil : $0)) }),
            "series_start_ms": .int(startedAtMs), "series_step_ms": .int(bucketMs),
            "recovery": recoveryTarget.json, "effort_points_per_minute": effortPoints.json,
            "segments": .array(segmentsJSON), "athletes": .array(athletesJSON),
        ]) { envelope, _ in envelope }
        return .object(summary)
    }

    /// The stored event's type (`history` returns it beside the timer's events).
    static let eventType = TimerEvent.classSummaryType
}

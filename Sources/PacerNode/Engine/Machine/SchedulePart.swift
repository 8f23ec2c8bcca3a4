import Logging
import PacerCore
import PacerProtocol
import PacerSchedule

/// The gym's timetable (`schedules:`, docs/schedules.md): PacerSchedule's planner decides which
/// class starts when, exactly once; this part hands it the instant at a `.schedule` deadline of
/// the machine's one queue (no polling) and which target timers are busy, writes each decision
/// (the schedules' records, one document in `meta`) in the same write as the class's start, and
/// publishes each target timer's next class, retained, on `<base>/timers/<id>/next`.
struct SchedulePart {
    private(set) var planner: SchedulePlanner
    /// Records decided by the input being handled: written with it, then committed.
    private var pending: [ScheduleRecord] = []
    /// The next classes changed: publish them after the write.
    private var nextChanged = false
    let topics: Topics
    let logger: Logger

    /// The `meta` key of the schedules' records.
    static let metaKey = "schedule_records"

    init(configuration: NodeConfiguration, topics: Topics, logger: Logger) {
        planner = SchedulePlanner(schedules: configuration.schedules, records: [], defaultZone: configuration.scheduleZone)
        self.topics = topics
        self.logger = logger
    }

    /// Whether the node has a timetable.
    var isEmpty: Bool { planner.schedules.isEmpty }

    /// The timers schedules start.
    var targets: Set<String> { Set(planner.schedules.values.map(\.timer)) }

    /// A restart: the records written before (a class decided then is never decided again).
    mutating func load(_ document: String?, now: Millis, on board: inout Board) {
        guard !isEmpty else { return }
        let records = document.flatMap { JSONCoding.decode(Array($0.utf8))?["records"]?.array }?.compactMap(ScheduleRecord.init(json:)) ?? []
        planner = SchedulePlanner(schedules: Array(planner.schedules.values), records: records, defaultZone: planner.defaultZone)
        board.deadlines.set(.schedule, at: now)  // what fell due while the node was down is decided first
    }

    /// Plans at `now`: the decisions due (their records pending until the write), and the next
    /// `.schedule` deadline.
    mutating func plan(now: Millis, on board: inout Board) -> [ScheduleDecision] {
        guard !isEmpty else { return [] }
        let busy = Set(targets.filter { id in
            board.timers.read(id) { [.running, .paused, .scheduled, .expired].contains($0.machine.status) } ?? false
        })
        let plan = planner.plan(now: now, busyTimers: busy)
        pending += plan.records
        board.deadlines.set(.schedule, at: plan.nextDeadline)
        for decision in plan.decisions {
            let at = "\(decision.occurrence.local) \(decision.record.zone)"
            switch decision.action {
            case .start(let lateMs):
                logger.info("a scheduled class starts", metadata: ["schedule": "\(decision.occurrence.schedule)", "timer": "\(decision.timer)",
                                                                  "planned": "\(at)", "late_ms": "\(lateMs)", "also_skipped": "\(decision.alsoSkipped)"])
            case .skip(let reason):
                logger.notice("a scheduled class is skipped", metadata: ["schedule": "\(decision.occurrence.schedule)", "timer": "\(decision.timer)",
                                                                         "planned": "\(at)", "reason": "\(reason.word)", "also_skipped": "\(decision.alsoSkipped)"])
            }
        }
        if !plan.records.isEmpty { nextChanged = true }
        return plan.decisions
    }

    /// A target timer's run ended at `at` (an `after` loop plans its next run from it); the
    /// timetable is planned again at once (a class that waited for the timer may start).
    mutating func runEnded(_ timer: String, at: Millis, now: Millis, on board: inout Board) {
        guard !isEmpty, targets.contains(timer) else { return }
        pending += planner.runEnded(timer: timer, at: at)
        board.deadlines.set(.schedule, at: now)
        nextChanged = true
    }

    /// The write of an input that decided something: the records' document for `meta`.
    var changedDocument: String? {
        guard !pending.isEmpty else { return nil }
        var records = planner.records
        for record in pending { records[record.schedule] = record }
        let list = records.keys.sorted().compactMap { records[$0]?.json }
        return String(decoding: JSONValue.object(["records": .array(list)]).jsonBytes, as: UTF8.self)
    }

    /// After the write: the decisions stand (committed), or a failed write leaves them to be
    /// decided again by the next plan; then the next classes are published when they changed.
    mutating func written(ok: Bool, linkUp: Bool, now: Millis, on board: inout Board) {
        if ok, !pending.isEmpty { planner.commit(pending) }
        if !ok, !pending.isEmpty { board.deadlines.set(.schedule, at: now) }
        pending = []
        guard nextChanged, linkUp else { return }
        nextChanged = false
        publishNext(now: now, into: &board.out)
    }

    /// Every target timer's next class on its retained `next` topic (empty: none ahead).
    mutating func publishNext(now: Millis, into out: inout EffectSink) {
        for timer in targets.sorted() {
            let next = planner.nextClass(timer: timer, now: now)
            out.publish(to: topics.timer(timer).next, next.map { $0.json.jsonBytes } ?? [], retain: true)
        }
    }
}

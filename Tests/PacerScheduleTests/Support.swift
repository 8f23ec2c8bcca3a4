import PacerCore
@testable import PacerSchedule

/// A schedule from its JSON, which must be valid.
func schedule(_ json: JSONValue) -> Schedule {
    switch Schedule.parse(json) {
    case .success(let value): return value
    case .failure(let error): fatalError("\(error)")
    }
}

/// The node's side of the planner in a test: plans, "writes" the records (as JSON bytes, read
/// back on a rebuild, like the store) and commits them, and keeps what it started.
struct PlannerHarness {
    var schedules: [Schedule]
    var planner: SchedulePlanner
    /// The written records, as stored bytes.
    var store: [String: [UInt8]] = [:]
    var zone: ZoneRules

    init(_ schedules: [Schedule], zone: ZoneRules = london) {
        self.schedules = schedules
        self.zone = zone
        planner = SchedulePlanner(schedules: schedules, records: [], defaultZone: zone)
    }

    /// Plans at `now`, writes and commits the records; the decisions.
    mutating func step(_ now: Millis, busy: Set<String> = []) -> SchedulePlan {
        let plan = planner.plan(now: now, busyTimers: busy)
        write(plan.records)
        return plan
    }

    mutating func write(_ records: [ScheduleRecord]) {
        for record in records { store[record.schedule] = record.json.jsonBytes }
        planner.commit(records)
    }

    /// A restart: the planner rebuilt from the schedules and the stored bytes alone.
    mutating func restart() {
        let records = store.values.compactMap { bytes in (try? JSONValue.parse(bytes)).flatMap(ScheduleRecord.init(json:)) }
        planner = SchedulePlanner(schedules: schedules, records: records, defaultZone: zone)
    }
}

extension ScheduleDecision {
    var lateMs: Millis? { if case .start(let late) = action { return late } else { return nil } }
    var skipReason: SkipReason? { if case .skip(let reason) = action { return reason } else { return nil } }
}

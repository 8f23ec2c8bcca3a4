import Logging
import PacerCore
import PacerProtocol
import PacerSchedule

/// The gym's timetable (`schedules:`, docs/schedules.md): PacerSchedule's planner decides which
/// class starts when, exactly once; this part hands it the instant at a `.schedule` deadline of
/// the machine's one queue (no polling) and which target timers are busy, writes each decision
/// (the schedules' records, one document in `meta`) in the same write as the class's start, and
/// publishes each target timer's next class, retained, on `<base>/timers/<id>/next`, and the class
/// its run under way is (with how late it started) on `<base>/timers/<id>/current_class`.
struct SchedulePart {
    private(set) var planner: SchedulePlanner
    /// The configuration's schedules (changed in its file only).
    let configured: [Schedule]
    /// The schedules saved by command (`save_schedule`), each as read (canonical), by id.
    private(set) var saved = Staged([String: JSONValue]())
    /// Records decided by the input being handled: written with it, then committed.
    private var pending: [ScheduleRecord] = []
    /// The next classes changed: publish them after the write.
    private var nextChanged = false
    /// The timers the last `publishNext` showed a `next` on: one that is no longer a target (its
    /// schedule deleted, or saved on another timer) gets an empty one, where it would keep
    /// showing a class that never comes.
    private var nextShownOn: Set<String> = []
    /// The classes whose runs go on, by timer (`current_class`): kept in the records' document
    /// (`running`), so a restart during a class shows it again.
    private(set) var started: [String: StartedClass] = [:]
    /// Classes started by the input being handled: theirs once the write is done.
    private var startedPending: [StartedClass] = []
    /// Timers whose `current_class` changed: published after the write.
    private var currentChanged: Set<String> = []
    /// The started classes' `started_at_ms` moved with a clock step: written with the next write.
    private var startedMoved = false
    let topics: Topics
    let logger: Logger

    /// The `meta` key of the schedules' records, and of the schedules saved by command.
    static let metaKey = "schedule_records"
    static let savedKey = "schedules"
    /// The member of the records' document that holds the classes whose runs go on.
    static let runningMember = "running"

    init(configuration: NodeConfiguration, topics: Topics, logger: Logger) {
        configured = configuration.schedules
        planner = SchedulePlanner(schedules: configuration.schedules, records: [], defaultZone: configuration.scheduleZone)
        self.topics = topics
        self.logger = logger
    }

    /// Whether the node has a timetable.
    var isEmpty: Bool { planner.schedules.isEmpty }

    /// The timers schedules start.
    var targets: Set<String> { Set(planner.schedules.values.map(\.timer)) }

    /// A restart: the schedules saved by command and the records written before (a class
    /// decided then is never decided again). A saved schedule that no longer reads is left out,
    /// said in the log.
    mutating func load(_ document: String?, saved savedDocument: String?, presets: [String: JSONValue], now: Millis, on board: inout Board) {
        var kept: [String: JSONValue] = [:]
        for entry in savedDocument.flatMap({ JSONCoding.decode(Array($0.utf8))?[.schedules]?.array }) ?? [] {
            switch Schedule.parse(entry, key: "schedule", presets: presets) {
            case .success(let schedule) where !configured.contains(where: { $0.id == schedule.id }): kept[schedule.id] = schedule.json
            case .success(let schedule):
                logger.notice("a saved schedule has the id of one in the configuration, which wins", metadata: ["schedule": "\(schedule.id)"])
            case .failure(let error):
                logger.error("a saved schedule could not be read and is left out", metadata: ["error": "\(error)"])
            }
        }
        saved.load(kept)
        let written = document.flatMap { JSONCoding.decode(Array($0.utf8)) }
        let records = written?["records"]?.array?.compactMap(ScheduleRecord.init(json:)) ?? []
        rebuild(records: records, presets: presets)
        // A class whose run is still the one it started (the timers are restored by now) is shown
        // again; one whose run ended while the node was down, or was started again by hand, is not.
        started = [:]
        for entry in written?[Self.runningMember]?.array ?? [] {
            guard let id = entry[ScheduleField.schedule.rawValue]?.string, let schedule = planner.schedules[id],
                  let found = StartedClass(json: entry, schedule: schedule), Self.runs(found, on: board, now: now) else { continue }
            started[found.timer] = found
        }
        if !isEmpty { board.deadlines.set(.schedule, at: now) }  // what fell due while the node was down is decided first
    }

    /// Whether `found`'s run goes on: its timer runs, is paused or expired, in the run that started then.
    private static func runs(_ found: StartedClass, on board: Board, now: Millis) -> Bool {
        board.timers.read(found.timer) { entry in
            [.running, .paused, .expired].contains(entry.machine.status) && entry.machine.snapshot(at: now).startedAtMs == found.startedAtMs
        } ?? false
    }

    /// The planner again from the configuration's schedules, the saved ones and `records`.
    private mutating func rebuild(records: [ScheduleRecord], presets: [String: JSONValue]) {
        let extra = saved.value.keys.sorted().compactMap { try? Schedule.parse(saved.value[$0]!, key: "schedule", presets: presets).get() }
        planner = SchedulePlanner(schedules: configured + extra, records: records, defaultZone: planner.defaultZone)
    }

    // MARK: - Commands

    /// `save_schedule`: checked by PacerSchedule's rules (the message names the member), kept
    /// (replacing one of that id) and planned at once.
    mutating func save(_ json: JSONValue, presets: [String: JSONValue], now: Millis, on board: inout Board) -> Result<CommandResult, ReplyError> {
        let schedule: Schedule
        switch Schedule.parse(json, key: "schedule", presets: presets) {
        case .success(let parsed): schedule = parsed
        case .failure(let error):
            return .failure(.init(.invalidArgument, (error.problems.first?.description ?? "\(error)") + "; nothing changed (docs/schedules.md)"))
        }
        if configured.contains(where: { $0.id == schedule.id }) {
            return .failure(.init(.invalidArgument, "'\(schedule.id)' is a schedule of the node's configuration; change it in its file, or save this one under another id"))
        }
        if saved.value[schedule.id] == nil && planner.schedules.count >= ScheduleLimits.maxSchedules {
            return .failure(.init(.invalidArgument, "the node keeps at most \(ScheduleLimits.maxSchedules) schedules; delete one first"))
        }
        saved.change { $0[schedule.id] = schedule.json }
        planner.save(schedule)
        board.deadlines.set(.schedule, at: now)
        nextChanged = true
        var members: [String: JSONValue] = [:]
        members[.schedule] = .string(schedule.id)
        members[.saved] = .bool(true)
        return .success(CommandResult(members: members))
    }

    /// `delete_schedule`: forgotten; its timer's next class changes.
    mutating func delete(_ id: String, now: Millis, on board: inout Board) -> Result<CommandResult, ReplyError> {
        guard saved.value[id] != nil else {
            if configured.contains(where: { $0.id == id }) {
                return .failure(.init(.invalidArgument, "'\(id)' is a schedule of the node's configuration; remove it from its file"))
            }
            return .failure(unknown(id))
        }
        saved.change { $0[id] = nil }
        _ = planner.remove(id)
        board.deadlines.set(.schedule, at: now)
        nextChanged = true
        var members: [String: JSONValue] = [:]
        members[.schedule] = .string(id)
        members[.deleted] = .bool(true)
        return .success(CommandResult(members: members))
    }

    /// `skip_next`: the schedule's next class is skipped (a decision written like the others).
    mutating func skipNext(_ id: String, now: Millis) -> Result<CommandResult, ReplyError> {
        switch planner.skipNext(schedule: id, now: now) {
        case .success(let decision):
            pending.append(decision.record)
            nextChanged = true
            var members: [String: JSONValue] = [:]
            members[.schedule] = .string(id)
            members[.skipped] = .bool(true)
            members[.startAtMs] = .int(decision.occurrence.instant)
            members[.startAt] = .string(iso8601(ms: decision.occurrence.instant))
            return .success(CommandResult(members: members))
        case .failure(.unknownSchedule): return .failure(unknown(id))
        case .failure(.noNextClass): return .failure(.init(.invalidState, "schedule '\(id)' has no class ahead (it is off, or its classes are over)"))
        case .failure(.loopRunning):
            return .failure(.init(.invalidState, "schedule '\(id)' runs again after each run ends: its next class is planned when the run under way ends"))
        }
    }

    /// `skip_next` on a timer: the next class on it, of whichever schedule (a Home Assistant button).
    mutating func skipNext(onTimer timer: String, now: Millis) -> Result<CommandResult, ReplyError> {
        guard let next = planner.nextClass(timer: timer, now: now) else {
            return .failure(.init(.invalidState, "no class is ahead on timer '\(timer)'"))
        }
        return skipNext(next.occurrence.schedule, now: now)
    }

    /// `list_schedules`: every schedule (`schedules`, each with `source`: configuration or
    /// command) and today's classes in the node's zone (`classes`, with their status).
    mutating func list(now: Millis) -> CommandResult {
        let savedIDs = Set(saved.value.keys)
        var members: [String: JSONValue] = [:]
        members[.schedules] = .array(planner.schedules.keys.sorted().compactMap { id in
            guard case .object(var o)? = planner.schedules[id]?.json else { return nil }
            o["source"] = .string(savedIDs.contains(id) ? "command" : "configuration")
            return .object(o)
        })
        let today = planner.defaultZone.date(now)
        members[.classes] = SchedulePlanner.DayEntry.document(date: today, zone: planner.defaultZone.identifier,
                                                              entries: planner.day(today, now: now))
        return CommandResult(members: members)
    }

    private func unknown(_ id: String) -> ReplyError {
        let known = planner.schedules.keys.sorted()
        return .init(.unknownSchedule, "there is no schedule '\(id)'" + (known.isEmpty ? "" : "; the node has: \(known.prefix(20).joined(separator: ", "))"))
    }

    /// The write of an input that changed the saved schedules: their document for `meta`.
    var changedSavedDocument: String? {
        guard saved.isChanged else { return nil }
        let list = saved.value.keys.sorted().compactMap { saved.value[$0] }
        return String(decoding: JSONValue.object([WireField.schedules.rawValue: .array(list)]).jsonBytes, as: UTF8.self)
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

    /// A class of `decision` started on its timer in a run that started at `startedAtMs`: its
    /// `current_class` once the write is done (a failed write undoes the start, and the class).
    mutating func classStarted(_ decision: ScheduleDecision, startedAtMs: Millis) {
        guard let found = StartedClass(decision, startedAtMs: startedAtMs) else { return }
        startedPending.append(found)
    }

    /// A clock step moved every run's anchors by `delta`: the started classes' runs moved with them.
    mutating func shiftTimes(by delta: Millis) {
        guard !started.isEmpty else { return }
        for (timer, found) in started {
            started[timer]?.startedAtMs = found.startedAtMs.saturatingAdd(delta)
            currentChanged.insert(timer)
        }
        startedMoved = true
    }

    /// A target timer's run ended at `at` (an `after` loop plans its next run from it); the
    /// timetable is planned again at once (a class that waited for the timer may start).
    mutating func runEnded(_ timer: String, at: Millis, now: Millis, on board: inout Board) {
        guard !isEmpty, targets.contains(timer) else { return }
        pending += planner.runEnded(timer: timer, at: at)
        board.deadlines.set(.schedule, at: now)
        nextChanged = true
    }

    /// The restore's write is made. What it decided stands at once (an `after` loop whose run
    /// ended while the node was down, `runEnded` from the restore's `finished`): the first plan,
    /// at the restore's `.schedule` deadline, plans that loop's next class from its end. (Left for
    /// the next input's write, the loop would be planned as still running, with no deadline after.)
    mutating func restoreWritten() {
        guard !pending.isEmpty else { return }
        planner.commit(pending)
        pending = []
    }

    /// The write of an input that decided something: the records' document for `meta`, with
    /// the classes whose runs go on (`running`; a run that ended since is told by its timer at a
    /// restart, so its end needs no write).
    var changedDocument: String? {
        guard !pending.isEmpty || !startedPending.isEmpty || startedMoved else { return nil }
        var records = planner.records
        for record in pending { records[record.schedule] = record }
        let list = records.keys.sorted().compactMap { records[$0]?.json }
        var running = started
        for found in startedPending { running[found.timer] = found }
        var document: [String: JSONValue] = ["records": .array(list)]
        if !running.isEmpty { document[Self.runningMember] = .array(running.keys.sorted().compactMap { running[$0]?.json }) }
        return String(decoding: JSONValue.object(document).jsonBytes, as: UTF8.self)
    }

    /// After the write: the decisions stand (committed), or a failed write leaves them to be
    /// decided again by the next plan; a class's run that ended (`changes`: finished, cancelled,
    /// reset, started again by hand, deleted) is no longer shown; then the next classes and the
    /// changed current ones are published.
    mutating func written(ok: Bool, linkUp: Bool, now: Millis, presets: [String: JSONValue], changes: TimerChanges, on board: inout Board) {
        if ok, !pending.isEmpty { planner.commit(pending) }
        if !ok, !pending.isEmpty { board.deadlines.set(.schedule, at: now) }
        pending = []
        if ok {
            for found in startedPending {
                started[found.timer] = found
                currentChanged.insert(found.timer)
            }
            startedMoved = false
        }
        startedPending = []
        if !started.isEmpty {
            for id in changes.deleted where started[id] != nil {
                started[id] = nil
                currentChanged.insert(id)
            }
            for event in changes.events where [.finished, .cancelled, .reset, .started, .scheduled].contains(event.type) {
                guard let found = started[event.timer], !Self.runs(found, on: board, now: now) else { continue }
                started[event.timer] = nil
                currentChanged.insert(event.timer)
            }
        }
        if linkUp, !currentChanged.isEmpty {
            for timer in currentChanged.sorted() { publishCurrent(timer, into: &board.out) }
            currentChanged = []
        }
        if saved.isChanged {
            if ok { saved.settle() } else {
                saved.undo()
                rebuild(records: Array(planner.records.values), presets: presets)
            }
        }
        guard nextChanged, linkUp else { return }
        nextChanged = false
        publishNext(now: now, into: &board.out)
    }

    /// The class `timer`'s run is, on its retained `current_class` topic (empty: none).
    private func publishCurrent(_ timer: String, into out: inout EffectSink) {
        out.publish(to: topics.timer(timer).currentClass, started[timer].map { $0.json.jsonBytes } ?? [], retain: true)
    }

    /// Every target timer's current class (a connect: what the broker kept may be of a run that
    /// ended while the node was down), and a class's timer that is no longer a target.
    mutating func publishCurrent(into out: inout EffectSink) {
        for timer in targets.union(started.keys).sorted() { publishCurrent(timer, into: &out) }
        currentChanged = []
    }

    /// A `next` on the broker (retained at a connect, or this node's own coming back): one that
    /// shows a class on a timer no schedule starts any more (its schedule removed from the
    /// configuration file while the node was off) is cleared, where it would show a class that
    /// never comes. The retained ones can come before the engine hears of the connection: those
    /// are kept with the timers shown on, and the connect's `publishNext` clears them.
    mutating func nextSeen(_ timer: String, _ message: InboundMessage, linkUp: Bool, into out: inout EffectSink) {
        guard !message.payload.isEmpty, !targets.contains(timer) else { return }
        // Retained ones come once per subscription: those are worth a line in the log.
        logger.log(level: message.retain ? .notice : .debug, "cleared a next class that no schedule plans",
                   metadata: ["timer": "\(printable(timer, limit: 80))"])
        if linkUp {
            out.publish(to: topics.timer(timer).next, [], retain: true)
        } else {
            nextShownOn.insert(timer)
        }
    }

    /// Every target timer's next class on its retained `next` topic (empty: none ahead), and
    /// an empty `next` on each timer the last publish showed one on that is no longer a target.
    mutating func publishNext(now: Millis, into out: inout EffectSink) {
        let targets = targets
        for timer in targets.union(nextShownOn).sorted() {
            let next = targets.contains(timer) ? planner.nextClass(timer: timer, now: now) : nil
            out.publish(to: topics.timer(timer).next, next.map { $0.json.jsonBytes } ?? [], retain: true)
        }
        nextShownOn = targets
    }
}

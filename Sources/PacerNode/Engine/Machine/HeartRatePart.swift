import Logging
import PacerCore
import PacerProtocol
import PacerStore

/// Heart rate as the machine keeps it: the sources timers show (HeartRateMonitor.swift), a
/// class's athletes (AthleteRoster.swift: who is present, their profiles) and the runs of
/// `class_hr` timers being recorded (ClassRecorder.swift).
struct HeartRatePart {
    /// Heart-rate readings of the configured sources and their staleness.
    private(set) var monitor: HeartRateMonitor
    /// A class's athletes (nil without `heart_rate.athletes`).
    private(set) var athletes: AthleteRoster?
    /// The athletes before the input's first profile change (its write may fail), and the
    /// profiles it changed (`set_athlete`, `clear_athlete`): written in `meta`, then published.
    private var athletesBefore: AthleteRoster?
    private(set) var changedProfiles: Set<String> = []
    /// The runs of `class_hr` timers being recorded, by timer.
    private(set) var classRuns: [String: ClassRecorder] = [:]
    /// Running timers whose rest waits for recovery (EngineMachine+Recovery.swift).
    private(set) var waitingRecovery: Set<String> = []
    /// What the `recovery` topic of each waiting timer shows: the tally last decided.
    private var recoveryShown: [String: RecoveryProgress] = [:]
    /// Class summaries written by the current input, published after its write.
    private var pendingSummaries: [(timer: String, payload: [UInt8])] = []
    /// The heart-rate settings a class run records with (staleness, zones, recovery, effort points).
    let settings: HeartRateSettings
    let sourceNames: [String]
    let topics: Topics
    let logger: Logger

    init(configuration: NodeConfiguration, topics: Topics, logger: Logger) {
        monitor = HeartRateMonitor(settings: configuration.heartRate)
        athletes = configuration.heartRate.athletes.map {
            AthleteRoster(settings: $0, staleAfterMs: configuration.heartRate.staleAfterMs, defaultMaxHR: configuration.heartRate.maxHR)
        }
        settings = configuration.heartRate
        sourceNames = configuration.heartRate.sources.map(\.name)
        self.topics = topics
        self.logger = logger
    }

    // MARK: - Sources (a timer's `hr`)

    /// A message that is not a command, a clock request or one of our own topics: a heart-rate
    /// source's or an athlete's reading, or nothing of ours. Returns the timers whose `hr` changed.
    mutating func message(_ message: InboundMessage, now: Millis, linkUp: Bool, on board: inout Board) -> [String] {
        switch monitor.receive(topic: message.topic, payload: message.payload, now: now) {
        case .notASource:
            if athleteMessage(message, now: now, linkUp: linkUp, on: &board) { return [] }
            logger.debug("message on an unexpected topic", metadata: ["topic": "\(printable(message.topic, limit: 200))"])
        case .unreadable(let source, let reason):
            logOnce(source, "a heart-rate reading could not be read; it is ignored", reason)
        case .outOfRange(let source, let bpm):
            logOnce(source, "a heart-rate reading outside 25…250 bpm is ignored", "\(bpm) bpm")
        case .accepted(let source, _, let changed):
            if let stale = monitor.staleAt(source) { board.deadlines.set(.heartRate(source), at: stale) }
            // Republishes the state and, if it changed, the plain `hr` topic (both carry hr).
            if changed { return timers(boundTo: source, in: board.timers) }
        }
        return []
    }

    /// The source's deadline: when it went quiet for the staleness window, its timers show an
    /// empty `hr` (returned: the snapshot no longer has a reading).
    mutating func sourceDeadline(_ source: String, now: Millis, on board: inout Board) -> [String] {
        guard monitor.current(source, now: now) == nil else {
            if let stale = monitor.staleAt(source) { board.deadlines.set(.heartRate(source), at: stale) }
            return []
        }
        logger.info("heart-rate source went stale", metadata: ["source": "\(source)"])
        return timers(boundTo: source, in: board.timers)
    }

    func isSource(_ name: String) -> Bool { monitor.isSource(name) }

    private func timers(boundTo source: String, in timers: TimerTable) -> [String] {
        timers.ids.filter { timers.read($0) { monitor.sourceName(for: $0.machine.spec.hrSource) == source } ?? false }
    }

    /// A timer's snapshot with the node's heart-rate fields filled in.
    func snapshot(of entry: TimerTable.Entry, now: Millis) -> TimerSnapshot {
        var snap = entry.machine.snapshot(at: now)
        if let reading = monitor.current(monitor.sourceName(for: entry.machine.spec.hrSource), now: now) {
            snap.hr = reading.bpm
            snap.hrAgeMs = now - reading.atMs
            snap.hrZone = monitor.zone(for: reading.bpm)
        }
        return snap
    }

    private mutating func logOnce(_ source: String, _ message: Logger.Message, _ detail: String) {
        guard monitor.isFirstProblem(of: source) else { return }
        logger.warning(message, metadata: ["source": "\(source)", "value": "\(detail)"])
    }

    /// A wall-clock step: a reading stays fresh as long as before, and a run's instants move.
    mutating func shiftTimes(by delta: Millis) {
        monitor.shiftTimes(by: delta)
        athletes?.shiftTimes(by: delta)
        for id in classRuns.keys { classRuns[id]!.shiftTimes(by: delta) }
    }

    // MARK: - Recovery

    /// Every reading a recovery rule may look at: each present athlete's (fresh or not), and
    /// each configured source's under its name (a single strap's rest).
    func recoveryReadings(now: Millis) -> RecoveryReadings {
        var readings = RecoveryReadings()
        if let athletes {
            for id in athletes.present.keys.sorted() {
                let reading = athletes.current(id, now: now)
                readings.athletes.append(RecoveryReading(athlete: id, bpm: reading?.bpm, maxHR: athletes.maxHR(id), fresh: reading != nil))
            }
        }
        for name in sourceNames {
            let reading = monitor.current(name, now: now)
            readings.sources.append(RecoveryReading(athlete: name, bpm: reading?.bpm, maxHR: settings.maxHR, fresh: reading != nil))
        }
        return readings
    }

    /// A timer's rest now waits for recovery; false when it already did.
    mutating func startWaiting(_ id: String) -> Bool { waitingRecovery.insert(id).inserted }

    /// A timer's rest no longer waits (it ended, recovered, paused, or the timer is gone): its
    /// `recovery` topic is cleared if it showed a tally (QoS 1, kept by the client while
    /// disconnected).
    mutating func stopWaiting(_ id: String, into out: inout EffectSink) {
        waitingRecovery.remove(id)
        if recoveryShown.removeValue(forKey: id) != nil { out.publish(to: topics.timer(id).recovery, [], retain: true) }
    }

    /// How a waiting timer's rest stands now: published, retained, only when it changed (a
    /// reading that moves no count publishes nothing), and while the link is down only kept
    /// (a connect republishes it).
    mutating func showRecovery(_ id: String, _ progress: RecoveryProgress, linkUp: Bool, into out: inout EffectSink) {
        guard recoveryShown[id] != progress else { return }
        recoveryShown[id] = progress
        if linkUp { out.publish(to: topics.timer(id).recovery, progress.json.jsonBytes, retain: true) }
    }

    /// On every (re)connect: each waiting timer's `recovery` again.
    func republishRecovery(into out: inout EffectSink) {
        for id in recoveryShown.keys.sorted() { out.publish(to: topics.timer(id).recovery, recoveryShown[id]!.json.jsonBytes, retain: true) }
    }

    // MARK: - Athletes' readings

    /// A message on an athlete's topic (`heart_rate.athletes.topic`); false when it is not one.
    private mutating func athleteMessage(_ message: InboundMessage, now: Millis, linkUp: Bool, on board: inout Board) -> Bool {
        guard athletes != nil else { return false }
        switch athletes!.receive(topic: message.topic, payload: message.payload, now: now) {
        case .notAnAthlete:
            return false
        case .invalidID(let level, let reason):
            logAthleteProblemOnce("level:" + level, "a heart-rate topic's level is not an athlete id; its readings are ignored", level, reason)
        case .unreadable(let id, let reason):
            logAthleteProblemOnce(id, "an athlete's heart-rate reading could not be read; it is ignored", id, reason)
        case .outOfRange(let id, let bpm):
            logAthleteProblemOnce(id, "an athlete's heart-rate reading outside 25…250 bpm is ignored", id, "\(bpm) bpm")
        case .full(let id):
            logAthleteProblemOnce("full:" + id, "the class is full; this athlete's readings are ignored", id,
                                  "\(ProtocolLimits.maxAthletes) athletes present (the most a class holds)")
        case .accepted(let id, let bpm, let joined):
            board.deadlines.set(.athlete(id), at: athletes!.deadline(of: id, now: now))
            if joined {
                logger.info("an athlete joined the class", metadata: ["athlete": "\(id)"])
                publishAthleteList(now: now, linkUp: linkUp, into: &board.out)
            }
            // Recorded first: the state carries the run's points with this reading.
            recordClassSample(id, bpm: bpm, now: now, timers: board.timers)
            publishAthleteState(id, now: now, linkUp: linkUp, into: &board.out)
        }
        return true
    }

    /// An athlete's deadline: its reading went stale (its tile goes blank) or it left.
    mutating func athleteDeadline(_ id: String, now: Millis, linkUp: Bool, on board: inout Board) {
        guard athletes != nil else { return }
        switch athletes!.check(id, now: now) {
        case .left:
            logger.info("an athlete left the class", metadata: ["athlete": "\(id)"])
            board.out.publish(to: topics.athleteState(id), [], retain: true)
            publishAthleteList(now: now, linkUp: linkUp, into: &board.out)
        case .wentStale:
            publishAthleteState(id, now: now, linkUp: linkUp, into: &board.out)
            board.deadlines.set(.athlete(id), at: athletes!.deadline(of: id, now: now))
        case .stillFresh:
            board.deadlines.set(.athlete(id), at: athletes!.deadline(of: id, now: now))
        }
    }

    private func publishAthleteState(_ id: String, now: Millis, linkUp: Bool, into out: inout EffectSink) {
        guard linkUp, let athletes else { return }  // republished on connect
        // With the effort points of the class run it is in, if any (a tile shows them live).
        let points = classRuns.isEmpty ? nil : ClassRecorder.livePoints(of: id, in: classRuns.values)
        out.publish(to: topics.athleteState(id), athletes.state(id, now: now, effortPoints: points).jsonBytes, retain: true)
    }

    private func publishAthleteList(now: Millis, linkUp: Bool, into out: inout EffectSink) {
        guard linkUp, let athletes else { return }
        out.publish(to: topics.athletes, athletes.list(now: now).jsonBytes, retain: true)
    }

    /// On every (re)connect: the list and every present athlete's state.
    func republishAthletes(now: Millis, into out: inout EffectSink) {
        guard let athletes else { return }
        publishAthleteList(now: now, linkUp: true, into: &out)
        for id in athletes.present.keys.sorted() { publishAthleteState(id, now: now, linkUp: true, into: &out) }
    }

    private mutating func logAthleteProblemOnce(_ key: String, _ message: Logger.Message, _ athlete: String, _ detail: String) {
        guard athletes?.isFirstProblem(of: key) == true else { return }
        logger.warning(message, metadata: ["athlete": "\(athlete)", "value": "\(detail)"])
    }

    // MARK: - Profiles (set_athlete, clear_athlete)

    mutating func setAthlete(_ profile: AthleteProfile) -> Result<CommandResult, ReplyError> {
        guard let roster = athletes else { return .failure(Self.noAthletes) }
        if !roster.hasStored(profile.id) && roster.storedCount >= ProtocolLimits.maxAthleteProfiles {
            return .failure(.init(.invalidArgument, "the node keeps at most \(ProtocolLimits.maxAthleteProfiles) athlete profiles; clear one first"))
        }
        if athletesBefore == nil { athletesBefore = roster }
        athletes!.set(profile)
        changedProfiles.insert(profile.id)
        return .success(CommandResult(members: Self.profileReply(athletes!.profile(profile.id), .saved)))
    }

    mutating func clearAthlete(_ id: String) -> Result<CommandResult, ReplyError> {
        guard let roster = athletes else { return .failure(Self.noAthletes) }
        guard roster.hasStored(id) else {
            return .failure(.init(.unknownAthlete, "the node keeps no profile for athlete '\(id)'" + (roster.storedCount == 0 ? "" : "; see the list on <base>/athletes")))
        }
        if athletesBefore == nil { athletesBefore = roster }
        _ = athletes!.clear(id)
        changedProfiles.insert(id)
        return .success(CommandResult(members: Self.profileReply(athletes!.profile(id), .cleared)))
    }

    /// A profile command's reply members: `athlete`, `saved` or `cleared`, and the `profile` kept now.
    static func profileReply(_ profile: AthleteProfile, _ outcome: WireField) -> [String: JSONValue] {
        var members: [String: JSONValue] = [:]
        members[.athlete] = .string(profile.id)
        members[outcome] = .bool(true)
        members[.profile] = AthleteRoster.json(profile)
        return members
    }

    static let noAthletes = ReplyError(.invalidArgument,
        "this node has no class: add heart_rate.athletes (a topic pattern like hr/+) to its configuration (docs/configuration.md)")

    /// The write of an input that changed profiles: the document for `meta`.
    var changedDocument: String? {
        guard !changedProfiles.isEmpty, let athletes else { return nil }
        return String(decoding: athletes.document, as: UTF8.self)
    }

    /// After the write: the profiles' change stands and the list and the states of present
    /// athletes it changed are published (when `publish`), or a failed write puts them back.
    mutating func profilesWritten(ok: Bool, publish: Bool, now: Millis, into out: inout EffectSink) {
        defer { athletesBefore = nil; changedProfiles = [] }
        guard !changedProfiles.isEmpty else { return }
        guard ok else {
            if let athletesBefore { athletes = athletesBefore }
            return
        }
        guard publish else { return }
        publishAthleteList(now: now, linkUp: true, into: &out)
        for id in changedProfiles.sorted() where athletes?.present[id] != nil { publishAthleteState(id, now: now, linkUp: true, into: &out) }
    }

    /// The stored profiles' document at start (the `meta` row).
    mutating func restoreProfiles(_ document: String?) {
        guard athletes != nil, let document else { return }
        athletes!.load(JSONCoding.decode(Array(document.utf8)))
    }

    // MARK: - Heart rate per phase (class_hr)

    /// Feeds a reading to every run being recorded whose timer is running now.
    private mutating func recordClassSample(_ athlete: String, bpm: Int, now: Millis, timers: TimerTable) {
        guard !classRuns.isEmpty, let maxHR = athletes.map({ $0.maxHR(athlete) }) else { return }
        for id in classRuns.keys {
            // A transition that fell due but has not been taken yet: the snapshot knows it (and a
            // reading at or after the run's end is not the run's).
            guard let segment = Self.runningSegment(id, at: now, in: timers) else { continue }
            classRuns[id]!.record(athlete, bpm: bpm, atMs: now, segment: segment, maxHR: maxHR)
        }
    }

    /// The segment timer `id` runs in at `now`, nil unless it runs.
    private static func runningSegment(_ id: String, at now: Millis, in timers: TimerTable) -> ClassRecorder.Segment? {
        guard let snap = timers.read(id, { $0.machine.status == .running ? $0.machine.snapshot(at: now) : nil }) ?? nil,
              snap.status == .running else { return nil }
        return ClassRecorder.Segment(index: snap.segment, phase: snap.phase, label: snap.label, round: snap.round, set: snap.set,
                                     startMs: snap.segmentStartedAtMs ?? (now - snap.segmentElapsedMs))
    }

    /// Looks at an input's changes before they are written: a `class_hr` timer's `started` begins
    /// a recording; its `finished`, `cancelled` or `reset` (or a new start) ends it, and its
    /// summary goes into this write (one event, already counted as published) and is published
    /// after it (`publishClassSummaries`).
    mutating func classRunEvents(_ changes: TimerChanges, timers: TimerTable, into batch: inout StoreBatch) {
        for id in changes.deleted { classRuns[id] = nil }
        guard athletes != nil else { return }
        for event in changes.events {
            switch event.type {
            case .started:
                if classRuns[event.timer] != nil { endClassRun(event.timer, at: event.dueMs, ended: "restarted", revision: event.revision, into: &batch) }
                guard timers.read(event.timer, { $0.machine.spec.classHR == true }) == true else { continue }
                classRuns[event.timer] = ClassRecorder(timer: event.timer, startedAtMs: event.dueMs, partial: false, heartRate: settings)
            case .finished, .cancelled, .reset:
                if classRuns[event.timer] != nil {
                    endClassRun(event.timer, at: event.dueMs, ended: event.type.rawValue, revision: event.revision, into: &batch)
                }
            default:
                continue
            }
        }
        // The segment each recorded timer is in after these events, listed even if no strap
        // reads in it (a rest without readings is still a rest in the summary). A transition is
        // handled when it falls due, so an input holds one; of several (a catch-up after a
        // stall), the ones before the last are not listed.
        for event in changes.events where [.started, .phase, .skipped, .rewound].contains(event.type) && classRuns[event.timer] != nil {
            if let segment = Self.runningSegment(event.timer, at: event.dueMs, in: timers) { classRuns[event.timer]!.enter(segment) }
        }
    }

    private mutating func endClassRun(_ id: String, at endMs: Millis, ended: String, revision: Int, into batch: inout StoreBatch) {
        guard let run = classRuns.removeValue(forKey: id), let roster = athletes else { return }
        let summary = run.summary(endedAtMs: endMs, ended: ended, revision: revision, profile: roster.profile)
        let payload = summary.jsonBytes
        logger.info("class summary", metadata: ["timer": "\(id)", "athletes": "\(run.athletes.count)", "samples": "\(run.sampleCount)",
                                                "bytes": "\(payload.count)"])
        // Already published as far as the outbox goes: the summary is not a transition a retained
        // state could prove, and losing its publish to a crash leaves it in `history`.
        batch.appendEvents.append(EventRecord(seq: nil, timer: id, type: ClassRecorder.eventType, revision: revision, dueMs: endMs,
                                              atMs: endMs, payload: payload, published: true))
        pendingSummaries.append((timer: id, payload: payload))
    }

    /// After the write: each summary on the timer's event topic and, retained, on its `class` topic;
    /// then the present athletes' states again (their live points end with the run).
    mutating func publishClassSummaries(now: Millis, linkUp: Bool, into out: inout EffectSink) {
        guard !pendingSummaries.isEmpty else { return }
        for (id, payload) in pendingSummaries {
            let t = topics.timer(id)
            out.publish(to: t.event, payload, retain: false)
            out.publish(to: t.classSummary, payload, retain: true)
        }
        pendingSummaries = []
        for id in (athletes?.present.keys.sorted() ?? []) { publishAthleteState(id, now: now, linkUp: linkUp, into: &out) }
    }

    /// A restore: a running `class_hr` timer records again from now (its summary says `partial`).
    mutating func resumeClassRuns(now: Millis, timers: TimerTable) {
        guard athletes != nil else { return }
        for id in timers.ids {
            guard let (running, classHR, started) = timers.read(id, { ($0.machine.status == .running, $0.machine.spec.classHR == true,
                                                                      $0.machine.snapshot(at: now).startedAtMs) }),
                  running, classHR else { continue }
            classRuns[id] = ClassRecorder(timer: id, startedAtMs: max(started ?? now, now), partial: true, heartRate: settings)
        }
    }
}

/// The readings a recovery rule is judged with (`HeartRatePart.recoveryReadings`).
struct RecoveryReadings {
    /// The athletes present (checked in or reading), by id.
    var athletes: [RecoveryReading] = []
    /// The configured sources (`heart_rate.sources`), by name.
    var sources: [RecoveryReading] = []

    /// What `rule` looks at. A named one (`who: <id>`): that athlete's or that source's reading.
    /// A class rule: the athletes present; with nobody present, the configured sources (a
    /// single strap with the default `class_all`). A source that is not an athlete's strap is
    /// not one of the class: a coach's strap never counts, nor shows as a stale one.
    func lookedAt(by rule: RecoveryRule) -> [RecoveryReading] {
        if case .athlete = rule.who { return athletes + sources }
        return athletes.isEmpty ? sources : athletes
    }
}

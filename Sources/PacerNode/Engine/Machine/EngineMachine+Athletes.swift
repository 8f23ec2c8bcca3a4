import Logging
import PacerCore
import PacerProtocol
import PacerStore

/// A class's athletes and their heart rate per phase: AthleteRoster.swift holds who
/// is present and their profiles, ClassRecorder.swift one run's figures.
extension EngineMachine {
    // MARK: - Readings

    /// A message on an athlete's topic (`heart_rate.athletes.topic`); false when it is not one.
    mutating func athleteMessage(_ message: InboundMessage, now: Millis) -> Bool {
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
            deadlines.set(.athlete(id), at: athletes!.deadline(of: id, now: now))
            if joined {
                logger.info("an athlete joined the class", metadata: ["athlete": "\(id)"])
                publishAthleteList(now: now)
            }
            publishAthleteState(id, now: now)
            recordClassSample(id, bpm: bpm, now: now)
        }
        return true
    }

    /// An athlete's deadline: its reading went stale (its tile goes blank) or it left.
    mutating func athleteDeadline(_ id: String, now: Millis) {
        guard athletes != nil else { return }
        switch athletes!.check(id, now: now) {
        case .left:
            logger.info("an athlete left the class", metadata: ["athlete": "\(id)"])
            publish(to: topics.athleteState(id), [], retain: true)
            publishAthleteList(now: now)
        case .wentStale:
            publishAthleteState(id, now: now)
            deadlines.set(.athlete(id), at: athletes!.deadline(of: id, now: now))
        case .stillFresh:
            deadlines.set(.athlete(id), at: athletes!.deadline(of: id, now: now))
        }
    }

    mutating func publishAthleteState(_ id: String, now: Millis) {
        guard linkUp, let athletes else { return }  // republished on connect
        publish(to: topics.athleteState(id), athletes.state(id, now: now).jsonBytes, retain: true)
    }

    mutating func publishAthleteList(now: Millis) {
        guard linkUp, let athletes else { return }
        publish(to: topics.athletes, athletes.list(now: now).jsonBytes, retain: true)
    }

    /// On every (re)connect: the list and every present athlete's state.
    mutating func republishAthletes(now: Millis) {
        guard let athletes else { return }
        publishAthleteList(now: now)
        for id in athletes.present.keys.sorted() { publishAthleteState(id, now: now) }
    }

    private mutating func logAthleteProblemOnce(_ key: String, _ message: Logger.Message, _ athlete: String, _ detail: String) {
        guard athletes?.isFirstProblem(of: key) == true else { return }
        logger.warning(message, metadata: ["athlete": "\(athlete)", "value": "\(detail)"])
    }

    // MARK: - Profiles (set_athlete, clear_athlete)

    mutating func setAthlete(_ profile: AthleteProfile, into output: inout EngineOutput) -> Result<CommandResult, ReplyError> {
        guard let roster = athletes else { return .failure(Self.noAthletes) }
        if !roster.hasStored(profile.id) && roster.storedCount >= ProtocolLimits.maxAthleteProfiles {
            return .failure(.init(.invalidArgument, "the node keeps at most \(ProtocolLimits.maxAthleteProfiles) athlete profiles; clear one first"))
        }
        if output.athletesBefore == nil { output.athletesBefore = roster }
        athletes!.set(profile)
        output.athletesChanged.insert(profile.id)
        return .success(CommandResult(members: Self.profileReply(athletes!.profile(profile.id), .saved)))
    }

    mutating func clearAthlete(_ id: String, into output: inout EngineOutput) -> Result<CommandResult, ReplyError> {
        guard let roster = athletes else { return .failure(Self.noAthletes) }
        guard roster.hasStored(id) else {
            return .failure(.init(.unknownAthlete, "the node keeps no profile for athlete '\(id)'" + (roster.storedCount == 0 ? "" : "; see the list on <base>/athletes")))
        }
        if output.athletesBefore == nil { output.athletesBefore = roster }
        _ = athletes!.clear(id)
        output.athletesChanged.insert(id)
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

    /// After the profiles' write: the list and the states of present athletes it changed.
    mutating func publishAthleteProfiles(_ ids: Set<String>, now: Millis) {
        publishAthleteList(now: now)
        for id in ids.sorted() where athletes?.present[id] != nil { publishAthleteState(id, now: now) }
    }

    // MARK: - Heart rate per phase (class_hr)

    /// Feeds a reading to every run being recorded whose timer is running now.
    mutating func recordClassSample(_ athlete: String, bpm: Int, now: Millis) {
        guard !classRuns.isEmpty, let maxHR = athletes.map({ $0.maxHR(athlete) }) else { return }
        for id in classRuns.keys {
            // A transition that fell due but has not been taken yet: the snapshot knows it (and a
            // reading at or after the run's end is not the run's).
            guard let segment = runningSegment(id, at: now) else { continue }
            classRuns[id]!.record(athlete, bpm: bpm, atMs: now, segment: segment, maxHR: maxHR)
        }
    }

    /// The segment timer `id` runs in at `now`, nil unless it runs.
    private func runningSegment(_ id: String, at now: Millis) -> ClassRecorder.Segment? {
        guard let snap = timers.read(id, { $0.machine.status == .running ? $0.machine.snapshot(at: now) : nil }) ?? nil,
              snap.status == .running else { return nil }
        return ClassRecorder.Segment(index: snap.segment, phase: snap.phase, label: snap.label, round: snap.round, set: snap.set,
                                     startMs: snap.segmentStartedAtMs ?? (now - snap.segmentElapsedMs))
    }

    /// Looks at an output's events before it is written: a `class_hr` timer's `started` begins a
    /// recording; its `finished`, `cancelled` or `reset` (or a new start) ends it, and its summary
    /// goes into this write (one event, already counted as published) and is published after it.
    mutating func classRunEvents(_ output: EngineOutput, into batch: inout StoreBatch) {
        for id in output.deletedTimers { classRuns[id] = nil }
        guard athletes != nil else { return }
        for event in output.events {
            switch event.type {
            case .started:
                if classRuns[event.timer] != nil { endClassRun(event.timer, at: event.dueMs, ended: "restarted", revision: event.revision, into: &batch) }
                guard timers.read(event.timer, { $0.machine.spec.classHR == true }) == true else { continue }
                classRuns[event.timer] = ClassRecorder(timer: event.timer, startedAtMs: event.dueMs, partial: false,
                                                       staleAfterMs: configuration.heartRate.staleAfterMs)
            case .finished, .cancelled, .reset:
                if classRuns[event.timer] != nil {
                    endClassRun(event.timer, at: event.dueMs, ended: event.type.rawValue, revision: event.revision, into: &batch)
                }
            case .phase, .countdown, .halfway, .paused, .resumed, .adjusted, .skipped, .expired, .alert, .acknowledged, .scheduled, .rewound, .snoozed:
                continue
            }
        }
        // The segment each recorded timer is in after these events, listed even if no strap
        // reads in it (a rest without readings is still a rest in the summary). A transition is
        // handled when it falls due, so an output holds one; of several (a catch-up after a
        // stall), the ones before the last are not listed.
        for event in output.events where [.started, .phase, .skipped, .rewound].contains(event.type) && classRuns[event.timer] != nil {
            if let segment = runningSegment(event.timer, at: event.dueMs) { classRuns[event.timer]!.enter(segment) }
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

    /// After the write: each summary on the timer's event topic and, retained, on its `class` topic.
    mutating func publishClassSummaries() {
        guard !pendingSummaries.isEmpty else { return }
        for (id, payload) in pendingSummaries {
            let t = topics.timer(id)
            publish(to: t.event, payload, retain: false)
            publish(to: t.classSummary, payload, retain: true)
        }
        pendingSummaries = []
    }

    /// A restore: a running `class_hr` timer records again from now (its summary says `partial`).
    mutating func resumeClassRuns(now: Millis) {
        guard athletes != nil else { return }
        for id in timers.ids {
            guard let (running, classHR, started) = timers.read(id, { ($0.machine.status == .running, $0.machine.spec.classHR == true,
                                                                      $0.machine.snapshot(at: now).startedAtMs) }),
                  running, classHR else { continue }
            classRuns[id] = ClassRecorder(timer: id, startedAtMs: max(started ?? now, now), partial: true,
                                          staleAfterMs: configuration.heartRate.staleAfterMs)
        }
    }

    /// The stored profiles' document at start (the `meta` row).
    mutating func restoreAthletes(_ document: String?) {
        guard athletes != nil, let document else { return }
        athletes!.load(JSONCoding.decode(Array(document.utf8)))
    }
}

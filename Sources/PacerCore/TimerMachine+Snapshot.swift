// The state snapshot (docs/API.md, "State snapshot") at any instant.

extension TimerSnapshot {
    init(id: String, name: String, kind: TimerKind, status: TimerStatus, phase: Phase, revision: Int, asOfMs: Millis) {
        self.id = id
        self.name = name
        self.kind = kind
        self.status = status
        self.phase = phase
        self.round = 1
        self.rounds = 1
        self.set = 1
        self.sets = 1
        self.segment = 1
        self.segments = 1
        self.elapsedMs = 0
        self.segmentElapsedMs = 0
        self.progress = 0
        self.revision = revision
        self.asOfMs = asOfMs
        self.remainingSeconds = 0
        self.display = "0:00"
        self.overtime = false
        self.countsUp = false
    }
}

extension TimerMachine {
    /// Every field of the state snapshot at `now`, without changing the machine: the
    /// same as `advance(to: now)` then reading, in O(log n).
    public func snapshot(at now: Millis) -> TimerSnapshot {
        let (state, revision) = projected(to: now)
        let phase: Phase = switch state {
        case .idle: .idle
        case .scheduled: .scheduled
        case .running(let run): self.phase(of: run)
        case .paused: .paused
        case .expired: .expired
        case .finished: .finished
        case .cancelled: .cancelled
        }
        var snapshot = TimerSnapshot(id: id, name: name, kind: spec.kind, status: state.status, phase: phase, revision: revision, asOfMs: now)
        snapshot.rounds = program.rounds
        snapshot.sets = program.sets
        snapshot.segments = program.count
        snapshot.preset = spec.preset
        snapshot.ack = requiresAck

        switch state {
        case .idle, .scheduled:
            let first = program.segments[0].durationMs
            fill(&snapshot, index: 0, durationMs: first, segmentElapsedMs: 0, remainingMs: first,
                 totalRemainingMs: program.totalMs)
            if case .scheduled(let startAt) = state { snapshot.startAtMs = startAt }
            snapshot.nextPhase = nextPhase(after: 0)
            if let rule = program.segments[0].untilHR {
                snapshot.untilHR = rule
                snapshot.restMaxMs = rule.maxMs
                snapshot.restMinMs = rule.minMs
            }
        case .running(let run):
            let segmentElapsed = now - run.segmentStartMs
            let remaining = run.overtime ? 0 : run.durationMs.map { max(0, $0 - segmentElapsed) }
            fill(&snapshot, index: run.index, durationMs: run.durationMs, segmentElapsedMs: segmentElapsed,
                 remainingMs: remaining, totalRemainingMs: totalRemaining(run, remaining))
            snapshot.elapsedMs = run.activeMs + (now - run.activeSinceMs)
            snapshot.startedAtMs = run.startedAtMs
            snapshot.endsAtMs = run.endMs
            snapshot.segmentStartedAtMs = run.segmentStartMs
            snapshot.overtime = run.overtime
            if run.overtime { snapshot.progress = 1 }
            snapshot.nextPhase = nextPhase(of: run)
            fillRecovery(&snapshot, run)
        case .paused(let run, let pausedAt):
            let segmentElapsed = pausedAt - run.segmentStartMs
            let remaining = run.overtime ? 0 : run.durationMs.map { max(0, $0 - segmentElapsed) }
            fill(&snapshot, index: run.index, durationMs: run.durationMs, segmentElapsedMs: segmentElapsed,
                 remainingMs: remaining, totalRemainingMs: totalRemaining(run, remaining))
            snapshot.elapsedMs = run.activeMs
            snapshot.startedAtMs = run.startedAtMs
            snapshot.overtime = run.overtime
            if run.overtime { snapshot.progress = 1 }
            snapshot.nextPhase = nextPhase(of: run)
            fillRecovery(&snapshot, run)
        case .expired(let run, _):
            fill(&snapshot, index: run.index, durationMs: run.durationMs, segmentElapsedMs: run.durationMs ?? 0,
                 remainingMs: 0, totalRemainingMs: 0)
            snapshot.elapsedMs = run.activeMs
            snapshot.startedAtMs = run.startedAtMs
        case .finished(let ended), .cancelled(let ended):
            let index = ended.run?.index ?? 0
            let total: Millis? = if case .finished = state { 0 } else {
                ended.remainingMs.flatMap { remaining in program.remainingAfter(index).map { remaining + $0 } }
            }
            fill(&snapshot, index: index, durationMs: ended.run?.durationMs ?? program.segments[0].durationMs,
                 segmentElapsedMs: ended.segmentElapsedMs, remainingMs: ended.remainingMs, totalRemainingMs: total)
            snapshot.elapsedMs = ended.run?.activeMs ?? 0
            snapshot.startedAtMs = ended.run?.startedAtMs
            snapshot.overtime = ended.run?.overtime ?? false
        }
        return snapshot
    }

    /// `until_hr`, and the bounds of a rest waiting for recovery or the instant it recovered.
    private func fillRecovery(_ snapshot: inout TimerSnapshot, _ run: Run) {
        guard let rule = recoveryRule(of: run) else { return }
        snapshot.untilHR = rule
        if let recoveredAt = run.recoveredAtMs {
            snapshot.recoveredAtMs = recoveredAt
        } else if let max = run.durationMs {
            snapshot.restMaxMs = max
            snapshot.restMinMs = min(rule.minMs, max)
        }
    }

    /// The phase the run enters when its segment ends by itself: nil on the last segment,
    /// in overtime and in a snooze (those end in expiry, completion or nothing).
    private func nextPhase(of run: Run) -> Phase? {
        run.snoozed || run.overtime ? nil : nextPhase(after: run.index)
    }

    private func nextPhase(after index: Int) -> Phase? {
        index + 1 < program.count ? program.segments[index + 1].kind.phase : nil
    }

    /// Time left in the program from a run with `remaining` left in its segment.
    private func totalRemaining(_ run: Run, _ remaining: Millis?) -> Millis? {
        guard let remaining else { return nil }
        if run.overtime || run.snoozed { return remaining }
        return program.remainingAfter(run.index).map { remaining + $0 }
    }

    private func fill(
        _ snapshot: inout TimerSnapshot, index: Int, durationMs: Millis?, segmentElapsedMs: Millis,
        remainingMs: Millis?, totalRemainingMs: Millis?
    ) {
        let segment = program.segments[index]
        snapshot.label = segment.label
        snapshot.nextLabel = program.nextLabel(after: index)
        snapshot.round = segment.round
        snapshot.set = segment.set
        snapshot.segment = index + 1
        snapshot.segmentDurationMs = durationMs
        snapshot.remainingMs = remainingMs
        snapshot.segmentElapsedMs = segmentElapsedMs
        snapshot.totalRemainingMs = totalRemainingMs
        if let durationMs, durationMs > 0 {
            snapshot.progress = min(1, max(0, Double(segmentElapsedMs) / Double(durationMs)))
        } else {
            snapshot.progress = 0
        }
        if let total = program.totalMs, let totalRemainingMs, total > 0 {
            snapshot.totalProgress = min(1, max(0, 1 - Double(totalRemainingMs) / Double(total)))
        }
        snapshot.countsUp = program.countsUp || durationMs == nil
        if snapshot.countsUp {
            snapshot.remainingSeconds = Durations.floorSeconds(segmentElapsedMs)
        } else {
            snapshot.remainingSeconds = Durations.ceilSeconds(remainingMs ?? 0)
        }
        snapshot.display = Durations.display(seconds: snapshot.remainingSeconds)
    }
}

// The passage of time: advance, the projection behind snapshots, and deadlines.

extension TimerMachine {
    /// Moves the machine to `now`, returning every event that fell due since the last
    /// call, in due order, each exactly once.
    ///
    /// State transitions are always applied. Events older than the lag window
    /// (`now - dueMs > lagWindowMs`, a restore after downtime) follow
    /// `TimerEvent.collapsingStale`: stale cues are dropped, stale `phase` events are
    /// collapsed into the latest one, and `started`/`expired`/`finished` are kept with
    /// `lateMs`.
    public mutating func advance(to now: Millis) -> [TimerEvent] {
        let events = advanceRaw(to: now)
        return TimerEvent.collapsingStale(events, now: now, lagWindowMs: lagWindowMs)
    }

    /// `advance` before the late-event rule. Cues older than the lag window are not even
    /// generated (the rule would drop them), so a long gap costs O(segments crossed).
    mutating func advanceRaw(to now: Millis) -> [TimerEvent] {
        var out: [TimerEvent] = []
        // Cues are emitted when due in [cueFloor, now]: not already emitted, not stale.
        let cueFloor = max(advancedToMs.saturatingAdd(1), now.saturatingAdd(-lagWindowMs))
        loop: while true {
            switch state {
            case .idle, .paused, .finished, .cancelled:
                break loop
            case .scheduled(let startAt):
                guard startAt <= now else { break loop }
                state = .running(run: firstRun(at: startAt))
                bump(at: startAt)
                out.append(event(.started, due: startAt, index: 0))
            case .running(var run):
                guard let end = run.endMs else { break loop }
                segmentCues(&run, from: cueFloor, through: min(end - 1, now), into: &out)
                state = .running(run: run)
                guard end <= now else { break loop }
                out.append(segmentEnded(run, at: end, paused: false))
            case .expired(let run, let since):
                let dismissAt = since.saturatingAdd(autoDismissMs)
                alerts(run, since: since, from: cueFloor, through: min(now, dismissAt - 1), into: &out)
                guard dismissAt <= now else { break loop }
                state = dismissedState(run, at: dismissAt)
                bump(at: dismissAt)
                var finished = event(.finished, due: dismissAt, index: run.index, phase: .finished)
                finished.finishedAtMs = dismissAt
                finished.reason = .autoDismissed
                out.append(finished)
                // `after_ack: ready`: back to idle at its full duration, in the same change.
                if state == .idle { out.append(event(.reset, due: dismissAt, index: 0, phase: .idle)) }
            }
        }
        advancedToMs = max(advancedToMs, now)
        return out
    }

    /// The automatic transition at the end of `run`'s segment: the next segment, overtime
    /// (stopwatch) or completion (expired/finished). Returns its event.
    mutating func segmentEnded(_ run: Run, at end: Millis, paused: Bool) -> TimerEvent {
        bump(at: end)
        let isLast = run.snoozed || run.index >= program.count - 1
        if isLast && program.countsUp && !run.snoozed {
            var overtime = run
            overtime.overtime = true
            state = paused ? .paused(run: overtime, pausedAtMs: end) : .running(run: overtime)
            return event(.phase, due: end, index: run.index, phase: .overtime)
        }
        if isLast {
            state = completedState(run, at: end, paused: paused)
            if case .expired = state {
                return event(.expired, due: end, index: run.index, phase: .expired)
            }
            var finished = event(.finished, due: end, index: run.index, phase: .finished)
            finished.finishedAtMs = end
            finished.reason = .completed
            return finished
        }
        let next = self.run(run, entering: run.index + 1, at: end)
        state = paused ? .paused(run: next, pausedAtMs: end) : .running(run: next)
        return event(.phase, due: end, index: next.index)
    }

    /// The instant of the `halfway` cue of a run's segment, when it has one: the display
    /// flip nearest below half (end - ⌊duration/2⌋ whole seconds).
    func halfwayDue(_ run: Run) -> Millis? {
        guard !run.snoozed, !run.overtime, let duration = run.durationMs, let end = run.endMs,
              program.segments[run.index].kind.hasHalfway, duration >= settings.halfwayMinimumMs
        else { return nil }
        return end - 1000 * (duration / 2000)
    }

    /// Calls `body` with each countdown cue of a run's segment: its instant and its second, in
    /// no particular order. Allocates nothing: it runs for every running timer at every flip.
    func forEachCountdownCue(_ run: Run, _ body: (_ due: Millis, _ cue: Int) -> Void) {
        guard let duration = run.durationMs, let end = run.endMs else { return }
        for cue in spec.cues ?? settings.cues where cue > 0 {
            let offset = Millis(cue) * 1000
            if offset < duration { body(end - offset, cue) }
        }
    }

    /// Emits the cues of the current segment due in [floor, limit] and marks halfway done
    /// once it is due (emitted or not).
    func segmentCues(_ run: inout Run, from floor: Millis, through limit: Millis, into out: inout [TimerEvent]) {
        var found: [(due: Millis, order: Int, event: TimerEvent)] = []
        if !run.halfwayDone, let due = halfwayDue(run), due <= limit {
            run.halfwayDone = true
            if due >= floor { found.append((due, 0, event(.halfway, due: due, index: run.index))) }
        }
        if limit >= floor {
            forEachCountdownCue(run) { due, cue in
                guard due >= floor && due <= limit else { return }
                var countdown = event(.countdown, due: due, index: run.index, phase: phase(of: run))
                countdown.cue = cue
                found.append((due, 1, countdown))
            }
        }
        found.sort { ($0.due, $0.order) < ($1.due, $1.order) }
        out.append(contentsOf: found.map(\.event))
    }

    /// Emits the alerts of an expired timer due in [floor, limit].
    func alerts(_ run: Run, since: Millis, from floor: Millis, through limit: Millis, into out: inout [TimerEvent]) {
        let interval = alertIntervalMs
        let low = max(floor, since.saturatingAdd(1))
        guard limit >= low else { return }
        var k = max(1, ceilDivide(low - since, interval))
        while since.saturatingAdd(k * interval) <= limit {
            out.append(event(.alert, due: since + k * interval, index: run.index, phase: .expired))
            k += 1
        }
    }

    // MARK: Projection

    /// The state and revision the machine would have after `advance(to: now)`, computed
    /// in O(log n) with the program's prefix sums instead of walking the segments.
    func projected(to now: Millis) -> (state: State, revision: Int) {
        var state = self.state
        var revision = self.revision
        if case .scheduled(let startAt) = state, startAt <= now {
            state = .running(run: firstRun(at: startAt))
            revision += 1
        }
        if case .running(let run) = state, let end = run.endMs, end <= now {
            let count = program.count
            if run.snoozed || run.index >= count - 1 {
                revision += 1
                if program.countsUp && !run.snoozed {
                    var overtime = run
                    overtime.overtime = true
                    state = .running(run: overtime)
                } else {
                    state = completedState(run, at: end, paused: false)
                }
            } else {
                // Entering segment j (i < j ≤ limit) happens at end + prefix[j] - prefix[i+1];
                // j == count means the last segment ended. An open-ended segment stops the run.
                let i = run.index
                let limit = program.firstOpenIndex(after: i) ?? count
                let base = program.prefixMs[i + 1]
                let j = program.lastIndex(prefixAtMost: (now - end) + base, in: (i + 1)...limit)
                let entered = end + program.prefixMs[j] - base
                revision += j - i
                if j < count {
                    state = .running(run: self.run(run, entering: j, at: entered))
                } else {
                    let lastDuration = program.segments[count - 1].durationMs ?? 0
                    var last = self.run(run, entering: count - 1, at: entered - lastDuration)
                    if program.countsUp {
                        last.overtime = true
                        state = .running(run: last)
                    } else {
                        state = completedState(last, at: entered, paused: false)
                    }
                }
            }
        }
        if case .expired(let run, let since) = state, since.saturatingAdd(autoDismissMs) <= now {
            state = dismissedState(run, at: since + autoDismissMs)
            revision += 1
        }
        return (state, revision)
    }

    // MARK: Deadlines

    /// The earliest instant after `now` at which anything visible changes: a scheduled
    /// start, a segment end, a cue (countdown, halfway, alert), an auto-dismiss, or the
    /// next whole-second flip of the displayed value (aligned to the segment's end when
    /// counting down, to its start when counting up). Nil when nothing will change by
    /// itself (idle, paused, finished, cancelled).
    public func nextDeadline(after now: Millis) -> Millis? {
        nextChange(after: now, flips: true)
    }

    // MARK: Events ahead

    /// The next instant after `now` at which an event may fall due if only time passes: a
    /// scheduled start, a segment's end, a countdown or halfway cue, an alert or an
    /// auto-dismiss. Unlike `nextDeadline(after:)` it skips the displayed second's flips, so a
    /// caller looking for what sounds next does not step through every second.
    public func nextEventDue(after now: Millis) -> Millis? {
        nextChange(after: now, flips: false)
    }

    /// `nextDeadline` (with the flips) and `nextEventDue` (without).
    private func nextChange(after now: Millis, flips: Bool) -> Millis? {
        let (state, _) = projected(to: now)
        switch state {
        case .idle, .paused, .finished, .cancelled:
            return nil
        case .scheduled(let startAt):
            return startAt
        case .running(let run):
            // The earliest candidate after now (no array: this runs for every flip of every timer).
            var next = Millis.max
            func consider(_ instant: Millis) {
                if instant > now && instant < next { next = instant }
            }
            let end = run.endMs
            if flips {
                if program.countsUp || end == nil {
                    let elapsed = now - run.segmentStartMs
                    consider(run.segmentStartMs + (floorDivide(elapsed, 1000) + 1) * 1000)
                } else if let end {
                    let left = end - now
                    consider(end - (ceilDivide(left, 1000) - 1) * 1000)
                }
            }
            if let end { consider(end) }
            if !run.halfwayDone, let halfway = halfwayDue(run) { consider(halfway) }
            forEachCountdownCue(run) { due, _ in consider(due) }
            return next == .max ? nil : next
        case .expired(_, let since):
            let dismissAt = since.saturatingAdd(autoDismissMs)
            let nextAlert = since + (floorDivide(now - since, alertIntervalMs) + 1) * alertIntervalMs
            return min(nextAlert, dismissAt)
        }
    }

    /// The events that fall due at `instant` (from `nextEventDue`) if only time passes until
    /// then. A copy is advanced; this machine is unchanged.
    public func eventsDue(at instant: Millis) -> [TimerEvent] {
        var copy = self
        _ = copy.advance(to: instant - 1)
        return copy.advance(to: instant).filter { $0.dueMs == instant }
    }
}

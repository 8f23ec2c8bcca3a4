// Commands: the effective instant, guards, and each operation.

extension TimerMachine {
    /// The instant a command takes effect: `at` (or `startAt` ≤ now for a start) clamped
    /// to [now - lagWindow, now], and never before the machine's last state change.
    public func effectiveInstant(of command: TimerCommand, now: Millis) -> Millis {
        var requested = command.at ?? now
        if case .start(_, let startAt?, _) = command.operation, startAt <= now { requested = startAt }
        return effectiveInstant(requested: requested, now: now)
    }

    /// `requested` clamped to [now - lagWindow, now], and never before the last state change.
    func effectiveInstant(requested: Millis, now: Millis) -> Millis {
        let clamped = min(max(requested, now.saturatingAdd(-lagWindowMs)), now)
        return max(clamped, lastChangeMs)
    }

    /// Applies a command at node time `now`.
    ///
    /// The command takes effect at `effectiveInstant(of:now:)`: the machine is first
    /// advanced to that instant, `ifRevision` is checked against the revision there, the
    /// operation is applied, and the machine is advanced to `now`. Returns every event
    /// that caused, in order (under the same late-event rule as `advance`), or an error
    /// that changed nothing.
    public mutating func handle(_ command: TimerCommand, now: Millis) -> Result<[TimerEvent], CommandError> {
        perform(at: effectiveInstant(of: command, now: now), ifRevision: command.ifRevision, now: now) { machine, instant in
            machine.apply(command.operation, at: instant, now: now)
        }
    }

    /// Ends the current rest on recovery: the node judged, from heart rate, that the segment's
    /// `RecoveryRule` holds as of `at` (the instant of the reading that made it hold).
    ///
    /// Not an action a person sends (it has no word on the wire): the node's own input, handled
    /// like a command. `at` takes effect as a command's does (`effectiveInstant(of:now:)`: clamped
    /// to the lag window, never before the last change), and the node writes the timer after it
    /// as after a command, so a restore lands at the same segment and instant.
    ///
    /// Accepted only while a rest that ends on recovery runs and waits for it. From the rest's
    /// `min` on, the segment ends at that instant: `recovered`, then the `phase` of the next
    /// segment (or the expiry or completion of the last). Before `min`, recovery is kept and the
    /// rest ends at start + `min` (its `ends_at` moves there; its `phase` comes then). Refused
    /// (changing nothing) when the timer is paused (recovery counts while the rest runs), when the
    /// segment does not end on recovery (its `max` has passed, a work segment, a snooze), or when
    /// the rest has already recovered.
    public mutating func recovered(at: Millis, now: Millis) -> Result<[TimerEvent], CommandError> {
        perform(at: effectiveInstant(requested: at, now: now), ifRevision: nil, now: now) { machine, instant in
            machine.recover(at: instant)
        }
    }

    /// A command's steps: advance a copy to `instant`, check the revision there, apply, advance to
    /// `now`; the copy replaces this machine only on success.
    private mutating func perform(
        at instant: Millis, ifRevision: Int?, now: Millis,
        _ apply: (inout TimerMachine, Millis) -> Result<[TimerEvent], CommandError>
    ) -> Result<[TimerEvent], CommandError> {
        var machine = self
        var events = machine.advanceRaw(to: instant)
        if let expected = ifRevision, expected != machine.revision {
            return .failure(CommandError(
                code: .revisionConflict,
                message: "timer '\(id)' is at revision \(machine.revision), not \(expected); refresh its state and retry"
            ))
        }
        switch apply(&machine, instant) {
        case .failure(let error):
            return .failure(error)
        case .success(let produced):
            events += produced
        }
        events += machine.advanceRaw(to: max(now, instant))
        self = machine
        return .success(TimerEvent.collapsingStale(events, now: now, lagWindowMs: lagWindowMs))
    }

    /// Applies an operation at `t` to a machine already advanced to `t`.
    mutating func apply(_ operation: TimerOperation, at t: Millis, now: Millis) -> Result<[TimerEvent], CommandError> {
        switch operation {
        case .start(let spec, let startAt, let restart):
            return start(spec: spec, startAt: startAt, restart: restart, at: t, now: now)
        case .pause: return pause(at: t)
        case .resume: return resume(at: t)
        case .toggle:
            switch state {
            case .idle, .finished, .cancelled: return start(spec: nil, startAt: nil, restart: false, at: t, now: now)
            case .running: return pause(at: t)
            case .paused: return resume(at: t)
            case .scheduled: return reset(at: t)
            case .expired: return ack(at: t)
            }
        case .cancel: return cancel(at: t)
        case .reset: return reset(at: t)
        case .finish: return finish(at: t)
        case .skip: return skip(at: t)
        case .back: return back(at: t)
        case .ack: return ack(at: t)
        case .adjust(let seconds): return adjust(seconds: seconds, at: t)
        case .snooze(let seconds): return snooze(seconds: seconds, at: t)
        case .extend(let seconds, let rounds): return extend(seconds: seconds, rounds: rounds, at: t)
        }
    }

    // MARK: Refusals

    /// How the timer's status reads in a refusal.
    private var stateText: String {
        switch state {
        case .idle: "it is idle"
        case .scheduled(let startAt): "it is scheduled to start at \(iso8601(ms: startAt))"
        case .running(let run): run.overtime ? "it is running (overtime)" : "it is running"
        case .paused: "it is paused"
        case .expired: "it has expired and is waiting for an ack"
        case .finished: "it has finished"
        case .cancelled: "it was cancelled"
        }
    }

    /// What to do instead, by status.
    private var defaultHint: String {
        switch state {
        case .idle: "start it first"
        case .scheduled: "send start to start it now, or cancel it"
        case .running: "pause or cancel it first"
        case .paused: "resume it first"
        case .expired: "send ack to stop the alert, or snooze for more time"
        case .finished, .cancelled: "start it again"
        }
    }

    private func refuse(_ action: String, hint: String? = nil) -> Result<[TimerEvent], CommandError> {
        .failure(refusal(action, hint: hint))
    }

    private func refusal(_ action: String, hint: String? = nil) -> CommandError {
        CommandError(code: .invalidState, message: "cannot \(action) timer '\(id)': \(stateText); \(hint ?? defaultHint)")
    }

    private func invalid(_ message: String) -> Result<[TimerEvent], CommandError> {
        .failure(CommandError(code: .invalidArgument, message: message))
    }

    // MARK: Operations

    private mutating func start(spec newSpec: TimerSpec?, startAt: Millis?, restart: Bool, at t: Millis, now: Millis) -> Result<[TimerEvent], CommandError> {
        switch state {
        case .running where !restart:
            return refuse("start", hint: "send reset first, or start with restart: true")
        case .paused where !restart:
            return refuse("start", hint: "send resume to continue, reset first, or start with restart: true")
        case .idle, .scheduled, .running, .paused, .expired, .finished, .cancelled:
            break
        }
        if let startAt, startAt > now.saturatingAdd(Durations.maxMs) {
            return invalid("start_at must be at most 7 days ahead, got \(iso8601(ms: startAt)) (\(Durations.describe(startAt - now)) ahead)")
        }
        if let newSpec {
            do throws(SpecError) {
                program = try newSpec.compile()
            } catch {
                return .failure(CommandError(code: .invalidSpec, message: error.message))
            }
            spec = newSpec
        }
        bump(at: t)
        if let startAt, startAt > now {
            state = .scheduled(startAtMs: startAt)
            var scheduled = event(.scheduled, due: t, index: 0, phase: .scheduled)
            scheduled.startAtMs = startAt
            return .success([scheduled])
        }
        state = .running(run: firstRun(at: t))
        return .success([event(.started, due: t, index: 0)])
    }

    private mutating func pause(at t: Millis) -> Result<[TimerEvent], CommandError> {
        switch state {
        case .running(var run):
            run.activeMs += t - run.activeSinceMs
            run.activeSinceMs = t
            state = .paused(run: run, pausedAtMs: t)
            bump(at: t)
            return .success([event(.paused, due: t, index: run.index, phase: .paused)])
        case .paused:
            return refuse("pause", hint: "send resume to continue")
        case .idle, .scheduled, .expired, .finished, .cancelled:
            return refuse("pause")
        }
    }

    private mutating func resume(at t: Millis) -> Result<[TimerEvent], CommandError> {
        switch state {
        case .paused(var run, let pausedAt):
            run.segmentStartMs += t - pausedAt
            run.activeSinceMs = t
            state = .running(run: run)
            bump(at: t)
            return .success([event(.resumed, due: t, index: run.index, phase: phase(of: run))])
        case .running:
            return refuse("resume", hint: "there is nothing to resume")
        case .idle, .scheduled, .expired, .finished, .cancelled:
            return refuse("resume")
        }
    }

    /// The run frozen at `t` as an ended record (running, paused or expired).
    private func ended(at t: Millis, reason: FinishReason?, remainingZero: Bool) -> Ended? {
        switch state {
        case .running(var run):
            run.activeMs += t - run.activeSinceMs
            run.activeSinceMs = t
            let elapsed = t - run.segmentStartMs
            let remaining = remainingZero || run.overtime ? 0 : run.durationMs.map { max(0, $0 - elapsed) }
            return Ended(atMs: t, run: run, segmentElapsedMs: elapsed, remainingMs: remaining, reason: reason)
        case .paused(let run, let pausedAt):
            let elapsed = pausedAt - run.segmentStartMs
            let remaining = remainingZero || run.overtime ? 0 : run.durationMs.map { max(0, $0 - elapsed) }
            return Ended(atMs: t, run: run, segmentElapsedMs: elapsed, remainingMs: remaining, reason: reason)
        case .expired(let run, _):
            return Ended(atMs: t, run: run, segmentElapsedMs: run.durationMs ?? 0, remainingMs: 0, reason: reason)
        case .idle, .scheduled, .finished, .cancelled:
            return nil
        }
    }

    private mutating func cancel(at t: Millis) -> Result<[TimerEvent], CommandError> {
        let index: Int
        switch state {
        case .scheduled:
            state = .cancelled(Ended(atMs: t, run: nil, segmentElapsedMs: 0, remainingMs: program.segments[0].durationMs, reason: nil))
            index = 0
        case .running(let run), .paused(let run, _), .expired(let run, _):
            guard let ended = ended(at: t, reason: nil, remainingZero: false) else { return refuse("cancel") }
            state = .cancelled(ended)
            index = run.index
        case .idle, .finished, .cancelled:
            return refuse("cancel", hint: "there is nothing to cancel")
        }
        bump(at: t)
        return .success([event(.cancelled, due: t, index: index, phase: .cancelled)])
    }

    private mutating func reset(at t: Millis) -> Result<[TimerEvent], CommandError> {
        if state == .idle { return .success([]) }
        state = .idle
        bump(at: t)
        return .success([event(.reset, due: t, index: 0, phase: .idle)])
    }

    private mutating func finish(at t: Millis) -> Result<[TimerEvent], CommandError> {
        switch state {
        case .running(let run), .paused(let run, _), .expired(let run, _):
            guard let ended = ended(at: t, reason: .finished, remainingZero: true) else { return refuse("finish") }
            state = .finished(ended)
            bump(at: t)
            var finished = event(.finished, due: t, index: run.index, phase: .finished)
            finished.finishedAtMs = t
            finished.reason = .finished
            return .success([finished])
        case .idle, .scheduled:
            return refuse("finish", hint: "it has not started; start it first")
        case .finished, .cancelled:
            return refuse("finish", hint: "there is nothing to finish")
        }
    }

    private mutating func skip(at t: Millis) -> Result<[TimerEvent], CommandError> {
        let run: Run
        let paused: Bool
        switch state {
        case .running(let current):
            run = current
            paused = false
        case .paused(let current, _):
            run = current
            paused = true
        case .idle, .scheduled, .expired, .finished, .cancelled:
            return refuse("skip")
        }
        bump(at: t)
        if run.snoozed || run.overtime || run.index >= program.count - 1 {
            guard let ended = ended(at: t, reason: .skipped, remainingZero: true) else { return refuse("skip") }
            state = .finished(ended)
            let skipped = event(.skipped, due: t, index: run.index, phase: .finished)
            var finished = event(.finished, due: t, index: run.index, phase: .finished)
            finished.finishedAtMs = t
            finished.reason = .skipped
            return .success([skipped, finished])
        }
        let next = self.run(run, entering: run.index + 1, at: t)
        state = paused ? .paused(run: next, pausedAtMs: t) : .running(run: next)
        return .success([event(.skipped, due: t, index: next.index)])
    }

    private mutating func back(at t: Millis) -> Result<[TimerEvent], CommandError> {
        let run: Run
        let paused: Bool
        let reference: Millis
        switch state {
        case .running(let current):
            (run, paused, reference) = (current, false, t)
        case .paused(let current, let pausedAt):
            (run, paused, reference) = (current, true, pausedAt)
        case .idle, .scheduled, .expired, .finished, .cancelled:
            return refuse("go back on")
        }
        let segmentElapsed = reference - run.segmentStartMs
        var target = run.index
        if !run.snoozed && !run.overtime && segmentElapsed < settings.backWindowMs && run.index > 0 {
            target -= 1
        }
        var next = run
        next.index = target
        next.segmentStartMs = t
        next.durationMs = run.snoozed ? run.durationMs : program.segments[target].durationMs
        next.halfwayDone = run.snoozed
        next.overtime = false
        next.recoveredAtMs = nil
        state = paused ? .paused(run: next, pausedAtMs: t) : .running(run: next)
        bump(at: t)
        return .success([event(.rewound, due: t, index: target)])
    }

    /// The run of a running or paused timer (with the instant it was paused), for an operation
    /// that changes the time of a run under way (`adjust`, `extend`); otherwise its refusal.
    private func runUnderWay(for action: String) -> Result<(run: Run, pausedAt: Millis?), CommandError> {
        switch state {
        case .running(let current): .success((current, nil))
        case .paused(let current, let at): .success((current, at))
        case .expired: .failure(refusal(action, hint: "send snooze for more time, or ack"))
        case .idle, .scheduled, .finished, .cancelled: .failure(refusal(action))
        }
    }

    private mutating func adjust(seconds: Int, at t: Millis) -> Result<[TimerEvent], CommandError> {
        let run: Run
        let pausedAt: Millis?
        switch runUnderWay(for: "adjust") {
        case .success(let underWay): (run, pausedAt) = underWay
        case .failure(let error): return .failure(error)
        }
        if program.countsUp {
            return refuse("adjust", hint: "a stopwatch counts up and cannot be adjusted")
        }
        guard let duration = run.durationMs else {
            return refuse("adjust", hint: "the current segment is open-ended; skip or finish it instead")
        }
        let maxSeconds = TimerOperation.maxAdjustSeconds
        guard seconds != 0 else { return invalid("adjust needs a non-zero number of seconds, got 0") }
        guard seconds.magnitude <= maxSeconds else {
            return invalid("adjust takes 1 to \(maxSeconds) seconds either way, got \(seconds)")
        }
        let delta = Millis(seconds) * 1000
        let segmentElapsed = (pausedAt ?? t) - run.segmentStartMs
        let remaining = duration - segmentElapsed
        let newRemaining = remaining + delta
        if newRemaining > Durations.maxMs {
            return invalid("adjust would leave \(Durations.describe(newRemaining)) in the segment; at most 7 days are allowed")
        }
        var adjusted = run
        adjusted.durationMs = max(segmentElapsed, duration + delta)
        bump(at: t)
        var adjustedEvent = event(.adjusted, due: t, index: run.index, phase: pausedAt == nil ? phase(of: run) : .paused)
        adjustedEvent.seconds = seconds
        var events = [adjustedEvent]
        if let pausedAt {
            if newRemaining <= 0 {
                // The paused segment is over: move on (still paused), or complete.
                events.append(segmentEnded(adjusted, at: t, paused: true))
            } else {
                state = .paused(run: adjusted, pausedAtMs: pausedAt)
            }
        } else {
            // A segment adjusted to end now ends in the advance that follows.
            state = .running(run: adjusted)
        }
        return .success(events)
    }

    private mutating func ack(at t: Millis) -> Result<[TimerEvent], CommandError> {
        guard case .expired(let run, _) = state else {
            return refuse("ack", hint: "only an expired timer can be acknowledged")
        }
        // `after_ack: ready` (a gym rest timer's Dismiss): the run finishes and the timer is
        // back to idle at its full duration, in one change (one revision).
        let ready = spec.afterAck == .ready
        state = ready ? .idle : .finished(Ended(atMs: t, run: run, segmentElapsedMs: run.durationMs ?? 0, remainingMs: 0, reason: .acknowledged))
        bump(at: t)
        let acknowledged = event(.acknowledged, due: t, index: run.index, phase: .finished)
        var finished = event(.finished, due: t, index: run.index, phase: .finished)
        finished.finishedAtMs = t
        finished.reason = .acknowledged
        guard ready else { return .success([acknowledged, finished]) }
        return .success([acknowledged, finished, event(.reset, due: t, index: 0, phase: .idle)])
    }

    private mutating func snooze(seconds: Int, at t: Millis) -> Result<[TimerEvent], CommandError> {
        guard case .expired(let run, _) = state else {
            return refuse("snooze", hint: "only an expired timer can be snoozed")
        }
        let maxSeconds = TimerOperation.maxSnoozeSeconds
        guard seconds >= 1 && seconds <= maxSeconds else {
            return invalid("snooze takes 1 to \(maxSeconds) seconds, got \(seconds)")
        }
        var snoozed = run
        snoozed.segmentStartMs = t
        snoozed.durationMs = Millis(seconds) * 1000
        snoozed.activeSinceMs = t
        snoozed.halfwayDone = true
        snoozed.overtime = false
        snoozed.snoozed = true
        snoozed.recoveredAtMs = nil
        state = .running(run: snoozed)
        bump(at: t)
        var event = event(.snoozed, due: t, index: run.index)
        event.seconds = seconds
        return .success([event])
    }

    /// `extend`: more of the run. `seconds` lengthen the current segment (a work set that runs
    /// long, a class that needs another minute); `rounds` add rounds to an interval timer, the
    /// segments before the current one and the current one staying as they are.
    private mutating func extend(seconds: Int?, rounds: Int?, at t: Millis) -> Result<[TimerEvent], CommandError> {
        let run: Run
        let pausedAt: Millis?
        switch runUnderWay(for: "extend") {
        case .success(let underWay): (run, pausedAt) = underWay
        case .failure(let error): return .failure(error)
        }
        guard seconds != nil || rounds != nil else {
            return invalid("extend needs seconds, rounds or both, e.g. {\"action\":\"extend\",\"seconds\":60}")
        }
        var extended = run
        if let seconds {
            let maxSeconds = TimerOperation.maxAdjustSeconds
            guard seconds >= 1 && seconds <= maxSeconds else {
                return invalid("extend takes 1 to \(maxSeconds) seconds, got \(seconds)")
            }
            if program.countsUp {
                return refuse("extend", hint: "a stopwatch counts up and runs until it is finished")
            }
            guard let duration = run.durationMs, !run.overtime else {
                return refuse("extend", hint: "the current segment is open-ended; it runs until it is skipped or finished")
            }
            let remaining = duration - ((pausedAt ?? t) - run.segmentStartMs)
            let added = Millis(seconds) * 1000
            if remaining + added > Durations.maxMs {
                return invalid("extend would leave \(Durations.describe(remaining + added)) in the segment; at most 7 days are allowed")
            }
            extended.durationMs = duration + added
        }
        var longer: (spec: TimerSpec, program: Program)?
        if let rounds {
            guard spec.kind == .interval else {
                return refuse("extend", hint: "only an interval timer has rounds to add; extend it by seconds")
            }
            let now = spec.rounds ?? 1
            guard rounds >= 1 && rounds <= TimerSpec.maxRounds - now else {
                return invalid("extend takes 1 to \(TimerSpec.maxRounds - now) rounds here (this timer has \(now) of at most \(TimerSpec.maxRounds)), got \(rounds)")
            }
            var newSpec = spec
            newSpec.rounds = now + rounds
            let newProgram: Program
            do { newProgram = try newSpec.compile() } catch { return invalid(error.message) }
            // The run keeps its place: what it has done and the segment it is in stay the same.
            guard newProgram.count > run.index, Array(newProgram.segments[...run.index]) == Array(program.segments[...run.index]) else {
                return refuse("extend", hint: "its rounds are over (it is past its last round, or its rounds are in sets); extend it by seconds")
            }
            longer = (newSpec, newProgram)
        }
        if let longer {
            spec = longer.spec
            program = longer.program
        }
        bump(at: t)
        var event = event(.extended, due: t, index: run.index, phase: pausedAt == nil ? phase(of: run) : .paused)
        event.seconds = seconds
        event.rounds = longer?.program.rounds
        state = pausedAt.map { .paused(run: extended, pausedAtMs: $0) } ?? .running(run: extended)
        return .success([event])
    }

    /// `recovered(at:now:)` at `t`, on a machine already advanced to `t`.
    private mutating func recover(at t: Millis) -> Result<[TimerEvent], CommandError> {
        let action = "end the rest on recovery of"
        switch state {
        case .running(var run):
            guard let rule = recoveryRule(of: run), let duration = run.durationMs else {
                let segment = program.segments[run.index]
                return refuse(action, hint: "its current segment (\(run.overtime ? "overtime" : segment.kind.rawValue), round \(segment.round)) does not end on recovery")
            }
            if let recoveredAt = run.recoveredAtMs {
                return refuse(action, hint: "it recovered at \(iso8601(ms: recoveredAt)) and the rest ends at \(iso8601(ms: run.endMs ?? t))")
            }
            // From min on the rest ends now; before it, at min. Never past the (adjusted) max.
            run.durationMs = min(duration, max(t - run.segmentStartMs, rule.minMs))
            run.recoveredAtMs = t
            state = .running(run: run)
            bump(at: t)
            return .success([event(.recovered, due: t, index: run.index)])
        case .paused:
            return refuse(action, hint: "recovery ends a rest only while it runs; resume it first")
        case .idle, .scheduled, .expired, .finished, .cancelled:
            return refuse(action, hint: "no rest is waiting for recovery")
        }
    }
}

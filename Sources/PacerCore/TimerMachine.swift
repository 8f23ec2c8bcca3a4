/// One timer: its spec, its compiled program and its state machine.
///
/// A pure value (postgres-nio style): inputs are commands (`handle`) and the passage of
/// time (`advance(to:)`), both with the instant as a parameter; outputs are events. The
/// node asks `nextDeadline(after:)` when to wake up next and publishes `snapshot(at:)`.
///
/// Timing is anchored: a running segment stores the instant it (virtually) started and
/// its duration; it ends at start + duration and the next segment starts at that end,
/// whenever the code happens to notice. Nothing ever counts down.
public struct TimerMachine: Sendable, Equatable {
    /// `[a-z0-9][a-z0-9_-]{0,63}`.
    public let id: String
    /// Display name (≤ 100 characters, no control characters); see `rename`.
    public var name: String
    public internal(set) var spec: TimerSpec
    /// `spec` compiled.
    public internal(set) var program: Program
    /// Increments on every change: each accepted command, each automatic transition
    /// (segment change, overtime, expiry, completion, auto-dismiss, scheduled start),
    /// `rename` and `shiftAnchors` of a started timer. Not on cues, alerts or ticks.
    public internal(set) var revision: Int
    public var settings: TimerSettings
    var state: State
    /// Events due at or before this instant have been emitted by `advance`/`handle`.
    public internal(set) var advancedToMs: Millis
    /// The instant of the latest state change: no command takes effect before it.
    public internal(set) var lastChangeMs: Millis

    /// A new idle timer.
    /// - Throws: `SpecError` for a bad id, name or spec.
    public init(id: String, name: String, spec: TimerSpec, settings: TimerSettings = .init()) throws(SpecError) {
        try TimerMachine.validateID(id)
        try TimerMachine.validateName(name)
        self.id = id
        self.name = name
        self.spec = spec
        self.program = try spec.compile()
        self.revision = 0
        self.settings = settings
        self.state = .idle
        self.advancedToMs = .min
        self.lastChangeMs = .min
    }

    /// Checks a timer id: `[a-z0-9][a-z0-9_-]{0,63}`.
    public static func validateID(_ id: String) throws(SpecError) {
        let bytes = Array(id.utf8)
        func isAlphanumeric(_ byte: UInt8) -> Bool { (byte >= 97 && byte <= 122) || (byte >= 48 && byte <= 57) }
        guard let first = bytes.first, isAlphanumeric(first), bytes.count <= 64,
              bytes.dropFirst().allSatisfy({ isAlphanumeric($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") })
        else {
            throw SpecError(
                field: "id",
                message: "a timer id is 1 to 64 characters of a-z, 0-9, '_' and '-', starting with a letter or digit; got \"\(printable(id, limit: 70, escapingQuotes: true))\""
            )
        }
    }

    /// Checks a timer name: 1 to 100 characters, no control characters.
    public static func validateName(_ name: String) throws(SpecError) {
        try TextRules.check(name, field: "name", allowEmpty: false)
    }

    /// The timer's status as of the last `advance`/`handle` (see `snapshot(at:)` for any instant).
    public var status: TimerStatus { state.status }

    public var kind: TimerKind { spec.kind }

    /// Renames the timer (a change: the revision increments). The node validates the
    /// name first with `validateName`.
    public mutating func rename(_ name: String) {
        guard name != self.name else { return }
        self.name = name
        revision += 1
    }

    /// Wall-clock jump handling: the node's timeline moved by `deltaMs`, so every anchor
    /// moves with it. Remaining and elapsed times are unchanged; `ends_at` moves by
    /// `deltaMs`. Increments the revision when the timer has been started.
    public mutating func shiftAnchors(by deltaMs: Millis) {
        guard deltaMs != 0 else { return }
        func shift(_ value: Millis) -> Millis { value == .min ? .min : value.saturatingAdd(deltaMs) }
        func shift(_ run: Run) -> Run {
            var run = run
            run.segmentStartMs = shift(run.segmentStartMs)
            run.startedAtMs = shift(run.startedAtMs)
            run.activeSinceMs = shift(run.activeSinceMs)
            run.recoveredAtMs = run.recoveredAtMs.map(shift)
            return run
        }
        switch state {
        case .idle: break
        case .scheduled(let startAt): state = .scheduled(startAtMs: shift(startAt))
        case .running(let run): state = .running(run: shift(run))
        case .paused(let run, let pausedAt): state = .paused(run: shift(run), pausedAtMs: shift(pausedAt))
        case .expired(let run, let since): state = .expired(run: shift(run), sinceMs: shift(since))
        case .finished(var ended):
            ended.atMs = shift(ended.atMs)
            ended.run = ended.run.map(shift)
            state = .finished(ended)
        case .cancelled(var ended):
            ended.atMs = shift(ended.atMs)
            ended.run = ended.run.map(shift)
            state = .cancelled(ended)
        }
        advancedToMs = shift(advancedToMs)
        lastChangeMs = shift(lastChangeMs)
        if state != .idle { revision += 1 }
    }
}

// MARK: - State

extension TimerMachine {
    /// A run in progress: where it is and its anchors.
    struct Run: Sendable, Equatable {
        /// Current segment.
        var index: Int
        /// When the current segment (virtually) started: the segment's elapsed time is
        /// now - segmentStartMs (resume moves it forward by the paused time).
        var segmentStartMs: Millis
        /// Duration of the current segment with adjustments; nil when open-ended.
        var durationMs: Millis?
        /// When the run started.
        var startedAtMs: Millis
        /// Running time accumulated before `activeSinceMs`.
        var activeMs: Millis
        /// Start of the current running stretch (meaningful while running).
        var activeSinceMs: Millis
        /// The halfway cue of this segment has fallen due.
        var halfwayDone = false
        /// A stopwatch past its target.
        var overtime = false
        /// A snooze segment after expiry.
        var snoozed = false
        /// In a rest that ends on recovery: when recovery was declared (`recovered(at:now:)`).
        /// Nil while the rest waits for it (timed by its max until then).
        var recoveredAtMs: Millis? = nil

        /// When the current segment ends; nil when open-ended or in overtime.
        var endMs: Millis? {
            guard !overtime, let durationMs else { return nil }
            return segmentStartMs + durationMs
        }
    }

    /// A run that is over (finished or cancelled).
    struct Ended: Sendable, Equatable {
        var atMs: Millis
        /// Nil when a scheduled timer was cancelled before it started.
        var run: Run?
        var segmentElapsedMs: Millis
        var remainingMs: Millis?
        var reason: FinishReason?
    }

    enum State: Sendable, Equatable {
        case idle
        case scheduled(startAtMs: Millis)
        case running(run: Run)
        case paused(run: Run, pausedAtMs: Millis)
        case expired(run: Run, sinceMs: Millis)
        case finished(Ended)
        case cancelled(Ended)

        var status: TimerStatus {
            switch self {
            case .idle: .idle
            case .scheduled: .scheduled
            case .running: .running
            case .paused: .paused
            case .expired: .expired
            case .finished: .finished
            case .cancelled: .cancelled
            }
        }
    }

    // MARK: Effective settings

    var alertIntervalMs: Millis { max(1, spec.alertIntervalMs ?? settings.alertIntervalMs) }
    var autoDismissMs: Millis { max(1, spec.autoDismissMs ?? settings.autoDismissMs) }
    var lagWindowMs: Millis { max(0, settings.lagWindowMs) }
    /// Whether the end of the last segment waits for an ack.
    var requiresAck: Bool { spec.ack && !program.countsUp }

    // MARK: Building blocks shared by advance, the projection and the commands

    func firstRun(at start: Millis) -> Run {
        Run(index: 0, segmentStartMs: start, durationMs: program.segments[0].durationMs,
            startedAtMs: start, activeMs: 0, activeSinceMs: start)
    }

    /// The run of segment `index`, entered at `start`, continuing `run`.
    func run(_ run: Run, entering index: Int, at start: Millis) -> Run {
        Run(index: index, segmentStartMs: start, durationMs: program.segments[index].durationMs,
            startedAtMs: run.startedAtMs, activeMs: run.activeMs, activeSinceMs: run.activeSinceMs)
    }

    /// The state once the last segment of `run` ended at `end` (expired or finished).
    func completedState(_ run: Run, at end: Millis, paused: Bool) -> State {
        var run = run
        if !paused {
            run.activeMs += end - run.activeSinceMs
            run.activeSinceMs = end
        }
        if requiresAck { return .expired(run: run, sinceMs: end) }
        return .finished(Ended(atMs: end, run: run, segmentElapsedMs: end - run.segmentStartMs, remainingMs: 0, reason: .completed))
    }

    /// The state after an expired timer is auto-dismissed at `instant`.
    func dismissedState(_ run: Run, at instant: Millis) -> State {
        if spec.afterAck == .ready { return .idle }
        return .finished(Ended(atMs: instant, run: run, segmentElapsedMs: run.durationMs ?? 0, remainingMs: 0, reason: .autoDismissed))
    }

    /// The recovery rule of a run's segment, when it is a rest that ends on recovery (not in a
    /// snooze or overtime).
    func recoveryRule(of run: Run) -> RecoveryRule? {
        guard !run.snoozed, !run.overtime else { return nil }
        return program.segments[run.index].untilHR
    }

    /// The phase of a run's current segment.
    func phase(of run: Run) -> Phase {
        run.overtime ? .overtime : program.segments[run.index].kind.phase
    }

    /// An event carrying the segment `index` (phase, label, round, set) and the revision.
    func event(_ type: EventType, due: Millis, index: Int?, phase: Phase? = nil) -> TimerEvent {
        var event = TimerEvent(type: type, timer: id, revision: revision, dueMs: due, atMs: due)
        if let index, program.segments.indices.contains(index) {
            let segment = program.segments[index]
            event.phase = phase ?? segment.kind.phase
            event.label = segment.label
            if !event.isCue { event.nextLabel = program.nextLabel(after: index) }
            event.round = segment.round
            event.set = segment.set
        } else {
            event.phase = phase
        }
        return event
    }

    /// Records a state change at `instant`.
    mutating func bump(at instant: Millis) {
        revision += 1
        lastChangeMs = max(lastChangeMs, instant)
    }
}

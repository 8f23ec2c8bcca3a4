import PacerCore
import PacerStore

/// Store work outside one input's batch: a wall-clock step not yet applied to the stored
/// request ids (it rides on the next successful write, see `StoreBatch.shiftRequestsMs`), and
/// when the history was last pruned (at most hourly, and only after a write, so an idle node
/// never wakes up for it).
struct StoreUpkeep {
    static let pruneIntervalMs: Millis = 3_600_000

    /// The step to apply to the stored request ids with the next write.
    private(set) var requestShiftMs: Millis = 0
    private var lastPruneMs: Millis?

    /// A wall-clock step: what was 1 min ago still was.
    mutating func shiftTimes(by delta: Millis) {
        requestShiftMs = requestShiftMs.saturatingAdd(delta)
        lastPruneMs = lastPruneMs.map { $0.saturatingAdd(delta) }
    }

    /// A write carrying `shiftMs` of the request step succeeded.
    mutating func requestShiftWritten(_ shiftMs: Millis) {
        requestShiftMs -= shiftMs
    }

    /// Whether to prune now (and counts it as done).
    mutating func pruneIsDue(now: Millis) -> Bool {
        if let last = lastPruneMs, now - last < Self.pruneIntervalMs { return false }
        lastPruneMs = now
        return true
    }
}

/// The machine's side of its writes: the output waiting for the write it asked for, the
/// commands of a group that follow a deletion, and the store's upkeep.
struct WritePlan {
    /// The output whose write the last step asked for (`.write`), until `.written`.
    var pending: PendingWrite?
    /// Commands of a group that follow a deletion: handled once its write is done.
    var queuedCommands: ArraySlice<InboundMessage> = []
    var upkeep = StoreUpkeep()
}

/// An output waiting for its write (`EngineEffect.write`).
struct PendingWrite {
    var output: EngineOutput
    var batch: StoreBatch
    /// The instant of the input it came from (its publishes are snapshots at it).
    var now: Millis
    /// A start-up's write (`EngineMachine.restore`): its events wait for the first connect.
    var restoring: Bool
}

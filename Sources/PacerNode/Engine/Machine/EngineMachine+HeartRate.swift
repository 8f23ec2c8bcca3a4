import Logging
import PacerCore

extension EngineMachine {
    /// A message on a heart-rate source topic.
    mutating func heartRateMessage(_ message: InboundMessage, now: Millis, into output: inout EngineOutput) {
        switch heartRate.receive(topic: message.topic, payload: message.payload, now: now) {
        case .notASource:
            if athleteMessage(message, now: now) { return }  // a class's athlete (EngineMachine+Athletes.swift)
            logger.debug("message on an unexpected topic", metadata: ["topic": "\(printable(message.topic, limit: 200))"])
        case .unreadable(let source, let reason):
            logOnce(source, "a heart-rate reading could not be read; it is ignored", reason)
        case .outOfRange(let source, let bpm):
            logOnce(source, "a heart-rate reading outside 25…250 bpm is ignored", "\(bpm) bpm")
        case .accepted(let source, _, let changed):
            if let stale = heartRate.staleAt(source) { deadlines.set(.heartRate(source), at: stale) }
            guard changed else { return }
            // Republishes the state and, if it changed, the plain `hr` topic (both carry hr).
            for id in timers(boundTo: source) { output.timerChanged(id, events: []) }
        }
    }

    /// The source went quiet for the staleness window: its timers show an empty `hr`
    /// (the snapshot no longer has a reading, so `publishTimer` publishes it empty).
    mutating func heartRateWentStale(_ source: String, now: Millis, into output: inout EngineOutput) {
        guard heartRate.current(source, now: now) == nil else {
            if let stale = heartRate.staleAt(source) { deadlines.set(.heartRate(source), at: stale) }
            return
        }
        logger.info("heart-rate source went stale", metadata: ["source": "\(source)"])
        for id in timers(boundTo: source) { output.timerChanged(id, events: []) }
    }

    func timers(boundTo source: String) -> [String] {
        timers.ids.filter { timers.read($0) { heartRate.sourceName(for: $0.machine.spec.hrSource) == source } ?? false }
    }

    private mutating func logOnce(_ source: String, _ message: Logger.Message, _ detail: String) {
        guard heartRate.isFirstProblem(of: source) else { return }
        logger.warning(message, metadata: ["source": "\(source)", "value": "\(detail)"])
    }
}

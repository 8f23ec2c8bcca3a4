import Mosquitto
import PacerCore

/// Group commit (issue 10): commands already queued behind one another are handled together
/// and written in one transaction, so a burst pays one fsync, not one per command.
extension NodeEngine {
    /// The most commands written in one transaction.
    static let maxGroupedCommands = 100

    /// A message the engine handles as a command (what `route` sends to `command`).
    nonisolated func isCommand(_ message: MQTTMessage) -> Bool {
        !message.retain && (message.topic == topics.command || topics.timerID(ofCommandTopic: message.topic) != nil)
    }

    /// Handles `first` and the commands queued right behind it (up to `maxGroupedCommands`,
    /// never past another kind of input) one by one, as `handle` would, then commits them
    /// together: one write, then the timers' topics, then every reply in order. When the
    /// write fails, every command of the group is undone (last first) and answered
    /// `storage_failure`. A deletion ends the group (the store deletes after it upserts, so a
    /// timer deleted and created again must not share a write).
    func handleCommands(first: MQTTMessage) async {
        if let earliest = deadlines.earliest(), earliest <= clock.now() {
            await handle(.deadline)  // as in `handle`: flips due before the burst come first
        }
        var output = EngineOutput()
        checkClock(&output)
        let now = clock.now()
        var message = first
        var count = 0
        while true {
            var one = EngineOutput()
            route(message, now: now, into: &one)  // a command (`isCommand`), by the same path as alone
            output.absorb(one)
            count += 1
            guard one.deletedTimers.isEmpty, count < Self.maxGroupedCommands,
                  !(stopDeadline.withLock { $0 }.map { ContinuousClock.now >= $0 } ?? false),
                  case .message(let next)? = thread.takeInput(if: { input in
                      if case .message(let queued) = input { return isCommand(queued) }
                      return false
                  })
            else { break }
            message = next
        }
        await commit(output, now: now)
        armAlarm()
    }
}

import Mosquitto
import PacerCore

/// Group commit: commands already queued behind one another are handled together
/// and written in one transaction, so a burst pays one fsync, not one per command.
extension NodeEngine {
    /// The most commands written in one transaction.
    static let maxGroupedCommands = 16

    /// Handles `first` and the commands queued right behind it (up to `maxGroupedCommands`)
    /// and hands them to the machine as one input (`.commands`): one write, then the timers'
    /// topics, then every reply in order. When the write fails, every command of the group is
    /// undone (last first) and answered `storage_failure`. A deletion ends the machine's group
    /// (`EngineMachine.commands`): the commands after it get a write of their own.
    ///
    /// The broker's acknowledgements of earlier events (`.delivered`) queued between the
    /// commands are taken in passing: each only adds its event to the marks that this write
    /// carries, so it changes nothing a command sees. Without this, a burst answered with
    /// events (pause, resume: each one an acknowledged event) alternates command,
    /// acknowledgement, command, ... and every command paid a write of its own. Any other
    /// input ends the group.
    func handleCommands(first: MQTTMessage) async {
        if hasDueDeadline {
            await handle(.deadline)  // as in `handle`: flips due before the burst come first
        }
        var group = [EffectPerformer.inbound(first)]
        while group.count < Self.maxGroupedCommands, let next = await nextGroupedCommand() {
            group.append(EffectPerformer.inbound(next))
        }
        let moment = moment()
        await perform(machine.step(group.count == 1 ? .message(group[0]) : .commands(group), at: moment), now: moment.now)
        armAlarm()
        // Read what came in meanwhile (the rest of a burst, the broker's acknowledgements of
        // what this group published) before the next input: EngineThread.serveConnectionNow.
        thread.serveConnectionNow()
    }

    /// The next queued command for the group, taking the delivery reports queued before it;
    /// nil when the next input is another kind, when a deadline fell due (its flips are not
    /// held back by a long group), when nothing more comes, or when the loop is stopping.
    ///
    /// The engine's thread also reads the command connection (`EngineThread`, MQTTLoopHost),
    /// and the readers of the client's streams run on it too (`forward`): while the engine
    /// works, a message that arrived waits in the socket, then in its stream, and its reader
    /// queues it only when its job runs. So with nothing queued, the engine reads the socket
    /// (`serveConnectionNow`), and with jobs waiting it yields once to let them queue what they
    /// hold (a few microseconds, on this thread).
    private func nextGroupedCommand() async -> MQTTMessage? {
        var yields = 0
        while !drainBudgetSpent {
            if hasDueDeadline { return nil }
            let taken = thread.takeInput(if: { input in
                switch input {
                case .message(let queued): return isCommand(queued)
                case .delivered: return true
                default: return false
                }
            })
            switch taken {
            case .message(let message)?:
                return message
            case .delivered(let report)?:
                await delivered(report)
                yields = 0
            default:
                // Another kind of input is next, or none is queued and none is on its way
                // (after a look at the socket, which this thread reads itself).
                if yields == 0, !thread.hasQueuedInput { thread.serveConnectionNow() }
                guard !thread.hasQueuedInput, thread.hasQueuedJobs, yields < Self.maxIdleYields else { return nil }
                yields += 1
                await Task.yield()
            }
        }
        return nil
    }

    /// A delivery report taken in passing: it only adds its event to the marks the group's
    /// write carries (or ends a plain topics' hold), so it changes nothing a command sees.
    private func delivered(_ report: MQTTDeliveryReport) async {
        let moment = moment()
        guard let input = performer.machineInput(.delivered(report)) else { return }
        await perform(machine.step(input, at: moment), now: moment.now)
    }

    /// Yields in a row that brought no input before a group ends.
    static let maxIdleYields = 2
}

import ArgumentParser
import Foundation
import PacerControl
import PacerNode

extension Pacer {
    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A full-screen big-digit clock of a timer (or of all timers) in the terminal.",
            discussion: """
                Counts locally from the timer's ends_at_ms with the node's measured clock offset and flips
                on the exact second. Colours as the web clock: green work, red rest, amber prepare, blue paused.
                Keys: space pause/resume · s skip · q quit; with several timers, 1-9 shows one, g the grid again.
                NO_COLOR=1 turns colours off.

                Examples:
                  pacer watch main
                  pacer watch
                  pacer watch main --bell
                  pacer watch main --broker mqtt://gym-pi.lan:1883 --node gym

                \(controlFooter)
                """)

        @Argument(help: "The timer to show; none: the only timer, or a grid of all of them.")
        var timer: String?
        @Flag(help: "Ring the terminal bell on the 3-2-1 cues, phase changes, expiry and the finish.")
        var bell = false
        @OptionGroup var control: ControlOptions

        func validate() throws {
            if let timer { do { try ControlCommand.checkTimerID(timer) } catch { throw ValidationError(error.message) } }
            guard Terminal.isInteractive else {
                throw ValidationError("pacer watch needs a terminal; for scripts use `pacer status` or subscribe to the topics")
            }
        }

        func run() async throws {
            let color = ProcessInfo.processInfo.environment["NO_COLOR"].map(\.isEmpty) ?? true
            try await control.perform("watch") { client, _ throws(ControlError) in
                let session = WatchSession(client: client, timer: timer, terminal: Terminal(), color: color,
                                           timeout: control.timeoutDuration, bell: bell)
                try await session.run()
            }
        }
    }
}

import ArgumentParser
import Foundation
import PacerControl
import PacerCore
import PacerProtocol

extension Pacer {
    /// `pacer athlete …`: a class's athletes (docs/API.md, "Athletes (a class)").
    struct Athlete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A class's athletes: list them, set or clear a name, colour and max heart rate.",
            discussion: """
                Examples:
                  pacer athlete list
                  pacer athlete set alice --name Alice --colour '#e4572e' --max-hr 188
                  pacer athlete clear alice

                The node needs heart_rate.athletes in its configuration (docs/configuration.md).

                \(controlFooter)
                """,
            subcommands: [ListAthletes.self, SetProfile.self, ClearProfile.self],
            defaultSubcommand: ListAthletes.self)

        struct ListAthletes: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list",
                abstract: "The athletes the node lists on <base>/athletes: present ones and kept profiles.",
                discussion: """
                    Examples:
                      pacer athlete list
                      pacer athlete list --json

                    \(controlFooter)
                    """)

            @Flag(help: "Print the node's retained athletes document as JSON.")
            var json = false
            @OptionGroup var control: ControlOptions

            func run() async throws {
                try await control.perform("athlete list") { client, _ throws(ControlError) in
                    let topic = client.topics.athletes
                    try await client.subscribe([topic])
                    // The node answers first (a node that is not there is a timeout that says why);
                    // its retained list came with the subscription.
                    _ = try await client.send(.time, timeout: control.timeoutDuration)
                    guard let list = await Status.retainedState(client, topic: topic, timeout: .seconds(2)) else {
                        throw ControlError(.refused(code: ReplyErrorCode.invalidArgument.rawValue),
                                           "the node publishes no athletes on \(topic): it has no class; add heart_rate.athletes (a topic pattern like hr/+) to its configuration (docs/configuration.md)")
                    }
                    if json { print(list.description) } else { ControlOutput.athleteLines(list).forEach { print($0) } }
                }
            }
        }

        struct SetProfile: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "set",
                abstract: "Set an athlete's profile on the node (what is left out is unset).",
                discussion: """
                    The profile is kept on the node (and wins over the configuration's) until cleared. \
                    Zones are % of the max heart rate: this one, else heart_rate.max_hr.

                    Examples:
                      pacer athlete set alice --name Alice --colour '#e4572e' --max-hr 188
                      pacer athlete set bob --max-hr 176
                      pacer athlete set carol --no-leaderboard

                    \(controlFooter)
                    """)

            @Argument(help: "The athlete id: the last level of its heart-rate topic (hr/alice: alice).")
            var athlete: String
            @Option(help: "The name on its tile (1 to 100 characters).")
            var name: String?
            @Option(help: "Its tile's colour, #rrggbb.")
            var colour: String?
            @Option(help: "Its max heart rate, 100 to 250 bpm.")
            var maxHr: Int?
            @Flag(inversion: .prefixedNo, help: "Whether it is ranked and named on the class view's leaderboard.")
            var leaderboard: Bool?
            @OptionGroup var control: ControlOptions

            func validate() throws {
                do { _ = try ControlCommand.setAthlete(athlete, name: name, colour: colour, maxHR: maxHr, leaderboard: leaderboard) } catch {
                    throw ValidationError(error.message)
                }
            }

            func run() async throws {
                try await control.perform("athlete set") { client, _ throws(ControlError) in
                    let command = try ControlCommand.setAthlete(athlete, name: name, colour: colour, maxHR: maxHr, leaderboard: leaderboard)
                    print(ControlOutput.athleteReplyLine(try await client.send(command, timeout: control.timeoutDuration)))
                }
            }
        }

        struct ClearProfile: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "clear",
                abstract: "Forget the profile set on the node; the configuration's applies again.",
                discussion: """
                    Examples:
                      pacer athlete clear alice

                    \(controlFooter)
                    """)

            @Argument(help: "The athlete id.")
            var athlete: String
            @OptionGroup var control: ControlOptions

            func validate() throws {
                do { try ControlCommand.checkAthleteID(athlete) } catch { throw ValidationError(error.message) }
            }

            func run() async throws {
                try await control.perform("athlete clear") { client, _ throws(ControlError) in
                    let reply = try await client.send(try ControlCommand.clearAthlete(athlete), timeout: control.timeoutDuration)
                    print(ControlOutput.athleteReplyLine(reply))
                }
            }
        }
    }
}

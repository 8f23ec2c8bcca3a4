import ArgumentParser
import Foundation
import PacerControl
import PacerCore
import PacerProtocol

extension Pacer {
    /// `pacer schedule …`: the timetable (docs/schedules.md; docs/API.md, "Commands").
    struct ScheduleCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "schedule",
            abstract: "The timetable: list the schedules and today's classes, skip a class, save or delete a schedule.",
            discussion: """
                Examples:
                  pacer schedule list
                  pacer schedule skip hiit
                  pacer schedule save --file hiit.json
                  pacer schedule delete hiit

                \(controlFooter)
                """,
            subcommands: [ListSchedules.self, Skip.self, Save.self, Delete.self],
            defaultSubcommand: ListSchedules.self)

        struct ListSchedules: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list",
                abstract: "Every schedule, and today's classes in the node's time zone (time, name, timer, status).",
                discussion: """
                    Examples:
                      pacer schedule list
                      pacer schedule list --json

                    \(controlFooter)
                    """)

            @Flag(help: "Print the node's reply as JSON (schedules and classes).")
            var json = false
            @OptionGroup var control: ControlOptions

            func run() async throws {
                try await control.perform("schedule list") { client, _ throws(ControlError) in
                    let reply = try await client.send(.listSchedules, timeout: control.timeoutDuration)
                    if json {
                        var o: [String: JSONValue] = [:]
                        o[WireField.schedules.rawValue] = reply[.schedules] ?? .array([])
                        o[WireField.classes.rawValue] = reply[.classes] ?? .null
                        print(JSONValue.object(o).description)
                    } else {
                        ControlOutput.scheduleLines(reply).forEach { print($0) }
                    }
                }
            }
        }

        struct Skip: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Skip the schedule's next class (the reply says which).",
                discussion: """
                    Examples:
                      pacer schedule skip hiit

                    \(controlFooter)
                    """)

            @Argument(help: "The schedule id.")
            var schedule: String
            @OptionGroup var control: ControlOptions

            func validate() throws {
                do { _ = try ControlCommand.skipNext(schedule) } catch { throw ValidationError(error.message) }
            }

            func run() async throws {
                try await control.perform("schedule skip") { client, _ throws(ControlError) in
                    let reply = try await client.send(try ControlCommand.skipNext(schedule), timeout: control.timeoutDuration)
                    print(ControlOutput.scheduleReplyLine(reply))
                }
            }
        }

        struct Save: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Keep a schedule on the node (replacing one of its id), planned at once.",
                discussion: """
                    The schedule is JSON with the members of docs/schedules.md; the node checks it \
                    by the configuration's rules and names the member it refuses.

                    Examples:
                      pacer schedule save --file hiit.json
                      pacer schedule save --json '{"id": "am", "timer": "main", "preset": "tabata",
                        "weekly": [{"days": "weekdays", "at": "06:30"}]}'

                    \(controlFooter)
                    """)

            @Option(help: "A file holding the schedule as JSON.")
            var file: String?
            @Option(help: "The schedule as JSON.")
            var json: String?
            @OptionGroup var control: ControlOptions

            /// The command, from `--file` or `--json` (exactly one).
            func command() throws(ControlError) -> ControlCommand {
                switch (file, json) {
                case (let file?, nil):
                    guard let data = FileManager.default.contents(atPath: file) else {
                        throw ControlError(.usage, "--file \(file): cannot be read")
                    }
                    return try ControlCommand.saveSchedule(json: String(decoding: data, as: UTF8.self), flag: "--file \(file)")
                case (nil, let json?):
                    return try ControlCommand.saveSchedule(json: json, flag: "--json")
                case (nil, nil), (.some, .some):
                    throw ControlError(.usage, "give the schedule as --file FILE or --json '{...}' (one of them)")
                }
            }

            func validate() throws {
                do { _ = try command() } catch { throw ValidationError(error.message) }
            }

            func run() async throws {
                try await control.perform("schedule save") { client, _ throws(ControlError) in
                    print(ControlOutput.scheduleReplyLine(try await client.send(try command(), timeout: control.timeoutDuration)))
                }
            }
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Forget a schedule saved by command (the configuration's are changed in its file).",
                discussion: """
                    Examples:
                      pacer schedule delete hiit

                    \(controlFooter)
                    """)

            @Argument(help: "The schedule id.")
            var schedule: String
            @OptionGroup var control: ControlOptions

            func validate() throws {
                do { _ = try ControlCommand.deleteSchedule(schedule) } catch { throw ValidationError(error.message) }
            }

            func run() async throws {
                try await control.perform("schedule delete") { client, _ throws(ControlError) in
                    let reply = try await client.send(try ControlCommand.deleteSchedule(schedule), timeout: control.timeoutDuration)
                    print(ControlOutput.scheduleReplyLine(reply))
                }
            }
        }
    }

    /// `pacer display …`: the AWTRIX clocks and WLED lights kept on the node (docs/displays.md).
    struct DisplayCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "display",
            abstract: "The AWTRIX clocks and WLED lights saved on the node: list, save or delete one.",
            discussion: """
                Examples:
                  pacer display list
                  pacer display save wall --json '{"type": "awtrix", "prefix": "awtrix_gym",
                    "timers": ["main"]}'
                  pacer display delete wall

                \(controlFooter)
                """,
            subcommands: [ListDisplays.self, Save.self, Delete.self],
            defaultSubcommand: ListDisplays.self)

        struct ListDisplays: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list",
                abstract: "The displays saved by command, from the node's retained <base>/displays.",
                discussion: """
                    The configuration file's displays are counted, not listed: they are in that file.

                    Examples:
                      pacer display list
                      pacer display list --json

                    \(controlFooter)
                    """)

            @Flag(help: "Print the node's retained displays document as JSON.")
            var json = false
            @OptionGroup var control: ControlOptions

            func run() async throws {
                try await control.perform("display list") { client, _ throws(ControlError) in
                    let topic = client.topics.displays
                    try await client.subscribe([topic])
                    // The node answers first (a node that is not there is a timeout that says why);
                    // its retained document came with the subscription.
                    _ = try await client.send(.time, timeout: control.timeoutDuration)
                    guard let document = await Status.retainedState(client, topic: topic, timeout: .seconds(2)) else {
                        throw ControlError(.refused(code: ReplyErrorCode.invalidState.rawValue),
                                           "the node publishes nothing on \(topic): a node of a version without displays by command")
                    }
                    if json { print(document.description) } else { ControlOutput.displayLines(document).forEach { print($0) } }
                }
            }
        }

        struct Save: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Keep an AWTRIX clock or a WLED light on the node (replacing one of its id); it shows its timers at once.",
                discussion: """
                    The settings are JSON with the keys of a display in the configuration's displays: \
                    (docs/displays.md); the node checks them by the same rules and names the key it refuses.

                    Examples:
                      pacer display save wall --json '{"type": "awtrix", "prefix": "awtrix_gym",
                        "timers": ["main"]}'
                      pacer display save strip --json '{"type": "wled", "topic": "wled/strip",
                        "timers": ["main"]}'

                    \(controlFooter)
                    """)

            @Argument(help: "The display id (a timer id's rules).")
            var display: String
            @Option(help: "The display's settings as JSON: type (awtrix or wled), prefix or topic, timers, …")
            var json: String
            @OptionGroup var control: ControlOptions

            func validate() throws {
                do { _ = try ControlCommand.saveDisplay(display, json: json, flag: "--json") } catch { throw ValidationError(error.message) }
            }

            func run() async throws {
                try await control.perform("display save") { client, _ throws(ControlError) in
                    let command = try ControlCommand.saveDisplay(display, json: json, flag: "--json")
                    print(ControlOutput.displayReplyLine(try await client.send(command, timeout: control.timeoutDuration)))
                }
            }
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Forget a display saved by command; what it showed goes blank.",
                discussion: """
                    Examples:
                      pacer display delete wall

                    \(controlFooter)
                    """)

            @Argument(help: "The display id.")
            var display: String
            @OptionGroup var control: ControlOptions

            func validate() throws {
                do { _ = try ControlCommand.deleteDisplay(display) } catch { throw ValidationError(error.message) }
            }

            func run() async throws {
                try await control.perform("display delete") { client, _ throws(ControlError) in
                    let reply = try await client.send(try ControlCommand.deleteDisplay(display), timeout: control.timeoutDuration)
                    print(ControlOutput.displayReplyLine(reply))
                }
            }
        }
    }
}

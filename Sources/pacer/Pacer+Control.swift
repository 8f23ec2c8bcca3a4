import ArgumentParser
import Foundation
import Mosquitto
import PacerControl
import PacerCore
import PacerNode
import PacerProtocol

/// The connection settings of `pacer run` plus the reply timeout, for the control commands.
struct ControlOptions: ParsableArguments {
    @OptionGroup var node: NodeOptions
    @Option(help: "Seconds to wait for the node's reply (exit code 3 when none comes).")
    var timeout: Double = 5

    var timeoutDuration: Duration { .milliseconds(Int64((max(0.1, timeout) * 1000).rounded())) }

    /// Loads the configuration, connects, runs `body`, disconnects. A ``ControlError`` is
    /// printed as one line on stderr and becomes the exit code (docs/control.md).
    func perform(_ name: String, _ body: (ControlClient, NodeConfiguration) async throws(ControlError) -> Void) async throws {
        let (config, _) = try node.loadForControl()
        do throws(ControlError) {
            var mqtt = config.mqttConfiguration(clientID: ControlClient.makeClientID(node: config.nodeID), will: nil, cleanStart: true)
            mqtt.connectTimeout = timeoutDuration
            mqtt.shutdownTimeout = .seconds(1)
            let client = try ControlClient(configuration: mqtt, baseTopic: config.baseTopic)
            do throws(ControlError) {
                try await client.connect()
                try await body(client, config)
            } catch {
                await client.disconnect()
                throw error
            }
            await client.disconnect()
        } catch {
            FileHandle.standardError.write(Data((ControlOutput.errorLine(command: name, error) + "\n").utf8))
            throw ExitCode(error.exitCode)
        }
    }
}

extension ControlOptions {
    /// Sends the command `make` builds (with the node's configuration) and prints the reply's
    /// line: what `pacer start`, `pause`, `adjust`, `snooze`, ... do.
    func send(_ name: String, _ make: (NodeConfiguration) throws(ControlError) -> ControlCommand) async throws {
        try await perform(name) { client, config throws(ControlError) in
            let reply = try await client.send(try make(config), timeout: timeoutDuration)
            print(ControlOutput.replyLine(reply))
        }
    }
}

/// Exit codes and connection flags, shown under every control command's help.
let controlFooter = """
    Exit codes: 0 done; 1 the node refused (its message is printed); 2 configuration problem; \
    3 no reply in time (no node, or the node is offline); 4 the broker cannot be reached; 64 bad arguments.
    Connection: the flags, PACER_… variables and config file of `pacer run` (--broker, --node, --config, …).
    """

/// A control command on one timer that takes no argument (`pacer pause main`, `pacer delete
/// kitchen`): one generic command, told apart by its ``SimpleCommandName`` (argument-parser
/// names a subcommand by its type), its help from ``SimpleTimerCommand/help``.
struct SimpleCommand<Name: SimpleCommandName>: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        let (abstract, example) = Name.command.help
        return CommandConfiguration(commandName: Name.command.word, abstract: abstract,
                                    discussion: "Examples:\n  \(example)\n\n" + controlFooter)
    }

    @Argument(help: "The timer id.") var timer: String
    @OptionGroup var control: ControlOptions

    func run() async throws {
        try await control.send(Name.command.word) { _ throws(ControlError) in try ControlCommand.simple(Name.command, timer: timer) }
    }
}

/// The command of a ``SimpleCommand``: a caseless type per word.
protocol SimpleCommandName {
    static var command: SimpleTimerCommand { get }
}

extension SimpleTimerCommand {
    /// The subcommand's abstract and example.
    var help: (abstract: String, example: String) {
        switch self {
        case .action(.pause): ("Pause a running timer.", "pacer pause main")
        case .action(.resume): ("Resume a paused timer.", "pacer resume main")
        case .action(.toggle): ("Start an idle timer, pause a running one, resume a paused one (one button).", "pacer toggle main")
        case .action(.cancel): ("Stop a run; it ends as cancelled.", "pacer cancel main")
        case .action(.reset): ("Put a timer back to idle (its spec is kept).", "pacer reset main")
        case .action(.finish): ("Complete a run now.", "pacer finish main")
        case .action(.skip): ("Go to the next segment (work → rest → …).", "pacer skip main")
        case .action(.back): ("Restart the current segment, or go to the previous one within its first 3 s.", "pacer back main")
        case .action(.ack): ("Acknowledge an expired timer (stops its alerts).", "pacer ack kitchen")
        case .delete: ("Delete a timer and clear its retained topics.", "pacer delete kitchen")
        // `start`, `adjust`, `snooze` and any action that takes an argument: a command of its own.
        default: preconditionFailure("\(self) takes an argument: a command of its own")
        }
    }
}

extension Pacer {
    /// The subcommands on one timer that take no argument, in the order of `SimpleTimerCommand.all`.
    static let simpleCommands: [any ParsableCommand.Type] = [
        SimpleCommand<Pause>.self, SimpleCommand<Resume>.self, SimpleCommand<Toggle>.self, SimpleCommand<Cancel>.self,
        SimpleCommand<Reset>.self, SimpleCommand<Finish>.self, SimpleCommand<Skip>.self, SimpleCommand<Back>.self,
        SimpleCommand<Ack>.self, SimpleCommand<Delete>.self,
    ]

    enum Pause: SimpleCommandName { static let command = SimpleTimerCommand.action(.pause) }
    enum Resume: SimpleCommandName { static let command = SimpleTimerCommand.action(.resume) }
    enum Toggle: SimpleCommandName { static let command = SimpleTimerCommand.action(.toggle) }
    enum Cancel: SimpleCommandName { static let command = SimpleTimerCommand.action(.cancel) }
    enum Reset: SimpleCommandName { static let command = SimpleTimerCommand.action(.reset) }
    enum Finish: SimpleCommandName { static let command = SimpleTimerCommand.action(.finish) }
    enum Skip: SimpleCommandName { static let command = SimpleTimerCommand.action(.skip) }
    enum Back: SimpleCommandName { static let command = SimpleTimerCommand.action(.back) }
    enum Ack: SimpleCommandName { static let command = SimpleTimerCommand.action(.ack) }
    enum Delete: SimpleCommandName { static let command = SimpleTimerCommand.delete }
}

extension Pacer {
    struct Start: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Start a timer: a preset, an interval, a countdown, a stopwatch or a rest timer (created if needed).",
            discussion: """
                Without a kind, starts the timer's current spec again. Durations: 90, 90s, 1m30s, 1:30, 01:30:00.
                A running or paused timer is restarted only with --restart.

                Examples:
                  pacer start main --preset tabata
                  pacer start main --preset emom --rounds 12
                  pacer start main --work 40s --rest 20s --rounds 8 --prepare 10s
                  pacer start main --work 45s --rest 15s --rounds 3 --sets 2 --set-rest 1m --exercise Squat --exercise Row
                  pacer start kitchen --countdown 1:30:00 --name Kitchen
                  pacer start session --stopwatch --target 20m
                  pacer start bench --rest 90s --exercise "Bench press" --next Row
                  pacer start main --restart
                  pacer start main --preset tabata --start-at 2026-11-22T18:00:00Z

                \(controlFooter)
                """)

        @Argument(help: "The timer id ([a-z0-9][a-z0-9_-]{0,63}).")
        var timer: String
        @Option(help: "A preset: tabata, emom, amrap, for_time, or one of the node's config.")
        var preset: String?
        @Option(help: "Interval: work time of a round.")
        var work: String?
        @Option(help: "Interval: rest after each work; alone: a rest timer of this length.")
        var rest: String?
        @Option(help: "Interval: number of rounds.")
        var rounds: Int?
        @Option(help: "Interval: number of sets.")
        var sets: Int?
        @Option(help: "Interval: rest between sets.")
        var setRest: String?
        @Option(help: "Interval: a prepare phase before the first round.")
        var prepare: String?
        @Option(help: "Interval: a cooldown after the last round.")
        var cooldown: String?
        @Option(help: "Interval: a station of each round (repeat for several); rest timer: the exercise just done.")
        var exercise: [String] = []
        @Option(help: "Rest timer: the next exercise.")
        var next: String?
        @Option(help: "A countdown of this length (HH:MM:SS or 10m).")
        var countdown: String?
        @Flag(help: "A stopwatch (counts up).")
        var stopwatch = false
        @Option(help: "Stopwatch: the target; past it, the clock shows overtime.")
        var target: String?
        @Option(help: "Countdown or stopwatch: a label to show.")
        var label: String?
        @Option(help: "The timer's name (when it is created).")
        var name: String?
        @Flag(help: "Restart the timer if it is running or paused.")
        var restart = false
        @Option(help: "Start later: ISO 8601 (2026-11-22T18:00:00Z) or epoch ms.")
        var startAt: String?
        @OptionGroup var control: ControlOptions

        /// The flags as a request (checked and turned into JSON by PacerControl).
        var request: StartRequest {
            var request = StartRequest()
            request.preset = preset
            request.work = work
            request.rest = rest
            request.rounds = rounds
            request.sets = sets
            request.setRest = setRest
            request.prepare = prepare
            request.cooldown = cooldown
            request.exercises = exercise
            request.next = next
            request.countdown = countdown
            request.stopwatch = stopwatch
            request.target = target
            request.label = label
            request.name = name
            request.restart = restart
            request.startAt = startAt
            return request
        }

        func validate() throws {
            // Bad input fails here, before anything is sent (and without a broker). A preset
            // is checked in run(), with the presets of the configuration (which may redefine
            // a built-in).
            guard preset == nil else { return }
            do {
                _ = try request.command(timer: timer)
            } catch {
                throw ValidationError(error.message)
            }
        }

        func run() async throws {
            let request = self.request
            try await control.send("start") { config throws(ControlError) in try request.command(timer: timer, presets: config.presets) }
        }
    }

    struct Adjust: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add or remove time on the current segment.",
            discussion: """
                Examples:
                  pacer adjust main +30s
                  pacer adjust main -10
                  pacer adjust main 1m

                \(controlFooter)
                """)

        @Argument(help: "The timer id.")
        var timer: String
        @Argument(parsing: .allUnrecognized, help: "Whole seconds to add (+30s, 1m) or remove (-10).")
        var amount: [String] = []
        @OptionGroup var control: ControlOptions

        func validate() throws {
            guard amount.count == 1 else {
                throw ValidationError("give one amount, like +30s or -10; got \(amount.isEmpty ? "none" : amount.joined(separator: " "))")
            }
            do { _ = try ControlCommand.adjust(timer: timer, by: amount[0]) } catch { throw ValidationError(error.message) }
        }

        func run() async throws {
            try await control.send("adjust") { _ throws(ControlError) in try ControlCommand.adjust(timer: timer, by: amount[0]) }
        }
    }

    struct Snooze: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run an expired timer again for a while (default 60 s).",
            discussion: """
                Examples:
                  pacer snooze kitchen
                  pacer snooze kitchen 2m

                \(controlFooter)
                """)

        @Argument(help: "The timer id.")
        var timer: String
        @Argument(help: "How long: 60, 90s, 2m (whole seconds).")
        var duration: String?
        @OptionGroup var control: ControlOptions

        func validate() throws {
            do { _ = try ControlCommand.snooze(timer: timer, for: duration) } catch { throw ValidationError(error.message) }
        }

        func run() async throws {
            try await control.send("snooze") { _ throws(ControlError) in try ControlCommand.snooze(timer: timer, for: duration) }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the node's timers with status, phase and time.",
            discussion: """
                Examples:
                  pacer list
                  pacer list --json

                \(controlFooter)
                """)

        @Flag(help: "Print the node's JSON reply (its `timers` array).")
        var json = false
        @OptionGroup var control: ControlOptions

        func run() async throws {
            try await control.perform("list") { client, _ throws(ControlError) in
                let reply = try await client.send(.list, timeout: control.timeoutDuration)
                if json {
                    print(reply[.timers]?.description ?? "[]")
                } else {
                    for line in ControlOutput.listLines(reply) { print(line) }
                }
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show one timer (or all of them) as a line, or its retained state as JSON.",
            discussion: """
                Examples:
                  pacer status
                  pacer status main
                  pacer status main --json

                \(controlFooter)
                """)

        @Argument(help: "The timer id; none: every timer (like `pacer list`).")
        var timer: String?
        @Flag(help: "Print the timer's retained state JSON (count down from its ends_at_ms).")
        var json = false
        @OptionGroup var control: ControlOptions

        func validate() throws {
            if let timer { do { try ControlCommand.checkTimerID(timer) } catch { throw ValidationError(error.message) } }
        }

        func run() async throws {
            try await control.perform("status") { client, _ throws(ControlError) in
                guard let timer else {
                    let reply = try await client.send(.list, timeout: control.timeoutDuration)
                    if json { print(reply[.timers]?.description ?? "[]") } else { ControlOutput.listLines(reply).forEach { print($0) } }
                    return
                }
                let stateTopic = client.topics.timer(timer).state
                try await client.subscribe([stateTopic])
                let list = try await client.send(.list, timeout: control.timeoutDuration)
                guard let entry = list.timers?.first(where: { $0.id == timer }) else {
                    throw ControlError(.refused(code: ReplyErrorCode.unknownTimer.rawValue),
                                       "there is no timer '\(timer)'; see `pacer list`, or start it with a spec: pacer start \(timer) --countdown 5m")
                }
                let state = await Self.retainedState(client, topic: stateTopic, timeout: .seconds(2))
                if json {
                    print((state ?? list[.timers]?.array?.first(where: { TimerState(state: $0)?.id == timer }) ?? .null).description)
                } else if var merged = state.flatMap(TimerState.init(state:)) {
                    // The retained state is from the last change; the list entry is from now.
                    merged.status = entry.status
                    merged.phase = entry.phase
                    merged.display = entry.display
                    merged.remainingMs = entry.remainingMs
                    print(ControlOutput.stateLine(merged))
                } else {
                    print(ControlOutput.stateLine(entry))
                }
            }
        }

        /// The retained state on `topic` (already subscribed), waiting up to `timeout`.
        static func retainedState(_ client: ControlClient, topic: String, timeout: Duration) async -> JSONValue? {
            await value(within: timeout) {
                for await update in client.updates {
                    if case .message(topic, let payload, _) = update, !payload.isEmpty {
                        return try? JSONValue.parse(payload)
                    }
                }
                return nil
            }
        }
    }
}

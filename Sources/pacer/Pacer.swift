import ArgumentParser
import Foundation
import Logging
import PacerNode
import ServiceLifecycle

/// `pacer`: the timer node and its tools.
@main
struct Pacer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pacer",
        abstract: "A headless MQTT timer node: circuit, rest, countdown and stopwatch timers.",
        version: PacerVersion.current,
        subcommands: [Run.self, CheckConfig.self, History.self,
                      Start.self] + simpleCommands + [Adjust.self, Snooze.self,
                      Status.self, List.self, Watch.self, Athlete.self, ScheduleCommand.self, DisplayCommand.self,
                      Sound.self, Doctor.self],
        defaultSubcommand: nil
    )
}

/// The settings shared by the node and the tools; each is also `PACER_…` and a YAML key.
struct NodeOptions: ParsableArguments {
    @Option(help: "YAML configuration file (PACER_CONFIG).")
    var config: String?
    @Option(help: "Broker URL, mqtt://HOST:PORT or mqtts://HOST:PORT (PACER_BROKER; default mqtt://127.0.0.1:1883).")
    var broker: String?
    @Option(help: "Node id (PACER_NODE; default: the hostname).")
    var node: String?
    @Option(help: "Base topic (PACER_BASE_TOPIC; default pacer/<node>).")
    var baseTopic: String?
    @Option(help: "Directory for the SQLite database (PACER_DATA_DIR).")
    var dataDir: String?
    @Option(help: "Broker username (PACER_USERNAME).")
    var username: String?
    @Option(help: "File holding the broker password (PACER_PASSWORD_FILE).")
    var passwordFile: String?
    @Option(help: "CA certificate file for TLS (PACER_CA_FILE).")
    var caFile: String?
    @Option(help: "MQTT protocol version: auto (the default: 5, or 3.1.1 when the broker will not speak 5), 5 or 3.1.1 (PACER_MQTT_VERSION).")
    var mqttVersion: String?
    @Option(help: "trace, debug, info, notice, warning, error or critical (PACER_LOG_LEVEL).")
    var logLevel: String?

    var overrides: ConfigurationOverrides {
        ConfigurationOverrides(configFile: config, broker: broker, node: node, baseTopic: baseTopic,
                               dataDirectory: dataDir, username: username, passwordFile: passwordFile,
                               caFile: caFile, mqttVersion: mqttVersion, logLevel: logLevel)
    }

    /// The merged configuration, or exit 2 with every problem printed.
    func load() throws -> NodeConfiguration {
        do {
            return try NodeConfiguration.load(flags: overrides)
        } catch {
            FileHandle.standardError.write(Data("pacer: the configuration has problems:\n\(error)\n".utf8))
            throw ExitCode(2)
        }
    }

    /// The configuration of the node a control command talks to: as ``load()`` with
    /// `--config`/`PACER_CONFIG`; without, the node `pacer run` started here, else the installed
    /// `/etc/pacer/pacer.yaml` (``NodeConfiguration/loadForControl(flags:environment:installedConfig:)``).
    func loadForControl() throws -> (NodeConfiguration, ControlTarget) {
        do {
            return try NodeConfiguration.loadForControl(flags: overrides)
        } catch {
            FileHandle.standardError.write(Data("pacer: the configuration has problems:\n\(error)\n".utf8))
            throw ExitCode(2)
        }
    }
}

extension Pacer {
    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Run the timer node.")

        @OptionGroup var options: NodeOptions

        func run() async throws {
            // Before anything else: a SIGTERM while the node is still starting stops it cleanly.
            let (earlySignals, signalSources) = EarlySignals.watch()
            defer { withExtendedLifetime(signalSources) {} }
            MallocTuning.apply()
            let config = try options.load()
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = config.logLevel
                return handler
            }
            let logger = Logger(label: "pacer")
            logger.info("starting", metadata: [
                "version": "\(PacerVersion.current)", "node": "\(config.nodeID)", "base_topic": "\(config.baseTopic)",
                "broker": "\(config.broker.url)", "mqtt": "\(config.broker.mqttVersion)", "data_dir": "\(config.dataDirectory)",
            ])
            let node: PacerNode
            do {
                node = try PacerNode(configuration: config, logger: logger)
            } catch {
                logger.critical("\(error)")
                throw ExitCode(1)
            }
            // The engine loop and the broker connection in one group; on SIGTERM/SIGINT they
            // stop in reverse order: the engine first, then the connection (offline, disconnect).
            var groupConfiguration = ServiceGroupConfiguration(
                services: node.services.map {
                    .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                          failureTerminationBehavior: .gracefullyShutdownGroup)
                },
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger)
            // The escalation: a node that has not stopped 1.5 s after SIGTERM/SIGINT is
            // cancelled, and one that still runs 0.4 s later is ended by the group (the node
            // itself ends well before: see EngineService and MQTTConnectionService).
            groupConfiguration.maximumGracefulShutdownDuration = .milliseconds(1_500)
            groupConfiguration.maximumCancellationDuration = .milliseconds(400)
            let group = ServiceGroup(configuration: groupConfiguration)
            if let signal = earlySignals.caughtBeforeStart {
                logger.notice("signal \(signal) while starting: stopping as soon as the services have started")
            }
            await earlySignals.attach(group)
            // Where this node can be reached, for the flag-less control commands (LocalNodeRecord).
            let record = LocalNodeRecord.starting(flags: options.overrides, environment: ProcessInfo.processInfo.environment)
            do { try record.write() } catch { logger.notice("control commands will need flags to reach this node: \(error)") }
            defer { LocalNodeRecord.remove() }
            do {
                try await group.run()
            } catch {
                node.close()
                // Last, so the final line of the log (journalctl's tail) names the cause.
                logger.critical("\(error)")
                throw ExitCode(1)
            }
            node.close()
        }
    }

    struct CheckConfig: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check-config",
            abstract: "Validate a configuration file and print each problem with its file, line, key and reason.")

        @Argument(help: "The YAML configuration file.")
        var file: String

        func run() async throws {
            do {
                let config = try NodeConfiguration.load(flags: .init(configFile: file), environment: [:])
                print("\(file): OK")
                print("  node \(config.nodeID), base topic \(config.baseTopic), broker \(config.broker.url) (MQTT \(config.broker.mqttVersion == "auto" ? "5, or 3.1.1 if the broker will not speak 5" : config.broker.mqttVersion))")
                print("  \(config.timers.count) timer(s), \(config.presets.count) preset(s), \(config.heartRate.sources.count) heart-rate source(s)")
                print("  Home Assistant discovery " + (config.homeAssistant.enabled ? "on (prefix \(config.homeAssistant.prefix))" : "off"))
                print("  sound " + (config.sound.map { sound in
                    guard sound.enabled else { return "off" }
                    return "on (\(sound.output))"
                        + (sound.music.map { ", ducking the music on MPD \($0.host):\($0.port)" } ?? "")
                        + (sound.quiet.isEmpty ? "" : ", \(sound.quiet.count) quiet window(s)")
                } ?? "off"))
            } catch {
                print(error.description)
                throw ExitCode(1)
            }
        }
    }
}

import ArgumentParser
import Foundation
import PacerControl
import PacerCore
import PacerNode
import PacerSound

extension Pacer {
    /// `pacer doctor`: checks the whole set-up and names each fix (docs/control.md).
    struct Doctor: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check the set-up end to end (broker, node, clock, page, data, SD card, sound, Home Assistant) and name each fix.",
            discussion: """
                With no flags it checks the node `pacer run` started here, else the installed one \
                (/etc/pacer/pacer.yaml), else the defaults. Each check prints one line (✓ ok, ! warning, \
                ✗ problem, - skipped) with the fix under it; the last line names the first fix to do.

                Examples:
                  pacer doctor
                  sudo pacer doctor                       # the installed node, with its own account
                  pacer doctor --page http://gym.local/   # the wall clock's address
                  pacer doctor --json

                Exit codes: 0 all is well (warnings allowed); 1 at least one problem; 64 bad arguments.
                Connection: the flags, PACER_… variables and config file of `pacer run` (--broker, --node, --config, …).
                """)

        @OptionGroup var node: NodeOptions
        @Option(help: "The wall clock's address to check (default: the one `pacer run` was given, else the installed page http://127.0.0.1/).")
        var page: String?
        @Option(help: "Seconds to wait for each answer (broker, node, page).")
        var timeout: Double = 3
        @Flag(help: "Print the report as JSON (each check: id, status ok/warning/problem/skipped, message, fix).")
        var json = false

        func run() async throws {
            let setup = makeSetup()
            let report = await PacerControl.Doctor.run(setup)
            if json {
                print(report.json.description)
            } else {
                print(report.text)
            }
            if report.exitCode != 0 { throw ExitCode(report.exitCode) }
        }

        /// The settings to check: the configuration the control commands would use, and where
        /// the page and the system's files are.
        func makeSetup() -> DoctorSetup {
            var environment = ProcessInfo.processInfo.environment
            // Tests point the system's files (/etc/pacer, /etc/mosquitto, /etc/systemd, /dev/snd)
            // at a folder of their own.
            let root = environment["PACER_DOCTOR_ROOT"].map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 } ?? ""
            let installedConfig = root + "/etc/pacer/pacer.yaml"
            let seconds = max(0.1, timeout)
            let wait = Duration.milliseconds(Int64((seconds * 1000).rounded()))
            let installedExists = FileManager.default.fileExists(atPath: installedConfig)

            var pageChoice: (url: String, source: String)? = page.map { ($0, "--page") }
            let installedPage = installedExists ? (url: "http://127.0.0.1/", source: "the installed page, lighttpd on port 80") : nil
            let noPage = "no page to check: give its address with --page URL (no `pacer run` started with one here, no installed page)"

            var loaded: (NodeConfiguration, ControlTarget)
            do {
                loaded = try NodeConfiguration.loadForControl(flags: node.overrides, environment: environment, installedConfig: installedConfig)
            } catch {
                let file = node.config ?? environment["PACER_CONFIG"] ?? LocalNodeRecord.read()?.settings.configFile
                    ?? (installedExists ? installedConfig : nil)
                return DoctorSetup(configuration: file.map { "the configuration \($0)" } ?? "the configuration",
                                   configurationFile: file, configurationProblems: error.description, node: nil,
                                   installed: file == installedConfig, page: pageChoice ?? installedPage, noPage: noPage,
                                   root: root, toolVersion: PacerVersion.current, timeout: wait)
            }
            // The installed node's own account (deploy/install.sh writes it to pacer.env, which the
            // unit reads): used when this user may read its password file (sudo pacer doctor).
            var account = ""
            if case .configuration(installedConfig) = loaded.1, node.username == nil, environment["PACER_USERNAME"] == nil,
               let env = Self.environmentFile(root + "/etc/pacer/pacer.env"),
               let user = env["PACER_USERNAME"], let passwordFile = env["PACER_PASSWORD_FILE"],
               FileManager.default.isReadableFile(atPath: passwordFile) {
                environment["PACER_USERNAME"] = user
                environment["PACER_PASSWORD_FILE"] = passwordFile
                if let again = try? NodeConfiguration.load(flags: withFile(installedConfig), environment: environment) {
                    loaded.0 = again
                    account = ", with the node's account from /etc/pacer/pacer.env"
                }
            }
            let (config, target) = loaded
            let description: String
            var installed = false
            var dataDirectory = config.dataDirectory
            switch target {
            case .localNode(let record):
                description = "the node `pacer run` started here (pid \(record.pid)" + (record.settings.configFile.map { ", \($0)" } ?? "") + ")"
                if pageChoice == nil, let url = record.pageURL { pageChoice = (url, "the page `pacer run` was given, PACER_PAGE_URL") }
            case .configuration(let file) where file == installedConfig:
                description = "\(file), the installed node's\(account)"
                installed = true
                // The unit runs the node with --data-dir /var/lib/pacer, which wins over data_dir:.
                if node.dataDir == nil, environment["PACER_DATA_DIR"] == nil { dataDirectory = "/var/lib/pacer" }
            case .configuration(let file):
                description = "the configuration \(file)"
            case .defaults:
                let given = node.overrides.broker ?? node.overrides.node ?? node.overrides.baseTopic ?? node.overrides.dataDirectory
                    ?? ConfigurationOverrides.environment(environment).broker ?? ConfigurationOverrides.environment(environment).node
                description = given != nil ? "no configuration file: the built-in defaults with the flags and PACER_… variables given"
                                           : "no configuration file (no `pacer run` here, no \(installedConfig)): the built-in defaults"
            }
            if pageChoice == nil { pageChoice = installedPage }

            var mqtt = config.mqttConfiguration(clientID: "pacer-doctor-\(UInt32.random(in: 0...UInt32.max))", will: nil, cleanStart: true)
            mqtt.connectTimeout = wait
            let sound: DoctorSetup.Sound? = config.sound.flatMap { settings in
                guard settings.enabled else { return nil }
                switch settings.output {
                case .alsa(let name): return .alsa(name)
                case .file(let path): return .file(path)
                }
            }
            let nodeSetup = DoctorSetup.Node(
                mqtt: mqtt, brokerURL: config.broker.url, mqttVersion: config.broker.mqttVersion, nodeID: config.nodeID,
                baseTopic: config.baseTopic, dataDirectory: dataDirectory, sound: sound,
                homeAssistantPrefix: config.homeAssistant.enabled ? config.homeAssistant.prefix : nil)
            return DoctorSetup(configuration: description, configurationFile: config.configFile, configurationProblems: nil,
                               node: nodeSetup, installed: installed, page: pageChoice, noPage: noPage, root: root,
                               toolVersion: PacerVersion.current, timeout: wait)
        }

        private func withFile(_ file: String) -> ConfigurationOverrides {
            var flags = node.overrides
            flags.configFile = file
            return flags
        }

        /// `KEY=value` lines of an environment file (systemd's `EnvironmentFile=`); nil when unreadable.
        static func environmentFile(_ path: String) -> [String: String]? {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
            var values: [String: String] = [:]
            for line in text.split(separator: "\n") {
                let line = line.trimmingWhitespace()
                guard !line.hasPrefix("#"), let eq = line.firstIndex(of: "=") else { continue }
                var value = String(line[line.index(after: eq)...])
                if value.count >= 2, value.first == value.last, value.first == "\"" || value.first == "'" { value = String(value.dropFirst().dropLast()) }
                values[String(line[..<eq])] = value
            }
            return values
        }
    }
}

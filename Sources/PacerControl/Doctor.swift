import Foundation
public import Mosquitto
import PacerCore
import PacerProtocol

/// What `pacer doctor` checks: the node's settings as the `pacer` tool found them, and where
/// to look for the page and the system's files. Built by the `pacer` executable from the
/// node's configuration.
public struct DoctorSetup: Sendable {
    /// The node's side, from a valid configuration.
    public struct Node: Sendable {
        /// The broker connection (host, port, TLS, account); the client id is the doctor's own.
        public var mqtt: MQTTConfiguration
        /// `mqtt://host:port` or `mqtts://host:port`.
        public var brokerURL: String
        /// `auto`, `5` or `3.1.1`, as configured.
        public var mqttVersion: String
        public var nodeID: String
        public var baseTopic: String
        public var dataDirectory: String
        /// The sound output, nil when sound is off.
        public var sound: Sound?
        /// Home Assistant's discovery prefix, nil when discovery is off.
        public var homeAssistantPrefix: String?

        public init(mqtt: MQTTConfiguration, brokerURL: String, mqttVersion: String, nodeID: String, baseTopic: String,
                    dataDirectory: String, sound: Sound?, homeAssistantPrefix: String?) {
            self.mqtt = mqtt
            self.brokerURL = brokerURL
            self.mqttVersion = mqttVersion
            self.nodeID = nodeID
            self.baseTopic = baseTopic
            self.dataDirectory = dataDirectory
            self.sound = sound
            self.homeAssistantPrefix = homeAssistantPrefix
        }
    }

    /// Where the node plays its cues.
    public enum Sound: Sendable, Equatable {
        case alsa(String)
        case file(String)
    }

    /// Which configuration was read, in words (`/etc/pacer/pacer.yaml, the installed node's`).
    public var configuration: String
    /// The file to name in a fix, if there is one.
    public var configurationFile: String?
    /// The configuration's problems (each with file, line, key and reason); nil when valid.
    public var configurationProblems: String?
    /// The node's side; nil when the configuration has problems.
    public var node: Node?
    /// Whether this is the node installed by deploy/install.sh (`/etc/pacer/pacer.yaml`).
    public var installed: Bool
    /// The wall clock's address and where it came from; nil when there is none to check.
    public var page: (url: String, source: String)?
    /// Why there is no page to check.
    public var noPage: String
    /// A folder that stands for `/` when reading system files (tests only; `""` for the real system).
    public var root: String
    /// This tool's version.
    public var toolVersion: String
    /// The bound of every wait.
    public var timeout: Duration

    public init(configuration: String, configurationFile: String?, configurationProblems: String?, node: Node?,
                installed: Bool, page: (url: String, source: String)?, noPage: String, root: String,
                toolVersion: String, timeout: Duration) {
        self.configuration = configuration
        self.configurationFile = configurationFile
        self.configurationProblems = configurationProblems
        self.node = node
        self.installed = installed
        self.page = page
        self.noPage = noPage
        self.root = root
        self.toolVersion = toolVersion
        self.timeout = timeout
    }
}

/// `pacer doctor`: checks the set-up end to end, in order, and says each problem with its fix.
public enum Doctor {
    /// Runs every check; every wait is bounded by the setup's timeout.
    public static func run(_ setup: DoctorSetup) async -> DoctorReport {
        var report = DoctorReport(heading: heading(setup))
        var late: [DoctorCheck] = []  // Home Assistant: asked while connected, shown last

        // 1. The configuration.
        if let problems = setup.configurationProblems {
            report.checks.append(.problem("configuration", "\(setup.configuration) has problems:\n      "
                                          + problems.split(separator: "\n").joined(separator: "\n      "),
                                          fix: "correct the lines named above in \(setup.configurationFile ?? "the configuration"), then check it with pacer check-config \(setup.configurationFile ?? "FILE")"))
        } else {
            report.checks.append(.ok("configuration", "\(setup.configuration), valid"))
        }

        // 2-4, 9. The broker, the node, its clock, Home Assistant.
        var nodeClockSynchronized: Bool?
        if let node = setup.node {
            let findings = await brokerChecks(node, setup: setup)
            report.checks += findings.checks
            late.append(findings.homeAssistant)
            nodeClockSynchronized = findings.nodeClockSynchronized
        } else {
            for id in ["broker", "node", "clock"] {
                report.checks.append(.skipped(id, "not checked: the configuration has problems"))
            }
            late.append(.skipped("home_assistant", "not checked: the configuration has problems"))
        }
        report.checks.append(await ntpCheck(nodeSays: nodeClockSynchronized, timeout: setup.timeout))

        // 5. The page and its way to the broker.
        var page = await pageChecks(setup)
        // With the broker down, the page's way to it fails too: the broker's fix comes first.
        if report.checks.contains(where: { $0.id == "broker" && $0.status == .problem }),
           let index = page.firstIndex(where: { $0.id == "websocket" && $0.status == .problem }) {
            page[index].message += " (the broker itself cannot be reached: see broker above)"
            page[index].fix = "first the broker's fix above, then pacer doctor again"
        }
        report.checks += page

        // 6. The data directory.
        if let node = setup.node {
            report.checks.append(DoctorFiles.dataDirectory(node.dataDirectory, installed: setup.installed))
            if let free = DoctorFiles.freeBytes(node.dataDirectory) {
                report.checks.append(DoctorVerdict.freeSpace(bytes: free, path: DoctorFiles.existingAncestor(of: node.dataDirectory)))
            } else {
                report.checks.append(.skipped("free_space", "the free space of \(node.dataDirectory) could not be read"))
            }
        } else {
            report.checks.append(.skipped("data_dir", "not checked: the configuration has problems"))
        }

        // 7. The SD card's write budget.
        report.checks.append(DoctorFiles.mosquittoCheck(root: setup.root))
        report.checks.append(DoctorFiles.journaldCheck(root: setup.root))

        // 8. Sound.
        report.checks.append(await soundCheck(setup))

        // 9. Home Assistant.
        report.checks += late
        return report
    }

    static func heading(_ setup: DoctorSetup) -> String {
        guard let node = setup.node else { return "pacer doctor: \(setup.configuration)" }
        return "pacer doctor: the node \(node.nodeID) at \(node.baseTopic), broker \(node.brokerURL)"
    }

    // MARK: - Broker, node, clock, Home Assistant

    /// Whether `host` is this machine (so the broker is the local mosquitto).
    static func isLocal(_ host: String) -> Bool {
        if ["127.0.0.1", "localhost", "::1", "0.0.0.0"].contains(host) || host.hasPrefix("127.") { return true }
        let me = ProcessInfo.processInfo.hostName
        return host == me || host == me + ".local"
    }

    /// What the broker and the node said.
    struct BrokerFindings {
        /// The broker, node and clock lines.
        var checks: [DoctorCheck]
        /// The Home Assistant line (shown last).
        var homeAssistant: DoctorCheck
        /// The node's own word on its clock (`info.clock_synchronized`), when it has one.
        var nodeClockSynchronized: Bool? = nil
    }

    static func brokerChecks(_ node: DoctorSetup.Node, setup: DoctorSetup) async -> BrokerFindings {
        let timeout = setup.timeout
        let host = node.mqtt.host, port = node.mqtt.port
        let skippedRest: [DoctorCheck] = [
            .skipped("node", "not checked: the broker cannot be reached"),
            .skipped("clock", "not checked: the broker cannot be reached"),
        ]
        let haSkipped = DoctorCheck.skipped("home_assistant", "not checked: the broker cannot be reached")
        let where_ = setup.configurationFile.map { "broker.url in \($0), or --broker" } ?? "--broker mqtt://HOST:PORT (PACER_BROKER)"
        let startBroker = isLocal(host)
            ? "start the broker: sudo systemctl start mosquitto (why it stopped: journalctl -u mosquitto -n 50); or, if the broker is elsewhere, set \(where_)"
            : "check that \(host) is up and its broker listens on port \(port); or, if the broker is elsewhere, set \(where_)"

        // The TCP connection first: it says in plain words what is wrong with the address.
        let tcp = await doctorBlocking { () -> DoctorNetError? in
            do {
                _ = try DoctorSocket.connect(host: host, port: port, deadline: .now + timeout)
                return nil
            } catch {
                return error as? DoctorNetError ?? .failed("\(error)")
            }
        }
        if let tcp {
            return BrokerFindings(checks: [.problem("broker", "\(node.brokerURL): \(tcp)", fix: startBroker)] + skippedRest, homeAssistant: haSkipped)
        }

        var configuration = node.mqtt
        configuration.connectTimeout = timeout
        configuration.shutdownTimeout = .seconds(1)
        let connection: DoctorBrokerConnection
        do {
            connection = try DoctorBrokerConnection(configuration: configuration, baseTopic: node.baseTopic)
        } catch {
            return BrokerFindings(checks: [.problem("broker", "cannot set up the connection to \(node.brokerURL): \(error)",
                                                    fix: "check the broker's settings (\(where_)) and --ca-file")] + skippedRest,
                                  homeAssistant: haSkipped)
        }
        do {
            try await connection.connect()
        } catch {
            await connection.disconnect()
            let account = node.mqtt.username.map { "the account \($0)" } ?? "no account (anonymous)"
            let check: DoctorCheck = switch error.code {
            case .badCredentials, .notAuthorized:
                .problem("broker", "\(node.brokerURL) refused the login with \(account): \(error)",
                         fix: "give an account the broker knows: --username NAME --password-file FILE (broker.username and broker.password_file in \(setup.configurationFile ?? "the configuration")); to make one: sudo mosquitto_passwd /etc/mosquitto/passwd NAME && sudo systemctl reload mosquitto")
            case .tls:
                .problem("broker", "\(node.brokerURL): the TLS handshake failed: \(error)",
                         fix: "give the CA that signed the broker's certificate with --ca-file (broker.ca_file), and use the name the certificate was made for in the broker's address")
            default:
                .problem("broker", "\(node.brokerURL) took the TCP connection but did not answer MQTT: \(error)",
                         fix: "is this the broker's MQTT port (1883; 8883 with mqtts://), not its WebSocket one? Set \(where_)")
            }
            return BrokerFindings(checks: [check] + skippedRest, homeAssistant: haSkipped)
        }

        var checks: [DoctorCheck] = []
        let version: String
        if connection.mqtt.protocolVersion == .v5 {
            version = "speaks MQTT 5"
        } else if node.mqttVersion == "3.1.1" {
            version = "MQTT 3.1.1 (as configured; MQTT 5 not asked)"
        } else {
            version = "speaks MQTT 3.1.1 only" + (connection.mqtt.versionFallbackReason.map { " (\($0))" } ?? "")
        }
        let account = node.mqtt.username.map { "logged in as \($0)" } ?? "anonymous"
        checks.append(.ok("broker", "\(node.brokerURL) reached\(node.mqtt.tls == nil ? "" : " over TLS"), \(account), \(version)"))

        // 3. The node: its retained status and info.
        let topics = connection.topics
        _ = await connection.wait(upTo: timeout) { connection.last(topics.status) != nil && connection.last(topics.info) != nil }
        let status = connection.last(topics.status)?.message.payloadString
        let info = connection.last(topics.info).flatMap { try? JSONValue.parse($0.message.payload) }.flatMap(NodeInfoDocument.init(json:))
        let startNode = setup.installed
            ? "start the node: sudo systemctl start pacer (why it stopped: journalctl -u pacer -n 50)"
            : "start the node: pacer run (or bash scripts/run); installed as a service: sudo systemctl start pacer, its log: journalctl -u pacer -n 50"
        var online = false
        switch status.flatMap(NodeStatus.init(rawValue:)) {
        case .online?:
            online = true
            var message = "online at \(node.baseTopic)"
            var nodeCheck = DoctorCheck.ok("node", message)
            if let info {
                let nodeVersion = info.version
                let (verdict, text, fix) = DoctorVerdict.version(node: nodeVersion, tool: setup.toolVersion)
                message += ", \(text)"
                nodeCheck = DoctorCheck("node", verdict, message, fix: fix)
                if info.storageOK == false {
                    nodeCheck = .problem("node", "online, but it runs without saving its timers: \(info.storageProblem ?? "its database cannot be written")",
                                         fix: setup.installed ? "sudo chown -R pacer:pacer /var/lib/pacer && sudo systemctl restart pacer"
                                                              : "make the node's data directory writable by its user (see data_dir below), then restart the node")
                }
            } else {
                nodeCheck = .warning("node", message + ", but it publishes no \(topics.info)",
                                     fix: "restart the node (sudo systemctl restart pacer, or its pacer run)")
            }
            checks.append(nodeCheck)
        case .offline?:
            checks.append(.problem("node", "the node at \(node.baseTopic) is offline (its \(topics.status) says so): it stopped or lost the broker", fix: startNode))
        case nil:
            let others = await otherNodes(connection, excluding: node.baseTopic)
            let seen = others.isEmpty ? "no other node either" : "nodes on this broker: \(others.joined(separator: ", "))"
            checks.append(.problem("node", "no node at \(node.baseTopic): nothing was ever published on \(topics.status) (\(seen))",
                                   fix: startNode + (others.isEmpty ? "" : "; if it runs under another id, give it: --node ID (node: in the configuration)")))
        }

        // 4. The node's clock.
        if online {
            let onTimeTopic = info?.capabilities.contains(.timeTopic) ?? true
            var samples: [ClockOffset.Sample] = []
            for _ in 0..<5 {
                guard let sample = await connection.timeSample(onTimeTopic: onTimeTopic, timeout: timeout) else { break }
                samples.append(sample)
            }
            if let offset = ClockOffset(samples: samples) {
                checks.append(DoctorVerdict.clock(offsetMs: offset.offsetMs, roundTripMs: offset.roundTripMs))
                if let slow = DoctorVerdict.roundTrip(checks[0], roundTripMs: offset.roundTripMs, brokerIsLocal: isLocal(host)) {
                    checks[0] = slow
                }
            } else {
                checks.append(.problem("clock", "the node says it is online but did not answer a clock request on \(onTimeTopic ? topics.time : topics.command) within \(seconds(timeout))",
                                       fix: "restart the node (sudo systemctl restart pacer, or its pacer run); if the broker has an ACL, let this account write \(onTimeTopic ? topics.time : topics.command) (deploy/mosquitto/acl.example lets everyone write pacer/+/time)"))
            }
        } else {
            checks.append(.skipped("clock", "not checked: the node is not online"))
        }

        // 9. Home Assistant (shown last).
        let homeAssistant = await homeAssistantCheck(connection, node: node, online: online, info: info, timeout: timeout)
        await connection.disconnect()
        return BrokerFindings(checks: checks, homeAssistant: homeAssistant, nodeClockSynchronized: info?.clockSynchronized)
    }

    /// The other nodes that announced themselves on this broker (`pacer/+/status`).
    static func otherNodes(_ connection: DoctorBrokerConnection, excluding base: String) async -> [String] {
        guard await connection.subscribe(["pacer/+/status"]).isEmpty else { return [] }
        try? await Task.sleep(for: .milliseconds(500))
        return connection.heard(matching: "pacer/+/status").keys
            .map { String($0.dropLast("/status".count)) }
            .filter { $0 != base }
            .map { $0.hasPrefix("pacer/") ? String($0.dropFirst("pacer/".count)) : $0 }
            .sorted()
    }

    static func homeAssistantCheck(_ connection: DoctorBrokerConnection, node: DoctorSetup.Node, online: Bool,
                                   info: NodeInfoDocument?, timeout: Duration) async -> DoctorCheck {
        guard let prefix = node.homeAssistantPrefix else {
            return .skipped("home_assistant", "discovery is off (home_assistant.enabled: false)")
        }
        guard online else { return .skipped("home_assistant", "not checked: the node is not online") }
        let timers = info?.timers.map(\.id) ?? []
        let configTopics = timers.map { "\(prefix)/device/\(node.nodeID)_\($0)/config" }
        let statusTopic = "\(prefix)/status"
        let refused = await connection.subscribe(configTopics + [statusTopic])
        if !refused.isEmpty {
            return .skipped("home_assistant", "this account may not read \(prefix)/#, so the discovery configs could not be checked (give an account that may, with --username)")
        }
        _ = await connection.wait(upTo: min(timeout, .seconds(1))) {
            configTopics.allSatisfy { connection.last($0) != nil }
        }
        try? await Task.sleep(for: .milliseconds(200))  // a retained homeassistant/status, if any
        let missing = configTopics.filter { (connection.last($0)?.message.payload.isEmpty ?? true) }
        let haStatus = connection.last(statusTopic)?.message.payloadString
        let haText = haStatus == "online" ? "Home Assistant announced itself (\(statusTopic) online)"
            : "no sign of Home Assistant on this broker (\(statusTopic) not retained or not heard; fine without Home Assistant; otherwise point its MQTT integration at this broker)"
        if configTopics.isEmpty {
            return .ok("home_assistant", "discovery is on; the node has no timers to announce yet; \(haText)")
        }
        if missing.count == configTopics.count {
            // mosquitto grants a subscription its ACL forbids and then delivers nothing: none
            // at all may mean this account may not read them.
            return .warning("home_assistant", "discovery is on, but no discovery config of the node's \(configTopics.count) timer\(configTopics.count == 1 ? "" : "s") reached this account (\(missing.first!)): the node has not published them, or the broker's ACL does not let \(node.mqtt.username ?? "an anonymous client") read \(prefix)/#; \(haText)",
                            fix: "on the node's machine, sudo pacer doctor checks with the node's own account; if they are still missing, restart the node (sudo systemctl restart pacer, or its pacer run), and with an ACL give the node's account readwrite on \(prefix)/# (deploy/mosquitto/acl.example)")
        }
        guard missing.isEmpty else {
            return .warning("home_assistant", "discovery is on, but \(missing.count) of \(configTopics.count) timers have no discovery config on the broker (\(missing.first!)); \(haText)",
                            fix: "restart the node so it announces them (sudo systemctl restart pacer, or its pacer run); with an ACL, the node's account needs readwrite on \(prefix)/# (deploy/mosquitto/acl.example)")
        }
        return .ok("home_assistant", "\(configTopics.count) timer\(configTopics.count == 1 ? "" : "s") announced under \(prefix)/device/; \(haText)")
    }

    /// The system's time sync: `timedatectl`, else `chronyc tracking`, and what the node says.
    static func ntpCheck(nodeSays: Bool?, timeout: Duration) async -> DoctorCheck {
        let bound = min(timeout, .seconds(3))
        let fix = "turn on time sync: sudo timedatectl set-ntp true (or start chrony); the Pi needs a network route to an NTP server"
        if nodeSays == false {
            return .warning("ntp", "the node says its clock is not synchronised yet (info.clock_synchronized false)", fix: fix)
        }
        if let run = await DoctorProcess.run(["timedatectl", "show", "-p", "NTPSynchronized", "--value"], timeout: bound),
           run.status == 0, let synced = DoctorVerdict.timedatectlSynchronized(run.text) {
            return synced ? .ok("ntp", "this machine's clock is synchronised (timedatectl)")
                          : .warning("ntp", "this machine's clock is not synchronised (timedatectl: NTPSynchronized=no)", fix: fix)
        }
        if let run = await DoctorProcess.run(["chronyc", "tracking"], timeout: bound),
           run.status == 0, let synced = DoctorVerdict.chronycSynchronized(run.text) {
            return synced ? .ok("ntp", "this machine's clock is synchronised (chronyc tracking)")
                          : .warning("ntp", "this machine's clock is not synchronised (chronyc tracking)", fix: fix)
        }
        switch nodeSays {
        case true?: return .ok("ntp", "the node says its clock is synchronised (systemd-timesyncd)")
        case false?, nil: return .skipped("ntp", "time sync could not be checked here: timedatectl did not answer (no systemd?) and chronyc is not installed")
        }
    }

    // MARK: - The page

    static func pageChecks(_ setup: DoctorSetup) async -> [DoctorCheck] {
        guard let (text, source) = setup.page else {
            return [.skipped("page", setup.noPage), .skipped("websocket", "not checked: no page address")]
        }
        guard let page = URL(string: text), page.scheme == "http" || page.scheme == "https", page.host != nil else {
            return [.problem("page", "\(text) (\(source)) is not an http:// or https:// address", fix: "give the wall clock's address, like --page http://gym.local/"),
                    .skipped("websocket", "not checked: no page address")]
        }
        let deadline = ContinuousClock.now + setup.timeout
        let indexResult = await DoctorHTTP.get(page, deadline: deadline)
        var index = DoctorPage.Fetched(url: page.absoluteString, status: nil, contentType: nil)
        var scripts: [DoctorPage.Fetched] = []
        switch indexResult {
        case .failure(let error):
            index.failure = "\(error)"
        case .success(let response):
            index.status = response.status
            index.contentType = response.headers["content-type"]
            if response.status == 200 {
                // Every script the page loads, and every module those import (at most 60 files).
                var queue = DoctorPage.scriptReferences(html: String(decoding: response.body, as: UTF8.self))
                    .compactMap { DoctorPage.resolve($0, against: page) }
                var seen = Set(queue.map(\.absoluteString))
                while !queue.isEmpty, scripts.count < 60 {
                    let url = queue.removeFirst()
                    let result = await DoctorHTTP.get(url, deadline: ContinuousClock.now + setup.timeout)
                    switch result {
                    case .failure(let error):
                        scripts.append(.init(url: url.absoluteString, status: nil, contentType: nil, failure: "\(error)"))
                    case .success(let r):
                        scripts.append(.init(url: url.absoluteString, status: r.status, contentType: r.headers["content-type"]))
                        guard r.status == 200 else { continue }
                        for next in DoctorPage.moduleReferences(script: String(decoding: r.body, as: UTF8.self)) {
                            if let resolved = DoctorPage.resolve(next, against: url), seen.insert(resolved.absoluteString).inserted {
                                queue.append(resolved)
                            }
                        }
                    }
                }
            }
        }
        let pageCheck = DoctorPage.verdict(index: index, scripts: scripts, source: source)
        guard index.status == 200, let broker = DoctorPage.brokerURL(page: page) else {
            return [pageCheck, .skipped("websocket", "not checked: the page could not be read")]
        }
        let outcome = await DoctorWebSocket.probe(broker, clientID: "pacer-doctor-ws-\(UInt32.random(in: 0...UInt32.max))",
                                                  username: nil, password: nil, deadline: ContinuousClock.now + setup.timeout)
        return [pageCheck, DoctorWebSocket.verdict(outcome, url: broker.absoluteString)]
    }

    // MARK: - Sound

    static func soundCheck(_ setup: DoctorSetup) async -> DoctorCheck {
        guard let node = setup.node else { return .skipped("sound", "not checked: the configuration has problems") }
        guard let sound = node.sound else { return .skipped("sound", "sound is off (no sound: section, or enabled: false)") }
        let config = setup.configurationFile ?? "the configuration"
        switch sound {
        case .file(let path):
            let dir = (path as NSString).deletingLastPathComponent
            return access(dir, W_OK) == 0 ? .ok("sound", "cues are rendered to \(path)")
                : .problem("sound", "cues go to \(path), but \(dir) is not writable by this user", fix: "choose a writable place for sound.device: file:… in \(config)")
        case .alsa(let device):
            let dropIn = setup.root + "/etc/systemd/system/pacer.service.d/sound.conf"
            if setup.installed, !FileManager.default.fileExists(atPath: dropIn) {
                return .problem("sound", "the node plays on the ALSA device '\(device)', but the service may not open sound devices (no \(dropIn))",
                                fix: "sudo deploy/install.sh --sound-only (from the package: sudo /usr/share/pacer/install.sh --sound-only), which also restarts the node")
            }
            let devSnd = setup.root + "/dev/snd"
            if let (card, dev) = DoctorVerdict.numberedPCM(device) {
                let pcm = "\(devSnd)/pcmC\(card)D\(dev)p"
                return FileManager.default.fileExists(atPath: pcm)
                    ? .ok("sound", "the ALSA device '\(device)' exists (\(pcm)); pacer sound test plays every cue")
                    : .problem("sound", "the ALSA device '\(device)' does not exist (no \(pcm))",
                               fix: "aplay -L lists the devices: set sound.device in \(config) to one of them (docs/sound.md)")
            }
            if let run = await DoctorProcess.run(["aplay", "-L"], timeout: min(setup.timeout, .seconds(3))), run.status == 0 {
                if DoctorVerdict.alsaDeviceListed(device, in: run.text) {
                    return .ok("sound", "the ALSA device '\(device)' is listed by aplay -L; pacer sound test plays every cue")
                }
                let names = run.text.split(separator: "\n").filter { !($0.first?.isWhitespace ?? true) }.prefix(6).joined(separator: ", ")
                return .problem("sound", "the ALSA device '\(device)' is not among this machine's (aplay -L: \(names.isEmpty ? "none" : names))",
                                fix: "set sound.device in \(config) to one of aplay -L's names, e.g. plughw:CARD=Headphones (docs/sound.md); then pacer sound test")
            }
            let cards = ((try? FileManager.default.contentsOfDirectory(atPath: devSnd)) ?? []).filter { $0.hasPrefix("pcm") && $0.hasSuffix("p") }
            if cards.isEmpty {
                return .problem("sound", "the node plays on '\(device)', but this machine has no sound device (\(devSnd) has no playback device)",
                                fix: "connect a speaker (on a Pi: dtparam=audio=on in /boot/firmware/config.txt, then reboot), or turn sound off in \(config) (sound: false)")
            }
            return .warning("sound", "the node plays on '\(device)'; this machine has \(cards.count) playback device\(cards.count == 1 ? "" : "s"), but aplay is not installed to check the name",
                            fix: "sudo apt install alsa-utils, then pacer doctor again; pacer sound test plays every cue")
        }
    }

    static func seconds(_ duration: Duration) -> String {
        let ms = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return ms % 1000 == 0 ? "\(ms / 1000) s" : "\(Double(ms) / 1000) s"
    }
}

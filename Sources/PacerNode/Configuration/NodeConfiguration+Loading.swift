import Foundation
import Logging
import PacerCore

extension NodeConfiguration {
    /// The largest configuration file read (1 MiB).
    public static let maxConfigBytes = 1 << 20

    /// Builds the configuration from defaults, the YAML file (`--config` / `PACER_CONFIG`),
    /// the environment and the flags; later sources win.
    ///
    /// - Throws: `ConfigurationError` listing every problem with its file, line, key and reason.
    public static func load(
        flags: ConfigurationOverrides = .init(),
        environment: [String: String]? = nil,
        hostname: String? = nil
    ) throws(ConfigurationError) -> NodeConfiguration {
        let environment = environment ?? ProcessInfo.processInfo.environment
        let hostname = hostname ?? ProcessInfo.processInfo.hostName
        let env = ConfigurationOverrides.environment(environment)
        let node = sanitizedNodeID(hostname)
        var config = NodeConfiguration(nodeID: node, dataDirectory: defaultDataDirectory(environment))
        var problems: [ConfigurationProblem] = []
        var nodeFromFile = false, baseFromFile = false

        if let file = flags.configFile ?? env.configFile {
            config.configFile = file
            do {
                // Read whole, so bounded first: a configuration is a few kilobytes.
                if let size = (try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? Int, size > Self.maxConfigBytes {
                    throw ConfigurationError(problems: [.init(source: file, line: nil, key: "",
                        reason: "the file is \(size) bytes; a configuration is at most \(Self.maxConfigBytes) bytes (is this the right file?)")])
                }
                let text = try String(contentsOfFile: file, encoding: .utf8)
                var reader = ConfigReader(source: file)
                if let tree = try ConfigTree.parse(yaml: text, source: file) {
                    (nodeFromFile, baseFromFile) = config.read(tree, with: &reader)
                }
                problems += reader.problems
            } catch let error as ConfigurationError {
                problems += error.problems
            } catch {
                problems.append(.init(source: file, line: nil, key: "",
                                      reason: "cannot read the configuration file: \(error.localizedDescription)"))
            }
        }

        for (overrides, source) in [(env, "environment"), (flags, "command line")] {
            problems += config.apply(overrides, source: source)
        }
        // The base topic follows the node id unless it was set explicitly.
        let nodeOverridden = env.node != nil || flags.node != nil
        if !baseFromFile, env.baseTopic == nil, flags.baseTopic == nil, nodeOverridden || nodeFromFile {
            config.baseTopic = "pacer/\(config.nodeID)"
        }
        problems += config.tlsProblems()
        problems += config.validateTimers()
        if !problems.isEmpty { throw ConfigurationError(problems: problems) }
        return config
    }

    /// The hostname as a node id: lower-case, `[a-z0-9_-]` only.
    static func sanitizedNodeID(_ hostname: String) -> String {
        let short = hostname.split(separator: ".").first.map(String.init) ?? hostname
        let cleaned = String(short.lowercased().map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : "-" })
        return cleaned.isEmpty ? "pacer" : String(cleaned.prefix(64))
    }

    static func defaultDataDirectory(_ environment: [String: String]) -> String {
        if getuid() == 0 { return "/var/lib/pacer" }
        if let state = environment["XDG_STATE_HOME"], !state.isEmpty { return "\(state)/pacer" }
        return "\(environment["HOME"] ?? ".")/.local/state/pacer"
    }

    /// Reads the YAML tree into `self`; returns whether `node` and `base_topic` were set.
    private mutating func read(_ tree: ConfigTree, with r: inout ConfigReader) -> (Bool, Bool) {
        let top = r.mapping(tree, key: "", known: [
            "node", "base_topic", "broker", "data_dir", "log_level", "limits", "timing",
            "heart_rate", "timers", "presets", "history", "restore", "home_assistant", "sound",
            "publish", "displays", "time_zone", "schedules",
        ])
        readPublish(top, &r)
        if let v = r.string(top["node"], key: "node") {
            if let problem = Self.nodeIDProblem(v) { r.fail("node", top["node"], problem) } else { nodeID = v }
        }
        if let v = r.string(top["base_topic"], key: "base_topic") {
            if let problem = Self.baseTopicProblem(v) { r.fail("base_topic", top["base_topic"], problem) } else { baseTopic = v }
        }
        if let v = r.string(top["data_dir"], key: "data_dir") { dataDirectory = v }
        if let v = r.string(top["log_level"], key: "log_level") {
            if let level = Logger.Level(rawValue: v.lowercased()) { logLevel = level } else {
                r.fail("log_level", top["log_level"], Self.logLevelReason(v))
            }
        }
        readBroker(top["broker"], &r)
        readLimits(top, &r)
        readHeartRate(top["heart_rate"], &r)
        readHomeAssistant(top["home_assistant"], &r)  // NodeConfiguration+HomeAssistant.swift
        readSound(top["sound"], &r)  // NodeConfiguration+Sound.swift
        // A spoken time-left mark ("10 seconds") speaks at a countdown cue of that many seconds:
        // the timers raise one at each mark (pages with sound beep or say it there too).
        if let sound, sound.enabled, let speech = sound.speech, !speech.marks.isEmpty {
            let merged = Set(timerSettings.cues + speech.marks).sorted(by: >)
            if merged.count > 10 {
                r.fail("sound.speech.say.time_left", top["sound"],
                       "with timing.cues (\(timerSettings.cues.map(String.init).joined(separator: ", ")) s) this makes \(merged.count) countdown cues; at most 10 in all: drop some marks or cues")
            } else {
                timerSettings.cues = merged
            }
        }
        readDisplays(top["displays"], &r)  // NodeConfiguration+Displays.swift
        let presetPairs = r.mapping(top["presets"], key: "presets", known: [])
        for (name, node) in presetPairs {
            // A preset named like a built-in replaces it (the gym decides what "tabata" means).
            if Self.nodeIDProblem(name) != nil {
                r.fail("presets.\(name)", node, "preset names use a-z, 0-9, '_' and '-'")
            } else {
                presets[name] = node.json
            }
        }
        readSchedules(top, &r)  // NodeConfiguration+Schedules.swift (a schedule may name a preset)
        for (index, item) in r.sequence(top["timers"], key: "timers").enumerated() {
            let key = "timers[\(index)]"
            let fields = r.mapping(item, key: key, known: ["id", "name", "spec", "restore"])
            guard let id = r.string(fields["id"], key: "\(key).id") else {
                if fields["id"] == nil { r.fail("\(key).id", item, "every timer needs an id") }
                continue
            }
            var restore = RestorePolicy.resume
            if let text = r.string(fields["restore"], key: "\(key).restore") {
                if let policy = RestorePolicy(rawValue: text) { restore = policy } else {
                    r.fail("\(key).restore", fields["restore"], "expected resume, pause or discard, got '\(text)'")
                }
            }
            guard let spec = fields["spec"] else {
                r.fail("\(key).spec", item, "every timer needs a spec, e.g. {kind: countdown, duration: 10m}")
                continue
            }
            let name = r.string(fields["name"], key: "\(key).name") ?? id
            if fields["name"] != nil, name.contains(where: { "/+#".contains($0) }) {
                r.fail("\(key).name", fields["name"], "a timer name cannot contain / + or # (MQTT topic characters), got '\(name)'")
            }
            timers.append(.init(id: id, name: name, spec: spec.json, restore: restore))
            declarationPlaces[id] = ConfigPlace(key: key, line: spec.line, file: r.source)
        }
        return (top["node"] != nil, top["base_topic"] != nil)
    }

    private mutating func readBroker(_ node: ConfigTree?, _ r: inout ConfigReader) {
        guard let node else { return }
        let b = r.mapping(node, key: "broker", known: [
            "url", "username", "password", "password_file", "ca_file", "cert_file", "key_file",
            "verify_hostname", "mqtt_version", "keepalive", "client_id", "io_thread",
        ])
        if let url = r.string(b["url"], key: "broker.url") {
            switch Self.parseBrokerURL(url) {
            case .success(let (host, port, tls)):
                broker.host = host; broker.port = port; broker.tls = tls; brokerConfigured = true
            case .failure(let reason): r.fail("broker.url", b["url"], reason.description)
            }
        }
        if let v = r.string(b["username"], key: "broker.username") { broker.username = v }
        if let v = r.string(b["password"], key: "broker.password") { broker.password = v }
        if let file = r.string(b["password_file"], key: "broker.password_file") {
            if b["password"] != nil {
                r.fail("broker.password_file", b["password_file"], "give either password or password_file, not both")
            }
            switch Self.readPasswordFile(file) {
            case .success(let password): broker.password = password
            case .failure(let reason): r.fail("broker.password_file", b["password_file"], reason.description)
            }
        }
        for (key, path) in [("ca_file", \BrokerSettings.caFile), ("cert_file", \.certificateFile), ("key_file", \.keyFile)] {
            if let file = r.string(b[key], key: "broker.\(key)") {
                if FileManager.default.isReadableFile(atPath: file) { broker[keyPath: path] = file } else {
                    r.fail("broker.\(key)", b[key], "cannot read \(file)")
                }
            }
        }
        if (broker.certificateFile == nil) != (broker.keyFile == nil), b["cert_file"] != nil || b["key_file"] != nil {
            r.fail("broker.cert_file", b["cert_file"] ?? b["key_file"], "a client certificate needs both cert_file and key_file")
        }
        if let v = r.bool(b["verify_hostname"], key: "broker.verify_hostname") { broker.verifyHostname = v }
        if let v = r.string(b["mqtt_version"], key: "broker.mqtt_version") {
            if let version = Self.mqttVersion(v) { broker.mqttVersion = version } else {
                r.fail("broker.mqtt_version", b["mqtt_version"], "expected auto, 5 or 3.1.1, got '\(v)'")
            }
        }
        if let v = r.int(b["keepalive"], key: "broker.keepalive", range: 5...3600) { broker.keepAliveSeconds = v }
        if let v = r.string(b["io_thread"], key: "broker.io_thread") {
            if let io = MQTTIOThread(rawValue: v) { broker.ioThread = io } else {
                r.fail("broker.io_thread", b["io_thread"], "expected \(MQTTIOThread.allCases.map(\.rawValue).joined(separator: " or ")), got '\(v)'")
            }
        }
        if let v = r.string(b["client_id"], key: "broker.client_id") {
            if v.isEmpty || v.utf8.count > 128 { r.fail("broker.client_id", b["client_id"], "must be 1 to 128 bytes") } else { broker.clientID = v }
        }
    }

    /// `publish.per_second`: the plain topics that flip every second (default both; `[]`: none).
    private mutating func readPublish(_ top: [String: ConfigTree], _ r: inout ConfigReader) {
        let publish = r.mapping(top["publish"], key: "publish", known: ["per_second", "plain_connection", "cue_ahead"])
        if let v = r.duration(publish["cue_ahead"], key: "publish.cue_ahead", range: 100...10_000) { cueAheadMs = v }
        if let name = r.string(publish["plain_connection"], key: "publish.plain_connection") {
            if let connection = PlainTopicsConnection(rawValue: name) {
                plainTopicsConnection = connection
            } else {
                r.fail("publish.plain_connection", publish["plain_connection"], "expected separate or shared, got '\(name)'")
            }
        }
        guard publish["per_second"] != nil else { return }
        var topics: Set<PerSecondTopic> = []
        for (i, item) in r.sequence(publish["per_second"], key: "publish.per_second").enumerated() {
            guard let name = r.string(item, key: "publish.per_second[\(i)]") else { continue }
            if let topic = PerSecondTopic(rawValue: name) {
                topics.insert(topic)
            } else {
                let names = PerSecondTopic.allCases.map(\.rawValue).joined(separator: ", ")
                r.fail("publish.per_second[\(i)]", item, "expected one of \(names), got '\(name)'")
            }
        }
        perSecondTopics = topics
    }

    private mutating func readLimits(_ top: [String: ConfigTree], _ r: inout ConfigReader) {
        let limitsNode = r.mapping(top["limits"], key: "limits", known: ["max_timers", "max_payload_bytes", "dedup_window", "command_rate", "command_burst"])
        if let v = r.int(limitsNode["max_timers"], key: "limits.max_timers", range: 1...100_000) { limits.maxTimers = v }
        if let v = r.int(limitsNode["max_payload_bytes"], key: "limits.max_payload_bytes", range: 1024...16_777_216) { limits.maxPayloadBytes = v }
        if let v = r.duration(limitsNode["dedup_window"], key: "limits.dedup_window", range: 1_000...86_400_000) { limits.dedupWindowMs = v }
        let rate = r.int(limitsNode["command_rate"], key: "limits.command_rate", range: 1...100_000)
        let burst = r.int(limitsNode["command_burst"], key: "limits.command_burst", range: 1...100_000)
        if let rate {
            limits.commandRate = CommandRateLimit(perSecond: rate, burst: burst ?? rate)
        } else if burst != nil {
            r.fail("limits.command_burst", limitsNode["command_burst"],
                   "needs limits.command_rate (commands per second per sender; the rate limit is off without it)")
        }

        let timing = r.mapping(top["timing"], key: "timing", known: ["lag_window", "cues", "alert_interval", "auto_dismiss", "back_window"])
        if let v = r.duration(timing["lag_window"], key: "timing.lag_window", range: 0...60_000) { timerSettings.lagWindowMs = v }
        if let v = r.duration(timing["alert_interval"], key: "timing.alert_interval", range: 1_000...3_600_000) { timerSettings.alertIntervalMs = v }
        if let v = r.duration(timing["auto_dismiss"], key: "timing.auto_dismiss", range: 0...Durations.maxMs) {
            if v < 1_000 {
                r.fail("timing.auto_dismiss", timing["auto_dismiss"],
                       "must be at least 1s (an expired timer alerts until acknowledged or until auto_dismiss has passed; \(Durations.describe(v)) would finish it at once), got \(Durations.describe(v))")
            } else {
                timerSettings.autoDismissMs = v
            }
        }
        if let v = r.duration(timing["back_window"], key: "timing.back_window", range: 0...60_000) { timerSettings.backWindowMs = v }
        if timing["cues"] != nil {
            var cues: [Int] = []
            for (i, item) in r.sequence(timing["cues"], key: "timing.cues").enumerated() {
                if let v = r.int(item, key: "timing.cues[\(i)]", range: 1...3600) { cues.append(v) }
            }
            timerSettings.cues = cues.sorted(by: >)
        }
        // The core's own check of its settings, on top of the ranges above (one set of limits).
        do { try timerSettings.validate() } catch {
            let key = error.field.replacingOccurrences(of: "_ms", with: "")
            r.fail("timing.\(key)", timing[key], error.message)
        }

        let history = r.mapping(top["history"], key: "history", known: ["max_age", "max_events"])
        if let v = r.duration(history["max_age"], key: "history.max_age", range: 3_600_000...3_650 * 86_400_000) { retention.historyMaxAgeMs = v }
        if let v = r.int(history["max_events"], key: "history.max_events", range: 100...10_000_000) { retention.historyMaxEvents = v }
        let restore = r.mapping(top["restore"], key: "restore", known: ["max_age"])
        if let v = r.duration(restore["max_age"], key: "restore.max_age", range: 60_000...365 * 86_400_000) { retention.restoreMaxAgeMs = v }
    }

    private mutating func readHeartRate(_ node: ConfigTree?, _ r: inout ConfigReader) {
        let hr = r.mapping(node, key: "heart_rate", known: ["sources", "stale_after", "max_hr", "athletes", "recovery", "effort_points"])
        if let v = r.duration(hr["stale_after"], key: "heart_rate.stale_after", range: 1_000...600_000) { heartRate.staleAfterMs = v }
        if let v = r.int(hr["max_hr"], key: "heart_rate.max_hr", range: 100...250) { heartRate.maxHR = v }
        for (i, item) in r.sequence(hr["sources"], key: "heart_rate.sources").enumerated() {
            let key = "heart_rate.sources[\(i)]"
            let s = r.mapping(item, key: key, known: ["name", "topic", "field"])
            guard let topic = r.string(s["topic"], key: "\(key).topic") else {
                if s["topic"] == nil { r.fail("\(key).topic", item, "every heart-rate source needs a topic") }
                continue
            }
            if topic.isEmpty || topic.contains("#") || topic.contains("+") {
                r.fail("\(key).topic", s["topic"], "must be one topic without wildcards, got '\(topic)'")
                continue
            }
            let name = r.string(s["name"], key: "\(key).name") ?? "hr\(i + 1)"
            if heartRate.sources.contains(where: { $0.name == name }) {
                r.fail("\(key).name", s["name"] ?? item, "another source is already named '\(name)'")
                continue
            }
            let field = r.string(s["field"], key: "\(key).field").map { $0.split(separator: ".").map(String.init) }
            heartRate.sources.append(.init(name: name, topic: topic, field: field))
        }
        readAthletes(hr["athletes"], &r)
        readRecovery(hr["recovery"], &r)  // NodeConfiguration+HeartRateResults.swift
        readEffortPoints(hr["effort_points"], &r)
    }

    /// Applies flags or environment values; returns problems found in them.
    private mutating func apply(_ o: ConfigurationOverrides, source: String) -> [ConfigurationProblem] {
        var problems: [ConfigurationProblem] = []
        func fail(_ key: String, _ reason: String) {
            problems.append(.init(source: source, line: nil, key: key, reason: reason))
        }
        let prefix = source == "environment" ? "PACER_" : "--"
        func name(_ key: String) -> String {
            prefix == "--" ? "--" + key.replacingOccurrences(of: "_", with: "-") : "PACER_" + key.uppercased()
        }
        if let v = o.node {
            if let problem = Self.nodeIDProblem(v) { fail(name("node"), problem) } else { nodeID = v }
        }
        if let v = o.baseTopic {
            if let problem = Self.baseTopicProblem(v) { fail(name("base_topic"), problem) } else { baseTopic = v }
        }
        if let v = o.broker {
            switch Self.parseBrokerURL(v) {
            case .success(let (host, port, tls)): broker.host = host; broker.port = port; broker.tls = tls; brokerConfigured = true
            case .failure(let reason): fail(name("broker"), reason.description)
            }
        }
        if let v = o.dataDirectory { dataDirectory = v }
        if let v = o.username { broker.username = v }
        if let v = o.passwordFile {
            switch Self.readPasswordFile(v) {
            case .success(let password): broker.password = password
            case .failure(let reason): fail(name("password_file"), reason.description)
            }
        }
        if let v = o.caFile {
            if FileManager.default.isReadableFile(atPath: v) { broker.caFile = v } else {
                fail(name("ca_file"), "cannot read \(v)")
            }
        }
        if let v = o.mqttVersion {
            if let version = Self.mqttVersion(v) { broker.mqttVersion = version } else {
                fail(name("mqtt_version"), "expected auto, 5 or 3.1.1, got '\(v)'")
            }
        }
        if let v = o.logLevel {
            if let level = Logger.Level(rawValue: v.lowercased()) { logLevel = level } else {
                fail(name("log_level"), Self.logLevelReason(v))
            }
        }
        return problems
    }

    /// TLS follows the URL's scheme alone (after every layer applied): TLS files with a plain
    /// `mqtt://` URL are a mistake to report, never a reason to guess (a certificate silently
    /// dropped, or TLS spoken to a plain port).
    private func tlsProblems() -> [ConfigurationProblem] {
        let set = [("ca_file", broker.caFile), ("cert_file", broker.certificateFile), ("key_file", broker.keyFile)]
            .filter { $0.1 != nil }.map(\.0)
        guard !broker.tls, !set.isEmpty else { return [] }
        let names = set.joined(separator: ", ")
        return [ConfigurationProblem(
            source: configFile ?? "configuration", line: nil, key: "broker.url",
            reason: "\(names) \(set.count == 1 ? "is a TLS setting" : "are TLS settings"), but the broker URL mqtt://\(broker.host):\(broker.port) is plain TCP; use mqtts://\(broker.host):8883 (or the broker's TLS port), or remove \(names)")]
    }

    /// Compiles every declared timer and preset so a bad spec fails at start, not at first use.
    private func validateTimers() -> [ConfigurationProblem] {
        var problems: [ConfigurationProblem] = []
        var seen = Set<String>()
        let source = configFile ?? "configuration"
        for timer in timers {
            let place = declarationPlaces[timer.id] ?? ConfigPlace(key: "timers", line: nil, file: source)
            let (key, line, file) = (place.key, place.line, place.file)
            do {
                try TimerMachine.validateID(timer.id)
            } catch {
                problems.append(.init(source: file, line: line, key: "\(key).id", reason: error.message))
                continue
            }
            if !seen.insert(timer.id).inserted {
                problems.append(.init(source: file, line: line, key: "\(key).id", reason: "another timer already has the id '\(timer.id)'"))
            }
            do {
                let spec = try TimerSpec(json: timer.spec, presets: presets)
                _ = try TimerMachine(id: timer.id, name: timer.name, spec: spec, settings: timerSettings)
            } catch {
                problems.append(.init(source: file, line: line, key: "\(key).spec.\(error.field)", reason: error.message))
            }
        }
        for (name, preset) in presets.sorted(by: { $0.key < $1.key }) {
            do {
                _ = try TimerSpec(json: preset, presets: presets).compile()
            } catch {
                problems.append(.init(source: source, line: nil, key: "presets.\(name).\(error.field)", reason: error.message))
            }
        }
        if timers.count > limits.maxTimers {
            problems.append(.init(source: source, line: nil, key: "timers", reason: "\(timers.count) timers declared, more than limits.max_timers (\(limits.maxTimers))"))
        }
        return problems
    }

    // MARK: - Value checks shared by the file, the environment and the flags

    static func nodeIDProblem(_ id: String) -> String? {
        let ok = !id.isEmpty && id.utf8.count <= 64 && id.utf8.allSatisfy { c in
            (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c == 0x2d || c == 0x5f
        }
        return ok ? nil : "a node id uses 1 to 64 of a-z, 0-9, '-' and '_', got '\(id)'"
    }

    static func baseTopicProblem(_ topic: String) -> String? {
        if topic.isEmpty { return "the base topic cannot be empty" }
        if topic.contains("#") || topic.contains("+") { return "the base topic cannot contain '+' or '#', got '\(topic)'" }
        if topic.hasPrefix("/") || topic.hasSuffix("/") { return "the base topic cannot start or end with '/', got '\(topic)'" }
        if topic.hasPrefix("$") { return "topics starting with '$' are reserved by the broker, got '\(topic)'" }
        return nil
    }

    static func mqttVersion(_ text: String) -> String? {
        switch text.lowercased() {
        case "5", "5.0", "v5", "mqttv5": "5"
        case "3.1.1", "311", "v3.1.1", "4", "mqttv311": "3.1.1"
        case "auto", "": "auto"
        default: nil
        }
    }

    static func logLevelReason(_ text: String) -> String {
        let levels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
        return "expected one of \(levels), got '\(text)'"
    }

    /// Parses `mqtt://host:port` / `mqtts://host:port` (port optional: 1883 / 8883).
    static func parseBrokerURL(_ text: String) -> Result<(String, Int, Bool), Reason> {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            return .failure(.init("expected mqtt://HOST:PORT or mqtts://HOST:PORT, got '\(text)'"))
        }
        let tls: Bool
        switch scheme {
        case "mqtt", "tcp": tls = false
        case "mqtts", "ssl", "tls": tls = true
        default: return .failure(.init("unsupported scheme '\(scheme)'; use mqtt:// or mqtts://"))
        }
        guard let host = components.host, !host.isEmpty else {
            return .failure(.init("no host in '\(text)'; expected mqtt://HOST:PORT"))
        }
        let port = components.port ?? (tls ? 8883 : 1883)
        guard (1...65_535).contains(port) else { return .failure(.init("port must be 1 to 65535, got \(port)")) }
        return .success((host, port, tls))
    }

    static func readPasswordFile(_ path: String) -> Result<String, Reason> {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            return .failure(.init("cannot read the password file \(path)"))
        }
        let password = text.trimmingCharacters(in: .newlines)
        if password.isEmpty { return .failure(.init("the password file \(path) is empty")) }
        return .success(password)
    }
}

/// A reason text, as an `Error` so it fits `Result`.
struct Reason: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

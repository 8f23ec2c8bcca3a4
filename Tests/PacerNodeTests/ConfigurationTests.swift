import Foundation
import Mosquitto
import PacerCore
import PacerProtocol
@testable import PacerNode
import PacerTestSupport
import Testing

/// The configuration loader: YAML file, environment and flags, and its error messages.
/// A class so that `deinit` (after each test: every test gets its own instance) removes
/// the files it wrote.
@Suite final class ConfigurationTests {
    private var directories: [URL] = []

    deinit {
        for directory in directories { try? FileManager.default.removeItem(at: directory) }
    }

    private func write(_ yaml: String) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pacer-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        directories.append(dir)
        let file = dir.appendingPathComponent("pacer.yaml").path
        try yaml.write(toFile: file, atomically: false, encoding: .utf8)
        return file
    }

    private func problems(_ yaml: String, env: [String: String] = [:]) throws -> [ConfigurationProblem] {
        let file = try write(yaml)
        do {
            _ = try NodeConfiguration.load(flags: .init(configFile: file), environment: env, hostname: "box")
            return []
        } catch {
            return error.problems
        }
    }

    @Test func defaultsFollowTheHostname() throws {
        let config = try NodeConfiguration.load(environment: [:], hostname: "Gym-Pi.local")
        #expect(config.nodeID == "gym-pi")
        #expect(config.baseTopic == "pacer/gym-pi")
        #expect(config.broker.url == "mqtt://127.0.0.1:1883")
        #expect(config.broker.mqttVersion == "auto")
        let mqtt = config.mqttConfiguration(clientID: "c", will: nil, cleanStart: true)
        #expect(mqtt.version == .v5 && mqtt.fallsBackToV3_1_1, "auto: MQTT 5 first, 3.1.1 when the broker will not speak it")
        #expect(config.brokerConfigured == false)
        #expect(config.clientID == "pacer-gym-pi")
    }

    /// An empty file is the defaults (the fuzz target of `load` leaves it to this test: see Fuzz/Load/LoadFuzz.swift).
    @Test func emptyFileIsTheDefaults() throws {
        let file = try write("")
        let config = try NodeConfiguration.load(flags: .init(configFile: file), environment: [:], hostname: "box")
        #expect(config.nodeID == "box" && config.configFile == file)
        #expect(config.limits == NodeLimits() && config.limits.commandRate == nil && config.timers.isEmpty)
    }

    @Test func fullFileIsRead() throws {
        let secret = try write("s3cret\n")
        let file = try write("""
            node: gym
            broker:
              url: mqtt://10.0.0.5:1884
              username: coach
              password_file: \(secret)
              mqtt_version: 3.1.1
              keepalive: 20
              io_thread: library
            log_level: debug
            limits: {max_timers: 10, max_payload_bytes: 2048, dedup_window: 5m}
            timing: {lag_window: 1s, cues: [1, 5, 3], alert_interval: 5s, auto_dismiss: 1m}
            heart_rate:
              max_hr: 190
              stale_after: 3s
              sources:
                - {name: alice, topic: hr/alice}
                - {name: watch, topic: watch/state, field: heart_rate.bpm}
            timers:
              - {id: main, name: Main clock, spec: {preset: tabata}, restore: pause}
            presets:
              hiit: {kind: interval, work: 45s, rest: 15s, rounds: 10}
            restore: {max_age: 2h}
            """)
        let c = try NodeConfiguration.load(flags: .init(configFile: file), environment: [:], hostname: "box")
        #expect(c.nodeID == "gym")
        #expect(c.baseTopic == "pacer/gym")
        #expect(c.broker.host == "10.0.0.5" && c.broker.port == 1884 && c.brokerConfigured)
        #expect(c.broker.username == "coach" && c.broker.password == "s3cret")
        #expect(c.broker.mqttVersion == "3.1.1" && c.broker.keepAliveSeconds == 20 && c.broker.ioThread == .library)
        #expect(c.logLevel == .debug)
        #expect(c.limits == NodeLimits(maxTimers: 10, maxPayloadBytes: 2048, dedupWindowMs: 300_000))
        #expect(c.timerSettings.lagWindowMs == 1_000)
        #expect(c.timerSettings.cues == [5, 3, 1])
        #expect(c.timerSettings.alertIntervalMs == 5_000 && c.timerSettings.autoDismissMs == 60_000)
        #expect(c.heartRate.maxHR == 190 && c.heartRate.staleAfterMs == 3_000)
        #expect(c.heartRate.sources.map(\.name) == ["alice", "watch"])
        #expect(c.heartRate.sources[1].field == ["heart_rate", "bpm"])
        #expect(c.timers.map(\.id) == ["main"] && c.timers[0].restore == .pause)
        #expect(c.presets["hiit"]?["work"] == .string("45s"))
        #expect(c.retention.restoreMaxAgeMs == 7_200_000)
    }

    /// `broker.io_thread` is the MQTT client's one I/O profile, on both of the node's
    /// connections: `engine` by default, `library` (libmosquitto's own loop) when asked.
    @Test func ioThreadSelectsTheClientProfile() throws {
        for (yaml, profile) in [("", MQTTIOProfile.engine), ("broker: {io_thread: engine}\n", .engine), ("broker: {io_thread: library}\n", .library)] {
            let c = try NodeConfiguration.load(flags: .init(configFile: try write("node: gym\n" + yaml)), environment: [:], hostname: "box")
            let topics = Topics(base: c.baseTopic)
            #expect(PacerNode.mqttConfiguration(c, topics: topics).ioProfile == profile, "\(yaml)")
            #expect(PacerNode.plainMQTTConfiguration(c).ioProfile == profile, "\(yaml)")
        }
    }

    @Test func environmentOverridesFileAndFlagsOverrideEnvironment() throws {
        let file = try write("node: filenode\nbroker: {url: mqtt://file:1}\n")
        let env = ["PACER_NODE": "envnode", "PACER_BROKER": "mqtt://env:2", "PACER_LOG_LEVEL": "error"]
        let fromEnv = try NodeConfiguration.load(flags: .init(configFile: file), environment: env, hostname: "h")
        #expect(fromEnv.nodeID == "envnode" && fromEnv.baseTopic == "pacer/envnode")
        #expect(fromEnv.broker.host == "env" && fromEnv.broker.port == 2)
        #expect(fromEnv.logLevel == .error)
        let fromFlags = try NodeConfiguration.load(
            flags: .init(configFile: file, broker: "mqtts://flag", node: "flagnode", baseTopic: "gym/clock"),
            environment: env, hostname: "h")
        #expect(fromFlags.nodeID == "flagnode" && fromFlags.baseTopic == "gym/clock")
        #expect(fromFlags.broker.host == "flag" && fromFlags.broker.port == 8883 && fromFlags.broker.tls)
    }

    @Test("TLS follows the URL scheme; TLS files with a plain mqtt:// URL are reported, not dropped or guessed")
    func tlsFollowsTheScheme() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pacer-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var paths: [String: String] = [:]
        for name in ["ca", "cert", "key"] {
            paths[name] = dir.appendingPathComponent("\(name).pem").path
            try "pem".write(toFile: paths[name]!, atomically: false, encoding: .utf8)
        }
        let files = "ca_file: \(paths["ca"]!), cert_file: \(paths["cert"]!), key_file: \(paths["key"]!)"

        // mqtts:// with all three: TLS with the client certificate.
        let file = try write("broker: {url: mqtts://broker.lan, \(files)}\n")
        let good = try NodeConfiguration.load(flags: .init(configFile: file), environment: [:], hostname: "h")
        #expect(good.broker.tls && good.broker.port == 8883)
        #expect(good.broker.caFile == paths["ca"] && good.broker.certificateFile == paths["cert"] && good.broker.keyFile == paths["key"])

        // A client certificate with a plain URL (explicit, or the default): one clear problem.
        let plain = try problems("broker: {url: mqtt://broker.lan:1883, cert_file: \(paths["cert"]!), key_file: \(paths["key"]!)}\n")
        #expect(plain.count == 1, "\(plain)")
        #expect(plain.first?.key == "broker.url")
        #expect(plain.first?.reason == "cert_file, key_file are TLS settings, but the broker URL mqtt://broker.lan:1883 is plain TCP; use mqtts://broker.lan:8883 (or the broker's TLS port), or remove cert_file, key_file")
        let defaulted = try problems("broker: {ca_file: \(paths["ca"]!)}\n")
        #expect(defaulted.map(\.reason) == ["ca_file is a TLS setting, but the broker URL mqtt://127.0.0.1:1883 is plain TCP; use mqtts://127.0.0.1:8883 (or the broker's TLS port), or remove ca_file"])

        // A plain --broker over a TLS file is reported too, not silently plain.
        #expect(throws: ConfigurationError.self) {
            try NodeConfiguration.load(flags: .init(configFile: file, broker: "mqtt://127.0.0.1:1883"), environment: [:], hostname: "h")
        }
        // And --ca-file alone does not turn TLS on behind a plain URL.
        #expect(throws: ConfigurationError.self) {
            try NodeConfiguration.load(flags: .init(caFile: paths["ca"]!), environment: [:], hostname: "h")
        }
    }

    @Test("publish.per_second: the listed plain topics flip every second; an unknown one is an error with the choices")
    func perSecondTopics() throws {
        let file = try write("node: gym\npublish:\n  per_second: [display]\n")
        let config = try NodeConfiguration.load(flags: .init(configFile: file), environment: [:], hostname: "box")
        #expect(config.perSecondTopics == [.display])
        #expect(try NodeConfiguration.load(environment: [:], hostname: "box").perSecondTopics == [.remaining, .display])
        let none = try NodeConfiguration.load(flags: .init(configFile: try write("publish: {per_second: []}\n")), environment: [:], hostname: "box")
        #expect(none.perSecondTopics.isEmpty)
        let found = try problems("node: gym\npublish:\n  per_second: [remaning]\n")
        #expect(found.map(\.description).count == 1, "\(found)")
        #expect(found.first?.key == "publish.per_second[0]" && found.first?.line == 3)
        #expect(found.first?.reason == "expected one of remaining, display, got 'remaning'", "\(found)")
    }

    @Test("publish.plain_connection: separate by default, shared on request; anything else is an error with the choices")
    func plainTopicsConnection() throws {
        let defaults = try NodeConfiguration.load(environment: [:], hostname: "box")
        #expect(defaults.plainTopicsConnection == .separate)
        #expect(defaults.plainClientID == "pacer-box-plain")
        let shared = try NodeConfiguration.load(flags: .init(configFile: try write("publish: {plain_connection: shared}\n")), environment: [:], hostname: "box")
        #expect(shared.plainTopicsConnection == .shared)
        let found = try problems("node: gym\npublish:\n  plain_connection: both\n")
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.key == "publish.plain_connection" && found.first?.line == 3)
        #expect(found.first?.reason == "expected separate or shared, got 'both'", "\(found)")
    }

    @Test("publish.cue_ahead: off by default, a duration of 100 ms to 10 s; anything else names the key and the range")
    func cueAhead() throws {
        #expect(try NodeConfiguration.load(environment: [:], hostname: "box").cueAheadMs == nil)
        let on = try NodeConfiguration.load(flags: .init(configFile: try write("publish: {cue_ahead: 1.5s}\n")), environment: [:], hostname: "box")
        #expect(on.cueAheadMs == 1_500)
        let found = try problems("node: gym\npublish:\n  cue_ahead: 20s\n")
        #expect(found.count == 1 && found.first?.key == "publish.cue_ahead" && found.first?.line == 3, "\(found)")
    }

    @Test func problemsNameFileLineKeyAndReason() throws {
        let found = try problems("""
            node: gym
            broker:
              url: http://x
            heart_rate:
              sorces: []
            timers:
              - id: main
                spec: {kind: interval, work: 40s, rest: -5s, rounds: 8}
              - id: Bad/Id
                spec: {kind: countdown, duration: 1m}
            """)
        let text = found.map(\.description)
        #expect(found.count == 4, "\(text)")
        #expect(found.contains { $0.line == 3 && $0.key == "broker.url" && $0.reason.contains("mqtt://") })
        #expect(found.contains { $0.line == 5 && $0.key == "heart_rate.sorces" && $0.reason.contains("unknown key") })
        #expect(found.contains { $0.line == 8 && $0.key.hasPrefix("timers[0].spec") && $0.reason.contains("rest") })
        #expect(found.contains { $0.key == "timers[1].id" })
        #expect(text.contains { $0.hasSuffix("pacer.yaml:3: broker.url: unsupported scheme 'http'; use mqtt:// or mqtts://") }, "\(text)")
    }

    /// Found by fuzzing: the whole file one base-60 scalar too large for an Int (a crash).
    @Test func hugeBase60ScalarIsAProblemNotACrash() throws {
        let found = try problems("1111101111111011:-211011:-2:-2\n")
        #expect(!found.isEmpty)
    }

    /// "Billion laughs" (ten aliases of ten aliases ...) held the loader for over a
    /// minute at 1.4 GB; refused at once now.
    @Test func aliasesThatExpandWithoutBoundAreAProblem() throws {
        var lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
        for i in 1..<10 { lines.append("a\(i): &a\(i) [" + Array(repeating: "*a\(i - 1)", count: 10).joined(separator: ", ") + "]") }
        let found = try problems(lines.joined(separator: "\n") + "\n")
        #expect(found.count == 1 && found.first?.reason.contains("more than 100000 values") == true, "\(found)")
        // A few aliases, as people use them, are fine.
        #expect(try problems("x: &d {kind: countdown, duration: 1m}\npresets: {a: *d, b: *d}\n").allSatisfy { !$0.reason.contains("values") })
    }

    @Test func overlongFilesAndDeepNestingAreProblems() throws {
        let big = try problems("# " + String(repeating: "x", count: NodeConfiguration.maxConfigBytes) + "\n")
        #expect(big.first?.reason.contains("at most 1048576 bytes") == true, "\(big)")
        let deep = try problems("timers: " + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000) + "\n")
        #expect(deep.first?.reason.contains("nesting") == true, "\(deep)")
    }

    @Test func invalidYAMLReportsItsLine() throws {
        let found = try problems("node: gym\nbroker: [unclosed\n")
        #expect(found.count == 1)
        #expect(found.first?.line != nil)
        #expect(found.first?.reason.contains("invalid YAML") == true)
    }

    @Test(arguments: [
        ("broker: {url: mqtt://h:70000}", "broker.url"),
        ("broker: {mqtt_version: 4.0}", "broker.mqtt_version"),
        ("broker: {io_thread: network}", "broker.io_thread"),
        ("broker: {password: a, password_file: /nonexistent}", "broker.password_file"),
        ("limits: {max_timers: 0}", "limits.max_timers"),
        ("timing: {lag_window: 2h}", "timing.lag_window"),
        ("heart_rate: {sources: [{topic: 'hr/#'}]}", "heart_rate.sources[0].topic"),
        ("log_level: loud", "log_level"),
        ("timers: [{id: a, name: Push/Pull, spec: {kind: countdown, duration: 1m}}]", "timers[0].name"),
        ("limits: {max_timers: lots}", "limits.max_timers"),
        // Found by fuzzing: a YAML 1.1 base-60 integer too large for an Int crashed the loader.
        ("limits: {max_timers: 1111101111111011:-211011:-2:-2}", "limits.max_timers"),
        ("base_topic: pacer/#", "base_topic"),
        ("presets: {tabata: {kind: countdown, duration: 0s}}", "presets.tabata.duration"),
        ("timers: [{id: a, spec: {kind: countdown, duration: 1m}}, {id: a, spec: {kind: countdown, duration: 2m}}]", "timers[1].id"),
    ])
    func eachBadValueIsReported(yaml: String, key: String) throws {
        let found = try problems(yaml)
        #expect(found.contains { $0.key == key }, "\(found.map(\.description))")
    }

    @Test("timing.auto_dismiss: 0 is refused with a reason (it would finish an expired timer at once)")
    func autoDismissZeroIsRefused() throws {
        let found = try problems("timing: {auto_dismiss: 0}")
        let problem = try #require(found.first { $0.key == "timing.auto_dismiss" }, "\(found.map(\.description))")
        #expect(problem.reason.contains("at least 1s") && problem.reason.contains("at once"), "\(problem.reason)")
        #expect(problem.line == 1)
    }

    @Test func badFlagsAreReportedWithTheirName() throws {
        do {
            _ = try NodeConfiguration.load(flags: .init(broker: "ftp://x", node: "Bad Node"), environment: [:], hostname: "h")
            Issue.record("expected an error")
        } catch {
            let keys = error.problems.map(\.key)
            #expect(keys.contains("--broker") && keys.contains("--node"))
            #expect(error.problems.allSatisfy { $0.source == "command line" })
        }
    }

    @Test func aUserPresetMayReplaceABuiltIn() throws {
        let file = try write("presets: {tabata: {kind: interval, work: 30s, rest: 15s, rounds: 6}}\ntimers: [{id: t, spec: {preset: tabata}}]\n")
        let c = try NodeConfiguration.load(flags: .init(configFile: file), environment: [:], hostname: "h")
        let spec = try TimerSpec(json: c.timers[0].spec, presets: c.presets)
        #expect(try spec.compile().rounds == 6)
    }

    @Test func missingFileIsAClearError() throws {
        do {
            _ = try NodeConfiguration.load(flags: .init(configFile: "/nonexistent/pacer.yaml"), environment: [:], hostname: "h")
            Issue.record("expected an error")
        } catch {
            #expect(error.description.contains("/nonexistent/pacer.yaml"))
            #expect(error.description.contains("cannot read"))
        }
    }

    @Test("heart_rate.athletes: a pattern with one + level, absent_after and profiles; each mistake named with its key")
    func athletes() throws {
        let file = try write("""
            heart_rate:
              max_hr: 185
              athletes:
                topic: gym/+/hr
                field: bpm
                absent_after: 2m
                profiles:
                  - {id: alice, name: Alice, colour: "#E4572E", max_hr: 188}
                  - {id: bo}

            """)
        let c = try NodeConfiguration.load(flags: .init(configFile: file), environment: [:], hostname: "box")
        let a = try #require(c.heartRate.athletes)
        #expect(a.topic == "gym/+/hr" && a.prefix == "gym/" && a.suffix == "/hr" && a.field == ["bpm"] && a.absentAfterMs == 120_000)
        #expect(a.profiles == [AthleteProfile(id: "alice", name: "Alice", colour: "#e4572e", maxHR: 188), AthleteProfile(id: "bo")])
        #expect(try NodeConfiguration.load(environment: [:], hostname: "box").heartRate.athletes == nil)
        #expect(try #require(NodeConfiguration.load(flags: .init(configFile: write("heart_rate: {athletes: {topic: hr/+}}\n")), environment: [:],
                                                     hostname: "box").heartRate.athletes).absentAfterMs == 180_000)

        let cases: [(String, String, String)] = [
            ("heart_rate: {athletes: {topic: hr/#}}", "heart_rate.athletes.topic", "'#'"),
            ("heart_rate: {athletes: {topic: hr/alice}}", "heart_rate.athletes.topic", "exactly one '+'"),
            ("heart_rate: {athletes: {topic: hr/+/+}}", "heart_rate.athletes.topic", "exactly one '+'"),
            ("heart_rate: {athletes: {topic: hr/a+}}", "heart_rate.athletes.topic", "exactly one '+'"),
            ("heart_rate: {athletes: {topic: hr//+}}", "heart_rate.athletes.topic", "empty level"),
            ("heart_rate: {athletes: {field: bpm}}", "heart_rate.athletes.topic", "topic pattern"),
            ("heart_rate: {athletes: {topic: hr/+, absent_after: 5s}}", "heart_rate.athletes.absent_after", "between"),
            ("heart_rate: {stale_after: 30s, athletes: {topic: hr/+, absent_after: 20s}}", "heart_rate.athletes.absent_after", "longer than heart_rate.stale_after"),
            ("heart_rate: {athletes: {topic: hr/+, profiles: [{name: X}]}}", "heart_rate.athletes.profiles[0].id", "needs the athlete's id"),
            ("heart_rate: {athletes: {topic: hr/+, profiles: [{id: Alice B}]}}", "heart_rate.athletes.profiles[0].id", "timer id rules"),
            ("heart_rate: {athletes: {topic: hr/+, profiles: [{id: a}, {id: a}]}}", "heart_rate.athletes.profiles[1].id", "already"),
            ("heart_rate: {athletes: {topic: hr/+, profiles: [{id: a, colour: red}]}}", "heart_rate.athletes.profiles[0].colour", "#rrggbb"),
            ("heart_rate: {athletes: {topic: hr/+, profiles: [{id: a, max_hr: 300}]}}", "heart_rate.athletes.profiles[0].max_hr", "between 100 and 250"),
            ("heart_rate: {athletes: {topic: hr/+, colour: red}}", "heart_rate.athletes.colour", "unknown key"),
        ]
        for (yaml, key, reason) in cases {
            let found = try problems(yaml + "\n")
            #expect(found.contains { $0.key == key && $0.reason.contains(reason) }, "\(yaml): \(found)")
        }
    }
}

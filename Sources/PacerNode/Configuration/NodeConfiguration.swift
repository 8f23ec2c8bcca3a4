import Foundation
public import Logging
public import PacerCore
public import PacerDisplays
public import PacerSchedule
public import PacerSound

/// How a restored timer comes back after the node was down (docs/architecture.md, "Durability and
/// restore").
public enum RestorePolicy: String, Sendable, CaseIterable {
    /// Evaluate the timer at the current instant, as if the node had never stopped.
    case resume
    /// Come back paused, with the remaining time it had at the last write.
    case pause
    /// Drop the saved state; the timer comes back idle.
    case discard
}

/// Which thread reads and writes the broker connections' sockets (`broker.io_thread`): the MQTT
/// client's profile (`MQTTIOProfile`) for both of the node's connections.
public enum MQTTIOThread: String, Sendable, Equatable, CaseIterable {
    /// `MQTTIOProfile.engine`: the engine's thread serves the command connection and writes what
    /// it publishes (docs/architecture.md, Threads). The default: it earned its place in
    /// `scripts/bench` (docs/benchmarks/history.md, "one canonical MQTT path").
    case engine
    /// `MQTTIOProfile.library`: our poll loop on each client's network thread (the canonical
    /// sequence, `mosquitto_loop_read`/`_write`/`_misc` rather than `mosquitto_loop`).
    case library
}

/// The broker connection, as configured.
public struct BrokerSettings: Sendable, Equatable {
    public var host = "127.0.0.1"
    public var port = 1883
    /// `mqtts://` or a CA file given: connect with TLS.
    public var tls = false
    public var username: String?
    public var password: String?
    public var caFile: String?
    public var certificateFile: String?
    public var keyFile: String?
    public var verifyHostname = true
    /// `"auto"` (default: MQTT 5, and 3.1.1 when the broker will not speak 5), `"5"` or `"3.1.1"`.
    public var mqttVersion = "auto"
    public var keepAliveSeconds = 30
    /// Stable client id so the broker keeps our session; default `pacer-<node>`.
    public var clientID: String?
    /// Which thread does the MQTT client's socket I/O (`broker.io_thread`).
    public var ioThread: MQTTIOThread = .engine

    public var url: String { "\(tls ? "mqtts" : "mqtt")://\(host):\(port)" }
}

/// A heart-rate source: a topic carrying plain bpm or JSON with a field path.
public struct HeartRateSource: Sendable, Equatable {
    public var name: String
    public var topic: String
    /// Dotted path into a JSON payload (`heart_rate.bpm`); nil for a plain number.
    public var field: [String]?
}

public struct HeartRateSettings: Sendable, Equatable {
    public var sources: [HeartRateSource] = []
    /// Readings older than this are dropped and published as empty.
    public var staleAfterMs: Millis = 10_000
    /// Maximum heart rate for the five zones (% of max); nil: no zones.
    public var maxHR: Int?
    /// The class's athletes by topic pattern (NodeConfiguration+Athletes.swift); nil: none.
    public var athletes: AthleteSettings?
    /// When an athlete counts as recovered in a rest (`heart_rate.recovery`).
    public var recovery = RecoveryTarget.standard
    /// Points per minute by zone (`heart_rate.effort_points`).
    public var effortPoints = EffortPoints.standard
}

/// A timer declared in the configuration file, created at start if it does not exist.
public struct TimerDeclaration: Sendable, Equatable {
    public var id: String
    public var name: String
    public var spec: JSONValue
    public var restore: RestorePolicy
}

/// Limits that protect the node from bad or hostile input.
public struct NodeLimits: Sendable, Equatable {
    public var maxTimers = 1_000
    public var maxPayloadBytes = 65_536
    public var dedupWindowMs: Millis = 600_000
    /// The optional command rate limit (`limits.command_rate`); nil: off (the default).
    public var commandRate: CommandRateLimit?
}

/// `limits.command_rate` and `limits.command_burst`: per sender, `burst` commands at once,
/// then `perSecond`; a command over it is answered `rate_limited` (CommandRateLimiter.swift).
public struct CommandRateLimit: Sendable, Equatable {
    public var perSecond: Int
    public var burst: Int
    public init(perSecond: Int, burst: Int) {
        self.perSecond = perSecond
        self.burst = burst
    }
}

/// A plain retained topic that can flip every second (which per-second topics a node
/// publishes is configurable: docs/configuration.md).
public enum PerSecondTopic: String, Sendable, CaseIterable {
    case remaining
    case display
}

/// Which MQTT connection the plain topics (`remaining`, `display`, `phase`, `round`, `rounds`,
/// `hr`) go over (`publish.plain_connection`).
public enum PlainTopicsConnection: String, Sendable, CaseIterable {
    /// A second connection of their own (client id `<client_id>-plain`, clean start, no will):
    /// a per-second flip is never queued behind a burst of replies, states or discovery
    /// configs on the node's main connection (mosquitto reads one packet per connection per
    /// turn of its loop, so a busy connection's packets wait there).
    case separate
    /// The node's one connection, like every other topic.
    case shared
}

/// How long history and restorable state are kept.
public struct RetentionSettings: Sendable, Equatable {
    public var historyMaxAgeMs: Millis = 30 * 86_400_000
    public var historyMaxEvents = 100_000
    /// Saved state older than this is discarded at restore (default 24 h).
    public var restoreMaxAgeMs: Millis = 86_400_000
}

/// Everything the node needs to run, merged from defaults, the YAML file, `PACER_…`
/// environment variables and command-line flags (in that order; later wins).
public struct NodeConfiguration: Sendable, Equatable {
    public var nodeID: String
    public var baseTopic: String
    public var broker = BrokerSettings()
    /// True when the file, environment or flags named a broker.
    public var brokerConfigured = false
    public var dataDirectory: String
    public var logLevel: Logger.Level = .info
    public var limits = NodeLimits()
    public var timerSettings = TimerSettings()
    public var heartRate = HeartRateSettings()
    public var timers: [TimerDeclaration] = []
    public var presets: [String: JSONValue] = [:]
    public var retention = RetentionSettings()
    /// The plain topics republished on every displayed second (`publish.per_second`); the
    /// others follow `state`, which is published only when something changes.
    public var perSecondTopics: Set<PerSecondTopic> = Set(PerSecondTopic.allCases)
    /// Whether the plain topics have a connection of their own (`publish.plain_connection`).
    public var plainTopicsConnection: PlainTopicsConnection = .separate
    /// How long before each cue the node announces it on `<base>/cue_ahead`, for other
    /// players to duck their music (`publish.cue_ahead`); nil: not announced.
    public var cueAheadMs: Millis?
    /// Home Assistant MQTT discovery (HomeAssistant/HomeAssistantDiscovery.swift).
    public var homeAssistant = HomeAssistantSettings()
    /// Sound cues on the node's speaker (PacerSound); nil without a `sound:` section.
    public var sound: SoundSettings?
    /// AWTRIX clocks and WLED lights the node drives (`displays:`, NodeConfiguration+Displays.swift).
    public var displays: [DisplayConfiguration] = []
    /// The gym's timetable: classes that start themselves (`schedules:`, docs/schedules.md).
    public var schedules: [Schedule] = []
    /// The node's time zone for its schedules (`time_zone`, an IANA name); nil: the system's.
    public var timeZone: String?
    /// Where the configuration came from (for logs).
    public var configFile: String?
    /// Where each declared timer stands in the file, for error messages.
    var declarationPlaces: [String: ConfigPlace] = [:]

    public init(nodeID: String, baseTopic: String? = nil, dataDirectory: String) {
        self.nodeID = nodeID
        self.baseTopic = baseTopic ?? "pacer/\(nodeID)"
        self.dataDirectory = dataDirectory
    }

    /// The client id of the plain topics' own connection (`publish.plain_connection: separate`).
    public var plainClientID: String { "\(clientID)-plain" }

    /// The MQTT client id: configured, or `pacer-<node>`.
    public var clientID: String { broker.clientID ?? "pacer-\(nodeID)" }
}

/// Values given as command-line flags (nil: not given).
public struct ConfigurationOverrides: Sendable, Equatable {
    public var configFile: String?
    public var broker: String?
    public var node: String?
    public var baseTopic: String?
    public var dataDirectory: String?
    public var username: String?
    public var passwordFile: String?
    public var caFile: String?
    public var mqttVersion: String?
    public var logLevel: String?

    public init(configFile: String? = nil, broker: String? = nil, node: String? = nil, baseTopic: String? = nil,
                dataDirectory: String? = nil, username: String? = nil, passwordFile: String? = nil,
                caFile: String? = nil, mqttVersion: String? = nil, logLevel: String? = nil) {
        self.configFile = configFile
        self.broker = broker
        self.node = node
        self.baseTopic = baseTopic
        self.dataDirectory = dataDirectory
        self.username = username
        self.passwordFile = passwordFile
        self.caFile = caFile
        self.mqttVersion = mqttVersion
        self.logLevel = logLevel
    }

    /// The same settings read from `PACER_CONFIG`, `PACER_BROKER`, `PACER_NODE`,
    /// `PACER_BASE_TOPIC`, `PACER_DATA_DIR`, `PACER_USERNAME`, `PACER_PASSWORD_FILE`,
    /// `PACER_CA_FILE`, `PACER_MQTT_VERSION`, `PACER_LOG_LEVEL`.
    public static func environment(_ env: [String: String]) -> ConfigurationOverrides {
        func value(_ name: String) -> String? {
            guard let v = env[name], !v.isEmpty else { return nil }
            return v
        }
        return ConfigurationOverrides(
            configFile: value("PACER_CONFIG"), broker: value("PACER_BROKER"), node: value("PACER_NODE"),
            baseTopic: value("PACER_BASE_TOPIC"), dataDirectory: value("PACER_DATA_DIR"),
            username: value("PACER_USERNAME"), passwordFile: value("PACER_PASSWORD_FILE"),
            caFile: value("PACER_CA_FILE"), mqttVersion: value("PACER_MQTT_VERSION"),
            logLevel: value("PACER_LOG_LEVEL"))
    }
}

/// A place in the configuration file.
struct ConfigPlace: Sendable, Equatable {
    var key: String
    var line: Int?
    var file: String
}

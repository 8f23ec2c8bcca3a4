public import PacerCore

/// An AWTRIX 3 clock (Ulanzi TC001, DIY 32×8) driven over its MQTT API: one custom app per
/// shown timer on `<prefix>/custom/<app>`, `<prefix>/notify` when time is up, and optionally
/// `<prefix>/switch` on start (docs/displays.md, "AWTRIX 3").
public struct AwtrixDisplay: Sendable, Equatable {
    /// The device's MQTT prefix (its settings' "Prefix", e.g. `awtrix_3a1f2c`).
    public var prefix: String
    /// The timers it shows, one custom app each.
    public var timers: [String]
    /// The app's name; with more than one timer each app is `<app>_<timer>`.
    public var app: String = "pacer"
    /// Switch the clock to the app when the timer starts.
    public var switchTo: Bool = false
    /// Seconds after its last update at which the device drops the app by itself (AWTRIX's
    /// `lifetime`): how long a dead node's time can stay on the wall.
    public var lifetimeSeconds: Int = 10
    /// Post a "time's up" notification when a run ends by itself.
    public var notify: Bool = true
    /// A melody of the device's MELODIES folder for the notification (AWTRIX's `sound`).
    public var sound: String?
    /// An RTTTL string for the notification (AWTRIX's `rtttl`).
    public var rtttl: String?
    /// Icons (an icon id or file name on the device) by phase; a phase without one shows none.
    public var icons: [Phase: String] = [:]

    public init(prefix: String, timers: [String]) {
        self.prefix = prefix
        self.timers = timers
    }

    /// The custom app's name for `timer`.
    public func appName(for timer: String) -> String {
        timers.count == 1 ? app : "\(app)_\(timer)"
    }

    /// The custom app's topic for `timer`.
    public func appTopic(for timer: String) -> String { "\(prefix)/custom/\(appName(for: timer))" }
}

/// A WLED strip (or one segment of it) as a phase light, driven with JSON on `<topic>/api`
/// (docs/displays.md, "WLED").
public struct WLEDDisplay: Sendable, Equatable {
    /// What the strip does when its timer is not running, paused or expired.
    public enum Idle: String, Sendable, CaseIterable {
        /// The segment is switched off.
        case off
        /// The segment glows in the page's "done" grey at a quarter of `brightness`.
        case dim
    }

    /// The device's MQTT device topic (WLED's Sync settings, e.g. `wled/rig`).
    public var topic: String
    /// The timer it shows.
    public var timer: String
    /// The segment it drives (0 is the whole strip unless segments were set up).
    public var segment: Int = 0
    /// The most brightness the node ever sets (1-255): the strip's `bri`.
    public var brightness: Int = 128
    /// The segment's LED count: with it, the segment fills with the phase's progress.
    public var progressLEDs: Int?
    public var idle: Idle = .off

    public init(topic: String, timer: String) {
        self.topic = topic
        self.timer = timer
    }

    public var apiTopic: String { "\(topic)/api" }
}

/// One entry of the configuration's `displays:` list.
public enum DisplayConfiguration: Sendable, Equatable {
    case awtrix(AwtrixDisplay)
    case wled(WLEDDisplay)

    /// The timers this display shows.
    public var timers: [String] {
        switch self {
        case .awtrix(let awtrix): awtrix.timers
        case .wled(let wled): [wled.timer]
        }
    }
}

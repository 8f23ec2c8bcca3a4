public import PacerCore
import PacerProtocol

/// A class's athletes (`heart_rate.athletes`): every topic matching a pattern with one
/// `+` level is an athlete, named by that level.
public struct AthleteSettings: Sendable, Equatable {
    /// The pattern, e.g. `hr/+` (exactly one `+`, as a whole level; no `#`).
    public var topic: String
    /// Dotted path into a JSON payload (`bpm`); nil for a plain number.
    public var field: [String]?
    /// An athlete with no reading for this long leaves the class (default 3 min).
    public var absentAfterMs: Millis = 180_000
    /// Profiles from the file: used for an athlete the node keeps no profile of (a
    /// `set_athlete` wins, `clear_athlete` falls back to this).
    public var profiles: [AthleteProfile] = []

    /// The text before the `+` level (`hr/`) and after it (`` or `/bpm`).
    public var prefix: Substring { topic[..<(topic.firstIndex(of: "+") ?? topic.endIndex)] }
    public var suffix: Substring { topic[(topic.firstIndex(of: "+").map { topic.index(after: $0) } ?? topic.endIndex)...] }
}

/// An athlete's name, colour, max heart rate and leaderboard choice (each optional).
public struct AthleteProfile: Sendable, Equatable {
    public var id: String
    public var name: String?
    /// `#rrggbb`.
    public var colour: String?
    public var maxHR: Int?
    /// `false`: never ranked or named on a leaderboard; nil: not said (a stored profile that
    /// does not say falls back to the configuration's, then to ranked).
    public var leaderboard: Bool?

    public init(id: String, name: String? = nil, colour: String? = nil, maxHR: Int? = nil, leaderboard: Bool? = nil) {
        self.id = id
        self.name = name
        self.colour = colour
        self.maxHR = maxHR
        self.leaderboard = leaderboard
    }
}

extension NodeConfiguration {
    /// Why an athletes' topic pattern cannot be used, or nil.
    static func athletePatternProblem(_ topic: String) -> String? {
        let levels = topic.split(separator: "/", omittingEmptySubsequences: false)
        if topic.contains("#") { return "must not contain '#'; use one '+' level for the athlete, like hr/+" }
        if levels.filter({ $0 == "+" }).count != 1 || topic.filter({ $0 == "+" }).count != 1 {
            return "must have exactly one '+' level (the athlete's id), like hr/+ or ble/+/heart_rate; got '\(printable(topic, limit: 100))'"
        }
        if levels.contains(where: \.isEmpty) { return "must not have an empty level, got '\(printable(topic, limit: 100))'" }
        return nil
    }

    mutating func readAthletes(_ node: ConfigTree?, _ r: inout ConfigReader) {
        guard let node else { return }
        let key = "heart_rate.athletes"
        let a = r.mapping(node, key: key, known: ["topic", "field", "absent_after", "profiles"])
        guard let topic = r.string(a["topic"], key: "\(key).topic") else {
            if a["topic"] == nil { r.fail("\(key).topic", node, "the athletes need a topic pattern with one '+' level, like hr/+") }
            return
        }
        if let problem = Self.athletePatternProblem(topic) {
            r.fail("\(key).topic", a["topic"], problem)
            return
        }
        var settings = AthleteSettings(topic: topic)
        settings.field = r.string(a["field"], key: "\(key).field").map { $0.split(separator: ".").map(String.init) }
        if let v = r.duration(a["absent_after"], key: "\(key).absent_after", range: 10_000...86_400_000) { settings.absentAfterMs = v }
        if settings.absentAfterMs <= heartRate.staleAfterMs {
            r.fail("\(key).absent_after", a["absent_after"] ?? node,
                   "must be longer than heart_rate.stale_after (\(Durations.describe(heartRate.staleAfterMs))): a tile goes blank first, then the athlete leaves")
        }
        for (i, item) in r.sequence(a["profiles"], key: "\(key).profiles").enumerated() {
            let pk = "\(key).profiles[\(i)]"
            let p = r.mapping(item, key: pk, known: ["id", "name", "colour", "max_hr", "leaderboard"])
            guard let id = r.string(p["id"], key: "\(pk).id") else {
                if p["id"] == nil { r.fail("\(pk).id", item, "every profile needs the athlete's id (the topic's '+' level)") }
                continue
            }
            do { try TimerMachine.validateID(id) } catch {
                r.fail("\(pk).id", p["id"], "an athlete id follows the timer id rules: \(error.message)")
                continue
            }
            if settings.profiles.contains(where: { $0.id == id }) {
                r.fail("\(pk).id", p["id"], "another profile is already for '\(id)'")
                continue
            }
            var profile = AthleteProfile(id: id)
            profile.name = r.string(p["name"], key: "\(pk).name")
            if let name = profile.name {
                do { try TimerMachine.validateName(name) } catch { r.fail("\(pk).name", p["name"], error.message) }
            }
            if let colour = r.string(p["colour"], key: "\(pk).colour") {
                if let problem = AthleteColour.problem(colour) { r.fail("\(pk).colour", p["colour"], problem) } else { profile.colour = colour.lowercased() }
            }
            profile.maxHR = r.int(p["max_hr"], key: "\(pk).max_hr", range: AthleteColour.maxHRRange)
            profile.leaderboard = r.bool(p["leaderboard"], key: "\(pk).leaderboard")
            settings.profiles.append(profile)
        }
        if settings.profiles.count > ProtocolLimits.maxAthleteProfiles {
            r.fail("\(key).profiles", a["profiles"], "at most \(ProtocolLimits.maxAthleteProfiles) profiles, got \(settings.profiles.count)")
        }
        heartRate.athletes = settings
    }
}

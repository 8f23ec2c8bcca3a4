import PacerCore
import PacerProtocol

/// The class's athletes: who is present, their latest reading, and their profiles.
///
/// Every topic matching `heart_rate.athletes.topic` (one `+` level) is an athlete named by that
/// level. It joins with its first usable reading and leaves after `absent_after` without one;
/// its reading is blank (never 0, never the last value) after `heart_rate.stale_after`. A pure
/// value: the machine hands it each message with its instant and asks it for deadlines.
struct AthleteRoster: Equatable {
    /// A reading and the node instant it arrived (the same as a configured source's).
    typealias Reading = HeartRateMonitor.Reading

    /// What a message did.
    enum Outcome: Equatable {
        /// A usable reading; `joined`: the athlete was not present before.
        case accepted(id: String, bpm: Int, joined: Bool)
        case outOfRange(id: String, bpm: Double)
        case unreadable(id: String, reason: String)
        /// The `+` level is not a usable id (logged once per level).
        case invalidID(level: String, reason: String)
        /// The class is full (`ProtocolLimits.maxAthletes`).
        case full(id: String)
        case notAnAthlete
    }

    /// What an athlete's deadline found.
    enum Check: Equatable {
        case wentStale
        case left
        case stillFresh
    }

    let settings: AthleteSettings
    let staleAfterMs: Millis
    /// The node-wide max HR (`heart_rate.max_hr`): for an athlete without one of their own.
    let defaultMaxHR: Int?
    /// Present athletes' latest readings.
    private(set) var present: [String: Reading] = [:]
    /// Profiles set by command (kept in the store); the configuration's are underneath.
    private(set) var stored: [String: AthleteProfile] = [:]
    private let configured: [String: AthleteProfile]
    /// Athletes (or topic levels) whose unusable readings were logged already.
    private var loggedProblems: Set<String> = []

    /// The `meta` key of the stored profiles' document.
    static let metaKey = "athletes"

    init(settings: AthleteSettings, staleAfterMs: Millis, defaultMaxHR: Int?) {
        self.settings = settings
        self.staleAfterMs = staleAfterMs
        self.defaultMaxHR = defaultMaxHR
        self.configured = Dictionary(settings.profiles.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Whether this is the first problem logged for `key` (the caller logs only that one).
    mutating func isFirstProblem(of key: String) -> Bool { loggedProblems.insert(key).inserted }

    /// The athlete's level of a topic matching the pattern, or nil.
    func level(ofTopic topic: String) -> Substring? {
        let prefix = settings.prefix, suffix = settings.suffix
        guard topic.utf8.count > prefix.utf8.count + suffix.utf8.count, topic.hasPrefix(prefix), topic.hasSuffix(suffix) else { return nil }
        let level = topic.dropFirst(prefix.count).dropLast(suffix.count)
        return level.contains("/") ? nil : level
    }

    /// Takes a message from a topic.
    mutating func receive(topic: String, payload: [UInt8], now: Millis) -> Outcome {
        guard let level = level(ofTopic: topic) else { return .notAnAthlete }
        let id = String(level)
        do { try TimerMachine.validateID(id) } catch { return .invalidID(level: printable(level, limit: 70), reason: error.message) }
        let value: Double
        switch HeartRateMonitor.parse(payload, field: settings.field) {
        case .success(let v): value = v
        case .failure(let error): return .unreadable(id: id, reason: error.description)
        }
        let rounded = value.rounded()
        guard value.isFinite, rounded >= Double(HeartRateMonitor.validRange.lowerBound), rounded <= Double(HeartRateMonitor.validRange.upperBound) else {
            return .outOfRange(id: id, bpm: value)
        }
        let joined = present[id] == nil
        if joined && present.count >= ProtocolLimits.maxAthletes { return .full(id: id) }
        present[id] = Reading(bpm: Int(rounded), atMs: now)
        return .accepted(id: id, bpm: Int(rounded), joined: joined)
    }

    /// The athlete's fresh reading at `now`, or nil when stale or absent.
    func current(_ id: String, now: Millis) -> Reading? {
        guard let reading = present[id], now - reading.atMs < staleAfterMs else { return nil }
        return reading
    }

    /// The athlete's next deadline: when its reading goes stale, or (already stale) when it leaves.
    func deadline(of id: String, now: Millis) -> Millis? {
        guard let reading = present[id] else { return nil }
        let stale = reading.atMs.saturatingAdd(staleAfterMs)
        return now < stale ? stale : reading.atMs.saturatingAdd(settings.absentAfterMs)
    }

    /// What the athlete's deadline found at `now` (a leaver is removed).
    mutating func check(_ id: String, now: Millis) -> Check {
        guard let reading = present[id] else { return .left }
        if now - reading.atMs >= settings.absentAfterMs {
            present[id] = nil
            return .left
        }
        return now - reading.atMs >= staleAfterMs ? .wentStale : .stillFresh
    }

    /// Moves every reading's instant by `delta` (a wall-clock step).
    mutating func shiftTimes(by delta: Millis) {
        for id in present.keys { present[id]!.atMs = present[id]!.atMs.saturatingAdd(delta) }
    }

    // MARK: - Profiles

    /// The profile in force: the stored one, else the configuration's, else a bare one. Its
    /// `leaderboard` is the stored one's when it says, else the configuration's: a `set_athlete`
    /// that does not mention the leaderboard never ranks an athlete the file keeps off it.
    func profile(_ id: String) -> AthleteProfile {
        var p = stored[id] ?? configured[id] ?? AthleteProfile(id: id)
        p.leaderboard = stored[id]?.leaderboard ?? configured[id]?.leaderboard
        return p
    }

    /// Whether the athlete may be ranked and named on a leaderboard (`leaderboard: false`: never).
    func isRanked(_ id: String) -> Bool { profile(id).leaderboard ?? true }

    func maxHR(_ id: String) -> Int? { profile(id).maxHR ?? defaultMaxHR }

    var storedCount: Int { stored.count }
    func hasStored(_ id: String) -> Bool { stored[id] != nil }

    mutating func set(_ profile: AthleteProfile) { stored[profile.id] = profile }

    /// Forgets a stored profile; false when there is none.
    mutating func clear(_ id: String) -> Bool { stored.removeValue(forKey: id) != nil }

    /// The stored profiles as one document (the `meta` row): `{"athletes":[{"id","name","colour","max_hr","leaderboard"}]}`
    /// (`leaderboard` only when the profile says).
    var document: [UInt8] {
        var document: [String: JSONValue] = [:]
        document[.athletes] = .array(stored.keys.sorted().map { Self.json(stored[$0]!) })
        return JSONValue.object(document).jsonBytes
    }

    /// Reads the stored document; an entry it cannot read is left out.
    mutating func load(_ json: JSONValue?) {
        stored = [:]
        // `leaderboard` is the node's own member of the document (AthleteEntry does not read it).
        var leaderboard: [String: Bool] = [:]
        for raw in json?[.athletes]?.array ?? [] {
            if let id = raw[.id]?.string, case .bool(let ranked)? = raw[.leaderboard] { leaderboard[id] = ranked }
        }
        for item in json.map(AthleteEntry.list) ?? [] {
            guard (try? TimerMachine.validateID(item.id)) != nil else { continue }
            let colour = item.colour.flatMap { AthleteColour.problem($0) == nil ? $0 : nil }
            let maxHR = item.maxHR.flatMap { AthleteColour.maxHRRange.contains($0) ? $0 : nil }
            stored[item.id] = AthleteProfile(id: item.id, name: item.name, colour: colour, maxHR: maxHR, leaderboard: leaderboard[item.id])
        }
    }

    /// A profile as the stored document, the reply to `set_athlete` and the list write it.
    static func json(_ p: AthleteProfile) -> JSONValue {
        let entry = AthleteEntry(id: p.id, name: p.name, colour: p.colour, maxHR: p.maxHR).json
        guard let ranked = p.leaderboard, case .object(var o) = entry else { return entry }
        o[.leaderboard] = .bool(ranked)
        return .object(o)
    }

    /// The member of an athlete's state with their effort points in the run being recorded.
    static let effortPointsKey = "effort_points"

    // MARK: - What is published

    /// An athlete's retained state at `now`: the profile (with `leaderboard`), the reading with
    /// its % of max and zone (nulls when stale), and `effort_points`: the athlete's points in the
    /// run being recorded (`ClassRecorder.livePoints`), null outside one.
    func state(_ id: String, now: Millis, effortPoints: Int? = nil) -> JSONValue {
        let p = profile(id)
        let max = maxHR(id)
        var o = AthleteEntry(id: id, name: p.name ?? id, colour: p.colour, maxHR: max).json.object ?? [:]
        o[.leaderboard] = .bool(isRanked(id))
        o[Self.effortPointsKey] = .optional(effortPoints)
        o.merge(["bpm": .null, "pct_max": .null, "zone": .null, "zone_name": .null, "stale": .bool(true)]) { entry, _ in entry }
        o[.atMs] = .null
        o[.asOfMs] = .int(now)
        if let reading = current(id, now: now) {
            let zone = HeartRateZones.zone(bpm: reading.bpm, maxHR: max)
            o["bpm"] = .int(reading.bpm)
            o["pct_max"] = HeartRateZones.percent(bpm: reading.bpm, maxHR: max).map(JSONValue.number) ?? .null
            o["zone"] = .optional(zone)
            o["zone_name"] = max == nil ? .null : .string(HeartRateZones.name(zone))
            o[.atMs] = .int(reading.atMs)
            o["stale"] = .bool(false)
        }
        return .object(o)
    }

    /// The retained list: every present athlete and every kept profile, by id.
    func list(now: Millis) -> JSONValue {
        let ids = Set(present.keys).union(stored.keys).union(configured.keys).sorted()
        var list: [String: JSONValue] = ["absent_after_ms": .int(settings.absentAfterMs), "stale_after_ms": .int(staleAfterMs)]
        list[.athletes] = .array(ids.map { id in
            var entry = AthleteEntry(id: id, name: profile(id).name ?? id, colour: profile(id).colour, maxHR: maxHR(id), present: present[id] != nil).json
            // Only an opted-out athlete's entry says so: the list of everyone else is as it was.
            if !isRanked(id), case .object(var o) = entry { o[.leaderboard] = .bool(false); entry = .object(o) }
            return entry
        })
        list[.asOfMs] = .int(now)
        return .object(list)
    }
}

import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import PacerCore
import PacerProtocol
@testable import PacerNode
import PacerTestSupport
import Testing

/// An athlete's results: recovery per rest, effort points, the leaderboard choice, and the TCX
/// export (docs/API.md, "Class summary", "TCX export"). Pure values, instants as parameters.
@Suite struct HeartRateResultsTests {
    // MARK: - The rules

    @Test func recoveryTargetIsStrictlyBelowInWholeNumbers() {
        let standard = RecoveryTarget.standard
        #expect(standard.target(maxHR: 190) == 124)  // 65 % of 190 is 123.5: 123 has recovered
        #expect(standard.target(maxHR: 200) == 130)  // exactly 130: a reading of 130 has not
        #expect(standard.target(maxHR: nil) == nil)
        #expect(RecoveryTarget(.belowBPM(120)).target(maxHR: nil) == 120)
        #expect(standard.json == .object(["below_pct_max": .int(65)]))
    }

    @Test func effortPointsAreWholePointsOfTheTimeInEachZone() {
        let table = EffortPoints.standard
        // 1 min in zone 2 (1/min), 30 s in zone 5 (4/min), 10 min below zone 1 and in zone 1 (0).
        #expect(table.points(zoneMs: [600_000, 600_000, 60_000, 0, 0, 30_000]) == 3)
        // Fractions add up across zones before rounding down: 40 s in zone 3 and 40 s in zone 4.
        #expect(table.points(zoneMs: [0, 0, 0, 40_000, 40_000, 0]) == 3)
        #expect(table.points(zoneMs: [0, 0, 0, 0, 0, 14_999]) == 0)
        #expect(EffortPoints(perMinute: [1, 1, 1, 1, 10]).points(zoneMs: [0, 60_000, 0, 0, 0, 60_000]) == 11)
        #expect(table.json == .array([0, 0, 1, 2, 3, 4].map { .int($0) }))
    }

    // MARK: - The configuration

    private static func load(_ yaml: String) throws -> Result<NodeConfiguration, ConfigurationError> {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pacer-hr-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("pacer.yaml").path
        try ("node: gym\n" + yaml).write(toFile: file, atomically: false, encoding: .utf8)
        do { return .success(try NodeConfiguration.load(flags: .init(configFile: file), environment: [:], hostname: "box")) } catch {
            return .failure(error)
        }
    }

    @Test func recoveryEffortPointsAndTheLeaderboardChoiceAreConfigured() throws {
        let c = try Self.load("""
            heart_rate:
              recovery: {below_bpm: 115}
              effort_points: {zone3: 5, zone5: 9}
              athletes:
                topic: hr/+
                profiles:
                  - {id: bo, leaderboard: false}
            """).get()
        #expect(c.heartRate.recovery == RecoveryTarget(.belowBPM(115)))
        #expect(c.heartRate.effortPoints.perMinute == [0, 1, 5, 3, 9])
        #expect(c.heartRate.athletes?.profiles.first?.leaderboard == false)
        let defaults = try Self.load("heart_rate: {max_hr: 190}\n").get()
        #expect(defaults.heartRate.recovery == .standard && defaults.heartRate.effortPoints == .standard)
    }

    @Test func badResultsSettingsNameTheKeyAndTheFix() throws {
        for (yaml, key, words) in [
            ("heart_rate: {effort_points: {zone6: 5}}\n", "heart_rate.effort_points.zone6", "expected one of: zone1, zone2, zone3, zone4, zone5"),
            ("heart_rate: {effort_points: {zone2: -1}}\n", "heart_rate.effort_points.zone2", "between 0 and 100"),
            ("heart_rate: {recovery: {below_pct: 60}}\n", "heart_rate.recovery.below_pct", "expected one of: below_bpm, below_pct_max"),
            ("heart_rate: {recovery: {below_pct_max: 65, below_bpm: 120}}\n", "heart_rate.recovery", "not both"),
            ("heart_rate: {recovery: {below_pct_max: 99}}\n", "heart_rate.recovery.below_pct_max", "between 30 and 95"),
            ("heart_rate: {athletes: {topic: hr/+, profiles: [{id: bo, leaderboard: maybe}]}}\n", "heart_rate.athletes.profiles[0].leaderboard", "true or false"),
        ] {
            guard case .failure(let error) = try Self.load(yaml) else { Issue.record("accepted: \(yaml)"); continue }
            #expect(error.problems.contains { $0.key == key && $0.reason.contains(words) }, "\(yaml): \(error.problems)")
        }
    }

    // MARK: - The recorder

    private static func segment(_ index: Int, _ phase: Phase, startMs: Millis) -> ClassRecorder.Segment {
        .init(index: index, phase: phase, label: nil, round: 1, set: 1, startMs: startMs)
    }

    /// Work 0–20 s, rest 20–40 s. Alice (max 200: target 130) gets below it 7 s into the rest;
    /// Bo (max 190: target 124) never does; Cy has no max HR (no target, no points).
    @Test func recoveryPerRestAndEffortPointsInTheSummary() throws {
        var run = ClassRecorder(timer: "class", startedAtMs: 0, partial: false, staleAfterMs: 10_000)
        let work = Self.segment(0, .work, startMs: 0), rest = Self.segment(1, .rest, startMs: 20_000)
        for t in stride(from: Millis(1_000), through: 20_000, by: 1_000) where t < 20_000 {
            run.record("alice", bpm: 185, atMs: t, segment: work, maxHR: 200)  // zone 5
            run.record("bo", bpm: 150, atMs: t, segment: work, maxHR: 190)
            run.record("cy", bpm: 150, atMs: t, segment: work, maxHR: nil)
        }
        for (i, t) in stride(from: Millis(21_000), to: 40_000, by: 1_000).enumerated() {
            run.record("alice", bpm: max(150 - 3 * i, 100), atMs: t, segment: rest, maxHR: 200)  // 150, 147, …, 129 at 28 s
            run.record("bo", bpm: 140, atMs: t, segment: rest, maxHR: 190)
            run.record("cy", bpm: 100, atMs: t, segment: rest, maxHR: nil)
        }
        #expect(run.livePoints(of: "alice") == ClassRecorder.livePoints(of: "alice", in: [run]))
        #expect(run.livePoints(of: "nobody") == nil)
        let summary = run.summary(endedAtMs: 40_000, ended: "finished", revision: 9) { id in
            AthleteProfile(id: id, leaderboard: id == "bo" ? false : nil)
        }
        let athletes = try #require(summary["athletes"]?.array)
        let byID = Dictionary(uniqueKeysWithValues: athletes.map { ($0["id"]!.string!, $0) })
        let aliceRest = try #require(byID["alice"]?["segments"]?.array?.first { $0["segment"] == 1 })
        #expect(aliceRest["recovery_target_bpm"] == 130)
        #expect(aliceRest["recovery_ms"] == 8_000, "\(aliceRest)")  // 129 bpm at 28 s, 8 s into the rest
        let boRest = try #require(byID["bo"]?["segments"]?.array?.first { $0["segment"] == 1 })
        #expect(boRest["recovery_target_bpm"] == 124 && boRest["recovery_ms"] == .null)
        let cyRest = try #require(byID["cy"]?["segments"]?.array?.first { $0["segment"] == 1 })
        #expect(cyRest["recovery_target_bpm"] == nil && cyRest["recovery_ms"] == nil)
        // No recovery figures for work.
        #expect(byID["alice"]?["segments"]?.array?.first { $0["segment"] == 0 }?["recovery_ms"] == nil)
        // Alice: 19 s of zone 5 in work (the first reading counts from the segment's start: 20 s)
        // = 20 s × 4/min, plus her rest's zones; the live figure is the summary's.
        let alicePoints = try #require(byID["alice"]?["effort_points"]?.int)
        #expect(alicePoints == EffortPoints.standard.points(zoneMs: byID["alice"]!["zone_ms"]!.array!.map { $0.int64! }))
        #expect(alicePoints == run.livePoints(of: "alice") && alicePoints >= 1)
        #expect(byID["cy"]?["effort_points"] == 0)
        #expect(byID["bo"]?["leaderboard"] == false && byID["alice"]?["leaderboard"] == true)
        #expect(summary["recovery"] == .object(["below_pct_max": .int(65)]))
        #expect(summary["effort_points_per_minute"] == EffortPoints.standard.json)
    }

    @Test func theNodesSettingsReachTheRecorder() throws {
        var settings = HeartRateSettings()
        settings.recovery = RecoveryTarget(.belowBPM(120))
        settings.effortPoints = EffortPoints(perMinute: [0, 0, 0, 0, 60])
        var run = ClassRecorder(timer: "t", startedAtMs: 0, partial: false, heartRate: settings)
        run.record("a", bpm: 190, atMs: 1_000, segment: Self.segment(0, .work, startMs: 0), maxHR: 200)
        #expect(run.livePoints(of: "a") == 1)  // 1 s of zone 5 at 60 points a minute
        run.record("a", bpm: 119, atMs: 3_000, segment: Self.segment(1, .rest, startMs: 2_000), maxHR: 200)
        let summary = run.summary(endedAtMs: 4_000, ended: "finished", revision: 1) { AthleteProfile(id: $0) }
        #expect(summary["athletes"]?[0]?["segments"]?[1]?["recovery_ms"] == 1_000)
        #expect(summary["recovery"] == .object(["below_bpm": .int(120)]))
    }

    /// Several class timers at once: a tile shows the points of the run that started last.
    @Test func livePointsComeFromTheNewestRun() {
        var older = ClassRecorder(timer: "a", startedAtMs: 0, partial: false, staleAfterMs: 10_000)
        var newer = ClassRecorder(timer: "b", startedAtMs: 5_000, partial: false, staleAfterMs: 10_000)
        older.record("x", bpm: 190, atMs: 60_000, segment: Self.segment(0, .work, startMs: 0), maxHR: 200)
        newer.record("x", bpm: 130, atMs: 6_000, segment: Self.segment(0, .work, startMs: 5_000), maxHR: 200)
        #expect(ClassRecorder.livePoints(of: "x", in: [older, newer]) == newer.livePoints(of: "x"))
        #expect(ClassRecorder.livePoints(of: "x", in: [older]) == older.livePoints(of: "x"))
        #expect(ClassRecorder.livePoints(of: "y", in: [older, newer]) == nil)
    }

    // MARK: - The leaderboard choice

    @Test func aStoredProfileThatDoesNotSayKeepsTheFilesOptOut() throws {
        var athletes = AthleteSettings(topic: "hr/+")
        athletes.profiles = [AthleteProfile(id: "bo", name: "Bo", leaderboard: false)]
        var roster = AthleteRoster(settings: athletes, staleAfterMs: 10_000, defaultMaxHR: 190)
        #expect(!roster.isRanked("bo") && roster.isRanked("alice"))
        roster.set(AthleteProfile(id: "bo", name: "Bo", colour: "#00aaff"))  // a set_athlete without the field
        #expect(!roster.isRanked("bo"))
        roster.set(AthleteProfile(id: "alice", leaderboard: false))
        #expect(!roster.isRanked("alice"))
        // The stored document keeps the choice across a restart.
        var restored = AthleteRoster(settings: athletes, staleAfterMs: 10_000, defaultMaxHR: 190)
        restored.load(JSONCoding.decode(roster.document))
        #expect(restored.profile("alice").leaderboard == false && !restored.isRanked("alice"))
        #expect(restored.stored["bo"]?.leaderboard == nil && !restored.isRanked("bo"))
        // What the tiles and the list read.
        _ = restored.receive(topic: "hr/alice", payload: Array("150".utf8), now: 1_000)
        let state = restored.state("alice", now: 1_500, effortPoints: 12)
        #expect(state["leaderboard"] == false && state["effort_points"] == 12 && state["bpm"] == 150)
        #expect(restored.state("alice", now: 1_500)["effort_points"] == .null)
        let list = restored.list(now: 2_000)["athletes"]?.array ?? []
        #expect(list.first { $0["id"] == "alice" }?["leaderboard"] == false)
        #expect(list.first { $0["id"] == "bo" }?["leaderboard"] == false)
        // A profile that says nothing writes no member (the document stays as it was).
        #expect(AthleteRoster.json(AthleteProfile(id: "cy"))["leaderboard"] == nil)
    }

    // MARK: - TCX

    private static var fixtures: URL { testsDirectory().appendingPathComponent("Fixtures") }

    private static func fixtureSummary() throws -> JSONValue {
        try #require(JSONCoding.decode(Array(try Data(contentsOf: fixtures.appendingPathComponent("protocol/class-summary.json")))))
    }

    /// xmllint's verdict on a document against a schema: nil when valid, else its messages.
    private static func xmllint(_ xml: String, schema: URL) throws -> String? {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pacer-tcx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("run.tcx")
        try xml.write(to: file, atomically: false, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/xmllint")
        process.arguments = ["--noout", "--nonet", "--schema", schema.path, file.path]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return process.terminationStatus == 0 ? nil : text
    }

    /// Garmin's TCX v2 schema (Tests/Fixtures/tcx/), by xmllint (libxml2-utils, scripts/setup).
    @Test func everyAthletesFileIsValidTCXv2() throws {
        let schema = Self.fixtures.appendingPathComponent("tcx/TrainingCenterDatabasev2.xsd")
        let summary = try Self.fixtureSummary()
        for athlete in summary["athletes"]?.array ?? [] {
            let xml = try ClassTCX.document(summary: summary, athlete: athlete["id"]!.string!)
            let verdict = try Self.xmllint(xml, schema: schema)
            #expect(verdict == nil, "\(verdict ?? "")")
        }
        // The check can fail: a lap without its required TriggerMethod is refused.
        let broken = try ClassTCX.document(summary: summary, athlete: "a").replacingOccurrences(of: "<TriggerMethod>Time</TriggerMethod>", with: "")
        #expect(try Self.xmllint(broken, schema: schema)?.contains("TriggerMethod") == true)
    }

    /// The file both exporters must write (the node's here, the page's tcx.js in
    /// Tests/page/tcx.test.mjs): PACER_UPDATE_FIXTURES=1 writes it again.
    @Test func theSharedFixtureIsWhatTheNodeWrites() throws {
        let xml = try ClassTCX.document(summary: try Self.fixtureSummary(), athlete: "a")
        let file = Self.fixtures.appendingPathComponent("tcx/class-summary-a.tcx")
        if ProcessInfo.processInfo.environment["PACER_UPDATE_FIXTURES"] == "1" {
            try xml.write(to: file, atomically: true, encoding: .utf8)
        }
        #expect(String(decoding: try Data(contentsOf: file), as: UTF8.self) == xml, "class-summary-a.tcx is not what ClassTCX writes")
    }

    /// The CSV both writers must make of the fixture summary (`pacer history --csv` here, the
    /// page's "Download CSV" in Tests/page/classview.test.mjs); PACER_UPDATE_FIXTURES=1 writes it again.
    @Test func theSharedCSVFixtureIsWhatTheNodeWrites() throws {
        let summary = try Self.fixtureSummary()
        let csv = ([HistoryReport.classCSVHeader] + HistoryReport.classCSVLines(summary)).joined(separator: "\n") + "\n"
        let file = Self.fixtures.appendingPathComponent("protocol/class-summary.csv")
        if ProcessInfo.processInfo.environment["PACER_UPDATE_FIXTURES"] == "1" {
            try csv.write(to: file, atomically: true, encoding: .utf8)
        }
        #expect(String(decoding: try Data(contentsOf: file), as: UTF8.self) == csv, "class-summary.csv is not what pacer history --csv writes")
        // The recovery columns: a rest with a target has a time or "not reached".
        #expect(csv.contains("not reached") || csv.split(separator: "\n").contains { $0.contains(",rest,") && $0.split(separator: ",").count >= 13 })
    }

    /// Series → TCX → read back (Foundation's XML parser, not our writer): the same instants and
    /// bpm (whole bpm: TCX holds whole numbers), the laps where the segments are.
    @Test func theSeriesSurvivesTheRoundTrip() throws {
        let series: [JSONValue] = [120.4, 121.5, .null, 140, 151.2, .null, .null, 99.6].map { $0 }
        let summary: JSONValue = .object([
            "type": "class_summary", "timer": "class", "started_at_ms": .int(1_795_000_000_000), "due_ms": .int(1_795_000_016_000),
            "series_start_ms": .int(1_795_000_000_000), "series_step_ms": .int(2_000),
            "segments": .array([
                .object(["index": 0, "phase": "work", "start_ms": .int(1_795_000_000_000), "end_ms": .int(1_795_000_006_000)]),
                .object(["index": 1, "phase": "rest", "start_ms": .int(1_795_000_006_000), "end_ms": .int(1_795_000_016_000)]),
            ]),
            "athletes": .array([.object([
                "id": "alice", "name": "Alice & <Co>", "series": .array(series),
                "segments": .array([.object(["segment": 0, "samples": 3, "avg_bpm": 127.3, "peak_bpm": 141])]),
            ])]),
        ])
        let xml = try ClassTCX.document(summary: summary, athlete: "alice")
        let read = try TCXReader.read(xml)
        let expected: [(String, Int)] = series.enumerated().compactMap { k, v in
            v.double.map { (iso8601(ms: 1_795_000_000_000 + Millis(k) * 2_000 + 1_000), Int($0.rounded())) }
        }
        #expect(read.points.map(\.time) == expected.map(\.0))
        #expect(read.points.map(\.bpm) == expected.map(\.1))
        #expect(read.laps.map(\.start) == [iso8601(ms: 1_795_000_000_000), iso8601(ms: 1_795_000_006_000)])
        #expect(read.laps.map(\.points) == [2, 3], "the points at 1 and 3 s are the work's (0–6 s); 7, 9 and 15 s the rest's")
        #expect(read.laps.map(\.seconds) == ["6", "10"] && read.laps.map(\.intensity) == ["Active", "Resting"])
        #expect(read.laps.map(\.average) == [127, nil])
        #expect(read.notes == "Pacer class class · Alice & <Co>")
        #expect(throws: ClassTCX.Failure.self) { try ClassTCX.document(summary: summary, athlete: "bob") }
    }

    @Test func secondsKeepMillisecondsWithoutTrailingZeros() {
        #expect(ClassTCX.seconds(20_000) == "20" && ClassTCX.seconds(20_500) == "20.5" && ClassTCX.seconds(20_125) == "20.125"
                && ClassTCX.seconds(7) == "0.007")
    }
}

/// A TCX file read back with Foundation's XMLParser (a reader independent of the writer).
final class TCXReader: NSObject, XMLParserDelegate {
    struct Lap: Equatable { var start = "", seconds = "", intensity = "", average: Int?, points = 0 }
    private(set) var laps: [Lap] = []
    private(set) var points: [(time: String, bpm: Int)] = []
    private(set) var notes = ""
    private var path: [String] = []
    private var text = ""
    private var time = ""

    static func read(_ xml: String) throws -> TCXReader {
        let reader = TCXReader()
        let parser = XMLParser(data: Data(xml.utf8))
        parser.delegate = reader
        guard parser.parse() else { throw parser.parserError ?? CocoaError(.fileReadCorruptFile) }
        return reader
    }

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        path.append(name)
        text = ""
        if name == "Lap" { laps.append(Lap(start: attributes["StartTime"] ?? "")) }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        let parent = path.dropLast().last
        switch (parent, name) {
        case ("Trackpoint", "Time"): time = text
        case ("HeartRateBpm", "Value"):
            points.append((time, Int(text) ?? -1))
            laps[laps.count - 1].points += 1
        case ("AverageHeartRateBpm", "Value"): laps[laps.count - 1].average = Int(text)
        case ("Lap", "TotalTimeSeconds"): laps[laps.count - 1].seconds = text
        case ("Lap", "Intensity"): laps[laps.count - 1].intensity = text
        case ("Activity", "Notes"): notes = text
        default: break
        }
        path.removeLast()
    }
}

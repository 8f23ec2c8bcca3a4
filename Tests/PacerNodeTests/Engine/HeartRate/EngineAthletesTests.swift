import Foundation
import Logging
import Mosquitto
import PacerCore
@testable import PacerNode
import PacerProtocol
import PacerStore
import PacerTestSupport
import Testing

/// A class's athletes and their heart rate per phase, on the machine alone: injected
/// instants, no store, no transport.
@Suite("Engine machine: athletes and class summaries")
struct EngineAthletesTests {
    typealias M = EngineMachineTests
    static let base = M.base
    static let classYAML = """
        heart_rate:
          max_hr: 190
          stale_after: 10s
          athletes:
            topic: hr/+
            field: bpm
            absent_after: 30s
            profiles:
              - {id: a, name: Alice, colour: "#e4572e", max_hr: 200}

        """

    static func reading(_ athlete: String, _ bpm: Int) -> EngineInput {
        .message(InboundMessage(topic: "hr/\(athlete)", payload: Array("{\"bpm\":\(bpm),\"contact\":true}".utf8)))
    }

    static func connected() throws -> EngineMachine {
        var m = try M.machine(classYAML)
        M.restore(&m, at: 0)
        M.step(&m, .connection(.connected(sessionPresent: false)), at: 0)
        return m
    }

    /// Every deadline due by `t`, each at its own instant; the publishes they made.
    static func runDeadlines(_ m: inout EngineMachine, until t: Millis, writes: inout Int) -> [(topic: String, json: JSONValue?)] {
        var published: [(topic: String, json: JSONValue?)] = []
        while let due = m.nextDeadline(), due <= t {
            let (batch, effects) = M.step(&m, .deadline, at: due, result: { _ in .success(StoreCommit()) })
            if !batch.isEmpty { writes += 1 }
            published += M.published(effects)
        }
        return published
    }

    static func runDeadlines(_ m: inout EngineMachine, until t: Millis) -> [(topic: String, json: JSONValue?)] {
        var writes = 0
        return runDeadlines(&m, until: t, writes: &writes)
    }

    static func lastState(_ published: [(topic: String, json: JSONValue?)], _ athlete: String) -> JSONValue?? {
        published.last { $0.topic == "\(base)/athletes/\(athlete)/state" }.map(\.json)
    }

    @Test("an athlete appears on its first reading with its zone from its own max HR; another from the node's")
    func joinsWithZones() throws {
        var m = try Self.connected()
        var (batch, effects) = M.step(&m, Self.reading("a", 170), at: 1_000)
        #expect(batch.isEmpty)  // a reading writes nothing
        var published = M.published(effects)
        let list = try #require(published.first { $0.topic == "\(Self.base)/athletes" }?.json)
        #expect(list["athletes"]?.array?.first { $0["id"] == "a" }?["present"] == true)
        let a = try #require(Self.lastState(published, "a") ?? nil)
        #expect(a["name"] == "Alice" && a["colour"] == "#e4572e" && a["max_hr"] == 200)
        #expect(a["bpm"] == 170 && a["pct_max"] == 85 && a["zone"] == 4 && a["zone_name"] == "hard" && a["stale"] == false)
        // bo has no profile: the node's max_hr (190) gives 170 bpm 89.5 %: zone 4 too; 171 is 90 %: zone 5.
        (batch, effects) = M.step(&m, Self.reading("bo", 171), at: 1_200)
        published = M.published(effects)
        let bo = try #require(Self.lastState(published, "bo") ?? nil)
        #expect(bo["name"] == "bo" && bo["max_hr"] == 190 && bo["zone"] == 5 && bo["zone_name"] == "maximum" && bo["pct_max"] == 90)
        #expect(published.contains { $0.topic == "\(Self.base)/athletes" })  // bo joined: the list again
        // A second reading of a present athlete publishes its state only.
        published = M.published(M.step(&m, Self.reading("a", 120), at: 2_000).1)
        #expect(published.map(\.topic) == ["\(Self.base)/athletes/a/state"])
        #expect((Self.lastState(published, "a") ?? nil)?["zone"] == 2)  // 60 % of 200
    }

    @Test("a quiet athlete's tile goes blank after stale_after, and it leaves after absent_after (deadlines, not sleeps)")
    func staleThenLeaves() throws {
        var m = try Self.connected()
        M.step(&m, Self.reading("a", 150), at: 1_000)
        #expect(m.nextDeadline() == 11_000)
        #expect(Self.runDeadlines(&m, until: 10_999).isEmpty)
        var published = Self.runDeadlines(&m, until: 11_000)
        let blank = try #require(Self.lastState(published, "a") ?? nil)
        #expect(blank["bpm"] == .null && blank["zone"] == .null && blank["stale"] == true && blank["name"] == "Alice")
        #expect(m.nextDeadline() == 31_000)
        published = Self.runDeadlines(&m, until: 31_000)
        #expect(Self.lastState(published, "a") == .some(nil))  // cleared: an empty retained payload
        let list = try #require(published.last { $0.topic == "\(Self.base)/athletes" }?.json)
        #expect(list["athletes"]?.array?.first { $0["id"] == "a" }?["present"] == false)  // its profile stays listed
        #expect(m.nextDeadline() == nil)
        // Back again: a new join.
        published = M.published(M.step(&m, Self.reading("a", 140), at: 40_000).1)
        #expect(published.contains { $0.topic == "\(Self.base)/athletes" })
        #expect((Self.lastState(published, "a") ?? nil)?["bpm"] == 140)
    }

    @Test("a reading that refreshes a fresh athlete moves its deadline; bad readings and ids change nothing")
    func refreshAndBadInput() throws {
        var m = try Self.connected()
        M.step(&m, Self.reading("a", 150), at: 1_000)
        M.step(&m, Self.reading("a", 151), at: 9_000)
        #expect(m.nextDeadline() == 19_000)
        for bad in [EngineInput.message(InboundMessage(topic: "hr/a", payload: Array("{\"bpm\":\"x\"}".utf8))),
                    .message(InboundMessage(topic: "hr/a", payload: Array("{\"bpm\":1e300}".utf8))),
                    .message(InboundMessage(topic: "hr/Bad Id", payload: Array("{\"bpm\":120}".utf8))),
                    .message(InboundMessage(topic: "hr/a/extra", payload: Array("{\"bpm\":120}".utf8)))] {
            let (batch, effects) = M.step(&m, bad, at: 10_000)
            #expect(batch.isEmpty && effects.isEmpty)
        }
        #expect(m.heart.athletes?.present.keys.sorted() == ["a"])
        #expect(m.heart.athletes?.current("a", now: 10_000)?.bpm == 151)
    }

    @Test("set_athlete is written in the command's batch, then published; a failed write changes nothing; clear_athlete of none is refused")
    func profiles() throws {
        var m = try Self.connected()
        M.step(&m, Self.reading("bo", 150), at: 1_000)
        let set: JSONValue = ["action": "set_athlete", "id": "s1", "athlete": "bo", "name": "Bo", "colour": "#00AAFF", "max_hr": 160]
        var (batch, effects) = M.step(&m, M.command(set), at: 2_000, result: { _ in .success(StoreCommit()) })
        let document = try #require(batch.meta[AthleteRoster.metaKey])
        #expect(JSONCoding.decode(Array(document.utf8))?["athletes"]?.array?.first?["colour"] == "#00aaff")
        var published = M.published(effects)
        let bo = try #require(Self.lastState(published, "bo") ?? nil)
        #expect(bo["name"] == "Bo" && bo["max_hr"] == 160 && bo["zone"] == 5)  // 150 of 160: 93.75 %
        #expect(published.last?.json?["ok"] == true)
        // A write that fails: refused, and the profile is as before.
        let again: JSONValue = ["action": "set_athlete", "id": "s2", "athlete": "bo", "name": "Robert"]
        (batch, effects) = M.step(&m, M.command(again), at: 3_000, result: { _ in .failure(StoreError(.io, "disk I/O error")) })
        published = M.published(effects)
        #expect(published.last?.json?["error"]?["code"] == "storage_failure")
        #expect(m.heart.athletes?.profile("bo").name == "Bo")
        // Clear: the configuration's profile (none for bo) applies again.
        (batch, effects) = M.step(&m, M.command(["action": "clear_athlete", "athlete": "bo"]), at: 4_000, result: { _ in .success(StoreCommit()) })
        #expect(batch.meta[AthleteRoster.metaKey] == "{\"athletes\":[]}")
        #expect((Self.lastState(M.published(effects), "bo") ?? nil)?["max_hr"] == 190)
        (batch, effects) = M.step(&m, M.command(["action": "clear_athlete", "athlete": "bo"]), at: 5_000)
        #expect(batch.meta.isEmpty)
        #expect(M.published(effects).last?.json?["error"]?["code"] == "unknown_athlete")
        // Read back at a restart.
        var restarted = try M.machine(Self.classYAML)
        M.restore(&restarted, RestoredState(athletesDocument: "{\"athletes\":[{\"id\":\"cy\",\"name\":\"Cy\",\"max_hr\":170,\"colour\":\"nope\"}]}"), at: 0)
        #expect(restarted.heart.athletes?.profile("cy") == AthleteProfile(id: "cy", name: "Cy", colour: nil, maxHR: 170))
    }

    @Test("set_athlete on a node without a class is refused with what to configure")
    func noClass() throws {
        var m = try M.machine()
        M.restore(&m, at: 0)
        M.step(&m, .connection(.connected(sessionPresent: false)), at: 0)
        let (batch, effects) = M.step(&m, M.command(["action": "set_athlete", "athlete": "a", "max_hr": 180]), at: 1_000)
        #expect(batch.meta.isEmpty)
        let error = try #require(M.published(effects).last?.json?["error"])
        #expect(error["code"] == "invalid_argument")
        #expect(error["message"]?.string?.contains("heart_rate.athletes") == true)
    }

    /// One reading: who, what, when.
    struct Sample { var athlete: String; var bpm: Int; var at: Millis }

    @Test("a class_hr interval: nothing written during the run; at its end one summary whose figures match ones computed here from the same samples")
    func summaryFigures() throws {
        var m = try Self.connected()
        M.step(&m, Self.reading("bo", 130), at: 500)  // bo (no profile: max 190) and cy join before the start
        let t0: Millis = 1_000
        let start: JSONValue = ["action": "start", "spec": ["kind": "interval", "work": "20s", "rest": "10s", "rounds": 3, "class_hr": true]]
        let (batch, _) = M.step(&m, M.command(start, timer: "hiit"), at: t0, result: { _ in .success(StoreCommit()) })
        #expect(batch.appendEvents.map(\.type) == ["started"])
        // The program: work 20 s, rest 10 s, work, rest, work (the last rest skipped): 80 s.
        let bounds: [(start: Millis, phase: String)] = [(0, "work"), (20_000, "rest"), (30_000, "work"), (50_000, "rest"), (60_000, "work")]
        let end = t0 + 80_000
        var samples: [Sample] = []
        var writes = 0
        // Readings at 1 Hz, a little after each second; cy goes quiet for 15 s (longer than stale_after).
        for k in 0..<80 {
            let t = t0 + 300 + Millis(k) * 1_000
            _ = Self.runDeadlines(&m, until: t, writes: &writes)  // the phases: derived, not written
            for (i, athlete) in ["a", "bo", "cy"].enumerated() {
                if athlete == "cy" && (30...44).contains(k) { continue }
                let bpm = 95 + (k * 7 + i * 29) % 90
                let (b, _) = M.step(&m, Self.reading(athlete, bpm), at: t + Millis(i) * 10)
                if !b.isEmpty { writes += 1 }
                samples.append(Sample(athlete: athlete, bpm: bpm, at: t + Millis(i) * 10))
            }
        }
        #expect(writes == 0)  // samples stay in memory
        // The run ends on the clock: the last segment's end.
        var summaryRecord: EventRecord?
        var published: [(topic: String, json: JSONValue?)] = []
        while let due = m.nextDeadline(), due <= end {
            let (b, effects) = M.step(&m, .deadline, at: due, result: { _ in .success(StoreCommit()) })
            if let r = b.appendEvents.first(where: { $0.type == "class_summary" }) { summaryRecord = r }
            published += M.published(effects)
        }
        let record = try #require(summaryRecord)
        #expect(record.published)  // never in the outbox
        let summary = try #require(JSONCoding.decode(record.payload))
        #expect(published.contains { $0.topic == "\(Self.base)/timers/hiit/event" && $0.json?["type"] == "class_summary" })
        #expect(published.contains { $0.topic == "\(Self.base)/timers/hiit/class" && $0.json == summary })
        #expect(summary["ended"] == "finished" && summary["partial"] == false && summary["started_at_ms"] == .int(t0))
        let segments = try #require(summary["segments"]?.array)
        #expect(segments.map { $0["phase"]?.string ?? "" } == bounds.map(\.phase))
        #expect(segments.map { $0["start_ms"]?.int64 ?? -1 } == bounds.map { t0 + $0.start })
        #expect(segments.last?["end_ms"] == .int(end))

        // The same figures, computed here from the samples and the program.
        let maxHR = ["a": 200, "bo": 190, "cy": 190]
        func segmentOf(_ t: Millis) -> Int { bounds.lastIndex { t0 + $0.start <= t }! }
        func zone(_ bpm: Int, _ max: Int) -> Int {
            let p = Double(bpm) / Double(max) * 100
            return p < 50 ? 0 : p < 60 ? 1 : p < 70 ? 2 : p < 80 ? 3 : p < 90 ? 4 : 5
        }
        let athletes = try #require(summary["athletes"]?.array)
        #expect(athletes.map { $0["id"]?.string ?? "" } == ["a", "bo", "cy"])
        for entry in athletes {
            let id = entry["id"]!.string!
            let mine = samples.filter { $0.athlete == id }
            #expect(entry["samples"] == .int(mine.count))
            #expect(entry["peak_bpm"] == .int(mine.map(\.bpm).max()!))
            for (position, _) in bounds.enumerated() {
                let inSegment = mine.filter { segmentOf($0.at) == position }
                let figures = try #require(entry["segments"]?.array?.first { $0["segment"] == .int(position) })
                let mean = Double(inSegment.map(\.bpm).reduce(0, +)) / Double(inSegment.count)
                #expect(figures["avg_bpm"]?.double.map { abs($0 - mean) <= 0.05 } == true, "\(id) segment \(position)")
                #expect(figures["peak_bpm"] == .int(inSegment.map(\.bpm).max()!))
                var zoneMs = [Millis](repeating: 0, count: 6)
                var previous = t0 + bounds[position].start
                for s in inSegment {
                    zoneMs[zone(s.bpm, maxHR[id]!)] += min(s.at - previous, 10_000)
                    previous = s.at
                }
                #expect(figures["zone_ms"] == .array(zoneMs.map { .int($0) }), "\(id) segment \(position)")
                if bounds[position].phase == "rest" {
                    #expect(figures["recovery_bpm"] == .int(inSegment.first!.bpm - inSegment.last!.bpm))
                } else {
                    #expect(figures["recovery_bpm"] == nil)
                }
            }
            let series = try #require(entry["series"]?.array)
            #expect(series.count <= ProtocolLimits.maxClassSeriesPoints && series.count >= 79)
        }
        // cy came back 15.3 s into the second work: its first reading there counts only stale_after (10 s),
        // then 4 s to its last reading in it.
        let cySecondWork = athletes[2]["segments"]?.array?.first { $0["segment"] == 2 }
        #expect((cySecondWork?["zone_ms"]?.array ?? []).compactMap(\.int64).reduce(0, +) == 14_000)
        #expect(m.heart.classRuns.isEmpty)

        // The page's tests read this very summary (Tests/Fixtures/protocol/class-summary.json);
        // PACER_UPDATE_FIXTURES=1 writes it again.
        let fixture = testsDirectory().appendingPathComponent("Fixtures/protocol/class-summary.json")
        if ProcessInfo.processInfo.environment["PACER_UPDATE_FIXTURES"] == "1" {
            try Data((summary.description + "\n").utf8).write(to: fixture)
        }
        #expect(JSONCoding.decode(Array(try Data(contentsOf: fixture))) == summary, "class-summary.json is not what the node makes")
    }

    @Test("a segment without a single reading is still in the summary: the bands follow the timer, not the straps")
    func silentSegment() throws {
        var m = try Self.connected()
        let t0: Millis = 1_000
        let start: JSONValue = ["action": "start", "spec": ["kind": "interval", "work": "20s", "rest": "10s", "rounds": 2, "class_hr": true]]
        M.step(&m, M.command(start, timer: "hiit"), at: t0, result: { _ in .success(StoreCommit()) })
        // Readings in both works, none in the rest (every strap out of reach, say).
        let end = t0 + 50_000
        var t = t0 + 500
        var summary: JSONValue?
        while t < end + 1_000 {
            while let due = m.nextDeadline(), due <= t {
                let (b, _) = M.step(&m, .deadline, at: due, result: { _ in .success(StoreCommit()) })
                if let r = b.appendEvents.first(where: { $0.type == "class_summary" }) { summary = JSONCoding.decode(r.payload) }
            }
            let inRest = (t0 + 20_000..<t0 + 30_000).contains(t)
            if !inRest, t < end { M.step(&m, Self.reading("a", 150), at: t) }
            t += 1_000
        }
        let segments = try #require(summary?["segments"]?.array)
        #expect(segments.map { $0["phase"]?.string ?? "" } == ["work", "rest", "work"])
        #expect(segments.map { $0["start_ms"]?.int64 ?? -1 } == [t0, t0 + 20_000, t0 + 30_000])
        #expect(segments.map { $0["end_ms"]?.int64 ?? -1 } == [t0 + 20_000, t0 + 30_000, end])
        let perSegment = try #require(summary?["athletes"]?.array?.first?["segments"]?.array)
        #expect(perSegment.map { $0["segment"]?.int ?? -1 } == [0, 2], "no figures for the silent rest")
    }

    @Test("a timer without class_hr records nothing; a cancelled class_hr run writes its summary as cancelled; a long run's series stays bounded")
    func otherRuns() throws {
        var m = try Self.connected()
        M.step(&m, M.command(["action": "start", "spec": ["kind": "countdown", "duration": "1m"]], timer: "plain"), at: 1_000,
               result: { _ in .success(StoreCommit()) })
        #expect(m.heart.classRuns.isEmpty)
        M.step(&m, M.command(["action": "start", "spec": ["kind": "stopwatch", "class_hr": true]], timer: "sw"), at: 1_000,
               result: { _ in .success(StoreCommit()) })
        #expect(m.heart.classRuns.keys.sorted() == ["sw"])
        // Two hours at 1 Hz: the series doubles its buckets and stays within its bound.
        var t: Millis = 1_500
        while t < 1_000 + 7_200_000 {
            _ = Self.runDeadlines(&m, until: t)
            M.step(&m, Self.reading("a", 150), at: t)
            t += 1_000
        }
        let (batch, effects) = M.step(&m, M.command(["action": "cancel"], timer: "sw"), at: t, result: { _ in .success(StoreCommit()) })
        let record = try #require(batch.appendEvents.first { $0.type == "class_summary" })
        let summary = try #require(JSONCoding.decode(record.payload))
        #expect(summary["ended"] == "cancelled")
        let series = try #require(summary["athletes"]?.array?.first?["series"]?.array)
        #expect(series.count <= ProtocolLimits.maxClassSeriesPoints && series.count > 100)
        #expect(summary["series_step_ms"] == .int(32_000))  // 7,200 s over 360 points: 1 s doubled five times
        #expect(series.allSatisfy { $0 == .number(150) })
        #expect(M.published(effects).contains { $0.topic == "\(Self.base)/timers/sw/class" })
        #expect(m.heart.classRuns.isEmpty)
    }

    @Test("pacer history --csv: the summaries from the database, a line per athlete and segment and per run, figures as stored")
    func historyCSV() throws {
        let fixture = testsDirectory().appendingPathComponent("Fixtures/protocol/class-summary.json")
        let payload = Array(try Data(contentsOf: fixture))
        let summary = try #require(JSONCoding.decode(payload))
        let directory = try makeTemporaryDirectory("pacer-history-csv")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (database, _) = try PacerDatabase.open(directory: directory.path)
        var batch = StoreBatch()
        batch.appendEvents = [
            EventRecord(seq: nil, timer: "hiit", type: "started", revision: 1, dueMs: 1_000, atMs: 1_000, payload: Array("{}".utf8), published: true),
            EventRecord(seq: nil, timer: "hiit", type: "class_summary", revision: 3, dueMs: 81_000, atMs: 81_000, payload: payload, published: true),
        ]
        _ = try database.commit(batch)
        try database.close()
        let lines = try HistoryReport.classCSV(dataDirectory: directory.path, timer: nil, since: nil, limit: 10, now: 100_000)
        let athletes = try #require(summary["athletes"]?.array)
        #expect(lines.first == HistoryReport.classCSVHeader)
        #expect(lines.count == 1 + athletes.reduce(0) { $0 + ($1["segments"]?.array?.count ?? 0) + 1 })
        let cells = lines[2].split(separator: ",", omittingEmptySubsequences: false).map(String.init)  // a's rest 1
        let rest = try #require(athletes[0]["segments"]?.array?[1])
        #expect(cells[0] == "hiit" && cells[2] == "finished" && cells[3] == "a" && cells[4] == "Alice" && cells[5] == "Rest 1" && cells[6] == "rest")
        #expect(Double(cells[8]) == rest["avg_bpm"]?.double && Int(cells[9]) == rest["peak_bpm"]?.int && Int(cells[10]) == rest["recovery_bpm"]?.int)
        #expect(cells[11...16].compactMap { Double($0) }.map { Int64(($0 * 1000).rounded()) } == rest["zone_ms"]?.array?.compactMap(\.int64))
        #expect(lines.contains { $0.hasPrefix("hiit,") && $0.contains(",a,Alice,whole run,total,,") })
        // The table says where the figures are; JSON lines carry the summary as stored.
        let table = try HistoryReport.lines(dataDirectory: directory.path, timer: "hiit", since: nil, limit: 10, json: false, now: 100_000)
        #expect(table.contains { $0.contains("class_summary") && $0.contains("athletes=3") })
        let json = try HistoryReport.lines(dataDirectory: directory.path, timer: "hiit", since: nil, limit: 10, json: true, now: 100_000)
        #expect(json.compactMap { JSONCoding.decode(Array($0.utf8)) }.contains(summary))
        #expect(HistoryReport.csvField("A \"B\", C") == "\"A \"\"B\"\", C\"")
        #expect(throws: HistoryReport.Failure.self) { try HistoryReport.classCSV(dataDirectory: directory.path, timer: nil, since: nil, limit: 0) }
    }

    @Test("a wall-clock step moves the athletes' readings and a run's instants: a tile stays fresh as long as before")
    func clockJump() throws {
        var m = try Self.connected()
        M.step(&m, M.command(["action": "start", "spec": ["kind": "stopwatch", "class_hr": true]], timer: "sw"), at: 1_000,
               result: { _ in .success(StoreCommit()) })
        M.step(&m, Self.reading("a", 150), at: 2_000)
        // Any input after the step carries it (here a message on a topic of no one's).
        _ = M.drive(&m, m.step(.message(InboundMessage(topic: "elsewhere", payload: [])), at: Moment(now: 3_602_500, clockJumpMs: 3_600_000)), at: 3_602_500)
        #expect(m.heart.athletes?.present["a"]?.atMs == 3_602_000)
        #expect(m.heart.athletes?.current("a", now: 3_611_999)?.bpm == 150)
        #expect(m.nextDeadline().map { $0 <= 3_612_000 } == true)
        #expect(m.heart.classRuns["sw"]?.startedAtMs == 3_601_000)
    }

    @Test("after a restart during a run, the run records again from the restart and its summary says partial")
    func partialAfterRestart() throws {
        var m = try Self.connected()
        M.step(&m, M.command(["action": "start", "spec": ["kind": "stopwatch", "class_hr": true]], timer: "sw"), at: 1_000,
               result: { _ in .success(StoreCommit()) })
        // What a restore does for a running class_hr timer: its samples are gone, it records from now.
        m.heart.resumeClassRuns(now: 5_000, timers: m.board.timers)
        #expect(m.heart.classRuns["sw"]?.partial == true && m.heart.classRuns["sw"]?.startedAtMs == 5_000)
        M.step(&m, Self.reading("a", 150), at: 6_000)
        let (batch, _) = M.step(&m, M.command(["action": "finish"], timer: "sw"), at: 7_000, result: { _ in .success(StoreCommit()) })
        let summary = try #require(batch.appendEvents.first { $0.type == "class_summary" }.flatMap { JSONCoding.decode($0.payload) })
        #expect(summary["partial"] == true && summary["ended"] == "finished" && summary["athletes"]?.array?.first?["samples"] == 1)
        // A deleted timer's run is dropped, and its retained summary cleared.
        M.step(&m, M.command(["action": "start", "restart": true], timer: "sw"), at: 8_000, result: { _ in .success(StoreCommit()) })
        #expect(m.heart.classRuns["sw"] != nil)
        let (_, effects) = M.step(&m, M.command(["action": "delete", "timer": "sw"]), at: 9_000, result: { _ in .success(StoreCommit()) })
        #expect(m.heart.classRuns.isEmpty)
        #expect(M.published(effects).contains { $0.topic == "\(Self.base)/timers/sw/class" && $0.json == nil })
    }
}

/// The shell's side of the athletes: the profiles' `meta` document written with the command and
/// read back by `NodeEngine.restore` (NodeEngine+Restore.swift) at the next start.
@Suite("Engine: athlete profiles across a restart (in-process)")
struct EngineAthleteProfilesRestartTests {
    func listed(_ h: EngineHarness) -> [JSONValue]? {
        h.published("\(h.base)/athletes").last?.json?["athletes"]?.array
    }

    @Test("set_athlete is kept in the database: a restarted node lists it; clear_athlete is kept too")
    func profilesSurviveARestart() async throws {
        let config = EngineAthletesTests.classYAML
        let h = try await EngineHarness.make(config: config)
        await h.connect()
        let set = try await h.send(["action": "set_athlete", "athlete": "bo", "name": "Bo", "colour": "#17bebb", "max_hr": 176])
        #expect(set["ok"] == true && set["saved"] == true, "\(set)")
        let cleared = try await h.send(["action": "set_athlete", "athlete": "a", "max_hr": 150])
        #expect(cleared["ok"] == true, "\(cleared)")

        let again = try await h.restart(config: config)
        await again.connect()
        let list = try #require(listed(again))
        #expect(list == [
            ["id": "a", "name": "a", "colour": nil, "max_hr": 150, "present": false],
            ["id": "bo", "name": "Bo", "colour": "#17bebb", "max_hr": 176, "present": false],
        ], "\(list)")

        // Cleared, restarted: the configuration's seed applies again and "bo" is gone.
        #expect(try await again.send(["action": "clear_athlete", "athlete": "a"])["cleared"] == true)
        #expect(try await again.send(["action": "clear_athlete", "athlete": "bo"])["cleared"] == true)
        let third = try await again.restart(config: config)
        await third.connect()
        #expect(listed(third) == [["id": "a", "name": "Alice", "colour": "#e4572e", "max_hr": 200, "present": false]], "\(String(describing: listed(third)))")
    }
}

import Foundation
import PacerCore
import PacerTestSupport
import Testing

/// A class's heart rate through a real broker and a real `pacer run`: 30 simulated athletes at 1 Hz
/// while an interval timer with `class_hr` runs. Every athlete's state is right and fresh within a
/// second of its reading, quiet ones go blank after `stale_after` and leave after `absent_after`,
/// and the summary's figures equal ones computed here from the readings as the node saw them (each
/// athlete state carries its reading's `at_ms`) and the timer's phase events.
/// `PACER_CLASS_BENCH_SECONDS=60` makes it the benchmark of BENCHMARKS.md: a run of that length,
/// after a floor run of the same timer without athletes (node CPU and the bytes it wrote to disk,
/// `/proc/PID/io` `write_bytes`).
@Suite("Class heart rate")
struct ClassHeartRateTests {
    static let athletes = (0..<30).map { String(format: "s%02d", $0) }
    /// These stop sending after `quitAfter` seconds.
    static let quitters: Set<String> = ["s27", "s28", "s29"]
    static let quitAfter = 6
    static let maxHR: [String: Int] = ["s00": 180, "s01": 200]

    static func bpm(_ index: Int, _ second: Int) -> Int { 100 + (second * 11 + index * 7) % 80 }

    static func zone(_ bpm: Int, _ max: Int) -> Int? {
        let p = Double(bpm) * 100 / Double(max)
        return p < 50 ? nil : p < 60 ? 1 : p < 70 ? 2 : p < 80 ? 3 : p < 90 ? 4 : 5
    }

    struct Sent { var athlete: String; var bpm: Int; var wallMs: Int64 }

    @Test("30 athletes at 1 Hz with an interval running: fresh, right states; stale blank; the summary equals an independent computation")
    func thirtyAthletes() async throws {
        let bench = ProcessInfo.processInfo.environment["PACER_CLASS_BENCH_SECONDS"].flatMap(Int.init)
        let hrBase = "pacer-test-hr/\(uniqueName("c"))"
        // CI: 5 s work / 3 s rest × 3 (21 s); the bench: 20 s / 10 s for about the asked seconds.
        let spec: JSONValue = bench.map { ["kind": "interval", "work": "20s", "rest": "10s", "rounds": .int(max(1, ($0 + 10) / 30)), "class_hr": true] }
            ?? ["kind": "interval", "work": "5s", "rest": "3s", "rounds": 3, "class_hr": true]
        let runSeconds = bench.map { max(1, ($0 + 10) / 30) * 30 - 10 } ?? 21
        let config = """
            heart_rate:
              max_hr: 190
              stale_after: 3s
              athletes:
                topic: \(hrBase)/+
                field: bpm
                absent_after: 10s
                profiles:
                  - {id: s00, name: Ana, colour: "#e4572e", max_hr: 180}

            """
        try await withNode(NodeOptions(config: config)) { node in
            let pid = try #require(node.process?.pid)
            _ = try await node.send(["action": "set_athlete", "athlete": "s01", "name": "Bo", "max_hr": 200])

            var floor: (cpu: Double, bytes: Int64, seconds: Double)?
            if bench != nil {
                // The floor: the same timer, no athletes.
                var noClass = spec
                if case .object(var o) = noClass { o["class_hr"] = nil; noClass = .object(o) }
                let begin = try Usage(pid: pid)
                _ = try await node.send(["action": "start", "spec": noClass], timer: "floor")
                try await Task.sleep(for: .seconds(Double(runSeconds) + 0.5))
                floor = try begin.since()
            }

            let start = node.probe.count
            let begin = try Usage(pid: pid)
            let started = try await node.send(["action": "start", "spec": spec], timer: "cls")
            #expect(started.ok, "\(started)")
            let t0 = wallNowMs()
            var sent: [Sent] = []
            for second in 0..<runSeconds {
                try await Task.sleep(until: waitTarget(t0 + 300 + Int64(second) * 1_000))
                for (index, athlete) in Self.athletes.enumerated() {
                    if Self.quitters.contains(athlete) && second >= Self.quitAfter { continue }
                    let bpm = Self.bpm(index, second)
                    let at = wallNowMs()
                    try await node.probe.publish("\(hrBase)/\(athlete)", "{\"bpm\":\(bpm),\"contact\":true}")
                    sent.append(Sent(athlete: athlete, bpm: bpm, wallMs: at))
                }
            }
            let summaryMessage = try await node.probe.waitFor(node.topic("cls", "class"), from: start, timeout: .seconds(20)) { !$0.text.isEmpty }
            let usage = try begin.since()
            let summary = try #require(summaryMessage.json)
            // The last second's states may still be on their way when the summary (the run's
            // end) comes: each athlete's state of its last reading (its `at_ms` is the node's
            // arrival instant, on this machine's clock) before they are checked. Their latency
            // is still checked below.
            for athlete in Self.athletes {
                guard let last = sent.last(where: { $0.athlete == athlete }) else { continue }
                _ = try? await node.probe.waitFor(node.topic("athletes/\(athlete)/state"), from: start, timeout: .seconds(5)) {
                    ($0.json?["at_ms"]?.int64 ?? 0) >= last.wallMs
                }
            }

            // 1. Every reading's state: right and fresh within a second.
            var latencies: [Int64] = []
            for athlete in Self.athletes {
                let states = node.probe.messages(on: node.topic("athletes/\(athlete)/state"), from: start).filter { !$0.text.isEmpty }
                var cursor = 0
                let max = Self.maxHR[athlete] ?? 190
                for reading in sent where reading.athlete == athlete {
                    guard let found = states[cursor...].firstIndex(where: { $0.json?["bpm"]?.int == reading.bpm }) else {
                        Issue.record("no state of \(athlete) showed \(reading.bpm) bpm")
                        break
                    }
                    cursor = found + 1
                    let state = try #require(states[found].json)
                    latencies.append(states[found].wallMs - reading.wallMs)
                    #expect(state["zone"]?.int == Self.zone(reading.bpm, max), "\(state)")
                    #expect(state["max_hr"]?.int == max && state["stale"]?.bool == false)
                    let pct = (Double(reading.bpm * 1000) / Double(max)).rounded() / 10
                    #expect(state["pct_max"]?.double == pct)
                }
            }
            #expect(latencies.count == sent.count)
            let slowest = latencies.max() ?? 0
            // Fresh: within a second on a quiet machine (p50 14 ms); the bound is generous for a CI
            // machine running every suite at once (1.07 s seen). Exact instants: the machine tests.
            #expect(slowest <= 5_000, "a state came \(slowest) ms after its reading")
            let named = try #require(node.probe.messages(on: node.topic("athletes/s00/state"), from: start).last { !$0.text.isEmpty }?.json)
            #expect(named["name"] == "Ana" && named["colour"] == "#e4572e")

            // 2. The quitters: blank after stale_after (3 s), gone after absent_after (10 s).
            for athlete in Self.quitters {
                let last = try #require(sent.last { $0.athlete == athlete })
                let messages = node.probe.messages(on: node.topic("athletes/\(athlete)/state"), from: start)
                let blank = try #require(messages.first { $0.json?["stale"]?.bool == true }, "\(athlete) never went blank")
                #expect(blank.json?["bpm"]?.isNull == true && blank.json?["zone"]?.isNull == true)
                #expect(blank.wallMs - last.wallMs >= 3_000 - 50 && blank.wallMs - last.wallMs <= 3_000 + 5_000,
                        "\(athlete) went blank \(blank.wallMs - last.wallMs) ms after its last reading")
                if runSeconds >= Self.quitAfter + 12 {
                    let gone = try #require(messages.first { $0.text.isEmpty }, "\(athlete) never left")
                    // (Three quitters once left together 5.8 s late in a full run: the bound is for
                    // a leave that never comes; its instant is EngineAthletesTests'.)
                    #expect(gone.wallMs - last.wallMs >= 10_000 - 50 && gone.wallMs - last.wallMs <= 10_000 + 10_000,
                            "\(athlete) left \(gone.wallMs - last.wallMs) ms after its last reading")
                }
            }

            // 3. The summary against the readings as the node saw them and the timer's phases.
            let events = node.probe.messages(on: node.topic("cls", "event"), from: start).compactMap(\.json)
            let runStart = try #require(events.first { $0["type"] == "started" }?["due_ms"]?.int64)
            let end = try #require(events.first { $0["type"] == "finished" }?["due_ms"]?.int64)
            let bounds = [(runStart, "work")] + events.filter { $0["type"] == "phase" }.compactMap { e in
                e["due_ms"]?.int64.map { ($0, e["phase"]?.string ?? "") }
            }.filter { $0.0 < end }
            #expect(summary["started_at_ms"]?.int64 == runStart && summary["ended"] == "finished")
            #expect(summary["segments"]?.array?.map { $0["start_ms"]?.int64 ?? -1 } == bounds.map(\.0))
            func segment(_ at: Int64) -> Int { bounds.lastIndex { $0.0 <= at }! }
            let entries = try #require(summary["athletes"]?.array)
            #expect(entries.count == 30)
            for entry in entries {
                let id = try #require(entry["id"]?.string)
                let max = Self.maxHR[id] ?? 190
                let published: [(bpm: Int, at: Int64)] = node.probe.messages(on: node.topic("athletes/\(id)/state"), from: start)
                    .compactMap(\.json).compactMap { s in
                        guard s["stale"]?.bool == false, let bpm = s["bpm"]?.int, let at = s["at_ms"]?.int64, at >= runStart, at < end else { return nil }
                        return (bpm, at)
                    }
                // A state published again (the run's end clears its live points) repeats its reading: one reading.
                var readings: [(bpm: Int, at: Int64)] = []
                for reading in published where readings.last?.at != reading.at { readings.append(reading) }
                #expect(entry["samples"]?.int == readings.count, "\(id)")
                #expect(entry["peak_bpm"]?.int == readings.map(\.bpm).max())
                for position in bounds.indices {
                    let inSegment = readings.filter { segment($0.at) == position }
                    guard !inSegment.isEmpty else { continue }
                    let figures = try #require(entry["segments"]?.array?.first { $0["segment"]?.int == position }, "\(id) \(position)")
                    let mean = Double(inSegment.map(\.bpm).reduce(0, +)) / Double(inSegment.count)
                    #expect(abs((figures["avg_bpm"]?.double ?? 0) - mean) <= 0.05, "\(id) segment \(position)")
                    #expect(figures["peak_bpm"]?.int == inSegment.map(\.bpm).max())
                    var zoneMs = [Int64](repeating: 0, count: 6)
                    var previous = bounds[position].0
                    for r in inSegment {
                        zoneMs[Self.zone(r.bpm, max) ?? 0] += min(r.at - previous, 3_000)
                        previous = r.at
                    }
                    #expect(figures["zone_ms"]?.array?.compactMap(\.int64) == zoneMs, "\(id) segment \(position)")
                    if bounds[position].1 == "rest" && inSegment.count >= 2 {
                        #expect(figures["recovery_bpm"]?.int == inSegment.first!.bpm - inSegment.last!.bpm)
                    }
                }
            }
            // history returns it.
            let history = try await node.send(["action": "history", "timer": "cls", "limit": 5])
            #expect(history.json["events"]?.array?.contains { $0["type"] == "class_summary" } == true)

            let perSecond = Double(sent.count) / Double(runSeconds)
            print("""
                ClassHeartRateTests: \(sent.count) readings of 30 athletes over \(runSeconds) s (\(String(format: "%.1f", perSecond))/s); \
                state latency p50 \(latencies.sorted()[latencies.count / 2]) ms, max \(slowest) ms; \
                node CPU \(String(format: "%.2f", usage.cpu)) s in \(String(format: "%.1f", usage.seconds)) s \
                (\(String(format: "%.1f", usage.cpu / usage.seconds * 100)) % of a core), write_bytes \(usage.bytes); \
                summary \(summaryMessage.message.payload.count) bytes
                """ + (floor.map { f in
                    "; floor (same timer, no athletes): CPU \(String(format: "%.2f", f.cpu)) s in \(String(format: "%.1f", f.seconds)) s (\(String(format: "%.1f", f.cpu / f.seconds * 100)) %), write_bytes \(f.bytes)"
                } ?? ""))
        }
    }
}

/// A process's CPU time and the bytes it sent to the block layer, from a starting point.
struct Usage {
    let pid: Int32
    let ticks: Int64
    let bytes: Int64
    let at: ContinuousClock.Instant

    init(pid: Int32) throws {
        self.pid = pid
        ticks = try CPUSample.read(pid)
        bytes = try Self.writeBytes(pid)
        at = .now
    }

    func since() throws -> (cpu: Double, bytes: Int64, seconds: Double) {
        let cpu = Double(try CPUSample.read(pid) - ticks) / Double(sysconf(Int32(_SC_CLK_TCK)))
        let (s, atto) = (ContinuousClock.now - at).components
        return (cpu, try Self.writeBytes(pid) - bytes, Double(s) + Double(atto) * 1e-18)
    }

    static func writeBytes(_ pid: Int32) throws -> Int64 {
        let text = try String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8)
        let line = text.split(separator: "\n").first { $0.hasPrefix("write_bytes:") }
        return line.flatMap { Int64($0.dropFirst("write_bytes:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
    }
}

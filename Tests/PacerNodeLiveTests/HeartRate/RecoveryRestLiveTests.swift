import Foundation
import PacerCore
import PacerTestSupport
import Testing

/// A rest that ends on recovery through a real broker and a real `pacer run`: a class of 30
/// simulated straps at 1 Hz whose heart rates fall at rates chosen here, and a `class_80pct`
/// rest. The rest ends at the reading that makes 24 of the 30 recovered (the moment computed
/// here from the rates), within one reading interval of it, and the timer's `recovery` topic
/// counts them up on the way (docs/API.md, "Rests that end on recovery").
@Suite("Rest until recovered, live")
struct RecoveryRestLiveTests {
    static let athletes = (0..<30).map { String(format: "r%02d", $0) }
    /// Before the rest every strap reads `high`; from the rest on, athlete `i` falls by
    /// `rates[i]` bpm a second (2.0, 2.4, … 13.6), so each recovers at a second of its own or
    /// shares it with a few.
    static let high = 160
    static let rates = (0..<30).map { 2.0 + Double($0) * 0.4 }
    static let below = 120

    /// Athlete `index`'s reading `second` whole seconds into the rest (0: the last one before it).
    static func bpm(_ index: Int, _ second: Int) -> Int {
        max(60, high - Int((Double(max(0, second)) * rates[index]).rounded(.down)))
    }

    struct Sent { var athlete: String; var bpm: Int; var wallMs: Int64; var second: Int }

    @Test("30 straps, class_80pct: the rest ends within a reading interval of the reading that makes 24 recovered; the recovery topic counts 0…23, then clears")
    func thirtyStrapsRecover() async throws {
        let hrBase = "pacer-test-hr/\(uniqueName("r"))"
        let config = """
            heart_rate:
              max_hr: 190
              stale_after: 5s
              athletes:
                topic: \(hrBase)/+
                field: bpm
                absent_after: 1m

            """
        // 3 s of work, then the rest: 80 % of those reading, below 120 bpm, at most 40 s.
        let spec: JSONValue = ["kind": "interval", "work": "3s", "rounds": 2,
                               "rest": ["until_hr": ["below_bpm": .int(Self.below), "who": "class_80pct", "max": "40s"]]]
        // The second into the rest at which 24 athletes first read below 120, from the rates alone.
        let needed = 24
        let holdsAt = try #require((1...40).first { second in
            Self.athletes.indices.filter { Self.bpm($0, second) < Self.below }.count >= needed
        })
        /// Where, in that second's readings (sent in the athletes' order), the 24th recovered one is.
        let decidingIndex = try #require(Self.athletes.indices.filter { Self.bpm($0, holdsAt) < Self.below && Self.bpm($0, holdsAt - 1) >= Self.below }
            .first { index in Self.athletes.indices.filter { $0 <= index && Self.bpm($0, holdsAt) < Self.below }.count
                + Self.athletes.indices.filter { $0 > index && Self.bpm($0, holdsAt - 1) < Self.below }.count >= needed })

        try await withNode(NodeOptions(config: config)) { node in
            let start = node.probe.count
            let started = try await node.send(["action": "start", "spec": spec], timer: "cls")
            #expect(started.ok, "\(started)")
            let startedAt = try #require(started.state?["started_at_ms"]?.int64)
            let restAt = startedAt + 3_000
            // Readings at 1 Hz, 300 ms after each second of the run: every strap reads high until
            // the rest begins, then falls. Stops once the rest has ended (or at its max).
            var sent: [Sent] = []
            var second = -3
            while second <= holdsAt + 3 {
                try await Task.sleep(until: waitTarget(restAt + 300 + Int64(second) * 1_000))
                for (index, athlete) in Self.athletes.enumerated() {
                    let bpm = Self.bpm(index, second)
                    let at = wallNowMs()
                    try await node.probe.publish("\(hrBase)/\(athlete)", "{\"bpm\":\(bpm),\"contact\":true}")
                    sent.append(Sent(athlete: athlete, bpm: bpm, wallMs: at, second: second))
                }
                if node.probe.messages(on: node.topic("cls", "event"), from: start).contains(where: { $0.json?["type"] == "recovered" }) { break }
                second += 1
            }
            let recovered = try await node.probe.waitFor(node.topic("cls", "event"), from: start, timeout: .seconds(10)) {
                $0.json?["type"] == "recovered"
            }
            let endedAt = try #require(recovered.json?["due_ms"]?.int64)
            let deciding = try #require(sent.first { $0.second == holdsAt && $0.athlete == Self.athletes[decidingIndex] })
            let secondStart = try #require(sent.first { $0.second == holdsAt }).wallMs
            // Not before the reading that made the rule hold; within one reading interval of it.
            #expect(endedAt >= deciding.wallMs, "the rest ended \(deciding.wallMs - endedAt) ms before the reading that made 24 recovered")
            #expect(endedAt - secondStart < 1_000, "the rest ended \(endedAt - secondStart) ms after the second whose readings made 24 recovered")
            // The next round's work at the same instant.
            let work = try await node.probe.waitFor(node.topic("cls", "event"), from: start, timeout: .seconds(5)) {
                $0.json?["type"] == "phase" && $0.json?["phase"] == "work" && ($0.json?["due_ms"]?.int64 ?? 0) > restAt
            }
            #expect(work.json?["due_ms"]?.int64 == endedAt)

            // The recovery topic: 0 of 30 as the rest began, each count once as the straps went
            // under 120, never 24 (the rest ended there), then cleared.
            let tallies = node.probe.messages(on: node.topic("cls", "recovery"), from: start)
            let payloads = tallies.map { $0.text.isEmpty ? nil : $0.json }
            #expect(payloads.last.map { $0 == nil } == true, "the topic was cleared when the rest ended: \(tallies.map(\.text))")
            let shown = payloads.compactMap { $0 }
            #expect(shown.compactMap { $0["recovered"]?.int } == Array(0..<needed), "\(tallies.map(\.text))")
            for tally in shown {
                #expect(tally["who"] == "class_80pct" && tally["counted"] == 30 && tally["needed"] == .int(needed) && tally["stale"] == 0, "\(tally)")
            }
            // Each count came after the reading that made it: the athletes' first readings below
            // 120, in the order they were sent.
            let firstBelow = sent.filter { s in
                let index = Self.athletes.firstIndex(of: s.athlete)!
                return Self.bpm(index, s.second) < Self.below && Self.bpm(index, s.second - 1) >= Self.below
            }
            for count in 1..<min(needed, tallies.count - 1) {
                #expect(tallies[count].wallMs >= firstBelow[count - 1].wallMs, "the count \(count) came before the reading that made it")
            }
            let retained = try await node.retained([node.topic("cls", "recovery")])
            #expect(retained[node.topic("cls", "recovery")] == nil, "a cleared topic keeps nothing retained: \(retained)")
            print("RecoveryRestLiveTests: 24 of 30 recovered \(holdsAt) s into the rest; the rest ended \(endedAt - deciding.wallMs) ms "
                + "after the deciding reading (\(Self.athletes[decidingIndex])), \(tallies.count) recovery messages")
        }
    }
}

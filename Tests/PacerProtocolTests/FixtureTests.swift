import Foundation
import PacerCore
import PacerProtocol
import PacerTestSupport
import Testing

/// The wire's examples in Tests/Fixtures/protocol/, which the web page's and the Python
/// display's tests read too (docs/API.md, "Examples every client is tested against").
///
/// `states.json` and `events.json` are made here from the core's own machine (the node's
/// snapshot and event writers) and must match the files: a change of the wire shows up as a
/// diff to review. `PACER_UPDATE_FIXTURES=1 swift test --filter ProtocolFixtureTests` writes
/// them again. `commands.json` is written by hand: what a client sends and what the node's
/// parser must make of it.
@Suite("The protocol's examples (Tests/Fixtures/protocol)")
struct ProtocolFixtureTests {
    static let directory = testsDirectory().appendingPathComponent("Fixtures/protocol")
    /// 2026-11-22T04:00:00Z.
    static let t0: Millis = 1_795_320_000_000

    // MARK: States

    /// A scenario: a timer driven through the core, its snapshot at `asOf`, and instants
    /// (offsets from `asOf`) at which a client counts from that one snapshot.
    struct Scenario {
        var name: String
        var spec: JSONValue
        var steps: [(at: Millis, operation: TimerOperation)]
        var asOf: Millis
        var offsets: [Millis]
    }

    static let scenarios: [Scenario] = [
        Scenario(name: "interval in work, round 1 of 8", spec: ["kind": "interval", "work": "40s", "rest": "20s", "rounds": 8, "exercises": ["Squat", "Row"]],
                 steps: [(0, .start(spec: nil, startAt: nil, restart: false))], asOf: 12_345, offsets: [0, 1, 654, 655, 656, 20_000]),
        Scenario(name: "interval in rest", spec: ["kind": "interval", "work": "40s", "rest": "20s", "rounds": 8, "exercises": ["Squat", "Row"]],
                 steps: [(0, .start(spec: nil, startAt: nil, restart: false))], asOf: 41_500, offsets: [0, 499, 500, 18_000]),
        Scenario(name: "interval paused", spec: ["kind": "interval", "work": "40s", "rest": "20s", "rounds": 8],
                 steps: [(0, .start(spec: nil, startAt: nil, restart: false)), (5_500, .pause)], asOf: 9_000, offsets: [0, 3_000]),
        Scenario(name: "stopwatch running", spec: ["kind": "stopwatch", "target": "20m"],
                 steps: [(0, .start(spec: nil, startAt: nil, restart: false))], asOf: 61_250, offsets: [0, 749, 750, 10_000]),
        Scenario(name: "stopwatch resumed after a pause", spec: ["kind": "stopwatch"],
                 steps: [(0, .start(spec: nil, startAt: nil, restart: false)), (10_300, .pause), (15_000, .resume)], asOf: 20_000, offsets: [0, 299, 300, 4_000]),
        Scenario(name: "stopwatch in overtime", spec: ["kind": "stopwatch", "target": "1m"],
                 steps: [(0, .start(spec: nil, startAt: nil, restart: false))], asOf: 75_400, offsets: [0, 599, 600]),
        Scenario(name: "countdown of 1:30:00 running", spec: ["kind": "countdown", "duration": "1:30:00"],
                 steps: [(0, .start(spec: nil, startAt: nil, restart: false))], asOf: 1_000, offsets: [0, 1, 2_000]),
        Scenario(name: "countdown scheduled", spec: ["kind": "countdown", "duration": "5m"],
                 steps: [(0, .start(spec: nil, startAt: t0 + 30_000, restart: false))], asOf: 1_200, offsets: [0, 799, 800, 801]),
        Scenario(name: "countdown expired, waiting for ack", spec: ["kind": "countdown", "duration": "10s", "ack": true],
                 steps: [(0, .start(spec: nil, startAt: nil, restart: false))], asOf: 15_000, offsets: [0, 5_000]),
        Scenario(name: "rest timer idle", spec: ["kind": "rest", "duration": "90s", "exercise": "Bench", "next": "Row"],
                 steps: [], asOf: 0, offsets: [0]),
    ]

    /// The states file as the core makes it.
    static func makeStates() throws -> JSONValue {
        var states: [JSONValue] = []
        for (index, scenario) in scenarios.enumerated() {
            var machine = try TimerMachine(id: "t\(index + 1)", name: scenario.name, spec: TimerSpec(json: scenario.spec))
            for step in scenario.steps {
                _ = machine.advance(to: t0 + step.at)
                _ = try machine.handle(TimerCommand(operation: step.operation), now: t0 + step.at).get()
            }
            _ = machine.advance(to: t0 + scenario.asOf)
            let snapshot = machine.snapshot(at: t0 + scenario.asOf)
            var at: [JSONValue] = []
            for offset in scenario.offsets {
                let now = t0 + scenario.asOf + offset
                var later = machine
                _ = later.advance(to: now)
                let shows = Self.shownSeconds(later.snapshot(at: now), at: now)
                at.append(["now_ms": .int(now), "shows": .int(shows), "display": .string(Durations.display(seconds: shows)),
                           "next_flip_ms": nextFlip(of: later, after: now).map { .int($0) } ?? .null])
            }
            let plain = JSONValue.object(Dictionary(uniqueKeysWithValues: PlainLeaf.allCases.map { ($0.rawValue, JSONValue.string(snapshot.plainValue($0))) }))
            states.append(["name": .string(scenario.name), "state": try JSONValue.parse(snapshot.jsonBytes), "plain": plain, "at": .array(at)])
        }
        return ["about": "Retained states as the node publishes them (made by Tests/PacerProtocolTests/FixtureTests.swift from the core). For each, what a client shows at node time now_ms when it counts from that one snapshot: whole seconds (the node's remaining; for a scheduled timer the seconds until start_at_ms, rounded up), the clock text, and when the shown value next changes (null: not by itself). plain: the plain retained topics for the snapshot.",
                "states": .array(states)]
    }

    /// What a clock shows for `snapshot` at `now`: the node's own second (`remaining`), and for
    /// a scheduled timer the whole seconds until it starts ("STARTS IN 0:29"; its `remaining`
    /// topic holds the first segment's length).
    static func shownSeconds(_ snapshot: TimerSnapshot, at now: Millis) -> Int64 {
        if snapshot.status == .scheduled, let start = snapshot.startAtMs { return Durations.ceilSeconds(start - now) }
        return snapshot.remainingSeconds
    }

    /// The first node instant after `now` at which the shown second changes (within the next
    /// second and a bit; nil if it does not), found by asking the core at every millisecond.
    static func nextFlip(of machine: TimerMachine, after now: Millis) -> Millis? {
        let snapshot = machine.snapshot(at: now)
        let shown = shownSeconds(snapshot, at: now)
        for t in (now + 1)...(now + 1_001) {
            var later = machine
            _ = later.advance(to: t)
            let snap = later.snapshot(at: t)
            if shownSeconds(snap, at: t) != shown || snap.status != snapshot.status || snap.segment != snapshot.segment { return t }
        }
        return nil
    }

    // MARK: Events

    static func makeEvents() throws -> JSONValue {
        var machine = try TimerMachine(id: "main", name: "Main", spec: TimerSpec(json: ["kind": "interval", "work": "10s", "rest": "5s", "rounds": 2, "exercises": ["Squat"]]),
                                       settings: .init())
        var events: [TimerEvent] = []
        events += try machine.handle(TimerCommand(operation: .start(spec: nil, startAt: nil, restart: false)), now: t0).get()
        events += machine.advance(to: t0 + 4_000)
        events += try machine.handle(TimerCommand(operation: .pause), now: t0 + 4_000).get()
        events += try machine.handle(TimerCommand(operation: .resume), now: t0 + 6_000).get()
        events += try machine.handle(TimerCommand(operation: .adjust(seconds: 5)), now: t0 + 6_500).get()
        events += machine.advance(to: t0 + 40_000)
        var seen: Set<String> = []
        let examples = events.filter { seen.insert($0.type.rawValue + ($0.cue.map { "\($0)" } ?? "")).inserted }
        return ["about": "Events as the node publishes them on <base>/timers/<id>/event (made by Tests/PacerProtocolTests/FixtureTests.swift from the core): one of each kind an interval run emits. Displays schedule cues on due_ms.",
                "events": .array(examples.map(\.json))]
    }

    // MARK: The tests

    @Test("states.json and events.json are what the core makes (PACER_UPDATE_FIXTURES=1 writes them)", arguments: ["states", "events"])
    func generatedFilesMatch(_ name: String) throws {
        let made = name == "states" ? try Self.makeStates() : try Self.makeEvents()
        let url = Self.directory.appendingPathComponent("\(name).json")
        let text = Self.pretty(made) + "\n"
        if ProcessInfo.processInfo.environment["PACER_UPDATE_FIXTURES"] == "1" {
            try FileManager.default.createDirectory(at: Self.directory, withIntermediateDirectories: true)
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
        let onDisk = try String(contentsOf: url, encoding: .utf8)
        #expect(onDisk == text, "Tests/Fixtures/protocol/\(name).json differs from what the core makes: review the change, then PACER_UPDATE_FIXTURES=1 swift test --filter ProtocolFixtureTests")
    }

    @Test("a client counting from one snapshot shows what the node shows, and flips when it does (TimerState)")
    func clientsCountAsTheNodeDoes() throws {
        let file = try Self.load("states")
        let states = try #require(file["states"]?.array)
        #expect(states.count == Self.scenarios.count)
        for entry in states {
            let name = entry["name"]?.string ?? "?"
            let json = try #require(entry["state"], "\(name)")
            let state = try #require(TimerState(state: json), "\(name)")
            for point in try #require(entry["at"]?.array) {
                let now = try #require(point["now_ms"]?.int64)
                #expect(state.shownSeconds(at: now) == point["shows"]?.int64, "\(name) at +\(now - (entry["state"]?["as_of_ms"]?.int64 ?? 0)) ms")
                #expect(state.display(at: now) == point["display"]?.string, "\(name)")
                #expect(state.nextFlip(after: now) == point["next_flip_ms"]?.int64, "\(name) at \(now)")
            }
        }
    }

    @Test("every example event reads back as the event the core wrote (TimerEvent(event:))")
    func eventsDecode() throws {
        let made = try #require(try Self.makeEvents()["events"]?.array)
        var machine = try TimerMachine(id: "main", name: "Main", spec: TimerSpec(json: ["kind": "countdown", "duration": "1m"]))
        let more = try machine.handle(TimerCommand(operation: .start(spec: nil, startAt: nil, restart: false)), now: Self.t0).get()
            + machine.advance(to: Self.t0 + 61_000)
        for json in made + more.map(\.json) {
            let event = try #require(TimerEvent(event: json), "\(json)")
            #expect(event.json == json)
        }
        #expect(TimerEvent(event: ["type": "launched", "timer": "a", "revision": 1, "due_ms": 1, "at_ms": 1]) == nil)
        #expect(TimerEvent(event: ["type": "phase", "timer": "a"]) == nil)
    }

    @Test("every example command parses as commands.json says, and encodes to its canonical form")
    func commandsParseAsDescribed() throws {
        let parser = CommandParser()
        let commands = try #require(try Self.load("commands")["commands"]?.array)
        #expect(commands.count >= 20)
        for example in commands {
            let name = example["name"]?.string ?? "?"
            let topic = try #require(example["topic"]?.string, "\(name)")
            let timer: String? = topic == "node" ? nil : String(topic.dropFirst("timer:".count))
            let payload: [UInt8] = switch example["payload"] {
            case .string(let text)?: Array(text.utf8)
            case let value?: value.jsonBytes
            case nil: []
            }
            switch parser.parse(payload, timerID: timer) {
            case .success(let command):
                #expect(example["error"] == nil, "\(name): parsed, but commands.json expects \(example["error"] ?? .null)")
                let encoded = try #require(example["encoded"], "\(name): an accepted example needs its canonical \"encoded\" form")
                #expect(command.json == encoded, "\(name): encodes to \(command.json)")
                #expect(command.topic(in: Topics(base: "p")) == (command.topicTimer.map { "p/timers/\($0)/cmd" } ?? "p/cmd"))
                // The canonical form is read back as the same command, on the topic it names.
                let again = parser.parse(command.json.jsonBytes, timerID: command.topicTimer)
                #expect(again == .success(command), "\(name)")
            case .failure(let error):
                #expect(example["error"]?.string == error.code.rawValue, "\(name): refused with \(error.code.rawValue): \(error.message)")
            }
        }
    }

    // MARK: Helpers

    static func load(_ name: String) throws -> JSONValue {
        try JSONValue.parse(Array(try Data(contentsOf: directory.appendingPathComponent("\(name).json"))))
    }

    /// JSON with sorted keys, two-space indentation, one line per scalar: diffs stay readable.
    static func pretty(_ value: JSONValue, indent: String = "") -> String {
        let inner = indent + "  "
        switch value {
        case .object(let members) where !members.isEmpty:
            let lines = members.keys.sorted().map { inner + String(decoding: JSONValue.string($0).jsonBytes, as: UTF8.self) + ": " + pretty(members[$0]!, indent: inner) }
            return "{\n" + lines.joined(separator: ",\n") + "\n" + indent + "}"
        case .array(let items) where !items.isEmpty:
            return "[\n" + items.map { inner + pretty($0, indent: inner) }.joined(separator: ",\n") + "\n" + indent + "]"
        default:
            return String(decoding: value.jsonBytes, as: UTF8.self)
        }
    }
}

import PacerCore
import PacerDisplays
import PacerTestSupport

/// A real timer to take snapshots of: the core's machine, driven with commands at instants.
struct TimerFixture {
    var machine: TimerMachine

    /// `{"kind": "interval", "work": "20s", "rest": "10s", "rounds": 8}` and the like.
    init(_ spec: JSONValue, id: String = "main", ack: Bool? = nil) throws {
        var json = spec
        if let ack, case .object(var members) = json { members["ack"] = .bool(ack); json = .object(members) }
        machine = try TimerMachine(id: id, name: id, spec: try TimerSpec(json: json))
    }

    static func tabata(id: String = "main") throws -> TimerFixture {
        try TimerFixture(["kind": "interval", "work": "20s", "rest": "10s", "rounds": 8], id: id)
    }

    /// Applies a command at `now`; the events it emitted.
    @discardableResult
    mutating func run(_ operation: TimerOperation, at now: Millis) -> [TimerEvent] {
        switch machine.handle(TimerCommand(operation), now: now) {
        case .success(let events): return events
        case .failure(let error): fatalError("\(operation) refused: \(error.message)")
        }
    }

    @discardableResult
    mutating func start(at now: Millis) -> [TimerEvent] {
        run(.start(spec: nil, startAt: nil, restart: false), at: now)
    }

    /// Advances to `now`; the events due meanwhile.
    @discardableResult
    mutating func advance(to now: Millis) -> [TimerEvent] { machine.advance(to: now) }

    func snapshot(_ now: Millis) -> TimerSnapshot { machine.snapshot(at: now) }
}

extension DisplayMessage {
    var json: JSONValue? { try? JSONValue.parse(payload) }
    var text: String { String(decoding: payload, as: UTF8.self) }
}

extension RGB {
    var pixel: Pixel { Pixel(red, green, blue) }
}

/// The instant tests start their timers at: a whole second, like a press on the page.
let t0: Millis = 1_800_000_000_000

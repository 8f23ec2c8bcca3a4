import PacerCore
import Testing

/// A base instant (2026-11-22T04:00:00Z) for tests; every instant is injected.
let t0: Millis = 1_795_320_000_000

let startNow = TimerOperation.start(spec: nil, startAt: nil, restart: false)

func makeMachine(_ spec: TimerSpec, id: String = "t1", settings: TimerSettings = .init()) throws -> TimerMachine {
    try TimerMachine(id: id, name: "Timer \(id)", spec: spec, settings: settings)
}

func makeMachine(_ json: JSONValue, id: String = "t1", settings: TimerSettings = .init()) throws -> TimerMachine {
    try TimerMachine(id: id, name: "Timer \(id)", spec: TimerSpec(json: json), settings: settings)
}

extension TimerMachine {
    /// Sends a command that must be accepted; returns its events.
    @discardableResult
    mutating func send(_ operation: TimerOperation, now: Millis, at: Millis? = nil, ifRevision: Int? = nil) throws -> [TimerEvent] {
        try handle(TimerCommand(operation, at: at, ifRevision: ifRevision), now: now).get()
    }

    /// Sends a command that must be refused, checks it changed nothing, returns the error.
    mutating func refusal(_ operation: TimerOperation, now: Millis, at: Millis? = nil, ifRevision: Int? = nil,
                          sourceLocation: SourceLocation = #_sourceLocation) -> CommandError? {
        let before = self
        switch handle(TimerCommand(operation, at: at, ifRevision: ifRevision), now: now) {
        case .success(let events):
            Issue.record("expected a refusal, got \(events.map(\.type))", sourceLocation: sourceLocation)
            return nil
        case .failure(let error):
            #expect(self == before, "a refused command changed the machine", sourceLocation: sourceLocation)
            return error
        }
    }
}

extension Array where Element == TimerEvent {
    var types: [EventType] { map(\.type) }
    var dues: [Millis] { map(\.dueMs) }
}

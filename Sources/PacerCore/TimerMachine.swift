/// One timer's state machine (stub; full implementation follows).
public struct TimerMachine: Sendable, Codable, Equatable {
    public let id: String
    public var name: String
    public private(set) var spec: TimerSpec
    public private(set) var program: Program
    public private(set) var status: TimerStatus
    public private(set) var revision: Int
    public var settings: TimerSettings

    public init(id: String, name: String, spec: TimerSpec, settings: TimerSettings = .init()) throws(SpecError) {
        try TimerMachine.validateID(id)
        self.id = id
        self.name = name
        self.spec = spec
        self.program = try spec.compile()
        self.status = .idle
        self.revision = 0
        self.settings = settings
    }

    public static func validateID(_ id: String) throws(SpecError) {
        let bytes = Array(id.utf8)
        func ok(_ b: UInt8) -> Bool { (b >= 97 && b <= 122) || (b >= 48 && b <= 57) }
        guard let first = bytes.first, ok(first), bytes.count <= 64,
              bytes.dropFirst().allSatisfy({ ok($0) || $0 == 95 || $0 == 45 })
        else { throw SpecError(field: "id", message: "id must match [a-z0-9][a-z0-9_-]{0,63}, got \(JSONValue.string(id))") }
    }

    public mutating func handle(_ command: TimerCommand, now: Millis) -> Result<[TimerEvent], CommandError> { .success([]) }
    public mutating func advance(to now: Millis) -> [TimerEvent] { [] }
    public func nextDeadline(after now: Millis) -> Millis? { nil }
    public func snapshot(at now: Millis) -> TimerSnapshot {
        TimerSnapshot(id: id, name: name, kind: spec.kind, status: status, phase: .idle, round: 1, rounds: program.rounds, set: 1, sets: program.sets, segment: 1, segments: program.count, elapsedMs: 0, segmentElapsedMs: 0, progress: 0, revision: revision, asOfMs: now, remainingSeconds: 0, display: "0:00", overtime: false, countsUp: program.countsUp)
    }
    public mutating func shiftAnchors(by deltaMs: Millis) {}
    public mutating func rename(_ name: String) { self.name = name; revision += 1 }
}

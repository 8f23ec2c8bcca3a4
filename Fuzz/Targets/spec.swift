// libFuzzer target: bytes -> JSON (JSONValue.parse, as the node reads a command) ->
// TimerSpec(json:) -> compiled program and a machine started on it.
import PacerCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSpec(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let json = try? JSONValue.parse(bytes) else { return 0 }
    // The JSON value prints and reads back as itself.
    let text = json.description
    if let again = try? JSONValue.parse(Array(text.utf8)) {
        precondition(again.description == text, "JSONValue does not round-trip: \(text)")
    }
    guard let spec = try? TimerSpec(json: json) else { return 0 }
    if var machine = try? TimerMachine(id: "fuzz", name: "Fuzz", spec: spec, settings: TimerSettings()) {
        _ = machine.handle(TimerCommand(operation: .start(spec: nil, startAt: nil, restart: false), requestID: "f"), now: 1_000)
        _ = machine.advance(to: 1_000 + 3_600_000)
        _ = machine.snapshot(at: 1_000 + 3_600_000).json
    }
    return 0
}

// libFuzzer target `persisted`: a timer row read back from the database, as a restore reads
// it: PacerCore's persisted reader, the node's only one. A row is the node's own, but an SD
// card can damage one: the reader may not trap on any bytes, and a machine it reads must
// advance and snapshot.
import PacerCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPersisted(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var machines: [TimerMachine] = []
    if let json = try? JSONValue.parse(bytes), let machine = try? TimerMachine(persisted: json) {
        machines.append(machine)
    }
    for var machine in machines {
        let now = machine.advancedToMs.saturatingAdd(90_000)
        _ = machine.advance(to: now)
        _ = machine.snapshot(at: now).json
        _ = machine.nextDeadline(after: now)
    }
    return 0
}

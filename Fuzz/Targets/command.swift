// libFuzzer target: a command payload as the node receives it (CommandParser of PacerNode,
// compiled in from Sources/PacerNode/Topics by scripts/fuzz): on the node topic and on a
// timer's topic. The first byte picks the topic.
import PacerCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCommand(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let payload = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let parser = CommandParser(maxPayloadBytes: 65_536)
    _ = parser.parse(payload, timerID: data[0] & 1 == 0 ? nil : "main")
    return 0
}

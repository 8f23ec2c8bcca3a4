// libFuzzer target: a payload as the node receives it on the topics CommandParser reads
// (compiled in from Sources/PacerProtocol by scripts/fuzz): the node's cmd topic, a
// timer's cmd topic, the clock topic. The first byte picks the topic. Every refusal must be
// short and free of control characters (it goes into a reply and a log line).
import PacerCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCommand(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let payload = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let parser = CommandParser(maxPayloadBytes: 65_536)
    let error: ReplyError?
    switch data[0] % 3 {
    case 0, 1:
        if case .failure(let refused) = parser.parse(payload, timerID: data[0] % 3 == 0 ? nil : "main") { error = refused } else { error = nil }
        _ = parser.requestID(in: payload)
    default:
        if case .failure(let refused) = parser.parseTimeRequest(payload, topic: "pacer/f/time") { error = refused } else { error = nil }
    }
    if let error {
        precondition(error.message.count <= ReplyError.maxMessageLength + 1, "a message of \(error.message.count) characters")
        precondition(!error.message.unicodeScalars.contains { $0.value < 0x20 || $0 == "\u{2028}" }, "control characters in \(error.message)")
    }
    return 0
}

// libFuzzer target: the plain words of a timer's `cmd` topic (`pause`, `snooze 120`, `+30`).
import PacerCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWords(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let operation = TimerOperation(word: text) {
        _ = operation.action
    }
    return 0
}

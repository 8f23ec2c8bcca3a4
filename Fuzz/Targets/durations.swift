// libFuzzer target: duration text (`90`, `1m30s`, `1:30`, `500ms`) and JSON numbers as durations.
// Built by scripts/fuzz with PacerCore; any crash, hang or sanitizer report is a bug.
import PacerCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDurations(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let ms = try? Durations.parse(text) {
        // Whatever parses (negative values too: limits are checked by the timer's spec, which names
        // the field) can be shown without trapping.
        _ = Durations.describe(ms)
        _ = Durations.compact(ms)
        _ = Durations.display(remainingMs: ms)
    }
    if let number = Double(text) {
        _ = try? Durations.parse(.number(number), field: "duration")
    }
    return 0
}

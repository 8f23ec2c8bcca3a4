// libFuzzer target `instant`: PacerCore's ISO 8601 reader (`start_at`, `since`), which replaced
// Foundation's ISO8601DateFormatter after a long fraction killed the node inside ICU
// (docs/RELIABILITY.md, "Fuzzing").
// An accepted text must lie in years 0001-9999 and read back from its own canonical form; a
// refusal's message must be short and free of control characters.
import PacerCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzInstant(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    switch ISO8601.parse(text) {
    case .success(let ms):
        // 0001-01-01T00:00:00+23:59 is the earliest, 9999-12-31T23:59:59.999-23:59 the latest.
        guard (-62_135_683_140_000...253_402_387_139_999).contains(ms) else { fatalError("\(ms) out of range for '\(text)'") }
        guard case .success(ms) = ISO8601.parse(iso8601(ms: ms)) else {
            if (-62_135_596_800_000...253_402_300_799_999).contains(ms) { fatalError("\(iso8601(ms: ms)) does not read back") }
            return 0  // beyond 0001/9999 in UTC: not written with 4 digits
        }
    case .failure(let error):
        let message = error.description
        guard message.utf8.count < 200, !message.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            fatalError("message '\(message)'")
        }
    }
    return 0
}

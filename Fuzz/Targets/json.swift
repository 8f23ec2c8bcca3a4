// libFuzzer target: JSONValue.parse (PacerCore's JSON reader) against Foundation's
// JSONDecoder().decode(JSONValue.self, ...), the reader it replaced. Both must accept with equal
// values or both refuse, except where JSONValue+Parse.swift says they differ on purpose:
// - a trailing comma is refused (Foundation skips it: without it, the two must agree);
// - a key given twice is refused. Foundation keeps the first value and never reads the second,
//   so it also accepts anything malformed inside that second value (a raw control character,
//   invalid UTF-8, a lone surrogate, `01`, `-`, `1e309`): such an input is explained when, with
//   the bad token mended, we report a key given twice before it;
// - only UTF-8 is read (Foundation also reads UTF-16/UTF-32).
// Besides: no crash, no hang, an error's offset within the input and its message free of
// control characters, an accepted value written by `jsonBytes` reads back as itself.
import Foundation
import PacerCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let ours = read(bytes)
    switch ours {
    case .success(let value):
        check(read(value.jsonBytes) == .success(value), "does not read back its own writing: \(value)")
    case .failure(let error):
        check((0...size).contains(error.offset), "offset \(error.offset) outside 0...\(size): \(error)")
        check(!error.description.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || ["\u{85}", "\u{2028}", "\u{2029}"].contains($0) },
              "a control character in the message: \(error.description.debugDescription)")
    }
    // Foundation's decoding of JSONValue takes time cubic in the nesting (1.5 s at 512 levels):
    // deep inputs are compared by the unit tests, not here.
    if readsAsUTF16OrUTF32(bytes) || nesting(bytes) > 64 { return 0 }
    let theirs = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    switch (ours, theirs) {
    case (.success(let value), let theirs?):
        check(value == theirs, "we read \(value), Foundation \(theirs): \(text(bytes))")
    case (.success(let value), nil):
        check(false, "we read \(value), Foundation refuses: \(text(bytes))")
    case (.failure, nil):
        break
    case (.failure(let error), let theirs?):
        check(explained(bytes, as: theirs), "Foundation reads \(theirs), we refuse: \(error): \(text(bytes))")
    }
    return 0
}

/// Whether Foundation's reading `theirs` of bytes we refuse is one of the documented differences.
private func explained(_ bytes: [UInt8], as theirs: JSONValue) -> Bool {
    var bytes = bytes
    var firstMended: Int?  // where the first malformed token was mended
    for _ in 0...bytes.count + 1 {
        let error: JSONParseError
        switch read(bytes) {
        case .success(let value): return firstMended == nil && value == theirs
        case .failure(let failure): error = failure
        }
        let at = error.offset
        switch error.reason {
        case .duplicateKey:
            return firstMended.map { at < $0 } ?? true
        case .trailingComma:
            bytes.remove(at: at)
            if let mended = firstMended, at < mended { firstMended = mended - 1 }
            continue
        case .invalidEscape where at + 1 < bytes.count && bytes[at + 1] == UInt8(ascii: "u"):
            // Foundation, skipping the second value, takes the 4 bytes after `\u` whatever they
            // are (a backslash too, which then escapes nothing): the escape is mended whole.
            for i in at..<min(at + 6, bytes.count) { bytes[i] = UInt8(ascii: "x") }
        case .controlCharacterInString, .invalidUTF8, .invalidEscape, .unpairedSurrogate:
            bytes[at] = UInt8(ascii: "x")  // the byte, or the backslash of the escape
        case .numberOutOfRange, .leadingZero:
            let end = bytes[at...].firstIndex { !"+-.eE0123456789".utf8.contains($0) } ?? bytes.endIndex
            bytes.replaceSubrange(at..<end, with: [UInt8(ascii: "0")])
        case .unexpectedCharacter(_, let expected) where expected.hasPrefix("a digit"):
            bytes.insert(UInt8(ascii: "0"), at: at)
        default:
            return false
        }
        firstMended = firstMended ?? at
    }
    return false
}

private func read(_ bytes: [UInt8]) -> Result<JSONValue, JSONParseError> {
    Result { () throws(JSONParseError) in try JSONValue.parse(bytes) }
}

/// `precondition` with its message kept in an optimized build.
private func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

private func text(_ bytes: [UInt8]) -> String {
    String(decoding: bytes, as: UTF8.self).debugDescription
}

/// Whether Foundation reads `bytes` as UTF-16 or UTF-32: a byte order mark, or the NUL bytes
/// ASCII has in those encodings among the first four bytes.
private func readsAsUTF16OrUTF32(_ bytes: [UInt8]) -> Bool {
    let head = bytes.prefix(4).map(Int.init) + Array(repeating: -1, count: max(0, 4 - bytes.count))
    let (a, b, c, d) = (head[0], head[1], head[2], head[3])
    if (a == 0xFE && b == 0xFF) || (a == 0xFF && b == 0xFE) || (a == 0 && b == 0 && c == 0xFE && d == 0xFF) { return true }
    if bytes.count == 2 { return (a == 0) != (b == 0) }
    guard bytes.count >= 4 else { return false }
    return (a == 0 && b == 0 && c == 0 && d != 0) || (a == 0 && b != 0 && c == 0 && d != 0)
        || (a != 0 && b == 0 && c == 0 && d == 0) || (a != 0 && b == 0 && c != 0 && d == 0)
}

/// The deepest nesting of brackets outside strings (a bound for well-formed input).
private func nesting(_ bytes: [UInt8]) -> Int {
    var depth = 0, deepest = 0, inString = false, escaped = false
    for byte in bytes {
        if inString {
            if escaped { escaped = false } else if byte == 0x5C { escaped = true } else if byte == 0x22 { inString = false }
            continue
        }
        switch byte {
        case 0x22: inString = true
        case 0x5B, 0x7B: depth += 1; deepest = max(deepest, depth)
        case 0x5D, 0x7D: depth -= 1
        default: break
        }
    }
    return deepest
}

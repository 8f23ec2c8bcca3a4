// The JSON reader of Pacer: bytes in, `JSONValue` out, in one pass over the bytes.
//
// It reads what Foundation's `JSONDecoder().decode(JSONValue.self, from:)` reads, into the
// same values (checked against it by JSONParserTests and the `json` fuzz target), with these
// differences, each deliberate:
//
// - A key that appears twice in one object is an error. Foundation keeps the first value and
//   drops the second without a word (`{"action":"time","action":"delete"}` is `time`), without
//   even checking it (a raw control character, invalid UTF-8, `\ud800`, `01` or `-` there passes),
//   while Python and JavaScript keep the last: a command that means two things is refused instead.
//   Keys are compared as Swift strings (canonical equivalence), so `"é"` and `"e\u0301"` are the
//   same key here, as they are in Foundation's dictionary.
// - A trailing comma (`[1,]`, `{"a":1,}`) is an error, as RFC 8259 says. Foundation accepts one
//   before a closing bracket.
// - Only UTF-8 is read. Foundation also reads UTF-16 and UTF-32, with or without a byte order
//   mark, guessing from the NUL bytes of the first four bytes (so `[0x31, 0x00]` is `1` to it).
//   RFC 8259 §8.1 requires UTF-8 between systems; here those bytes are invalid JSON.
//
// Like Foundation: a UTF-8 byte order mark (EF BB BF) at the very start is skipped (RFC 8259
// allows a reader to ignore it); anywhere else it is an unexpected character. At most 512
// containers may nest (the 513th is refused). Integers in the Int64 range are exact;
// every other number is the correctly rounded Double; a number beyond Double's range is an
// error; one too small for it is 0. `-0` is 0 (`-0.0` is -0.0, which equals 0).

/// Why bytes are not a JSON text, and where: a message a person can act on.
///
/// `offset` counts bytes from 0 at the start of the input. The message never contains bytes
/// of the input that could break a log line or a reply (control characters are shown escaped).
public struct JSONParseError: Error, CustomStringConvertible, Equatable, Sendable {
    /// What is wrong.
    public enum Reason: Equatable, Sendable {
        /// A byte that cannot stand here; `expected` says what could (e.g. `"',' or '}'"`).
        case unexpectedCharacter(UInt8, expected: String)
        /// The input ends where `expected` should come.
        case unexpectedEnd(expected: String)
        /// A string whose closing quote never comes; `offset` is its opening quote.
        case unterminatedString
        /// A control character (below 0x20) written raw inside a string.
        case controlCharacterInString(UInt8)
        /// A backslash followed by something other than `" \ / b f n r t` or `u` and 4 hex digits.
        case invalidEscape
        /// A `\uD800`–`\uDFFF` escape that is not a high surrogate followed by a low one.
        case unpairedSurrogate
        /// Bytes that are not UTF-8 (overlong, an encoded surrogate, above U+10FFFF, cut short).
        case invalidUTF8
        /// A number such as `01`.
        case leadingZero
        /// A number beyond Double's range (`1e309`).
        case numberOutOfRange
        /// More than `limit` arrays and objects inside each other.
        case tooDeep(limit: Int)
        /// A comma with no value after it (`[1,]`); `offset` is the comma.
        case trailingComma
        /// The same key twice in one object; `offset` is the second one.
        case duplicateKey(String)
        /// More than one JSON value, or anything but white space after it.
        case extraData
    }

    public var reason: Reason
    /// The byte offset of the problem, from 0.
    public var offset: Int
    /// For a number out of range: the key of the member it is the value of, if any, so the
    /// message can name the field (`"seconds"`).
    public var key: String?

    public init(_ reason: Reason, at offset: Int, key: String? = nil) {
        self.reason = reason
        self.offset = offset
        self.key = key
    }

    public var description: String {
        switch reason {
        case .unexpectedCharacter(let byte, let expected):
            return "unexpected \(Self.show(byte)) at byte \(offset); expected \(expected)"
        case .unexpectedEnd(let expected):
            return "unexpected end of input at byte \(offset); expected \(expected)"
        case .unterminatedString:
            return "unterminated string starting at byte \(offset)"
        case .controlCharacterInString(let byte):
            return "control character \(Self.hex(byte)) in a string at byte \(offset); write it as an escape such as \\n or \\u00\(Self.hex(byte).dropFirst(2))"
        case .invalidEscape:
            return #"invalid escape at byte \#(offset); the escapes are \" \\ \/ \b \f \n \r \t and \u with 4 hex digits"#
        case .unpairedSurrogate:
            return "unpaired UTF-16 surrogate escape at byte \(offset)"
        case .invalidUTF8:
            return "invalid UTF-8 at byte \(offset)"
        case .leadingZero:
            return "number with a leading zero at byte \(offset)"
        case .numberOutOfRange:
            return "number out of range at byte \(offset)" + (key.map { " (the value of \(Self.quote($0)))" } ?? "")
        case .tooDeep(let limit):
            return "nesting deeper than \(limit) levels at byte \(offset)"
        case .trailingComma:
            return "trailing comma at byte \(offset); remove it"
        case .duplicateKey(let key):
            return "the key \(Self.quote(key)) appears twice (byte \(offset))"
        case .extraData:
            return "extra data after the JSON value at byte \(offset)"
        }
    }

    /// `'x'` for a printable ASCII character, `byte 0x0A` for any other byte.
    static func show(_ byte: UInt8) -> String {
        switch byte {
        case UInt8(ascii: "'"): #"character "'""#
        case 0x21...0x7E: "character '\(Character(Unicode.Scalar(byte)))'"
        default: "byte \(hex(byte))"
        }
    }

    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".unicodeScalars)
        return "0x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0xF)])
    }

    /// A key for a message: in double quotes, at most 40 characters written (escapes count), with quotes, backslashes,
    /// control, format and line-separating characters escaped (nothing that breaks a log line).
    static func quote(_ key: String) -> String {
        "\"" + printable(key, escapingQuotes: true) + "\""
    }
}

extension JSONValue {
    /// The value of a JSON text (RFC 8259, UTF-8).
    ///
    /// Strict: only space, tab, line feed and carriage return as white space; no comments,
    /// trailing commas, `NaN`, leading zeros or `+`; no raw control characters in strings;
    /// invalid UTF-8 and unpaired surrogate escapes are refused. A key that appears twice in
    /// one object is refused too (the command would be ambiguous). A UTF-8 byte order mark at
    /// the start is skipped.
    ///
    /// - Parameters:
    ///   - bytes: the JSON text.
    ///   - maxDepth: how many arrays and objects may nest; the default is Foundation's. Reading
    ///     uses no recursion, but Swift frees a nested value recursively: keep it in the hundreds.
    /// - Throws: `JSONParseError`, with the byte offset and the reason.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 512) throws(JSONParseError) -> JSONValue {
        try bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(JSONParseError) in try parse(buffer, maxDepth: maxDepth) }
        }.get()
    }

    /// The value of the JSON text in `bytes`; offsets in errors count from the slice's start.
    public static func parse(_ bytes: ArraySlice<UInt8>, maxDepth: Int = 512) throws(JSONParseError) -> JSONValue {
        try bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(JSONParseError) in try parse(buffer, maxDepth: maxDepth) }
        }.get()
    }

    /// The value of the JSON text in `bytes` (see `parse(_:maxDepth:)` for `[UInt8]`).
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int = 512) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: bytes, maxDepth: maxDepth)
        return try parser.document()
    }

    /// The members of a top-level object as far as they can be read: all of them when `bytes`
    /// is a JSON object (a number beyond Double's range read as `null`), else those read
    /// before the first error (a key given twice, nesting too deep, bad syntax); nil when
    /// `bytes` does not start an object. For a refused command's request id: its error reply
    /// still carries it.
    public static func leadingMembers(_ bytes: [UInt8], maxDepth: Int = 512) -> [String: JSONValue]? {
        bytes.withUnsafeBufferPointer { buffer in
            var parser = JSONParser(bytes: buffer, maxDepth: maxDepth)
            parser.outOfRangeNumbersAsNull = true
            do {
                guard case .object(let members) = try parser.document() else { return nil }
                return members
            } catch {
                guard let top = parser.stack.first, top.isObject else { return nil }
                return top.members
            }
        }
    }
}

/// One pass over the bytes. Containers are kept on a stack of frames, not in recursive calls,
/// so no input, however deeply nested, can exhaust the thread's stack; `maxDepth` bounds the
/// frames.
private struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    var position = 0
    /// See `JSONValue.leadingMembers(_:)`.
    var outOfRangeNumbersAsNull = false
    /// The containers being read, outermost first (after an error: as far as they were read).
    var stack: [Frame] = []

    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    /// An array or object being read.
    struct Frame {
        var isObject: Bool
        var elements: [JSONValue] = []
        var members: [String: JSONValue] = [:]
        /// The key of the member being read, and where it starts.
        var key = ""
        var keyOffset = 0
    }

    mutating func document() throws(JSONParseError) -> JSONValue {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { position = 3 }
        let result = try value()
        skipWhiteSpace()
        if position < bytes.count { throw JSONParseError(.extraData, at: position) }
        return result
    }

    // MARK: - Structure

    mutating func value() throws(JSONParseError) -> JSONValue {
        stack = []
        var current: JSONValue
        while true {
            // A value, or the opening of a container (whose first value is read next).
            skipWhiteSpace()
            guard position < bytes.count else { throw JSONParseError(.unexpectedEnd(expected: "a value"), at: position) }
            switch bytes[position] {
            case UInt8(ascii: "{"):
                guard stack.count < maxDepth else { throw JSONParseError(.tooDeep(limit: maxDepth), at: position) }
                position += 1
                skipWhiteSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                    position += 1
                    current = .object([:])
                } else {
                    var frame = Frame(isObject: true)
                    // Room for the members of a typical command's objects: no regrowth, no rehash.
                    frame.members.reserveCapacity(8)
                    (frame.key, frame.keyOffset) = try key(orClosing: true)
                    stack.append(frame)
                    continue
                }
            case UInt8(ascii: "["):
                guard stack.count < maxDepth else { throw JSONParseError(.tooDeep(limit: maxDepth), at: position) }
                position += 1
                skipWhiteSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                    position += 1
                    current = .array([])
                } else {
                    stack.append(Frame(isObject: false))
                    continue
                }
            case UInt8(ascii: "\""): current = .string(try string())
            case UInt8(ascii: "t"): try literal("true"); current = .bool(true)
            case UInt8(ascii: "f"): try literal("false"); current = .bool(false)
            case UInt8(ascii: "n"): try literal("null"); current = .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): current = try numberValue(in: stack.last)
            case let byte: throw JSONParseError(.unexpectedCharacter(byte, expected: "a value"), at: position)
            }

            // Into its container; then each container that closes here goes into its own.
            while let top = stack.indices.last {
                skipWhiteSpace()
                let closing = stack[top].isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
                let expected = stack[top].isObject ? "',' or '}'" : "',' or ']'"
                if stack[top].isObject {
                    let key = stack[top].key
                    if stack[top].members.updateValue(current, forKey: key) != nil {
                        throw JSONParseError(.duplicateKey(key), at: stack[top].keyOffset)
                    }
                } else {
                    stack[top].elements.append(current)
                }
                guard position < bytes.count else { throw JSONParseError(.unexpectedEnd(expected: expected), at: position) }
                let byte = bytes[position]
                if byte == UInt8(ascii: ",") {
                    let comma = position
                    position += 1
                    skipWhiteSpace()
                    if position < bytes.count, bytes[position] == closing { throw JSONParseError(.trailingComma, at: comma) }
                    if stack[top].isObject { (stack[top].key, stack[top].keyOffset) = try key(orClosing: false) }
                    break
                }
                guard byte == closing else { throw JSONParseError(.unexpectedCharacter(byte, expected: expected), at: position) }
                position += 1
                let frame = stack.removeLast()
                current = frame.isObject ? .object(frame.members) : .array(frame.elements)
            }
            if stack.isEmpty { return current }
        }
    }

    /// A member's key and its colon (white space before the key already skipped).
    mutating func key(orClosing: Bool) throws(JSONParseError) -> (String, Int) {
        let expected = orClosing ? "a key in double quotes or '}'" : "a key in double quotes"
        guard position < bytes.count else { throw JSONParseError(.unexpectedEnd(expected: expected), at: position) }
        guard bytes[position] == UInt8(ascii: "\"") else {
            throw JSONParseError(.unexpectedCharacter(bytes[position], expected: expected), at: position)
        }
        let offset = position
        let key = try string()
        skipWhiteSpace()
        guard position < bytes.count else { throw JSONParseError(.unexpectedEnd(expected: "':'"), at: position) }
        guard bytes[position] == UInt8(ascii: ":") else {
            throw JSONParseError(.unexpectedCharacter(bytes[position], expected: "':' after the key"), at: position)
        }
        position += 1
        return (key, offset)
    }

    mutating func skipWhiteSpace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let expected = "\(word)"
        for (index, byte) in UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount).enumerated() {
            let at = position + index
            guard at < bytes.count else { throw JSONParseError(.unexpectedEnd(expected: expected), at: at) }
            guard bytes[at] == byte else { throw JSONParseError(.unexpectedCharacter(bytes[at], expected: expected), at: at) }
        }
        position += word.utf8CodeUnitCount
    }

    // MARK: - Numbers

    /// A number as a value of `frame`: out of range, an error naming its key (or null).
    mutating func numberValue(in frame: Frame?) throws(JSONParseError) -> JSONValue {
        do {
            return .number(try number())
        } catch {
            guard case .numberOutOfRange = error.reason else { throw error }
            if outOfRangeNumbersAsNull { return .null }  // `number()` moved past it
            var located = error
            if let frame, frame.isObject { located.key = frame.key }
            throw located
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    mutating func number() throws(JSONParseError) -> Double {
        let start = position
        var index = position
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }

        // The integer part, its value kept while it fits 18 digits (always within Int64).
        var magnitude: Int64 = 0
        var digits = 0
        guard index < bytes.count else { throw JSONParseError(.unexpectedEnd(expected: "a digit"), at: index) }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, Self.isDigit(bytes[index]) { throw JSONParseError(.leadingZero, at: start) }
        } else if Self.isDigit(bytes[index]) {
            while index < bytes.count, Self.isDigit(bytes[index]) {
                if digits < 18 { magnitude = magnitude * 10 + Int64(bytes[index] &- UInt8(ascii: "0")) }
                digits += 1
                index += 1
            }
        } else {
            throw JSONParseError(.unexpectedCharacter(bytes[index], expected: "a digit"), at: index)
        }

        var integral = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            integral = false
            index = try self.digits(from: index + 1, after: "'.'")
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            integral = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            index = try self.digits(from: index, after: "the exponent")
        }
        position = index

        // Up to 18 digits and no fraction or exponent: exact (and -0 is 0, as in Foundation).
        if integral, digits <= 18 { return Double(negative ? -magnitude : magnitude) }
        // Anything else: the standard library's correctly rounded conversion.
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw JSONParseError(.numberOutOfRange, at: start) }
        return value
    }

    /// The index after one or more digits starting at `index`.
    func digits(from index: Int, after what: String) throws(JSONParseError) -> Int {
        var index = index
        guard index < bytes.count else { throw JSONParseError(.unexpectedEnd(expected: "a digit after \(what)"), at: index) }
        guard Self.isDigit(bytes[index]) else {
            throw JSONParseError(.unexpectedCharacter(bytes[index], expected: "a digit after \(what)"), at: index)
        }
        while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        return index
    }

    static func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    // MARK: - Strings

    /// A string; `position` is at its opening quote. Without escapes (the usual case) its bytes
    /// are checked and become a String in one go.
    mutating func string() throws(JSONParseError) -> String {
        let start = position
        var index = start + 1
        var combined: UInt8 = 0  // every byte ORed: below 0x80 means ASCII only
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let content = UnsafeBufferPointer(rebasing: bytes[(start + 1)..<index])
                position = index + 1
                if combined < 0x80 { return String(decoding: content, as: UTF8.self) }
                if let text = String(validating: content, as: UTF8.self) { return text }
                throw JSONParseError(.invalidUTF8, at: Self.firstInvalidUTF8(in: content, from: 0) + start + 1)
            }
            if byte == UInt8(ascii: "\\") { return try escapedString(start: start, escape: index) }
            if byte < 0x20 { throw JSONParseError(.controlCharacterInString(byte), at: index) }
            combined |= byte
            index += 1
        }
        throw JSONParseError(.unterminatedString, at: start)
    }

    /// The rest of a string with escapes, from its first backslash at `escape`.
    mutating func escapedString(start: Int, escape: Int) throws(JSONParseError) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(escape - start + 16)
        var run = start + 1  // the start of the bytes not copied yet
        var index = escape
        // Copies the bytes from `run` to `index`, checked: UTF-8 sequences never contain ASCII,
        // so a run between escapes is valid UTF-8 on its own or not at all.
        func flush(_ out: inout [UInt8], _ run: Int, _ index: Int) throws(JSONParseError) {
            let chunk = UnsafeBufferPointer(rebasing: bytes[run..<index])
            let invalid = Self.firstInvalidUTF8(in: chunk, from: 0)
            if invalid < chunk.count { throw JSONParseError(.invalidUTF8, at: run + invalid) }
            out.append(contentsOf: chunk)
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                try flush(&out, run, index)
                position = index + 1
                return String(decoding: out, as: UTF8.self)
            }
            if byte < 0x20 { throw JSONParseError(.controlCharacterInString(byte), at: index) }
            guard byte == UInt8(ascii: "\\") else {
                index += 1
                continue
            }
            try flush(&out, run, index)
            guard index + 1 < bytes.count else { throw JSONParseError(.unterminatedString, at: start) }
            switch bytes[index + 1] {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                let unit = try hex4(at: index + 2, escape: index, start: start)
                var scalar = UInt32(unit)
                switch unit {
                case 0xD800...0xDBFF:
                    // A high surrogate: a low one must follow at once, as its own \u escape.
                    guard index + 7 < bytes.count, bytes[index + 6] == UInt8(ascii: "\\"), bytes[index + 7] == UInt8(ascii: "u") else {
                        if index + 6 >= bytes.count { throw JSONParseError(.unterminatedString, at: start) }
                        throw JSONParseError(.unpairedSurrogate, at: index)
                    }
                    let low = try hex4(at: index + 8, escape: index + 6, start: start)
                    guard (0xDC00...0xDFFF).contains(low) else { throw JSONParseError(.unpairedSurrogate, at: index) }
                    scalar = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
                    index += 6
                case 0xDC00...0xDFFF:
                    throw JSONParseError(.unpairedSurrogate, at: index)
                default:
                    break
                }
                Self.appendUTF8(scalar, to: &out)
                index += 4
            default:
                throw JSONParseError(.invalidEscape, at: index)
            }
            index += 2
            run = index
        }
        throw JSONParseError(.unterminatedString, at: start)
    }

    /// The 4 hex digits at `index` of the `\u` escape at `escape`. A byte that is not one makes
    /// it an invalid escape even where the input ends early (`"\u1"` ends the string).
    func hex4(at index: Int, escape: Int, start: Int) throws(JSONParseError) -> UInt16 {
        var value: UInt16 = 0
        for offset in 0..<4 {
            guard index + offset < bytes.count else { throw JSONParseError(.unterminatedString, at: start) }
            let byte = bytes[index + offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw JSONParseError(.invalidEscape, at: escape)
            }
            value = value << 4 | UInt16(digit)
        }
        return value
    }

    static func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
        switch scalar {
        case 0..<0x80:
            out.append(UInt8(scalar))
        case 0x80..<0x800:
            out.append(0xC0 | UInt8(scalar >> 6))
            out.append(0x80 | UInt8(scalar & 0x3F))
        case 0x800..<0x10000:
            out.append(0xE0 | UInt8(scalar >> 12))
            out.append(0x80 | UInt8((scalar >> 6) & 0x3F))
            out.append(0x80 | UInt8(scalar & 0x3F))
        default:
            out.append(0xF0 | UInt8(scalar >> 18))
            out.append(0x80 | UInt8((scalar >> 12) & 0x3F))
            out.append(0x80 | UInt8((scalar >> 6) & 0x3F))
            out.append(0x80 | UInt8(scalar & 0x3F))
        }
    }

    /// The index of the first byte at or after `from` that starts no valid UTF-8 sequence
    /// (Unicode's well-formed table: no overlong forms, no surrogates, nothing above U+10FFFF,
    /// nothing cut short); `chunk.count` when all are valid.
    static func firstInvalidUTF8(in chunk: UnsafeBufferPointer<UInt8>, from: Int) -> Int {
        var index = from
        while index < chunk.count {
            let lead = chunk[index]
            if lead < 0x80 {
                index += 1
                continue
            }
            // The continuation bytes a lead byte needs, and the range of the first one.
            let needed: Int
            var low: UInt8 = 0x80, high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: needed = 1
            case 0xE0: needed = 2; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: needed = 2
            case 0xED: needed = 2; high = 0x9F
            case 0xF0: needed = 3; low = 0x90
            case 0xF1...0xF3: needed = 3
            case 0xF4: needed = 3; high = 0x8F
            default: return index
            }
            guard index + needed < chunk.count, (low...high).contains(chunk[index + 1]) else { return index }
            for next in stride(from: index + 2, through: index + needed, by: 1) where chunk[next] & 0xC0 != 0x80 {
                return index
            }
            index += needed + 1
        }
        return chunk.count
    }
}

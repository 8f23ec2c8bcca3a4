import Foundation
import PacerCore
import PropertyBased
import Testing

/// `JSONValue.parse` against Foundation's `JSONDecoder().decode(JSONValue.self, ...)`, the
/// reader it replaces: the same values for what both accept, a refusal for what both refuse,
/// and the documented differences (JSONValue+Parse.swift) where Foundation accepts.
@Suite("JSON parser")
struct JSONParserTests {
    // MARK: - Differential against Foundation

    @Test("random values, as Pacer writes them, pretty-printed by Foundation, and with random white space and \\u escapes")
    func randomValuesReadAsFoundationReadsThem() async {
        await propertyCheck(count: 400, input: Gen.uint64().array(of: 1...300)) { choices in
            var source = Choices(choices)
            let value = JSONSample.value(&source, depth: 0)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted]  // JSONSerialization's layout, and "/" as "\/"
            var spaced: [UInt8] = []
            JSONSample.write(value, into: &spaced, &source)
            let texts = [value.jsonBytes, (try? encoder.encode(value)).map { Array($0) } ?? [], spaced]
            for bytes in texts {
                let text = String(decoding: bytes, as: UTF8.self)
                #expect(JSONDifferential.disagreement(bytes) == nil, "\(text)")
                #expect((try? JSONValue.parse(bytes)) == value, "\(text)")
            }
        }
    }

    @Test("edge values: the same as Foundation, and the exact value expected")
    func edgeValues() throws {
        let cases: [(String, JSONValue)] = [
            ("0", 0), ("-0", 0), ("-0.0", 0), ("0e5", 0), ("1e308", 1e308), ("-1e308", -1e308),
            ("9223372036854775807", .number(Double(Int64.max))), ("9223372036854775808", .number(9_223_372_036_854_775_808.0)),
            ("-9223372036854775808", .number(-9_223_372_036_854_775_808)), ("-9223372036854775809", .number(-9_223_372_036_854_775_808.0)),
            ("999999999999999999", 1e18), ("9007199254740993", .number(9_007_199_254_740_992)),
            ("9223372036012345.7890", .number(9_223_372_036_012_346)), ("9007199254740993.5", .number(9_007_199_254_740_994)),
            ("1.5e-320", .number(Double.leastNonzeroMagnitude * 3_036)), ("2.5e-324", .number(.leastNonzeroMagnitude)), ("1e-400", 0),
            ("123456789012345678901234567890", .number(1.2345678901234568e29)), ("1E+2", 100), ("1e-0", 1), ("-1E-2", -0.01),
            ("0.1", 0.1), ("0.30000000000000004", 0.30000000000000004), ("1.7976931348623157e308", .number(.greatestFiniteMagnitude)),
            ("1.7976931348623158e308", .number(.greatestFiniteMagnitude)),
            ("0." + String(repeating: "0", count: 400) + "1", 0), (String(repeating: "9", count: 300), .number(1e300)),
            (#""\"\\\/\b\f\n\r\t""#, "\"\\/\u{8}\u{c}\n\r\t"), (#""\u0000""#, "\u{0}"), (#""\u0041\u00e9\u00E9""#, "Aéé"),
            (#""\ud83d\ude00""#, "😀"), (#""\uD83D\uDE00""#, "😀"), ("\"😀\"", "😀"), (#""\udbff\udfff""#, "\u{10FFFF}"),
            (#""\uffff\u2028""#, "\u{FFFF}\u{2028}"), ("\"𝄞 日本 é \u{7F}\"", "𝄞 日本 é \u{7F}"), (#""a\/b""#, "a/b"),
            ("{}", [:]), ("[]", []), (" \t\r\n[ 1 , 2 ] \n", [1, 2]), ("[[],{}]", [[], [:]]), ("{\"a\":{\"b\":[]}}", ["a": ["b": []]]),
            ("true", true), ("false", false), ("null", nil), ("[true,false,null]", [true, false, nil]),
            (#"{"":1,"e\u0301":2}"#, ["": 1, "e\u{301}": 2]),
        ]
        for (text, expected) in cases {
            let bytes = Array(text.utf8)
            #expect(JSONDifferential.disagreement(bytes) == nil, "\(text)")
            #expect(try JSONValue.parse(bytes) == expected, "\(text)")
        }
        // A UTF-8 byte order mark at the start is skipped, as Foundation does; nowhere else.
        #expect(try JSONValue.parse([0xEF, 0xBB, 0xBF] + Array("{}".utf8)) == [:])
        for bytes in [[0xEF, 0xBB, 0xBF] + Array("{}".utf8), Array(" ".utf8) + [0xEF, 0xBB, 0xBF, 0x31], [0xEF, 0xBB, 0xBF, 0xEF, 0xBB, 0xBF, 0x31], [0xEF, 0xBB, 0xBF]] {
            #expect(JSONDifferential.disagreement(bytes) == nil, "\(bytes)")
        }
        // Up to 18 digits are read exactly as integers; the sign of zero is not kept (as Foundation).
        #expect(try JSONValue.parse(Array("-0".utf8)).double?.sign == .plus)
    }

    @Test("malformed input: both refuse")
    func malformedInput() {
        var cases: [[UInt8]] = [
            "", " ", "\n", "[", "{", "]", "}", "{\"a\"", "{\"a\":", "{\"a\":1", "[1", "[1,", "\"abc", "tru", "nul", "fals", "True", "NULL",
            "-", "1.", "1e", "1e+", "1.e3", ".5", "+1", "01", "-01", "00", "0x10", "1_000", "--1", "1e1.5", "- 1", "Infinity", "-Infinity",
            "NaN", "[NaN]", "nan", "[1 /* c */]", "// c\n[1]", "# c\n1", "[1],", "{} {}", "1 2", "[1 2]", "[,1]", "[1,,2]", "[,]", "{,}",
            "{\"a\" 1}", "{\"a\":1 \"b\":2}", "{\"a\":1,,}", "{1:2}", "{'a':1}", "['a']", "{\"a\"}", "{\"a\":}", "{\"a\":1,\"b\"}",
            "[1,\u{C}2]", "[1,\u{B}2]", "[1,\u{A0}2]", " \u{FEFF}[1]", "[\"\\x\"]", "[\"\\u12G4\"]", "[\"\\U0041\"]", "[\"\\'\"]",
            "[\"\\u004\"]", "[\"\\\"]", "[\"\\ud800\"]", "[\"\\udc00\"]", "[\"\\ud800\\ud800\"]", "[\"\\ud800x\"]", "[\"\\ud800\\n\"]",
            "[\"\\udbff\\u0041\"]", "[\"\\ude00\\ud83d\"]", "[\"\\ud83d\\u\"]", "[\"\\ud800\\ue000\"]", "[\"\\udbff\\udbff\"]", "[\"\\ud800\\u0000\"]", "[\"\\ud83d", "\"\\u",
        ].map { Array($0.utf8) }
        // Raw control characters in a string.
        for byte in UInt8(0)..<0x20 { cases.append([0x22, 0x61, byte, 0x62, 0x22]) }
        // Invalid UTF-8, in a string and outside one.
        let invalid: [[UInt8]] = [
            [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF], [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF],
            [0xF0, 0x80, 0x80, 0x80], [0xF0, 0x8F, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xFF], [0xFE],
            [0x80], [0xBF], [0xC3], [0xE2, 0x82], [0xF0, 0x9F, 0x98], [0xC3, 0x41], [0xE2, 0x28, 0xA1], [0xF0, 0x9F, 0x98, 0x41],
        ]
        for sequence in invalid {
            cases.append([0x22] + sequence + [0x22])
            cases.append(Array(#"["a\n"#.utf8) + sequence + Array("z\"]".utf8))  // after an escape: the slow path
            cases.append([0x5B] + sequence + [0x5D])
        }
        for bytes in cases {
            let text = String(decoding: bytes, as: UTF8.self).debugDescription
            #expect(throws: JSONParseError.self, "\(text)") { try JSONValue.parse(bytes) }
            #expect(JSONDifferential.foundation(bytes) == nil, "Foundation accepts \(text): the table is wrong")
        }
    }

    @Test("what Foundation accepts and Pacer refuses, on purpose: duplicate keys, trailing commas, UTF-16 and UTF-32")
    func documentedDifferences() throws {
        // Foundation keeps the first of two equal keys (canonically equal ones too); we refuse.
        let duplicates: [(String, String, Int, JSONValue)] = [
            (#"{"action":"start","action":"cancel"}"#, "action", 18, ["action": "start"]),
            (#"{"x":{"k":1,"k":1}}"#, "k", 12, ["x": ["k": 1]]),
            ("{\"\u{e9}\":1,\"e\u{301}\":2}", "e\u{301}", 8, ["\u{e9}": 1]),
        ]
        for (text, key, offset, foundationValue) in duplicates {
            let bytes = Array(text.utf8)
            #expect(JSONDifferential.foundation(bytes) == foundationValue, "\(text)")
            #expect(throws: JSONParseError(.duplicateKey(key), at: offset)) { try JSONValue.parse(bytes) }
        }
        // Found by the json fuzz target: Foundation never reads the value of the second key, so
        // anything malformed there passes it. We refuse, naming what is malformed.
        let prefix = Array(#"{"action":"time","action":"#.utf8)
        let hidden: [([UInt8], JSONParseError.Reason, Int)] = [
            (prefix + Array(#""ex"#.utf8) + [0x1E] + Array(#"plode"}"#.utf8), .controlCharacterInString(0x1E), prefix.count + 3),
            (prefix + [0x22, 0xFF, 0x22, 0x7D], .invalidUTF8, prefix.count + 1),
            (prefix + Array(#""\ud800"}"#.utf8), .unpairedSurrogate, prefix.count + 1),
            (prefix + Array(#""\q"}"#.utf8), .invalidEscape, prefix.count + 1),
            (prefix + Array(#""\ud\u!"}"#.utf8), .invalidEscape, prefix.count + 1),  // Foundation skips 4 bytes after \u
            (prefix + Array(#""\u!ud\"}"#.utf8), .invalidEscape, prefix.count + 1),  // ... a backslash among them too
            (prefix + Array("1e309}".utf8), .numberOutOfRange, prefix.count),
            (prefix + Array("01}".utf8), .leadingZero, prefix.count),
            (prefix + Array("-}".utf8), .unexpectedCharacter(UInt8(ascii: "}"), expected: "a digit"), prefix.count + 1),
        ]
        for (bytes, reason, offset) in hidden {
            #expect(JSONDifferential.foundation(bytes) == ["action": "time"], "\(String(decoding: bytes, as: UTF8.self).debugDescription)")
            // A number out of range names the key it is the value of.
            let key: String? = reason == .numberOutOfRange ? "action" : nil
            #expect(throws: JSONParseError(reason, at: offset, key: key)) { try JSONValue.parse(bytes) }
        }
        // Foundation accepts one comma before a closing bracket; we refuse it.
        for (text, comma, value) in [("[1,]", 2, [1] as JSONValue), (#"{"a":1,}"#, 6, ["a": 1]), ("[[1,],]", 3, [[1]]), ("[1 ,\n]", 3, [1])] {
            #expect(JSONDifferential.foundation(Array(text.utf8)) == value, "\(text)")
            #expect(throws: JSONParseError(.trailingComma, at: comma)) { try JSONValue.parse(Array(text.utf8)) }
        }
        // Foundation reads UTF-16 and UTF-32 (found by a byte order mark or by NUL bytes); we read UTF-8.
        let little = Array("[1]".utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let big = Array("[1]".utf16).flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        for bytes in [little, big, [0xFF, 0xFE] + little, [0xFE, 0xFF] + big, [0x31, 0x00]] {
            #expect(JSONDifferential.foundation(bytes) != nil, "\(bytes)")
            #expect(JSONDifferential.foundationTranscodes(bytes), "\(bytes)")
            #expect(throws: JSONParseError.self) { try JSONValue.parse(bytes) }
        }
    }

    /// Documents of the shapes Pacer reads (a command, a snapshot-like object, escapes, numbers).
    static let documents: [String] = [
        #"{"action":"start","id":"r-123456","spec":{"kind":"interval","work":"40s","rest":"20s","rounds":8}}"#,
        #"{"a":[1,-2.5e-3,true,false,null,{}],"b":"x\"y\\z\/\n\u00e9\ud83d\ude00","c":{"d":[[]]}}"#,
        "[\"caf\u{e9} 日本 😀\",0,-0.0,1E+2,123456789012345678901]",
        "  {\"k\" :\t\"v\" ,\r\n \"n\": 42 }  ",
    ]

    @Test("every truncation of valid documents: refused by both (or read the same)")
    func truncations() {
        for document in Self.documents {
            let bytes = Array(document.utf8)
            var disagreements: [String] = []
            for end in 0..<bytes.count {
                let prefix = Array(bytes[..<end])
                if let problem = JSONDifferential.disagreement(prefix) { disagreements.append(problem) }
                if document.hasPrefix("{") || document.hasPrefix("[") {
                    #expect(throws: JSONParseError.self, "\(end) bytes of \(document)") { try JSONValue.parse(prefix) }
                }
            }
            #expect(disagreements.count == 0, "\(document): \(disagreements.prefix(3))")
        }
    }

    @Test("every single-byte change of valid documents: both refuse, or both read the same value")
    func byteFlips() {
        let replacements: [UInt8] = [0x00, 0x09, 0x0B, 0x20, 0x22, 0x2C, 0x2D, 0x2E, 0x30, 0x31, 0x3A, 0x45, 0x5B, 0x5C, 0x5D, 0x65,
                                     0x7B, 0x7D, 0x7F, 0x80, 0xC3, 0xED, 0xEF, 0xF4, 0xFF]
        for document in Self.documents {
            let bytes = Array(document.utf8)
            var disagreements: [String] = []
            var tried = 0
            for index in bytes.indices {
                var changes = (0..<8).map { bytes[index] ^ (1 << $0) }
                changes += replacements.filter { $0 != bytes[index] }
                for change in changes {
                    var changed = bytes
                    changed[index] = change
                    tried += 1
                    if let problem = JSONDifferential.disagreement(changed) { disagreements.append(problem) }
                }
                var removed = bytes
                removed.remove(at: index)
                if let problem = JSONDifferential.disagreement(removed) { disagreements.append(problem) }
            }
            #expect(tried > 20 * bytes.count)
            #expect(disagreements.count == 0, "\(document): \(disagreements.count) of \(tried): \(disagreements.prefix(3))")
        }
    }

    // MARK: - Depth

    @Test("10,000 nested arrays or objects: the depth error, no crash; 512 levels are read, like Foundation")
    func deepNesting() throws {
        let arrays = Array((String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)).utf8)
        #expect(throws: JSONParseError(.tooDeep(limit: 512), at: 512)) { try JSONValue.parse(arrays) }
        let objects = Array((String(repeating: #"{"a":"#, count: 10_000) + "1" + String(repeating: "}", count: 10_000)).utf8)
        #expect(throws: JSONParseError(.tooDeep(limit: 512), at: 512 * 5)) { try JSONValue.parse(objects) }
        let unclosed = Array(String(repeating: "[{\"k\":", count: 5_000).utf8)
        #expect(throws: JSONParseError(.tooDeep(limit: 512), at: 256 * 6)) { try JSONValue.parse(unclosed) }
        let thousand = Array((String(repeating: "[", count: 1_000) + String(repeating: "]", count: 1_000)).utf8)
        #expect(try JSONValue.parse(thousand, maxDepth: 1_000).array?.count == 1)
        #expect(throws: JSONParseError(.tooDeep(limit: 999), at: 999)) { try JSONValue.parse(thousand, maxDepth: 999) }

        for depth in [511, 512, 513] {
            for (open, inner, close) in [("[", "", "]"), (#"{"a":"#, "1", "}"), ("[", "[]", "]")] {
                let bytes = Array((String(repeating: open, count: depth) + inner + String(repeating: close, count: depth)).utf8)
                let levels = depth + (inner == "[]" ? 1 : 0)
                #expect((try? JSONValue.parse(bytes)) != nil ? levels <= 512 : levels > 512, "\(levels) levels of \(open)")
                // Foundation's reading of a deep value takes about 1.5 s (JSONValue's Codable
                // attempts each build an error with the whole coding path): compared once each way.
                if levels == 513 || (levels == 512 && inner.isEmpty && open == "[") {
                    #expect(JSONDifferential.disagreement(bytes) == nil, "\(depth) × \(open)\(inner)")
                }
            }
        }
        #expect(try JSONValue.parse(Array("[[1]]".utf8), maxDepth: 2) == [[1]])
        #expect(throws: JSONParseError(.tooDeep(limit: 2), at: 2)) { try JSONValue.parse(Array("[[[1]]]".utf8), maxDepth: 2) }
        #expect(throws: JSONParseError(.tooDeep(limit: 0), at: 0)) { try JSONValue.parse(Array("[]".utf8), maxDepth: 0) }
        #expect(try JSONValue.parse(Array("7".utf8), maxDepth: 0) == 7)
    }

    // MARK: - Messages

    @Test("error messages name the problem and the byte")
    func messages() throws {
        func message(_ text: String) -> String { message(Array(text.utf8)) }
        func message(_ bytes: [UInt8]) -> String {
            do { _ = try JSONValue.parse(bytes); return "accepted" } catch { return error.description }
        }
        #expect(message(#"{"action":"start","action":"cancel"}"#) == #"the key "action" appears twice (byte 18)"#)
        #expect(message(#"{"a":1,}"#) == "trailing comma at byte 6; remove it")
        #expect(message("[1,2") == "unexpected end of input at byte 4; expected ',' or ']'")
        #expect(message(#"{"a" 1}"#) == "unexpected character '1' at byte 5; expected ':' after the key")
        #expect(message("{'a':1}") == #"unexpected character "'" at byte 1; expected a key in double quotes or '}'"#)
        #expect(message("[x]") == "unexpected character 'x' at byte 1; expected a value")
        #expect(message("[1,\u{B}2]") == "unexpected byte 0x0B at byte 3; expected a value")
        #expect(message("") == "unexpected end of input at byte 0; expected a value")
        #expect(message("tru") == "unexpected end of input at byte 3; expected true")
        #expect(message(#"  "abc"#) == "unterminated string starting at byte 2")
        #expect(message("[1e309]") == "number out of range at byte 1")
        #expect(message("[-1e309]") == "number out of range at byte 1")
        #expect(message("[01]") == "number with a leading zero at byte 1")
        #expect(message("[1.]") == "unexpected character ']' at byte 3; expected a digit after '.'")
        #expect(message(#"["\ud800"]"#) == "unpaired UTF-16 surrogate escape at byte 2")
        #expect(message(#"["ab\ud83d\u0041"]"#) == "unpaired UTF-16 surrogate escape at byte 4")
        #expect(message(#"["\q"]"#).hasPrefix("invalid escape at byte 2; the escapes are"))
        #expect(message(#""\u1""#).hasPrefix("invalid escape at byte 1;"))
        #expect(message(#""\u12"#) == "unterminated string starting at byte 0")
        #expect(message([0x5B, 0x22, 0x61, 0xFF, 0x22, 0x5D]) == "invalid UTF-8 at byte 3")
        #expect(message(Array(#"["a\n"#.utf8) + [0xE2, 0x82, 0x22, 0x5D]) == "invalid UTF-8 at byte 5")
        #expect(message([0x22, 0xF0, 0x9F, 0x98, 0x80, 0xED, 0xA0, 0x80, 0x22]) == "invalid UTF-8 at byte 5")
        #expect(message("[1] x") == "extra data after the JSON value at byte 4")
        #expect(message(String(repeating: "[", count: 513)) == "nesting deeper than 512 levels at byte 512")
        #expect(message("[\"a\nb\"]") == #"control character 0x0A in a string at byte 3; write it as an escape such as \n or \u000A"#)
        // Offsets in a slice count from the slice's start.
        let bytes = Array("xx[1,]".utf8)
        #expect(throws: JSONParseError(.trailingComma, at: 2)) { try JSONValue.parse(bytes[2...]) }
        #expect(try JSONValue.parse(bytes[2...3] + [0x5D]) == [1])

        // Nothing of the input that could break a log line reaches a message.
        let key = #"a\n\r\u001b[2J"# + "\u{2028}\u{85}\u{200F}" + #"\"b"#
        let hostile = "{\"" + key + "\":1,\"" + key + "\":2}"
        // (At most 40 characters are written, escapes included: the rest is cut.)
        #expect(message(hostile) == #"the key "a\u{A}\u{D}\u{1B}[2J\u{2028}\u{85}…" appears twice (byte \#(key.utf8.count + 6))"#)
        #expect(message("{\"\(String(repeating: "k", count: 100))\":1,\"\(String(repeating: "k", count: 100))\":1}")
                == "the key \"\(String(repeating: "k", count: 40))…\" appears twice (byte 106)")
        for bytes in [Array(hostile.utf8), [0x5B, 0x0A, 0x0B, 0x5D], [0x22, 0x0D, 0x22], [0x5B, 0x7F, 0x5D], [0x5B, 0xE2, 0x80, 0xA8, 0x5D]] {
            #expect(!message(bytes).unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || $0 == "\u{2028}" || $0 == "\u{85}" }, "\(bytes)")
        }
    }

    @Test("leadingMembers reads a refused command's members as far as they go")
    func leadingMembers() {
        func members(_ text: String) -> [String: JSONValue]? { JSONValue.leadingMembers(Array(text.utf8)) }
        #expect(members(#"{"id":"r1","seconds":1e309}"#) == ["id": "r1", "seconds": .null])
        #expect(members(#"{"action":"x","id":"r2","spec":"# + String(repeating: "[", count: 600))?["id"] == "r2")
        #expect(members(#"{"id":"r3","a":1,"a":2}"#)?["id"] == "r3")
        #expect(members(#"{"a":1,"id":"r4"#) == ["a": 1])  // the id's value never ended
        #expect(members(#"{"id":"r5","#) == ["id": "r5"])
        #expect(members("[1,2]") == nil)
        #expect(members("pause") == nil)
        #expect(members("") == nil)
    }
}

// MARK: - Helpers

/// Pacer's reader against Foundation's.
enum JSONDifferential {
    static func foundation(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    /// Whether Foundation reads `bytes` as UTF-16 or UTF-32 (a byte order mark, or the NUL
    /// bytes of ASCII in those encodings among the first four bytes); Pacer reads only UTF-8.
    static func foundationTranscodes(_ bytes: [UInt8]) -> Bool {
        let head = bytes.prefix(4).map(Int.init) + Array(repeating: -1, count: max(0, 4 - bytes.count))
        let (a, b, c, d) = (head[0], head[1], head[2], head[3])
        if (a == 0xFE && b == 0xFF) || (a == 0xFF && b == 0xFE) || (a == 0 && b == 0 && c == 0xFE && d == 0xFF) { return true }
        if bytes.count == 2 { return (a == 0) != (b == 0) }
        guard bytes.count >= 4 else { return false }
        return (a == 0 && b == 0 && c == 0 && d != 0) || (a == 0 && b != 0 && c == 0 && d != 0)
            || (a != 0 && b == 0 && c == 0 && d == 0) || (a != 0 && b == 0 && c != 0 && d == 0)
    }

    /// nil when both readers agree on `bytes` (the same value, or both refuse) or differ only
    /// as documented; otherwise what differs.
    static func disagreement(_ bytes: [UInt8]) -> String? {
        if foundationTranscodes(bytes) { return nil }
        let theirs = foundation(bytes)
        let text = String(decoding: bytes, as: UTF8.self).debugDescription
        switch (Result { () throws(JSONParseError) in try JSONValue.parse(bytes) }, theirs) {
        case (.success(let ours), let theirs?):
            return ours == theirs ? nil : "\(text): we read \(ours), Foundation \(theirs)"
        case (.failure, nil):
            return nil
        case (.success(let ours), nil):
            return "\(text): we read \(ours), Foundation refuses"
        case (.failure(let error), let theirs?):
            switch error.reason {
            case .duplicateKey:
                return nil
            case .trailingComma:
                // Foundation skips the comma: without it, the two must agree (and Foundation read the same).
                var without = bytes
                without.remove(at: error.offset)
                if let problem = disagreement(without) { return problem }
                return foundation(without) == theirs ? nil : "\(text): Foundation reads it differently without the trailing comma"
            default:
                return "\(text): Foundation reads \(theirs), we refuse: \(error)"
            }
        }
    }
}

/// Random JSON values and a writer with random layout, from a list of random choices.
enum JSONSample {
    static func value(_ random: inout Choices, depth: Int) -> JSONValue {
        switch random.next() % (depth > 4 ? 4 : 7) {
        case 0: return .null
        case 1: return .bool(random.next() % 2 == 0)
        case 2: return .number(number(&random))
        case 3: return .string(string(&random))
        case 4: return .array((0..<Int(random.next() % 5)).map { _ in value(&random, depth: depth + 1) })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int(random.next() % 6) { members[string(&random)] = value(&random, depth: depth + 1) }
            return .object(members)
        }
    }

    static func number(_ random: inout Choices) -> Double {
        let edges: [Double] = [0, 1, -1, 0.5, 0.1, 1.0 / 3, 1e308, -1e308, .leastNonzeroMagnitude, 2.2250738585072014e-308, 1e21, 1e-7,
                               9_007_199_254_740_991, 9_007_199_254_740_994, Double(Int64.max), -9_223_372_036_854_775_808,
                               .greatestFiniteMagnitude, 123_456.789, 1_795_321_339_792]
        switch random.next() % 4 {
        case 0: return Double(Int64(bitPattern: random.next()) >> Int64(random.next() % 64))
        case 1:
            let value = Double(bitPattern: random.next())
            return value.isFinite ? value : 0
        case 2: return Double(Int64(bitPattern: random.next()) % 100_000) / 1_000
        default: return edges[Int(random.next() % UInt64(edges.count))]
        }
    }

    static func string(_ random: inout Choices) -> String {
        let pieces = ["a", "Z", "_", "id", "action", "\"", "\\", "/", "\n", "\r", "\t", "\u{0}", "\u{1}", "\u{1f}", "\u{7f}", "\u{8}", "\u{c}",
                      "é", "e\u{301}", "日本", "😀", "🏋️", "𝄞", "\u{FFFF}", "\u{10FFFF}", "\u{2028}", "\u{FEFF}", " "]
        return (0..<Int(random.next() % 6)).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined()
    }

    /// JSON text of `value` with random white space between tokens and characters randomly
    /// written as `\u` escapes (surrogate pairs above U+FFFF, either case of hex digits).
    static func write(_ value: JSONValue, into out: inout [UInt8], _ random: inout Choices) {
        func space() {
            for _ in 0..<Int(random.next() % 3) { out.append([0x20, 0x09, 0x0A, 0x0D][Int(random.next() % 4)]) }
        }
        space()
        switch value {
        case .null, .bool, .number: out += value.jsonBytes
        case .string(let text): writeString(text, into: &out, &random)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { space(); out.append(UInt8(ascii: ",")) }
                write(element, into: &out, &random)
            }
            space()
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { space(); out.append(UInt8(ascii: ",")) }
                space()
                writeString(member.key, into: &out, &random)
                space()
                out.append(UInt8(ascii: ":"))
                write(member.value, into: &out, &random)
            }
            space()
            out.append(UInt8(ascii: "}"))
        }
        space()
    }

    static func writeString(_ text: String, into out: inout [UInt8], _ random: inout Choices) {
        func hex(_ unit: UInt16) {
            let digits = Array((random.next() % 2 == 0 ? "0123456789abcdef" : "0123456789ABCDEF").utf8)
            out += "\\u".utf8
            for shift in [12, 8, 4, 0] { out.append(digits[Int(unit >> UInt16(shift)) & 0xF]) }
        }
        out.append(UInt8(ascii: "\""))
        for scalar in text.unicodeScalars {
            let escape = random.next() % 3 == 0
            switch scalar {
            case "\"": out += "\\\"".utf8
            case "\\": out += "\\\\".utf8
            case "/" where escape: out += "\\/".utf8
            case "\n" where escape: out += "\\n".utf8
            case "\u{8}" where escape: out += "\\b".utf8
            case "\u{c}" where escape: out += "\\f".utf8
            case _ where scalar.value < 0x20 || escape:
                for unit in String(scalar).utf16 { hex(unit) }
            default: out += String(scalar).utf8
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

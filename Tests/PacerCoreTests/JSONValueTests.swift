import Foundation
import PacerCore
import PropertyBased
import Testing

@Suite("JSONValue")
struct JSONValueTests {
    @Test func literalsAndAccessors() {
        let value: JSONValue = ["a": 1, "b": [true, nil, "x"], "c": 2.5, "d": ["e": "f"]]
        #expect(value["a"]?.int == 1)
        #expect(value["a"]?.int64 == 1)
        #expect(value["c"]?.double == 2.5)
        #expect(value["c"]?.int == nil)
        #expect(value["b"]?[0]?.bool == true)
        #expect(value["b"]?[1]?.isNull == true)
        #expect(value["b"]?[2]?.string == "x")
        #expect(value["b"]?[3] == nil)
        #expect(value["d"]?["e"]?.string == "f")
        #expect(value["missing"] == nil)
        #expect(value["b"]?.array?.count == 3)
        #expect(value.object?.count == 4)
    }

    @Test func integersEncodeWithoutFraction() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let value: JSONValue = ["n": 42, "f": 2.5, "big": .number(1_795_320_306_789), "neg": -7]
        let text = String(decoding: try encoder.encode(value), as: UTF8.self)
        #expect(text == #"{"big":1795320306789,"f":2.5,"n":42,"neg":-7}"#)
    }

    @Test func foundationRoundTrip() throws {
        let value: JSONValue = ["s": "h\u{e9}\"llo\n", "a": [1, 2.25, false, nil], "o": [:], "e": []]
        let data = try JSONEncoder().encode(value)
        let back = try JSONDecoder().decode(JSONValue.self, from: data)
        #expect(back == value)
        let parsed = try JSONDecoder().decode(JSONValue.self, from: Data(#"{"x": 1, "y": true, "z": [1.5, "q"]}"#.utf8))
        #expect(parsed == ["x": 1, "y": true, "z": [1.5, "q"]])
    }

    @Test func descriptionIsCompactSortedJSON() {
        let value: JSONValue = ["b": 1, "a": ["x\"y", 0.5, nil, true]]
        #expect(value.description == #"{"a":["x\"y",0.5,null,true],"b":1}"#)
        #expect(JSONValue.string("\u{1}").description == #""\u0001""#)
    }

    @Test("numbers at the edges: integers without a fraction up to 2^53, -0 as 0, the rest in shortest form, non-finite as null")
    func numbersAtTheEdges() {
        let cases: [(Double, String)] = [
            (0, "0"), (-0.0, "0"), (7, "7"), (-7, "-7"), (10, "10"), (-100, "-100"),
            (9_007_199_254_740_991, "9007199254740991"), (-9_007_199_254_740_991, "-9007199254740991"),
            (9_007_199_254_740_992, "9007199254740992.0"), (0.1, "0.1"), (-2.5, "-2.5"), (1e21, "1e+21"),
            (1e-7, "1e-07"), (.nan, "null"), (.infinity, "null"), (-.infinity, "null"),
        ]
        for (value, text) in cases {
            #expect(JSONValue.number(value).description == text, "\(value)")
        }
    }

    @Test("the writer gives exactly what a plain reference writer gives, on 2,000 random values")
    func writerMatchesReference() async {
        // Each value is built from a list of random choices (shrunk by PropertyBased on a failure).
        await propertyCheck(count: 2_000, input: Gen.uint64().array(of: 1...200)) { choices in
            var source = Choices(choices)
            let value = randomValue(&source, depth: 0)
            #expect(String(decoding: value.jsonBytes, as: UTF8.self) == reference(value))
        }
    }

    @Test("an object with one member already written gives exactly the whole object's bytes, on 2,000 random objects")
    func objectWithWrittenMember() async {
        await propertyCheck(count: 2_000, input: Gen.uint64().array(of: 1...200)) { choices in
            var source = Choices(choices)
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int(source.next() % 8) { members[randomString(&source)] = randomValue(&source, depth: 1) }
            // The added key is sometimes one the members hold: written once, with the given value.
            let key = source.next() % 4 == 0 && !members.isEmpty ? members.keys.sorted()[Int(source.next() % UInt64(members.count))] : randomString(&source)
            let value = randomValue(&source, depth: 0)
            var whole = members
            whole[key] = value
            let bytes = JSONValue.objectBytes(members, adding: key, json: value.jsonBytes)
            #expect(String(decoding: bytes, as: UTF8.self) == reference(.object(whole)))
        }
        // The added member first, between and last (keys sort as Swift strings).
        let members: [String: JSONValue] = ["b": 1, "d": [true, nil]]
        for (key, text) in [("a", #"{"a":"x","b":1,"d":[true,null]}"#), ("c", #"{"b":1,"c":"x","d":[true,null]}"#),
                            ("e", #"{"b":1,"d":[true,null],"e":"x"}"#), ("b", #"{"b":"x","d":[true,null]}"#)] {
            #expect(String(decoding: JSONValue.objectBytes(members, adding: key, json: Array(#""x""#.utf8)), as: UTF8.self) == text)
        }
        #expect(String(decoding: JSONValue.objectBytes([:], adding: "s", json: Array("{}".utf8)), as: UTF8.self) == #"{"s":{}}"#)
    }

    /// The writer as first written (sorted keys, `String(Int64)`, byte-by-byte escapes).
    private func reference(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .number(let n):
            if n.rounded() == n, abs(n) < 9_007_199_254_740_992 { return String(Int64(n)) }
            return n.isFinite ? n.description : "null"
        case .string(let text):
            var out = "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        case .array(let elements): return "[" + elements.map(reference).joined(separator: ",") + "]"
        case .object(let members):
            return "{" + members.keys.sorted().map { reference(.string($0)) + ":" + reference(members[$0]!) }.joined(separator: ",") + "}"
        }
    }

    private func randomValue(_ random: inout Choices, depth: Int) -> JSONValue {
        switch random.next() % (depth > 3 ? 4 : 6) {
        case 0: return .null
        case 1: return .bool(random.next() % 2 == 0)
        case 2:
            let numbers: [Double] = [0, -0.0, 1, -1, 0.5, 1e300, -3.25, 9_007_199_254_740_994, .nan]
            return random.next() % 2 == 0 ? .number(Double(Int64(bitPattern: random.next()) >> Int64(random.next() % 64)))
                                          : .number(numbers[Int(random.next() % UInt64(numbers.count))])
        case 3: return .string(randomString(&random))
        case 4: return .array((0..<Int(random.next() % 5)).map { _ in randomValue(&random, depth: depth + 1) })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int(random.next() % 8) { members[randomString(&random)] = randomValue(&random, depth: depth + 1) }
            return .object(members)
        }
    }

    private func randomString(_ random: inout Choices) -> String {
        let pieces = ["a", "Z", "_", "id", "ends_at_ms", "\"", "\\", "\n", "\u{1}", "\u{1f}", "\t", "é", "日本", "🏋️", " ", "/", "\r"]
        return (0..<Int(random.next() % 6)).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined()
    }
}

/// A generator's random choices, read one after the other (0 once they run out).
struct Choices {
    private var iterator: IndexingIterator<[UInt64]>
    init(_ choices: [UInt64]) { iterator = choices.makeIterator() }
    mutating func next() -> UInt64 { iterator.next() ?? 0 }
}

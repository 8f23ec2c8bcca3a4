import Foundation
import PacerCore
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
}

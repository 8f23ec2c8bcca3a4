/// Writes JSON objects member by member, for payloads on hot paths that would otherwise build
/// a `JSONValue` or go through `JSONEncoder` (a timer's `state` payload, a persisted machine).
/// The caller gives the members in sorted key order; values go through `JSONValue`'s own
/// writers, so an object equals the `JSONValue.jsonBytes` of the same members.
struct JSONObjectWriter {
    var out: [UInt8] = []
    private var first = true

    init(capacity: Int) { out.reserveCapacity(capacity) }

    mutating func object(_ body: (inout JSONObjectWriter) -> Void) {
        out.append(UInt8(ascii: "{"))
        let outer = first
        first = true
        body(&self)
        first = outer
        out.append(UInt8(ascii: "}"))
    }

    mutating func member(_ key: StaticString, _ value: (inout JSONObjectWriter) -> Void) {
        if !first { out.append(UInt8(ascii: ",")) }
        first = false
        out.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { out.append(contentsOf: $0) }
        out += "\":".utf8
        value(&self)
    }

    mutating func array<T>(_ elements: [T], _ write: (inout JSONObjectWriter, T) -> Void) {
        out.append(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            write(&self, element)
        }
        out.append(UInt8(ascii: "]"))
    }

    // MARK: Members left out when nil (as `encodeIfPresent` leaves them out); integers exact

    mutating func int(_ key: StaticString, _ value: Int64?) {
        guard let value else { return }
        member(key) { JSONValue.writeInteger(value, into: &$0.out) }
    }

    mutating func int(_ key: StaticString, _ value: Int?) { int(key, value.map(Int64.init)) }

    mutating func string(_ key: StaticString, _ value: String?) {
        guard let value else { return }
        member(key) { JSONValue.writeString(value, into: &$0.out) }
    }

    mutating func bool(_ key: StaticString, _ value: Bool) {
        member(key) { $0.out += (value ? "true" : "false").utf8 }
    }

    mutating func ints(_ key: StaticString, _ values: [Int]?) {
        guard let values else { return }
        member(key) { w in w.array(values) { JSONValue.writeInteger(Int64($1), into: &$0.out) } }
    }

    mutating func strings(_ key: StaticString, _ values: [String]?) {
        guard let values else { return }
        member(key) { w in w.array(values) { JSONValue.writeString($1, into: &$0.out) } }
    }

    // MARK: Members written null when nil (as a `JSONValue` object holds them)

    mutating func nullable(_ key: StaticString, _ value: String?) {
        member(key) { w in
            if let value { JSONValue.writeString(value, into: &w.out) } else { w.out += "null".utf8 }
        }
    }

    /// A number as `JSONValue.number` writes it (an integer through a Double).
    mutating func number(_ key: StaticString, _ value: Double?) {
        member(key) { w in
            if let value { JSONValue.writeNumber(value, into: &w.out) } else { w.out += "null".utf8 }
        }
    }

    mutating func number(_ key: StaticString, _ value: Int64?) { number(key, value.map(Double.init)) }
}

/// Writes JSON objects member by member, for payloads on hot paths that would otherwise build
/// a `JSONValue` or go through `JSONEncoder` (a timer's `state` payload, a persisted machine).
/// The caller gives the members in sorted key order; values go through `JSONValue`'s own
/// writers, so an object equals the `JSONValue.jsonBytes` of the same members. Package-wide:
/// the core writes a persisted machine with it, PacerProtocol a timer's `state`.
package struct JSONObjectWriter {
    package var out: [UInt8] = []
    private var first = true

    package init(capacity: Int) { out.reserveCapacity(capacity) }

    package mutating func object(_ body: (inout JSONObjectWriter) -> Void) {
        out.append(UInt8(ascii: "{"))
        let outer = first
        first = true
        body(&self)
        first = outer
        out.append(UInt8(ascii: "}"))
    }

    package mutating func member(_ key: String, _ value: (inout JSONObjectWriter) -> Void) {
        if !first { out.append(UInt8(ascii: ",")) }
        first = false
        out.append(UInt8(ascii: "\""))
        out += key.utf8
        out += "\":".utf8
        value(&self)
    }

    package mutating func array<T>(_ elements: [T], _ write: (inout JSONObjectWriter, T) -> Void) {
        out.append(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            write(&self, element)
        }
        out.append(UInt8(ascii: "]"))
    }

    // MARK: Members left out when nil (as `encodeIfPresent` leaves them out); integers exact

    package mutating func int(_ key: String, _ value: Int64?) {
        guard let value else { return }
        member(key) { JSONValue.writeInteger(value, into: &$0.out) }
    }

    package mutating func int(_ key: String, _ value: Int?) { int(key, value.map(Int64.init)) }

    package mutating func string(_ key: String, _ value: String?) {
        guard let value else { return }
        member(key) { JSONValue.writeString(value, into: &$0.out) }
    }

    package mutating func bool(_ key: String, _ value: Bool) {
        member(key) { $0.out += (value ? "true" : "false").utf8 }
    }

    package mutating func ints(_ key: String, _ values: [Int]?) {
        guard let values else { return }
        member(key) { w in w.array(values) { JSONValue.writeInteger(Int64($1), into: &$0.out) } }
    }

    package mutating func strings(_ key: String, _ values: [String]?) {
        guard let values else { return }
        member(key) { w in w.array(values) { JSONValue.writeString($1, into: &$0.out) } }
    }

    // MARK: Members written null when nil (as a `JSONValue` object holds them)

    package mutating func nullable(_ key: String, _ value: String?) {
        member(key) { w in
            if let value { JSONValue.writeString(value, into: &w.out) } else { w.out += "null".utf8 }
        }
    }

    /// A number as `JSONValue.number` writes it (an integer through a Double).
    package mutating func number(_ key: String, _ value: Double?) {
        member(key) { w in
            if let value { JSONValue.writeNumber(value, into: &w.out) } else { w.out += "null".utf8 }
        }
    }

    package mutating func number(_ key: String, _ value: Int64?) { number(key, value.map(Double.init)) }
}

/// A JSON value: what commands, specs, events and snapshots are made of.
///
/// Read by one parser (`JSONValue.parse`, JSONValue+Parse.swift) and written by one writer
/// (`jsonBytes`). It is not `Codable`: Foundation's path is only the tests' and the fuzzers'
/// independent oracle (PacerTestSupport's JSONValue+Codable.swift).
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The Int64 equal to `value`, when it is integral and within range.
    static func exactInt64(_ value: Double) -> Int64? {
        guard value.isFinite, value.rounded(.towardZero) == value,
              value >= -9_223_372_036_854_775_808.0, value < 9_223_372_036_854_775_808.0
        else { return nil }
        return Int64(value)
    }
}

// MARK: - Accessors

extension JSONValue {
    /// The member named `key` of an object; nil for a missing key or a non-object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The element at `index` of an array; nil when out of range or not an array.
    public subscript(index: Int) -> JSONValue? {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }

    public var string: String? { if case .string(let value) = self { return value }; return nil }
    public var bool: Bool? { if case .bool(let value) = self { return value }; return nil }
    public var double: Double? { if case .number(let value) = self { return value }; return nil }
    /// The number as an Int64 when it is integral and in range.
    public var int64: Int64? { if case .number(let value) = self { return JSONValue.exactInt64(value) }; return nil }
    /// The number as an Int when it is integral and in range.
    public var int: Int? { int64.flatMap { Int(exactly: $0) } }
    public var array: [JSONValue]? { if case .array(let value) = self { return value }; return nil }
    public var object: [String: JSONValue]? { if case .object(let value) = self { return value }; return nil }
    public var isNull: Bool { if case .null = self { return true }; return false }

    /// A JSON number from an integer.
    public static func int<T: BinaryInteger>(_ value: T) -> JSONValue { .number(Double(value)) }
    /// `.number` for a value, `.null` for nil.
    public static func optional<T: BinaryInteger>(_ value: T?) -> JSONValue { value.map { .number(Double($0)) } ?? .null }
    /// `.string` for a value, `.null` for nil.
    public static func optional(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
}

// MARK: - Literals

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var members: [String: JSONValue] = [:]
        for (key, value) in elements { members[key] = value }
        self = .object(members)
    }
}

// MARK: - Text

extension JSONValue: CustomStringConvertible {
    /// Compact JSON text with keys sorted (deterministic; for logs, messages and tests).
    public var description: String {
        String(decoding: jsonBytes, as: UTF8.self)
    }

    /// Compact JSON as UTF-8 bytes, object keys sorted (identical values give identical
    /// payloads, so an unchanged retained state is byte-for-byte the same), integral numbers
    /// within ±2^53 without a fraction (`42`, not `42.0`), non-finite numbers as `null`. The
    /// one JSON writer of Pacer: payloads, stored events and messages all use it.
    public var jsonBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(into: &out)
        return out
    }

    /// Integral numbers below this magnitude are written without a fraction: the integers a
    /// JSON reader with 64-bit floats (JavaScript) keeps exactly.
    static let exactIntegerLimit: Double = 9_007_199_254_740_992

    func write(into out: inout [UInt8]) {
        switch self {
        case .null: out += "null".utf8
        case .bool(let value): out += (value ? "true" : "false").utf8
        case .number(let value): JSONValue.writeNumber(value, into: &out)
        case .string(let value): JSONValue.writeString(value, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                element.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            // Sorted as entries: no lookup of each key again (the writer is on every publish).
            for (index, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A number as `write` gives it: integral within ±2^53 without a fraction, others in
    /// their shortest round-trip form, non-finite as null.
    static func writeNumber(_ value: Double, into out: inout [UInt8]) {
        if value.rounded() == value, abs(value) < JSONValue.exactIntegerLimit {
            JSONValue.writeInteger(Int64(value), into: &out)
        } else if value.isFinite {
            out += value.description.utf8  // shortest round-trip form, e.g. 0.25, 1e-06
        } else {
            out += "null".utf8  // JSON has no NaN or infinity
        }
    }

    /// Decimal digits of `value` (what `String(value)` gives), without making a String.
    static func writeInteger(_ value: Int64, into out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            for index in stride(from: count - 1, through: 0, by: -1) { out.append(buffer[index]) }
        }
    }

    static func writeString(_ value: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        let utf8 = value.utf8
        // Most strings (keys, ids, phases) need no escape: copied in one go.
        guard utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            out.append(contentsOf: utf8)
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += "\\\"".utf8
            case UInt8(ascii: "\\"): out += "\\\\".utf8
            case 0x0A: out += "\\n".utf8
            case 0x0D: out += "\\r".utf8
            case 0x09: out += "\\t".utf8
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += "\\u00".utf8
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

extension JSONValue {
    /// The bytes `jsonBytes` gives for `.object(members)` with one more member, `key`, whose
    /// value is JSON text already written (`json`, e.g. `TimerSnapshot.jsonBytes`): it is copied
    /// in place, not decoded and written again. A `key` that `members` also holds is written once,
    /// with `json`.
    public static func objectBytes(_ members: [String: JSONValue], adding key: String, json: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(json.count + 16 * members.count + key.utf8.count + 8)
        out.append(UInt8(ascii: "{"))
        var pending = true  // `key` is still to be written
        var first = true
        func separate() {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
        }
        func writeRaw() {
            separate()
            JSONValue.writeString(key, into: &out)
            out.append(UInt8(ascii: ":"))
            out += json
            pending = false
        }
        for member in members.sorted(by: { $0.key < $1.key }) where member.key != key {
            if pending && key < member.key { writeRaw() }
            separate()
            JSONValue.writeString(member.key, into: &out)
            out.append(UInt8(ascii: ":"))
            member.value.write(into: &out)
        }
        if pending { writeRaw() }
        out.append(UInt8(ascii: "}"))
        return out
    }
}

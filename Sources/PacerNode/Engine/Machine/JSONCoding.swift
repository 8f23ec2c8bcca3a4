import PacerCore

/// JSON bytes in and out of `JSONValue`: the core's one writer (`jsonBytes`) and its reader
/// (`JSONValue.parse`).
enum JSONCoding {
    /// Compact JSON with object keys sorted (see `JSONValue.jsonBytes`).
    static func encode(_ value: JSONValue) -> [UInt8] {
        value.jsonBytes
    }

    /// The value of a JSON text; nil when it is not one (see `JSONValue.parse` for why).
    static func decode(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONValue.parse(bytes)
    }
}

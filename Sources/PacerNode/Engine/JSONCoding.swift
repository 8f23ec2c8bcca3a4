import Foundation
import PacerCore

/// JSON bytes in and out of `JSONValue`, with stable key order (sorted) so identical states
/// give identical retained payloads.
enum JSONCoding {
    static func encode(_ value: JSONValue) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // JSONValue encodes only JSON-representable values, so this cannot fail in practice.
        return (try? Array(encoder.encode(value))) ?? Array("null".utf8)
    }

    static func decode(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }
}

extension JSONValue {
    /// Adds or replaces members of an object (no-op for other values).
    func merging(_ members: [String: JSONValue]) -> JSONValue {
        guard case .object(var o) = self else { return self }
        for (k, v) in members { o[k] = v }
        return .object(o)
    }
}

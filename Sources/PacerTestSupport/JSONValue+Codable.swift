import Foundation
public import PacerCore

// Foundation's Codable path for `JSONValue`, as an oracle only: the tests and the json and
// config fuzz targets (scripts/fuzz compiles this file into them) compare the node's own
// reader and writer against it. The node itself never decodes or encodes through it.
// Integral numbers within the Int64 range are encoded as integers (`42`, never `42.0`).
extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            // Double, not Int64 first: Foundation's JSONDecoder reads a number beyond 2^53 with a
            // fraction as an Int64 by dropping the fraction (`9223372036012345.789` gives
            // …345, then …344 as a Double), where the nearest Double is …346.
            self = .number(value)
        } else if let value = try? container.decode(Int64.self) {
            // What Foundation refuses as a Double but reads as an Int64: a number too small for a
            // Double (`1.5e-640`), which is 0.
            self = .number(Double(value))
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else if let value = try? container.decode([String: JSONValue].self) {
            self = .object(value)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            if value.isFinite, let integer = Int64(exactly: value) {
                try container.encode(integer)
            } else {
                try container.encode(value)
            }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

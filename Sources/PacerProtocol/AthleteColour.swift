public import PacerCore

/// The rules of an athlete's profile that the node's config, its commands and the control
/// commands share (docs/API.md, "Athletes (a class)").
public enum AthleteColour {
    /// A max heart rate lies in this range.
    public static let maxHRRange = 100...250

    /// Why `text` is not a `#rrggbb` colour, or nil.
    public static func problem(_ text: String) -> String? {
        let hex = text.utf8.dropFirst()
        let isHex = hex.allSatisfy { (48...57).contains($0) || (97...102).contains($0) || (65...70).contains($0) }
        if text.utf8.first == UInt8(ascii: "#"), hex.count == 6, isHex { return nil }
        return "a colour is #rrggbb in hexadecimal (like #e4572e), got '\(printable(text, limit: 40))'"
    }
}

/// An athlete as the node lists it (`<base>/athletes`) or answers a profile command with
/// (`profile`): id, name, `#rrggbb` colour, max heart rate and, in the list, whether present.
public struct AthleteEntry: Sendable, Equatable {
    public var id: String
    public var name: String?
    public var colour: String?
    public var maxHR: Int?
    /// Nil in a profile (a reply's), which says nothing about presence.
    public var present: Bool?

    public init(id: String, name: String?, colour: String?, maxHR: Int?, present: Bool? = nil) {
        self.id = id
        self.name = name
        self.colour = colour
        self.maxHR = maxHR
        self.present = present
    }

    /// Reads one entry; nil without an `id`.
    public init?(json: JSONValue) {
        guard let id = json[.id]?.string else { return nil }
        self.init(id: id, name: json[.name]?.string, colour: json[.colour]?.string, maxHR: json[.maxHR]?.int, present: json[.present]?.bool)
    }

    /// The entry as JSON: `{"id","name","colour","max_hr"}` (null when unset), with `present`
    /// when it is known.
    public var json: JSONValue {
        var o: [String: JSONValue] = [:]
        o[.id] = .string(id)
        o[.name] = .optional(name)
        o[.colour] = .optional(colour)
        o[.maxHR] = .optional(maxHR)
        if let present { o[.present] = .bool(present) }
        return .object(o)
    }

    /// The entries of an athletes document (`{"athletes":[…]}`); an entry without an id is left out.
    public static func list(_ document: JSONValue) -> [AthleteEntry] {
        document[.athletes]?.array?.compactMap(AthleteEntry.init(json:)) ?? []
    }
}

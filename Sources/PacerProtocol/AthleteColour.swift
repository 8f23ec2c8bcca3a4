import PacerCore

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

extension StringProtocol {
    /// The text without Unicode white space (the `White_Space` property: spaces, tabs, line
    /// breaks, U+0085, no-break and ideographic spaces, ...) at either end: what Foundation's
    /// `trimmingCharacters(in: .whitespacesAndNewlines)` removes, in one pass over the
    /// scalars, without Foundation. Cut on scalar boundaries, so a combining mark that follows
    /// a trimmed space stays.
    public func trimmingWhitespace() -> Substring {
        let scalars = unicodeScalars
        var start = scalars.startIndex
        while start < scalars.endIndex, scalars[start].properties.isWhitespace { start = scalars.index(after: start) }
        var end = scalars.endIndex
        while end > start {
            let before = scalars.index(before: end)
            guard scalars[before].properties.isWhitespace else { break }
            end = before
        }
        return Substring(self)[start..<end]
    }
}

/// Outside text as it may appear in a reply or a log line: at most `limit` scalars (then
/// `…`), with control, format and line-separating characters written as `\u{1B}`, so
/// nothing a sender writes can break a log line or a display. With `escapingQuotes`, `"` and
/// `\` are escaped too (for text shown inside double quotes).
public func printable<S: StringProtocol>(_ text: S, limit: Int = 40, escapingQuotes: Bool = false) -> String {
    var out = ""
    for (index, scalar) in text.unicodeScalars.enumerated() {
        if index == limit { out += "…"; break }
        switch scalar {
        case "\"" where escapingQuotes: out += "\\\""
        case "\\" where escapingQuotes: out += "\\\\"
        case " "..."~": out.unicodeScalars.append(scalar)
        default:
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .unassigned, .surrogate, .privateUse:
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default:
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out
}

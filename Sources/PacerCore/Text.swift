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

/// Outside text as it may appear in a reply or a log line: at most `limit` scalars written
/// (then `…`), with control, format and line-separating characters written as `\u{1B}`, so
/// nothing a sender writes can break a log line or a display. With `escapingQuotes`, `"` and
/// `\` are escaped too (for text shown inside double quotes). The limit counts what is
/// written, escapes included: the result is never longer than `limit` + 1 characters.
public func printable<S: StringProtocol>(_ text: S, limit: Int = 40, escapingQuotes: Bool = false) -> String {
    var out = ""
    var written = 0
    for scalar in text.unicodeScalars {
        let piece: String
        switch scalar {
        case "\"" where escapingQuotes: piece = "\\\""
        case "\\" where escapingQuotes: piece = "\\\\"
        case " "..."~": piece = String(scalar)
        default:
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .unassigned, .surrogate, .privateUse:
                piece = "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default:
                piece = String(scalar)
            }
        }
        let size = piece.unicodeScalars.count
        if written + size > limit { out += "…"; break }
        out += piece
        written += size
    }
    return out
}

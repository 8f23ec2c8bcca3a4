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

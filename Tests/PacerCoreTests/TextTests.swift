import PacerCore
import Testing

@Suite("Outside text in messages")
struct TextTests {
    @Test func printableEscapesWhatBreaksALine() {
        #expect(printable("pause") == "pause")
        #expect(printable("a\nb\u{0}c\u{2028}d\u{1B}[2J") == #"a\u{A}b\u{0}c\u{2028}d\u{1B}[2J"#)
        #expect(printable("Küche") == "Küche")
        #expect(printable(#"say "hi" \ bye"#, escapingQuotes: true) == #"say \"hi\" \\ bye"#)
    }

    /// Found by the fuzzer's command target: the limit counted the input's scalars, so a key
    /// of 400 unassigned scalars became a 3,600-character message once each was escaped.
    @Test func theLimitCountsWhatIsWritten() {
        #expect(printable(String(repeating: "x", count: 40)) == String(repeating: "x", count: 40))
        #expect(printable(String(repeating: "x", count: 41)) == String(repeating: "x", count: 40) + "…")
        let escaped = printable(String(repeating: "\u{FFF0}", count: 400), limit: 400)
        #expect(escaped.count <= 401 && escaped.hasSuffix("…"), "\(escaped.count)")
        #expect(escaped.hasPrefix(#"\u{FFF0}\u{FFF0}"#))
        // An escape is never cut in half.
        #expect(printable("ab\u{1}", limit: 4) == "ab…")
    }

    @Test func whiteSpaceIsTrimmedAsFoundationDid() {
        #expect("\u{A0} \t pause \u{3000}\u{2028}\n".trimmingWhitespace() == "pause")
        #expect("  ".trimmingWhitespace() == "")
        #expect(" a b ".trimmingWhitespace() == "a b")
    }
}

/// A 3×5 pixel font for the AWTRIX emulator's matrix: digits, `:`, `/`, `.`, `'`, a space and
/// the capitals a timer's words need, one blank column between glyphs (the width
/// `AwtrixRenderer.textWidth` assumes). It can also read a rendered row of glyphs back, so a
/// test asserts what the pixels say rather than what the app's JSON said.
public enum MatrixFont {
    /// Each glyph's rows, top to bottom: `#` lit.
    static let glyphs: [Character: [String]] = [
        "0": ["###", "#.#", "#.#", "#.#", "###"],
        "1": [".#.", "##.", ".#.", ".#.", "###"],
        "2": ["###", "..#", "###", "#..", "###"],
        "3": ["###", "..#", "###", "..#", "###"],
        "4": ["#.#", "#.#", "###", "..#", "..#"],
        "5": ["###", "#..", "###", "..#", "###"],
        "6": ["###", "#..", "###", "#.#", "###"],
        "7": ["###", "..#", "..#", ".#.", ".#."],
        "8": ["###", "#.#", "###", "#.#", "###"],
        "9": ["###", "#.#", "###", "..#", "###"],
        ":": [".", "#", ".", "#", "."],
        ".": [".", ".", ".", ".", "#"],
        "'": ["#", "#", ".", ".", "."],
        " ": [".", ".", ".", ".", "."],
        "/": ["..#", "..#", ".#.", "#..", "#.."],
        "A": [".#.", "#.#", "###", "#.#", "#.#"],
        "C": ["###", "#..", "#..", "#..", "###"],
        "D": ["##.", "#.#", "#.#", "#.#", "##."],
        "E": ["###", "#..", "###", "#..", "###"],
        "G": ["###", "#..", "#.#", "#.#", "###"],
        "H": ["#.#", "#.#", "###", "#.#", "#.#"],
        "I": ["###", ".#.", ".#.", ".#.", "###"],
        "K": ["#.#", "#.#", "##.", "#.#", "#.#"],
        "L": ["#..", "#..", "#..", "#..", "###"],
        "M": ["#.#", "###", "###", "#.#", "#.#"],
        "N": ["##.", "#.#", "#.#", "#.#", "#.#"],
        "P": ["###", "#.#", "###", "#..", "#.."],
        "R": ["##.", "#.#", "##.", "#.#", "#.#"],
        "S": [".##", "#..", ".#.", "..#", "##."],
        "T": ["###", ".#.", ".#.", ".#.", ".#."],
        "U": ["#.#", "#.#", "#.#", "#.#", "###"],
        "W": ["#.#", "#.#", "###", "###", "#.#"],
        "Y": ["#.#", "#.#", ".#.", ".#.", ".#."],
    ]

    /// Drawn for a character the font lacks.
    static let unknown = ["###", "###", "###", "###", "###"]

    static func glyph(_ character: Character) -> [String] {
        glyphs[Character(character.uppercased())] ?? unknown
    }

    /// The advance of `text`: each glyph's width plus one blank column, less the last one.
    public static func width(_ text: String) -> Int {
        max(0, text.reduce(0) { $0 + glyph($1)[0].count + 1 } - 1)
    }

    /// Reads the glyphs lit in rows `top ..< top + 5` of `lit(x, y)` between columns `from`
    /// and `to` (exclusive). A run of 3 or more blank columns between glyphs is a space.
    /// `0` and `O` look alike; it reads `0`.
    static func read(from: Int, to: Int, top: Int, lit: (Int, Int) -> Bool) -> String {
        var columns: [[Bool]] = []
        for x in from..<to { columns.append((0..<5).map { lit(x, top + $0) }) }
        var text = ""
        var x = 0
        var blanks = 0
        var started = false
        // Reading order: digits before letters, so an ambiguous shape reads as a digit.
        let candidates = glyphs.sorted { a, b in
            (a.key.isNumber ? 0 : 1, String(a.key)) < (b.key.isNumber ? 0 : 1, String(b.key))
        }.filter { $0.key != " " }
        while x < columns.count {
            if !columns[x].contains(true) { blanks += 1; x += 1; continue }
            if started && blanks >= 3 { text.append(" ") }
            blanks = 0
            var end = x
            while end < columns.count, columns[end].contains(true) { end += 1 }
            let shape = (0..<5).map { row in String(columns[x..<end].map { $0[row] ? "#" : "." }) }
            text.append(candidates.first { $0.value == shape }?.key ?? "?")
            started = true
            x = end
        }
        return text
    }
}

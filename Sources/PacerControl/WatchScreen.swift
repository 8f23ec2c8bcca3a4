public import PacerCore
public import PacerProtocol

/// The size of a terminal in character cells.
public struct TerminalSize: Sendable, Equatable {
    public var columns: Int
    public var rows: Int
    public init(columns: Int, rows: Int) {
        self.columns = columns
        self.rows = rows
    }
}

/// What `pacer watch` knows about its link to the node.
public enum WatchLink: Sendable, Equatable {
    /// Connected, and the node is online.
    case online
    /// The node's `status` is `offline` (it stopped, or the broker published its will).
    case nodeOffline
    /// Our own broker connection is lost; the client reconnects.
    case brokerLost
    /// Connecting, or waiting for the first state.
    case connecting
}

/// Draws the terminal clock: a pure function of the timers, the node's now (local clock plus
/// the measured offset), the link state and the terminal size. Returns exactly `size.rows`
/// lines, each at most `size.columns` cells wide (ANSI colour codes take no cells).
///
/// Colours follow the web clock: green work, red rest, amber prepare, blue paused (the
/// table is ``color(for:)``). Every colour also has its phase text (`WORK`, `REST`, …),
/// so the clock reads without colour too.
public enum WatchScreen {
    /// The big-digit font: 3 × 5 cells per digit, 1 × 5 for the colon; `#` is lit.
    static let font: [Character: [String]] = [
        "0": ["###", "#.#", "#.#", "#.#", "###"],
        "1": [".#.", "##.", ".#.", ".#.", "###"],
        "2": ["###", "..#", "###", "#..", "###"],
        "3": ["###", "..#", "###", "..#", "###"],
        "4": ["#.#", "#.#", "###", "..#", "..#"],
        "5": ["###", "#..", "###", "..#", "###"],
        "6": ["###", "#..", "###", "#.#", "###"],
        "7": ["###", "..#", "..#", "..#", "..#"],
        "8": ["###", "#.#", "###", "#.#", "###"],
        "9": ["###", "#.#", "###", "..#", "###"],
        ":": [".", "#", ".", "#", "."],
        "-": ["...", "...", "###", "...", "..."],
    ]

    /// The lit block of the big digits.
    static let block: Character = "█"

    /// The width in font cells of `text` (glyphs plus one blank cell between glyphs).
    static func cellWidth(_ text: String) -> Int {
        let glyphs = text.compactMap { font[$0]?.first?.count }
        return glyphs.reduce(0, +) + max(0, glyphs.count - 1)
    }

    /// `text` in big digits, each font cell `scale` rows tall and `2 × scale` columns wide
    /// (terminal cells are about twice as tall as wide): `5 × scale` lines.
    public static func bigDigits(_ text: String, scale: Int) -> [String] {
        let glyphs = text.compactMap { font[$0] }
        var lines: [String] = []
        for row in 0..<5 {
            var line = ""
            for (index, glyph) in glyphs.enumerated() {
                if index > 0 { line += String(repeating: " ", count: 2 * scale) }
                for cell in glyph[row] {
                    line += String(repeating: cell == "#" ? block : " ", count: 2 * scale)
                }
            }
            lines += Array(repeating: line, count: scale)
        }
        return lines
    }

    /// The largest scale at which `text` fits in `columns` × `rows` cells (0: not even at 1).
    static func scale(for text: String, columns: Int, rows: Int) -> Int {
        let width = cellWidth(text) * 2
        guard width > 0 else { return 0 }
        return max(0, min(columns / width, rows / 5))
    }

    // MARK: Colours

    /// ANSI SGR colour of a phase (256-colour codes, like the web clock's palette).
    public static func color(for phase: Phase) -> String {
        switch phase {
        case .work: "38;5;46"                   // green
        case .rest, .setRest: "38;5;196"        // red
        case .prepare, .scheduled: "38;5;214"   // amber
        case .paused: "38;5;33"                 // blue
        case .cooldown: "38;5;51"               // cyan
        case .overtime, .expired: "38;5;196"    // red
        case .finished: "38;5;46"               // green
        case .countdown, .session: "38;5;231"   // white
        case .idle, .cancelled: "38;5;245"      // grey
        }
    }

    /// The phase as the clock's caption: `WORK`, `SET REST`, `PAUSED`.
    public static func caption(for phase: Phase) -> String {
        phase == .scheduled ? "STARTS IN" : phase.rawValue.replacingUnderscores().uppercased()
    }

    static func paint(_ text: String, _ sgr: String, color: Bool) -> String {
        color && !text.isEmpty ? "\u{1B}[\(sgr)m\(text)\u{1B}[0m" : text
    }

    // MARK: Screens

    /// The full-screen clock of one timer (nil: still waiting for its state).
    public static func render(timer: TimerState?, waitingFor id: String? = nil, nowMs: Millis, link: WatchLink,
                              size: TerminalSize, color: Bool = true, backToGrid: Bool = false) -> [String] {
        var canvas = Canvas(size: size)
        guard size.rows >= 1, size.columns >= 1 else { return canvas.lines(color: color) }
        let keys = "space pause/resume · s skip · " + (backToGrid ? "g all timers · " : "") + "q quit"
        canvas.put(row: size.rows - 1, footer(link: link, keys: keys, width: size.columns))
        guard let timer else {
            let message = id.map { "waiting for timer '\($0)'… (start it: pacer start \($0) --countdown 5m)" } ?? "waiting for the node…"
            canvas.center(row: size.rows / 2, [(message, "38;5;245")])
            return canvas.lines(color: color)
        }
        panel(timer, into: &canvas, top: 0, left: 0, width: size.columns, height: size.rows - 1, nowMs: nowMs,
              dimmed: link != .online, big: true)
        return canvas.lines(color: color)
    }

    /// A grid of every timer, each with its number for focusing it (`1`…`9`).
    public static func renderGrid(timers: [TimerState], nowMs: Millis, link: WatchLink, size: TerminalSize,
                                  color: Bool = true) -> [String] {
        var canvas = Canvas(size: size)
        guard size.rows >= 1, size.columns >= 1 else { return canvas.lines(color: color) }
        canvas.put(row: size.rows - 1, footer(link: link, keys: "1-9 show one · q quit", width: size.columns))
        guard !timers.isEmpty else {
            canvas.center(row: size.rows / 2, [("no timers yet: pacer start TIMER --countdown 5m", "38;5;245")])
            return canvas.lines(color: color)
        }
        let height = size.rows - 1
        let count = timers.count
        let longest = timers.map { $0.display(at: nowMs) }.max { Self.cellWidth($0) < Self.cellWidth($1) } ?? "0:00"
        let columns = gridColumns(count: count, columns: size.columns, rows: height, text: longest)
        let rows = (count + columns - 1) / columns
        let cellHeight = max(1, height / rows)
        let cellWidth = size.columns / columns
        for (index, timer) in timers.enumerated() {
            let top = (index / columns) * cellHeight
            guard top < height else { break }
            var titled = timer
            if index < 9 { titled.name = "\(index + 1) \(timer.name)" }
            panel(titled, into: &canvas, top: top, left: (index % columns) * cellWidth, width: cellWidth - 1,
                  height: min(cellHeight, height - top), nowMs: nowMs, dimmed: link != .online, big: true)
        }
        return canvas.lines(color: color)
    }

    /// How many columns the grid of `count` timers gets: the layout whose cells show `text`
    /// in the biggest digits (a panel keeps up to 6 rows for its caption, labels and bar); on a tie,
    /// the one with fewer empty cells, then the one with the squarest cells (terminal cells
    /// are about twice as tall as wide).
    public static func gridColumns(count: Int, columns: Int, rows: Int, text: String) -> Int {
        var best = (columns: 1, scale: -1, empty: Int.max, square: -1)
        for candidate in 1...max(1, count) {
            let gridRows = (count + candidate - 1) / candidate
            let cellWidth = columns / candidate - 1
            let cellHeight = rows / gridRows
            guard cellWidth >= 12, cellHeight >= 2 else { continue }
            let s = scale(for: text, columns: cellWidth, rows: max(0, cellHeight - 6))
            let empty = gridRows * candidate - count
            let square = min(cellWidth / 2, cellHeight)
            if (s, -empty, square) > (best.scale, -best.empty, best.square) {
                best = (candidate, s, empty, square)
            }
        }
        return best.columns
    }

    /// One timer in a rectangle: caption line, big digits (or plain text when they do not
    /// fit), label line, progress bar.
    static func panel(_ timer: TimerState, into canvas: inout Canvas, top: Int, left: Int, width: Int, height: Int,
                      nowMs: Millis, dimmed: Bool, big: Bool) {
        guard height >= 1, width >= 4 else { return }
        // An expired timer flashes: its digits go dark every other half second.
        let flashOff = timer.phase == .expired && !dimmed && (nowMs / 500) % 2 == 1
        let sgr = dimmed ? "38;5;240" : flashOff ? "38;5;52" : color(for: timer.phase)
        let text = timer.display(at: nowMs)
        // Caption: name on the left, PHASE in the middle, round (and set) on the right.
        var right = ""
        if timer.rounds > 1 { right = "ROUND \(timer.round)/\(timer.rounds)" }
        if timer.sets > 1 { right += (right.isEmpty ? "" : "  ") + "SET \(timer.set)/\(timer.sets)" }
        if let hr = timer.hr { right += (right.isEmpty ? "" : "  ") + "♥ \(hr)" + (timer.hrZone.map { " Z\($0)" } ?? "") }
        canvas.put(row: top, column: left, String(timer.name.prefix(max(0, width / 3))), "1", width: width)
        canvas.put(row: top, column: left + (width - caption(for: timer.phase).count) / 2, caption(for: timer.phase), "1;" + sgr,
                   width: width - (width - caption(for: timer.phase).count) / 2)
        if right.count < width / 3 { canvas.put(row: top, column: left + width - right.count, right, "1", width: right.count) }
        guard height >= 2 else { return }

        // What goes under the digits.
        var below: [(String, String)] = []
        var labelLine = timer.label ?? ""
        if let next = timer.nextLabel { labelLine += (labelLine.isEmpty ? "" : "   ") + "next: \(next)" }
        if !labelLine.isEmpty { below.append((String(labelLine.prefix(width)), "1")) }
        let showBar = timer.segmentDurationMs != nil && height >= 6
        let reserved = 1 + below.count + (showBar ? 2 : 0)
        let digitRows = height - reserved
        let s = big ? scale(for: text, columns: width, rows: max(0, digitRows - 2)) : 0
        var row: Int
        if s >= 1 {
            let lines = bigDigits(text, scale: s)
            row = top + 1 + max(0, (digitRows - lines.count) / 2)
            for line in lines {
                canvas.put(row: row, column: left + (width - line.count) / 2, line, sgr, width: line.count)
                row += 1
            }
        } else {
            row = top + 1 + max(0, (digitRows - 1) / 2)
            canvas.put(row: row, column: left + (width - text.count) / 2, text, "1;" + sgr, width: text.count)
            row += 1
        }
        row = max(row, top + height - reserved + 1)
        for (line, style) in below where row < top + height {
            canvas.put(row: row, column: left + (width - line.count) / 2, line, style, width: line.count)
            row += 1
        }
        if showBar, top + height - 1 >= row {
            let barWidth = max(1, width - 4)
            let filled = Int((timer.progress(at: nowMs) * Double(barWidth)).rounded(.down))
            let bar = String(repeating: "━", count: filled)
            let rest = String(repeating: "─", count: barWidth - filled)
            canvas.put(row: top + height - 1, column: left + 2, bar, sgr, width: filled)
            canvas.put(row: top + height - 1, column: left + 2 + filled, rest, "38;5;238", width: barWidth - filled)
        }
    }

    /// The bottom line: the link state (when not online) and the keys.
    static func footer(link: WatchLink, keys: String, width: Int) -> [(String, String)] {
        let state: (String, String)? = switch link {
        case .online: nil
        case .nodeOffline: (" NODE OFFLINE ", "1;97;41")
        case .brokerLost: (" BROKER CONNECTION LOST · reconnecting ", "1;97;41")
        case .connecting: (" connecting… ", "30;43")
        }
        var parts: [(String, String)] = []
        if let state { parts.append(state); parts.append(("  ", "0")) }
        parts.append((keys, "38;5;245"))
        return parts
    }
}

extension String {
    func replacingUnderscores() -> String { String(map { $0 == "_" ? " " : $0 }) }
}

/// A screen of `rows` × `columns` cells, each holding a character and its SGR style.
struct Canvas {
    let size: TerminalSize
    private var cells: [[(Character, String)]]

    init(size: TerminalSize) {
        self.size = size
        cells = Array(repeating: Array(repeating: (" ", ""), count: max(0, size.columns)), count: max(0, size.rows))
    }

    /// Writes `text` at (`row`, `column`) in `style`, clipped to `width` cells and the screen.
    mutating func put(row: Int, column: Int, _ text: String, _ style: String, width: Int) {
        guard row >= 0, row < size.rows else { return }
        var c = column
        for character in text.prefix(max(0, width)) {
            if c >= size.columns { break }
            if c >= 0 { cells[row][c] = (character, style) }
            c += 1
        }
    }

    /// Writes styled pieces one after the other from the left of `row`.
    mutating func put(row: Int, _ pieces: [(String, String)]) {
        var column = 0
        for (text, style) in pieces {
            put(row: row, column: column, text, style, width: size.columns - column)
            column += text.count
        }
    }

    /// Writes styled pieces centred on `row`.
    mutating func center(row: Int, _ pieces: [(String, String)]) {
        let width = pieces.reduce(0) { $0 + $1.0.count }
        var column = max(0, (size.columns - width) / 2)
        for (text, style) in pieces {
            put(row: row, column: column, text, style, width: size.columns - column)
            column += text.count
        }
    }

    /// The lines, with SGR codes where the style changes (none without colour), trailing
    /// blanks trimmed.
    func lines(color: Bool) -> [String] {
        cells.map { row in
            var line = ""
            var current = ""
            var end = row.count
            while end > 0, row[end - 1].0 == " ", row[end - 1].1.isEmpty { end -= 1 }
            for (character, style) in row.prefix(end) {
                let wanted = style
                if color && wanted != current {
                    line += wanted.isEmpty ? "\u{1B}[0m" : "\u{1B}[0;\(wanted)m"
                    current = wanted
                }
                line.append(character)
            }
            if color && !current.isEmpty { line += "\u{1B}[0m" }
            return line
        }
    }
}

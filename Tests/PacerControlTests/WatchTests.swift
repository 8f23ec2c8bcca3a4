import Foundation
import Mosquitto
import PacerControl
import PacerCore
import PacerProtocol
import Testing

/// A running work segment: 40 s, ending at 100_000 on the node's clock.
func runningState(endsAt: Millis = 100_000, phase: String = "work", status: String = "running", revision: Int = 5) -> JSONValue {
    var state: JSONValue = [
        "id": "main", "name": "Main", "kind": "interval", "status": .string(status), "phase": .string(phase),
        "label": "Burpees", "next_label": "Squat", "round": 3, "rounds": 8, "set": 1, "sets": 1,
        "segment_duration_ms": 40_000, "remaining": 40, "display": "0:40", "counts_up": false, "progress": 0,
        "revision": .int(revision), "hr": 142, "hr_zone": 3,
    ]
    if status == "running", case .object(var members) = state {
        members["ends_at_ms"] = .int(endsAt)
        state = .object(members)
    }
    return state
}

/// Reads the big digits back from a rendered screen: the lit cells, scaled down, matched
/// against each glyph of the font (`WatchScreen.bigDigits` of one character).
func readBigDigits(_ lines: [String]) -> String? {
    let plain = lines.map { line in line.replacing(/\u{1B}\[[0-9;]*m/, with: "") }
    let lit = plain.enumerated().filter { $0.element.contains("█") }
    guard let first = lit.first?.offset, let last = lit.last?.offset else { return nil }
    let height = last - first + 1
    guard height % 5 == 0 else { return nil }
    let scale = height / 5
    let rows = (0..<5).map { Array(plain[first + $0 * scale]) }
    let left = rows.compactMap { $0.firstIndex(of: "█") }.min()!
    let right = rows.compactMap { $0.lastIndex(of: "█") }.max()!
    func cell(_ row: Int, _ column: Int) -> Bool {
        let index = left + column * 2 * scale
        return index < rows[row].count && rows[row][index] == "█"
    }
    let columns = (right - left + 1) / (2 * scale)
    var glyphs: [String: Character] = [:]
    for character in "0123456789:-" {
        let drawn = WatchScreen.bigDigits(String(character), scale: 1).map { line in line.enumerated().filter { $0.offset % 2 == 0 }.map { $0.element == "█" ? "#" : "." }.joined() }
        glyphs[drawn.joined(separator: "/")] = character
    }
    var text = ""
    var column = 0
    while column < columns {
        // A colon is one cell wide, a digit three.
        for width in [1, 3] where column + width <= columns {
            let pattern = (0..<5).map { row in (0..<width).map { cell(row, column + $0) ? "#" : "." }.joined() }.joined(separator: "/")
            if let character = glyphs[pattern], width == 3 || column + 1 == columns || !(0..<5).contains(where: { cell($0, column + 1) }) {
                text.append(character)
                column += width + 1
                break
            }
            if width == 3 { return nil }
        }
    }
    return text
}

@Suite("The terminal clock")
struct WatchTests {
    @Test func countsDownFromEndsAtAndFlipsOnTheSecond() throws {
        let timer = try #require(TimerState(state: runningState()))
        #expect(timer.display(at: 60_000) == "0:40")
        #expect(timer.display(at: 60_001) == "0:40")          // 39.999 s left still shows 40
        #expect(timer.display(at: 60_999) == "0:40")
        #expect(timer.display(at: 61_000) == "0:39")
        #expect(timer.display(at: 99_999) == "0:01")
        #expect(timer.display(at: 100_000) == "0:00")
        #expect(timer.display(at: 130_000) == "0:00")
        #expect(timer.nextFlip(after: 60_000) == 61_000)
        #expect(timer.nextFlip(after: 60_001) == 61_000)
        #expect(timer.nextFlip(after: 60_999) == 61_000)
        #expect(timer.nextFlip(after: 61_000) == 62_000)
        #expect(timer.nextFlip(after: 99_500) == 100_000)
        #expect(timer.nextFlip(after: 100_000) == nil)
        #expect(abs(timer.progress(at: 80_000) - 0.5) < 1e-9)
    }

    @Test func countsUpFromTheSegmentStart() throws {
        let state: JSONValue = ["id": "s", "status": "running", "phase": "session", "counts_up": true, "segment_started_at_ms": 10_000,
                                "remaining": 0, "revision": 1]
        let timer = try #require(TimerState(state: state))
        #expect(timer.display(at: 10_999) == "0:00")
        #expect(timer.display(at: 11_000) == "0:01")
        #expect(timer.display(at: 10_000 + 3_723_000) == "1:02:03")
        #expect(timer.nextFlip(after: 10_500) == 11_000)
        #expect(timer.nextFlip(after: 11_000) == 12_000)
    }

    @Test func aPausedTimerShowsItsSnapshot() throws {
        var members = runningState(phase: "paused", status: "paused").object!
        members["remaining"] = 13
        let timer = try #require(TimerState(state: .object(members)))
        #expect(timer.display(at: 0) == "0:13")
        #expect(timer.display(at: 1_000_000) == "0:13")
        #expect(timer.nextFlip(after: 5) == nil)
    }

    @Test func theBigDigitsShowTheRemainingTimeAtTheNodesNow() throws {
        let timer = try #require(TimerState(state: runningState()))
        for (now, expected) in [(60_000, "0:40"), (87_001, "0:13"), (99_999, "0:01")] as [(Millis, String)] {
            for size in [TerminalSize(columns: 100, rows: 30), TerminalSize(columns: 40, rows: 15), TerminalSize(columns: 200, rows: 60)] {
                let lines = WatchScreen.render(timer: timer, nowMs: now, link: .online, size: size)
                #expect(lines.count == size.rows)
                #expect(readBigDigits(lines) == expected, "at \(now) in \(size)")
                for line in lines {
                    let visible = line.replacing(/\u{1B}\[[0-9;]*m/, with: "")
                    #expect(visible.count <= size.columns)
                }
            }
        }
        // An hour and more.
        var long = try #require(runningState(endsAt: 10_000_000).object)
        long["segment_duration_ms"] = 10_000_000
        let hours = try #require(TimerState(state: .object(long)))
        #expect(readBigDigits(WatchScreen.render(timer: hours, nowMs: 6_277_000, link: .online, size: .init(columns: 120, rows: 30))) == "1:02:03")
    }

    @Test func allGlyphsDiffer() {
        let drawn = "0123456789:-".map { WatchScreen.bigDigits(String($0), scale: 1) }
        #expect(Set(drawn).count == drawn.count)
    }

    @Test func phaseColoursAndCaptions() throws {
        #expect(WatchScreen.color(for: .work).hasSuffix(";46"))       // green
        #expect(WatchScreen.color(for: .rest).hasSuffix(";196"))      // red
        #expect(WatchScreen.color(for: .prepare).hasSuffix(";214"))   // amber
        #expect(WatchScreen.color(for: .paused).hasSuffix(";33"))     // blue
        #expect(WatchScreen.caption(for: .setRest) == "SET REST")
        let rest = try #require(TimerState(state: runningState(phase: "rest")))
        let lines = WatchScreen.render(timer: rest, nowMs: 70_000, link: .online, size: .init(columns: 100, rows: 30))
        #expect(lines[0].contains("\u{1B}[0;1;38;5;196mREST"))
        #expect(lines.contains { $0.contains("\u{1B}[0;38;5;196m█") })
        #expect(lines[0].contains("ROUND 3/8"))
        #expect(lines[0].contains("♥ 142 Z3"))
        #expect(lines.contains { $0.contains("Burpees") && $0.contains("next: Squat") })
        let plain = WatchScreen.render(timer: rest, nowMs: 70_000, link: .online, size: .init(columns: 100, rows: 30), color: false)
        #expect(!plain.joined().contains("\u{1B}"))
    }

    @Test func theLinkStateIsShown() throws {
        let timer = try #require(TimerState(state: runningState()))
        let size = TerminalSize(columns: 100, rows: 30)
        #expect(WatchScreen.render(timer: timer, nowMs: 70_000, link: .nodeOffline, size: size).last?.contains("NODE OFFLINE") == true)
        #expect(WatchScreen.render(timer: timer, nowMs: 70_000, link: .brokerLost, size: size).last?.contains("BROKER CONNECTION LOST") == true)
        #expect(WatchScreen.render(timer: timer, nowMs: 70_000, link: .online, size: size).last?.contains("OFFLINE") == false)
        // Offline: the digits are grey, not the phase colour.
        #expect(!WatchScreen.render(timer: timer, nowMs: 70_000, link: .nodeOffline, size: size).contains { $0.contains("38;5;46m█") })
    }

    @Test func aTinyTerminalGetsPlainDigits() throws {
        let timer = try #require(TimerState(state: runningState()))
        let lines = WatchScreen.render(timer: timer, nowMs: 87_001, link: .online, size: .init(columns: 20, rows: 6), color: false)
        #expect(lines.count == 6)
        #expect(lines.contains { $0.contains("0:13") })
        #expect(lines.allSatisfy { $0.count <= 20 })
        #expect(WatchScreen.render(timer: timer, nowMs: 0, link: .online, size: .init(columns: 0, rows: 0)).isEmpty)
    }

    @Test func theGridShowsEveryTimer() throws {
        var model = WatchModel(focus: nil, pinned: false)
        let base = "pacer/gym"
        for (id, ends) in [("a", 100_000), ("b", 200_000), ("c", 300_000)] as [(String, Millis)] {
            var state = try #require(runningState(endsAt: ends).object)
            state["id"] = .string(id)
            state["name"] = .string(id.uppercased())
            model.apply(.message(topic: "\(base)/timers/\(id)/state", payload: Array(JSONValue.object(state).description.utf8), retained: true), base: base)
        }
        model.apply(.message(topic: "\(base)/status", payload: Array("online".utf8), retained: true), base: base)
        #expect(model.shown == nil)
        let lines = model.render(nowMs: 90_000, size: .init(columns: 120, rows: 40), color: false)
        let text = lines.joined(separator: "\n")
        #expect(text.contains("1 A") && text.contains("2 B") && text.contains("3 C"))
        #expect(model.nextFlip(after: 90_000) == 91_000)

        // 2 shows timer b full screen; space toggles it, s skips it; g goes back to the grid.
        #expect(model.key(UInt8(ascii: "2")) == .redraw)
        #expect(model.shown == "b")
        #expect(model.key(UInt8(ascii: " ")) == .send(action: .toggle, timer: "b"))
        #expect(model.key(UInt8(ascii: "s")) == .send(action: .skip, timer: "b"))
        #expect(model.key(UInt8(ascii: "g")) == .redraw)
        #expect(model.shown == nil)
        #expect(model.key(UInt8(ascii: " ")) == .none)
        #expect(model.key(UInt8(ascii: "q")) == .quit)
        #expect(model.key(3) == .quit)

        // A deleted timer (empty retained state) leaves; an older retained state never replaces a newer one.
        model.apply(.message(topic: "\(base)/timers/c/state", payload: [], retained: true), base: base)
        #expect(model.timers.keys.sorted() == ["a", "b"])
        var old = try #require(runningState(revision: 1).object)
        old["id"] = "a"
        old["phase"] = "rest"
        model.apply(.message(topic: "\(base)/timers/a/state", payload: Array(JSONValue.object(old).description.utf8), retained: true), base: base)
        #expect(model.timers["a"]?.phase == .work)
    }

    @Test func theLinkFollowsTheNodeAndTheBroker() {
        var model = WatchModel(focus: "main", pinned: true)
        #expect(model.link == .connecting)
        model.apply(.message(topic: "p/status", payload: Array("online".utf8), retained: true), base: "p")
        #expect(model.link == .online)
        model.apply(.message(topic: "p/status", payload: Array("offline".utf8), retained: false), base: "p")
        #expect(model.link == .nodeOffline)
        model.apply(.connection(.disconnected(reason: "gone")), base: "p")
        #expect(model.link == .brokerLost)
        model.apply(.connection(.connected(sessionPresent: false)), base: "p")
        model.apply(.message(topic: "p/status", payload: Array("online".utf8), retained: true), base: "p")
        #expect(model.link == .online)
        // Pinned: no grid to go back to, digits do not change the focus.
        #expect(model.key(UInt8(ascii: "g")) == .none)
        #expect(model.key(UInt8(ascii: "2")) == .none)
        #expect(model.key(UInt8(ascii: " ")) == .send(action: .toggle, timer: "main"))
    }
}

@Suite("The terminal clock, expired")
struct WatchExpiredTests {
    @Test func anExpiredTimerFlashesEveryHalfSecond() throws {
        var state = try #require(runningState(phase: "expired", status: "expired").object)
        state["remaining"] = 0
        let timer = try #require(TimerState(state: .object(state)))
        let on = WatchScreen.render(timer: timer, nowMs: 10_000, link: .online, size: .init(columns: 100, rows: 30))
        let off = WatchScreen.render(timer: timer, nowMs: 10_500, link: .online, size: .init(columns: 100, rows: 30))
        #expect(on.contains { $0.contains("38;5;196m█") })
        #expect(!off.contains { $0.contains("38;5;196m█") })
        #expect(readBigDigits(on) == "0:00" && readBigDigits(off) == "0:00")
        var model = WatchModel(focus: "main", pinned: true)
        model.timers["main"] = timer
        #expect(model.nextFlip(after: 10_200) == 10_500)
    }
}

@Suite("The grid of timers")
struct GridLayoutTests {
    @Test func theLayoutWithTheBiggestDigitsWins() {
        // Two timers on a wide, tall screen: one above the other gives bigger digits than side by side.
        #expect(WatchScreen.gridColumns(count: 2, columns: 200, rows: 50, text: "12:00") == 1)
        // Two on a wide, short screen: side by side.
        #expect(WatchScreen.gridColumns(count: 2, columns: 200, rows: 20, text: "12:00") == 2)
        // Four on a usual terminal: two by two.
        #expect(WatchScreen.gridColumns(count: 4, columns: 160, rows: 48, text: "0:40") == 2)
        // One timer: one column.
        #expect(WatchScreen.gridColumns(count: 1, columns: 80, rows: 24, text: "0:40") == 1)
        // Too many for big digits anywhere: still a layout that fits them all.
        let columns = WatchScreen.gridColumns(count: 30, columns: 120, rows: 40, text: "0:40")
        #expect((1...30).contains(columns))
    }

    @Test func everyTimerOfTheGridIsReadable() throws {
        var timers: [TimerState] = []
        for (index, ends) in [100_000, 160_000, 700_000, 3_700_000].enumerated() {
            var state = try #require(runningState(endsAt: Millis(ends)).object)
            state["id"] = .string("t\(index)")
            timers.append(try #require(TimerState(state: .object(state))))
        }
        let lines = WatchScreen.renderGrid(timers: timers, nowMs: 90_000, link: .online, size: .init(columns: 160, rows: 48), color: false)
        // Two by two: the left and right halves of the top and bottom halves each show one clock.
        let halves = [Array(lines[0..<24]), Array(lines[24..<47])]
        var shown: [String] = []
        for half in halves {
            for range in [0..<80, 80..<160] {
                let cut = half.map { line in
                    let characters = Array(line)
                    return String(characters[min(range.lowerBound, characters.count)..<min(range.upperBound, characters.count)])
                }
                shown.append(readBigDigits(cut) ?? "?")
            }
        }
        #expect(shown == ["0:10", "1:10", "10:10", "1:00:10"], "\(lines.joined(separator: "\n"))")
    }
}

@Suite("The terminal clock's bell")
struct WatchBellTests {
    func event(_ type: String, timer: String = "main", due: Millis) -> ControlUpdate {
        let json: JSONValue = ["type": .string(type), "timer": .string(timer), "revision": 3, "due_ms": .int(due), "at_ms": .int(due)]
        return .message(topic: "p/timers/\(timer)/event", payload: Array(json.description.utf8), retained: false)
    }

    @Test func cuesAndPhaseChangesOfTheShownTimerRingOnTime() {
        let model = WatchModel(focus: "main", pinned: true)
        for type in ["countdown", "phase", "expired", "alert", "finished"] {
            #expect(model.rings(event(type, due: 10_000), base: "p", nowMs: 10_050), "\(type)")
        }
        #expect(!model.rings(event("paused", due: 10_000), base: "p", nowMs: 10_050))
        #expect(!model.rings(event("halfway", due: 10_000), base: "p", nowMs: 10_050))
        // Late (e.g. published after an outage) or of another timer: silent.
        #expect(!model.rings(event("phase", due: 10_000), base: "p", nowMs: 12_001))
        #expect(!model.rings(event("phase", timer: "other", due: 10_000), base: "p", nowMs: 10_000))
        #expect(!model.rings(.message(topic: "p/timers/main/state", payload: [], retained: true), base: "p", nowMs: 0))
    }
}

@Suite("The terminal clock, scheduled")
struct WatchScheduledTests {
    @Test func aScheduledTimerCountsDownToItsStart() throws {
        let state: JSONValue = ["id": "main", "status": "scheduled", "phase": "scheduled", "remaining": 40, "start_at_ms": 50_000,
                                "revision": 1, "segment_duration_ms": 40_000]
        let timer = try #require(TimerState(state: state))
        #expect(timer.display(at: 20_000) == "0:30")
        #expect(timer.display(at: 20_001) == "0:30")
        #expect(timer.display(at: 21_000) == "0:29")
        #expect(timer.nextFlip(after: 20_001) == 21_000)
        let lines = WatchScreen.render(timer: timer, nowMs: 20_000, link: .online, size: .init(columns: 100, rows: 30))
        #expect(lines[0].contains("STARTS IN"))
        #expect(readBigDigits(lines) == "0:30")
    }
}

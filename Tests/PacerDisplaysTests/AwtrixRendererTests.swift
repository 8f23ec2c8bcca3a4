import Foundation
import PacerCore
@testable import PacerDisplays
import Testing

@Suite("AWTRIX apps from a timer's snapshot")
struct AwtrixRendererTests {
    let display = AwtrixDisplay(prefix: "awtrix_gym", timers: ["main"])

    func fragments(_ app: JSONValue?) -> [String] {
        (app?["text"]?.array ?? []).map { "\($0["t"]?.string ?? "?")@\($0["c"]?.string ?? "?")" }
    }

    @Test("running: the time left in the phase colour, the round in white, the segment's bar, a lifetime")
    func running() throws {
        var timer = try TimerFixture.tabata()
        timer.start(at: t0)
        let work = try #require(AwtrixRenderer.app(timer.snapshot(t0 + 5_500), now: t0 + 5_500, display: display))
        #expect(fragments(work) == ["0:15@0B8A3E", " 1/8@FFFFFF"])
        #expect(work["progress"] == 27)
        #expect(work["progressC"] == DisplayPalette.work.json)
        #expect(work["progressBC"] == DisplayPalette.work.scaled(0.15).json)
        #expect(work["lifetime"] == 10 && work["noScroll"] == true && work["center"] == true)
        #expect(work["blinkText"] == nil && work["icon"] == nil)

        timer.advance(to: t0 + 21_000)
        let rest = try #require(AwtrixRenderer.app(timer.snapshot(t0 + 21_000), now: t0 + 21_000, display: display))
        #expect(fragments(rest) == ["0:09@C4161C", " 1/8@FFFFFF"])
        #expect(rest["progressC"] == DisplayPalette.rest.json)
    }

    @Test("a rest that waits for recovery: HR in white in place of the round, beside the time to its longest end; not while paused; the next round once recovered")
    func restUntilRecovered() throws {
        let rest: JSONValue = ["until_hr": ["below_bpm": 120, "who": "class_all", "min": "10s", "max": "1m30s"]]
        var timer = try TimerFixture(["kind": "interval", "work": "20s", "rest": rest, "rounds": 8])
        timer.start(at: t0)
        timer.advance(to: t0 + 30_000)
        let waiting = try #require(AwtrixRenderer.app(timer.snapshot(t0 + 30_000), now: t0 + 30_000, display: display))
        #expect(fragments(waiting) == ["1:20@C4161C", " HR@FFFFFF"], "the rest's longest end, 1:30 after its start, and why it waits")
        // Beside an 8×8 icon the words still fit (23 px).
        var withIcon = display
        withIcon.icons = [.rest: "heart"]
        #expect(fragments(AwtrixRenderer.app(timer.snapshot(t0 + 30_000), now: t0 + 30_000, display: withIcon)) == ["1:20@C4161C", " HR@FFFFFF"])
        var paused = timer
        paused.run(.pause, at: t0 + 31_000)
        #expect(fragments(AwtrixRenderer.app(paused.snapshot(t0 + 32_000), now: t0 + 32_000, display: display)) == ["1:19@1F4FD1", " 1/8@FFFFFF"],
                "paused, it waits for nothing: the frozen time and the round")
        _ = try timer.machine.recovered(at: t0 + 35_000, now: t0 + 35_000).get()
        let after = try #require(AwtrixRenderer.app(timer.snapshot(t0 + 35_000), now: t0 + 35_000, display: display))
        #expect(fragments(after) == ["0:20@0B8A3E", " 2/8@FFFFFF"], "recovered: the rest ends, the next round's work with its round")
    }

    @Test("every status: what the wall shows", arguments: TimerStatus.allCases)
    func everyStatus(status: TimerStatus) throws {
        var timer = try TimerFixture(["kind": "countdown", "duration": "30s"], ack: status == .expired)
        var now = t0
        switch status {
        case .idle: break
        case .scheduled: timer.run(.start(spec: nil, startAt: t0 + 10_000, restart: false), at: t0); now = t0 + 2_500
        case .running: timer.start(at: t0); now = t0 + 2_500
        case .paused: timer.start(at: t0); timer.run(.pause, at: t0 + 2_500); now = t0 + 9_000
        case .expired, .finished: timer.start(at: t0); now = t0 + 31_000; timer.advance(to: now)
        case .cancelled: timer.start(at: t0); timer.run(.cancel, at: t0 + 1_000); now = t0 + 2_000
        }
        let snapshot = timer.snapshot(now)
        #expect(snapshot.status == status)
        let app = AwtrixRenderer.app(snapshot, now: now, display: display)
        switch status {
        case .idle, .finished, .cancelled:
            #expect(app == nil, "nothing to watch: the app is removed")
        case .scheduled:
            #expect(fragments(app) == ["0:08@F5A300"], "the time until the start, in the prepare amber")
            #expect(app?["progress"] == nil)
        case .running:
            #expect(fragments(app) == ["0:28@0B8A3E"])
            #expect(app?["progress"] == 8)
        case .paused:
            #expect(fragments(app) == ["0:28@1F4FD1"], "the frozen time in the paused blue")
            #expect(app?["progress"] == 8 && app?["progressC"] == DisplayPalette.paused.json)
        case .expired:
            #expect(fragments(app) == ["0:00@C4161C"])
            #expect(app?["blinkText"] == 500)
        }
        if let app { #expect(app["lifetime"] == 10, "every app lapses by itself when the node stops sending") }
    }

    @Test("every phase of a running timer: its digits and bar in the page's colour of it", arguments: Phase.allCases)
    func everyPhase(phase: Phase) throws {
        var timer = try TimerFixture.tabata()
        timer.start(at: t0)
        var snapshot = timer.snapshot(t0 + 1_000)
        snapshot.phase = phase
        let app = try #require(AwtrixRenderer.app(snapshot, now: t0 + 1_000, display: display))
        #expect(fragments(app).first == "0:19@\(DisplayPalette.colour(of: phase).hex)")
        #expect(app["progressC"] == DisplayPalette.colour(of: phase).json)
        var wled = WLEDDisplay(topic: "wled/rig", timer: "main")
        wled.idle = .off
        #expect(WLEDRenderer.look(snapshot, display: wled) == .solid(DisplayPalette.colour(of: phase)))
    }

    @Test("the round goes when it does not fit, beside an icon too; icons by phase")
    func fitting() throws {
        var long = try TimerFixture(["kind": "interval", "work": "12m", "rest": "1m", "rounds": 12])
        long.start(at: t0)
        #expect(fragments(AwtrixRenderer.app(long.snapshot(t0), now: t0, display: display)) == ["12:00@0B8A3E"])

        var withIcon = display
        withIcon.icons = [.work: "13", .rest: "fire"]
        var timer = try TimerFixture.tabata()
        timer.start(at: t0)
        let app = AwtrixRenderer.app(timer.snapshot(t0), now: t0, display: withIcon)
        #expect(fragments(app) == ["0:20@0B8A3E"])
        #expect(app?["icon"] == "13")
        #expect(AwtrixRenderer.textWidth("0:20 1/8") == 27 && AwtrixRenderer.textWidth("12:05 3/8") == 31)
    }

    @Test("time's up: the notification with the configured melody, or none")
    func timesUp() {
        var configured = display
        configured.rtttl = "beep:d=4,o=5,b=120:c6,e6"
        let note = AwtrixRenderer.timesUp(display: configured)
        #expect(note?["text"] == "Time's up" && note?["rtttl"] == "beep:d=4,o=5,b=120:c6,e6" && note?["sound"] == nil)
        #expect(note?["color"] == DisplayPalette.expired.json && note?["duration"] == 5)
        configured.notify = false
        #expect(AwtrixRenderer.timesUp(display: configured) == nil)
    }
}

@Suite("Second flips of a snapshot")
struct SecondFlipsTests {
    @Test("a countdown flips on its end's seconds, a stopwatch on its start's, a scheduled timer on its start")
    func alignment() throws {
        var tabata = try TimerFixture.tabata()
        tabata.start(at: t0 + 123)
        #expect(SecondFlips.next(tabata.snapshot(t0 + 123), after: t0 + 123) == t0 + 1_123)
        #expect(SecondFlips.next(tabata.snapshot(t0 + 1_123), after: t0 + 1_123) == t0 + 2_123)
        #expect(SecondFlips.next(tabata.snapshot(t0 + 1_500), after: t0 + 1_500) == t0 + 2_123)
        #expect(SecondFlips.next(tabata.snapshot(t0 + 20_000), after: t0 + 20_000) == t0 + 20_123)

        var stopwatch = try TimerFixture(["kind": "stopwatch"])
        stopwatch.start(at: t0 + 7)
        #expect(SecondFlips.next(stopwatch.snapshot(t0 + 500), after: t0 + 500) == t0 + 1_007)
        #expect(SecondFlips.next(stopwatch.snapshot(t0 + 1_007), after: t0 + 1_007) == t0 + 2_007)

        var scheduled = try TimerFixture.tabata()
        scheduled.run(.start(spec: nil, startAt: t0 + 10_000, restart: false), at: t0)
        #expect(SecondFlips.next(scheduled.snapshot(t0 + 2_500), after: t0 + 2_500) == t0 + 3_000)

        tabata.run(.pause, at: t0 + 3_000)
        #expect(SecondFlips.next(tabata.snapshot(t0 + 3_000), after: t0 + 3_000) == nil)
    }
}

@Suite("The page's palette")
struct PaletteTests {
    @Test("the colour table is the web clock's, read from its CSS")
    func matchesThePage() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let css = try String(contentsOf: root.appendingPathComponent("examples/dashboard/style.css"), encoding: .utf8)
        func variable(_ name: String) -> String? {
            guard let range = css.range(of: "--\(name): #") else { return nil }
            return String(css[range.upperBound...].prefix(6)).uppercased()
        }
        #expect(variable("work") == DisplayPalette.work.hex)
        #expect(variable("rest") == DisplayPalette.rest.hex)
        #expect(variable("prepare") == DisplayPalette.prepare.hex)
        #expect(variable("paused") == DisplayPalette.paused.hex)
        #expect(variable("idle") == DisplayPalette.idle.hex)
        #expect(variable("done") == DisplayPalette.done.hex)
        #expect(variable("expired") == DisplayPalette.expired.hex)
        let overtime = try #require(css.range(of: "body[data-phase=\"overtime\"] { background: #"))
        #expect(String(css[overtime.upperBound...].prefix(6)).uppercased() == DisplayPalette.overtime.hex)
        // Which phases share a colour, as the page's rules group them.
        #expect(css.contains("body[data-phase=\"work\"], body[data-phase=\"countdown\"], body[data-phase=\"session\"] { background: var(--work); }"))
        #expect(DisplayPalette.colour(of: .countdown) == DisplayPalette.work)
        #expect(css.contains("body[data-phase=\"rest\"], body[data-phase=\"set_rest\"], body[data-phase=\"cooldown\"] { background: var(--rest); }"))
        #expect(DisplayPalette.colour(of: .cooldown) == DisplayPalette.rest)
        #expect(css.contains("body[data-phase=\"prepare\"], body[data-phase=\"scheduled\"] { background: var(--prepare);"))
        #expect(DisplayPalette.colour(of: .scheduled) == DisplayPalette.prepare)
    }
}

public import PacerCore

/// What an AWTRIX 3 custom app shows for a timer, as the JSON its MQTT API takes
/// (`<prefix>/custom/<app>`; keys of the firmware's documented API only: `text` as coloured
/// fragments `{"t","c"}`, `icon`, `progress`, `progressC`, `progressBC`, `noScroll`, `center`,
/// `blinkText`, `lifetime`; `<prefix>/notify` with `text`, `color`, `duration`, `sound`,
/// `rtttl`, `wakeup`; `<prefix>/switch` with `name`).
public enum AwtrixRenderer {
    /// The matrix's width in pixels, and the width left beside an 8×8 icon.
    static let matrixWidth = 32
    static let widthBesideIcon = 23

    /// What the app shows: the time left in the phase colour, the round in white when there
    /// is more than one and it fits, the segment's progress as the bottom bar in the phase
    /// colour; nil when the app should be removed (idle, finished, cancelled: nothing to watch).
    ///
    /// - A rest that waits for recovery (`until_hr`): `HR` in white in place of the round, beside
    ///   the time to its longest end, until the node says it recovered.
    /// - Paused: the frozen time and bar in the page's paused blue.
    /// - Scheduled: the time until the start in the prepare amber, no bar.
    /// - Expired: `0:00` blinking in the expired red until acknowledged.
    public static func app(_ snapshot: TimerSnapshot, now: Millis, display: AwtrixDisplay) -> JSONValue? {
        let time: String
        var colour = DisplayPalette.colour(of: snapshot.phase)
        var progress: Int?
        var blink = false
        switch snapshot.status {
        case .idle, .finished, .cancelled:
            return nil
        case .scheduled:
            time = Durations.display(seconds: SecondFlips.secondsUntilStart(snapshot, now: now))
        case .running, .paused:
            time = snapshot.display
            if snapshot.status == .paused { colour = DisplayPalette.paused }
            if snapshot.segmentDurationMs != nil { progress = Int((snapshot.progress * 100).rounded(.down)) }
        case .expired:
            time = Durations.display(seconds: 0)
            colour = DisplayPalette.expired
            blink = true
        }
        let icon = display.icons[snapshot.phase]
        var fragments: [JSONValue] = [["t": .string(time), "c": .string(colour.hex)]]
        let waitsForRecovery = snapshot.status == .running && snapshot.untilHR != nil && snapshot.recoveredAtMs == nil
        let room = icon == nil ? matrixWidth : widthBesideIcon
        let beside = waitsForRecovery ? " HR" : snapshot.rounds > 1 && snapshot.status != .scheduled ? " \(snapshot.round)/\(snapshot.rounds)" : ""
        if !beside.isEmpty, textWidth(time + beside) <= room {
            fragments.append(["t": .string(beside), "c": .string(RGB.white.hex)])
        }
        var app: [String: JSONValue] = [
            "text": .array(fragments),
            "noScroll": true,
            "center": true,
            "lifetime": .int(display.lifetimeSeconds),
        ]
        if let icon { app["icon"] = .string(icon) }
        if let progress {
            app["progress"] = .int(min(100, max(0, progress)))
            app["progressC"] = colour.json
            app["progressBC"] = colour.scaled(0.15).json
        }
        if blink { app["blinkText"] = 500 }
        return .object(app)
    }

    /// The "time's up" notification: the page's words in the expired red, for 5 s, with the
    /// configured melody; nil when notifications are off.
    public static func timesUp(display: AwtrixDisplay) -> JSONValue? {
        guard display.notify else { return nil }
        var note: [String: JSONValue] = [
            "text": "Time's up",
            "color": DisplayPalette.expired.json,
            "duration": 5,
            "wakeup": true,
        ]
        if let sound = display.sound { note["sound"] = .string(sound) }
        if let rtttl = display.rtttl { note["rtttl"] = .string(rtttl) }
        return .object(note)
    }

    /// The pixel width of `text` in the clock's 3×5 font, one column between glyphs: 4 per
    /// glyph (3 + the gap), 2 for `:`, `.`, `'` and a space. The firmware's font is proportional;
    /// these are its widths for the characters a timer shows.
    public static func textWidth(_ text: String) -> Int {
        var width = 0
        for character in text {
            width += [":", ".", " ", "'"].contains(character) ? 2 : 4
        }
        return max(0, width - 1)
    }
}

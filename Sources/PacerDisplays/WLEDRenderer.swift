public import PacerCore

/// What a WLED segment shows for a timer, and the JSON state (WLED's JSON API, sent on
/// `<topic>/api`) that sets it. Documented keys only: `on`, `bri`, `tt`, and in the segment
/// object `id`, `on`, `bri`, `fx`, `col`, `i`.
///
/// - Running: the phase colour, solid (effect 0); the last 3 s of a timed segment pulse in
///   brightness steps on the node's half seconds: full on each flip of the shown second, down
///   to a quarter 500 ms later with a 400 ms fade (`tt: 4`). Brightness steps rather than a
///   WLED effect, because an effect's rhythm is the strip's own and would not fall on the
///   node's seconds (and the beeps).
/// - Paused: the paused blue; scheduled: the prepare amber; overtime: its violet.
/// - Expired: WLED's Blink effect (`fx: 1`) in the expired red and black.
/// - Idle, finished, cancelled: the segment off, or a dim grey (`idle: dim`).
/// - With `progressLEDs`, the segment fills with the phase's progress (individual LED
///   control, `i`): lit in the phase colour, the rest at a tenth of it.
public enum WLEDRenderer {
    /// How the segment looks apart from the pulse and the fill.
    public enum Look: Sendable, Hashable {
        case off
        case solid(RGB)
        case blink(RGB)
        case dim(RGB)
    }

    /// The segment's brightness while a pulse is down, and in the dim idle look (of 255).
    public static let lowSegmentBrightness = 64
    /// The fade down of a pulse, in WLED's 100 ms units.
    public static let pulseFade = 4
    /// How long before a timed segment's end the pulse starts.
    public static let pulseMs: Millis = 3_000

    /// While a strip is lit, its nightlight is armed again this often: `NL=1&NT=0&NF=0` (WLED's
    /// HTTP API, which its `/api` topic also takes) sets it to go dark 1 minute later, instantly,
    /// and each re-arm starts that minute again. A node that dies stops re-arming: the strip goes
    /// dark by itself within a minute and a half (WLED has no `lifetime` of its own).
    public static let keepAliveMs: Millis = 30_000
    public static let keepAlive = "NL=1&NT=0&NF=0"

    public static func look(_ snapshot: TimerSnapshot, display: WLEDDisplay) -> Look {
        switch snapshot.status {
        case .idle, .finished, .cancelled:
            switch display.idle {
            case .off: return .off
            case .dim: return .dim(DisplayPalette.done)
            }
        case .scheduled: return .solid(DisplayPalette.prepare)
        case .running: return .solid(DisplayPalette.colour(of: snapshot.phase))
        case .paused: return .solid(DisplayPalette.paused)
        case .expired: return .blink(DisplayPalette.expired)
        }
    }

    /// Whether the pulse is up (true), down (false), or not on (nil) at `now`.
    public static func pulse(_ snapshot: TimerSnapshot, now: Millis) -> Bool? {
        guard snapshot.status == .running, !snapshot.countsUp, let ends = snapshot.endsAtMs else { return nil }
        let left = ends - now
        guard left > 0, left <= pulseMs else { return nil }
        // Half-second steps counted back from the end: 6 (3.0 s to 2.5 s left) is up, 5 down, …
        let step = (left + 499) / 500
        return step % 2 == 0
    }

    /// How many of the segment's LEDs the progress lights at `now`; nil without a fill.
    public static func fill(_ snapshot: TimerSnapshot, display: WLEDDisplay) -> Int? {
        guard let leds = display.progressLEDs, let duration = snapshot.segmentDurationMs, duration > 0 else { return nil }
        switch snapshot.status {
        case .running, .paused:
            // Whole milliseconds, not the Double progress: the same rule as `nextInstant`'s.
            let elapsed = min(duration, max(0, snapshot.segmentElapsedMs))
            return Int(elapsed * Millis(leds) / duration)
        case .idle, .scheduled, .expired, .finished, .cancelled: return nil
        }
    }

    /// The state that sets `look` (and the strip's brightness bound).
    static func lookState(_ look: Look, display: WLEDDisplay) -> JSONValue {
        var segment: [String: JSONValue] = ["id": .int(display.segment)]
        switch look {
        case .off:
            segment["on"] = false
            return ["seg": [.object(segment)]]
        case .solid(let colour), .blink(let colour), .dim(let colour):
            segment["on"] = true
            segment["col"] = [colour.json, RGB.black.json]
            if case .blink = look { segment["fx"] = 1 } else { segment["fx"] = 0 }
            if case .dim = look { segment["bri"] = .int(lowSegmentBrightness) } else { segment["bri"] = 255 }
        }
        return ["on": true, "bri": .int(display.brightness), "seg": [.object(segment)]]
    }

    /// The `i` ranges of a fill of `lit` LEDs in `colour`.
    static func fillRanges(lit: Int, colour: RGB, display: WLEDDisplay) -> JSONValue {
        let leds = display.progressLEDs ?? 0
        var ranges: [JSONValue] = []
        if lit > 0 { ranges += [.int(0), .int(lit), .string(colour.hex)] }
        if lit < leds { ranges += [.int(lit), .int(leds), .string(colour.scaled(0.1).hex)] }
        return .array(ranges)
    }

    /// The first instant after `now` at which the strip needs a message by itself: the pulse's
    /// start and each of its half seconds, the segment's end, and the next flip of the shown
    /// second at which the fill lights one more LED. Nil when nothing changes by itself.
    public static func nextInstant(_ snapshot: TimerSnapshot, now: Millis, display: WLEDDisplay) -> Millis? {
        guard snapshot.status == .running else { return nil }
        var next = Millis.max
        if !snapshot.countsUp, let ends = snapshot.endsAtMs, ends > now {
            let left = ends - now
            next = left > pulseMs ? ends - pulseMs : ends - ((left - 1) / 500) * 500
        }
        if let leds = display.progressLEDs, let duration = snapshot.segmentDurationMs, duration > 0,
           let start = snapshot.segmentStartedAtMs, let lit = fill(snapshot, display: display), lit < leds {
            // The instant the progress reaches lit + 1 LEDs, then the flip at or after it.
            let reaches = start + (Millis(lit + 1) * duration + Millis(leds) - 1) / Millis(leds)
            let flip: Millis? = if !snapshot.countsUp, let ends = snapshot.endsAtMs {
                reaches > ends ? nil : ends - ((ends - reaches) / 1000) * 1000
            } else {
                start + ((max(0, reaches - start) + 999) / 1000) * 1000
            }
            if let flip, flip > now { next = min(next, flip) }
        }
        return next == .max ? nil : next
    }
}

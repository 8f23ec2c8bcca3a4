public import PacerCore

/// The node's AWTRIX and WLED outputs: what to publish for a timer now, and the next instant
/// it needs publishing again. A value with no I/O and no clock, like the engine's machine:
/// the engine calls ``update(_:events:now:)`` when it publishes a timer's state (a transition,
/// a command) and at the timer's ``nextInstant(for:)``, a deadline of its one scheduler, and
/// publishes what it returns in order (QoS 0, not retained).
///
/// Messages per display, per shown timer (docs/displays.md, "Message rates"):
/// - AWTRIX: one app update per flip of the shown second while running or scheduled (60 a
///   minute), one per half `lifetime` while paused or expired (12 a minute at the default
///   10 s), one removal when it stops; plus a `notify` when time is up and a `switch` on start.
/// - WLED: one per look change (phase, pause, expiry), 6 in the last 3 s of a timed segment
///   (the pulse), and with a fill one per flip at which one more LED lights (at most 60 a
///   minute); nothing while nothing changes.
/// Besides those, a command that changes what is shown sends at once.
public struct DisplayOutputs: Sendable {
    public let displays: [DisplayConfiguration]

    private struct Key: Hashable {
        var display: Int
        var timer: String
    }

    /// What an AWTRIX app last got: its payload (nil: removed) and when.
    private struct AwtrixSent {
        var payload: [UInt8]?
        var atMs: Millis
    }

    /// What a WLED segment last got.
    private struct WLEDSent {
        var look: WLEDRenderer.Look
        var segmentBrightness: Int?
        var fill: Int?
        /// When its nightlight was last armed (`WLEDRenderer.keepAlive`), while lit.
        var keptAliveAtMs: Millis?
    }

    private var awtrixSent: [Key: AwtrixSent] = [:]
    private var wledSent: [Key: WLEDSent] = [:]
    private var nextInstants: [String: Millis] = [:]

    public init(_ displays: [DisplayConfiguration]) {
        self.displays = displays
    }

    /// Whether any display shows `timer` (the engine can skip the others).
    public func shows(_ timer: String) -> Bool {
        displays.contains { $0.timers.contains(timer) }
    }

    /// The messages that bring every display showing the snapshot's timer up to date at `now`,
    /// the snapshot taken at `now`. `events` are the ones the engine emitted for this timer
    /// since the last call (for the "time's up" notification and the switch on start); an
    /// event that was late (the node was down when it fell due) notifies nobody. Only what
    /// changed is sent, except an AWTRIX app's refresh before its `lifetime` runs out.
    public mutating func update(_ snapshot: TimerSnapshot, events: [TimerEvent] = [], now: Millis) -> [DisplayMessage] {
        var out: [DisplayMessage] = []
        var next = Millis.max
        for (index, display) in displays.enumerated() where display.timers.contains(snapshot.id) {
            let key = Key(display: index, timer: snapshot.id)
            switch display {
            case .awtrix(let awtrix):
                out += updateAwtrix(awtrix, key: key, snapshot: snapshot, events: events, now: now)
                if let instant = awtrixNext(awtrix, key: key, snapshot: snapshot, now: now) { next = min(next, instant) }
            case .wled(let wled):
                out += updateWLED(wled, key: key, snapshot: snapshot, now: now)
                if let instant = WLEDRenderer.nextInstant(snapshot, now: now, display: wled) { next = min(next, instant) }
                if let kept = wledSent[key]?.keptAliveAtMs { next = min(next, kept + WLEDRenderer.keepAliveMs) }
            }
        }
        nextInstants[snapshot.id] = next == .max ? nil : next
        return out
    }

    /// When the timer's displays next need an ``update(_:events:now:)`` by themselves (a flip of
    /// the shown second, a pulse step, a refresh before `lifetime`); nil: only on a change.
    public func nextInstant(for timer: String) -> Millis? {
        nextInstants[timer]
    }

    /// The timer was deleted: remove its apps and switch its lights off.
    public mutating func removed(_ timer: String) -> [DisplayMessage] {
        nextInstants[timer] = nil
        var out: [DisplayMessage] = []
        for (index, display) in displays.enumerated() where display.timers.contains(timer) {
            let key = Key(display: index, timer: timer)
            awtrixSent[key] = nil
            wledSent[key] = nil
            out.append(blank(display, timer: timer))
        }
        return out
    }

    /// The broker connection is back: forget what was sent, so the next update of each timer
    /// sends its displays everything again (an app may have lapsed meanwhile, a strip rebooted).
    public mutating func reconnected() {
        awtrixSent = [:]
        wledSent = [:]
    }

    /// The node stops: remove every app and switch every light off (before the disconnect;
    /// a node that dies instead is cleared by the apps' `lifetime`).
    public mutating func shutdown() -> [DisplayMessage] {
        awtrixSent = [:]
        wledSent = [:]
        nextInstants = [:]
        return displays.flatMap { display in display.timers.map { blank(display, timer: $0) } }
    }

    // MARK: AWTRIX

    private mutating func updateAwtrix(
        _ awtrix: AwtrixDisplay, key: Key, snapshot: TimerSnapshot, events: [TimerEvent], now: Millis
    ) -> [DisplayMessage] {
        var out: [DisplayMessage] = []
        let topic = awtrix.appTopic(for: snapshot.id)
        let payload = AwtrixRenderer.app(snapshot, now: now, display: awtrix)?.jsonBytes
        let last = awtrixSent[key]
        let refreshDue = last.map { payload != nil && now >= $0.atMs + Self.refreshMs(awtrix) } ?? true
        if last == nil || last?.payload != payload || refreshDue {
            out.append(DisplayMessage(topic: topic, payload: payload ?? []))
            awtrixSent[key] = AwtrixSent(payload: payload, atMs: now)
        }
        for event in events where event.timer == snapshot.id && event.lateMs == nil {
            switch event.type {
            case .started where awtrix.switchTo:
                out.append(DisplayMessage(topic: "\(awtrix.prefix)/switch",
                                          payload: JSONValue.object(["name": .string(awtrix.appName(for: snapshot.id))]).jsonBytes))
            case .expired:
                out += timesUp(awtrix)
            case .finished where event.reason == .completed:
                out += timesUp(awtrix)
            default:
                break
            }
        }
        return out
    }

    private func timesUp(_ awtrix: AwtrixDisplay) -> [DisplayMessage] {
        guard let note = AwtrixRenderer.timesUp(display: awtrix) else { return [] }
        return [DisplayMessage(topic: "\(awtrix.prefix)/notify", payload: note.jsonBytes)]
    }

    private func awtrixNext(_ awtrix: AwtrixDisplay, key: Key, snapshot: TimerSnapshot, now: Millis) -> Millis? {
        switch snapshot.status {
        case .running, .scheduled:
            return SecondFlips.next(snapshot, after: now)
        case .paused, .expired:
            guard let sent = awtrixSent[key] else { return nil }
            return max(now + 1, sent.atMs + Self.refreshMs(awtrix))
        case .idle, .finished, .cancelled:
            return nil
        }
    }

    /// How often a shown app that does not change is sent again: half its lifetime, so one
    /// lost message never lets it lapse.
    static func refreshMs(_ awtrix: AwtrixDisplay) -> Millis {
        max(1_000, Millis(awtrix.lifetimeSeconds) * 500)
    }

    // MARK: WLED

    private mutating func updateWLED(_ wled: WLEDDisplay, key: Key, snapshot: TimerSnapshot, now: Millis) -> [DisplayMessage] {
        var out: [DisplayMessage] = []
        let look = WLEDRenderer.look(snapshot, display: wled)
        var sent = wledSent[key]
        if sent?.look != look {
            out.append(DisplayMessage(topic: wled.apiTopic, payload: WLEDRenderer.lookState(look, display: wled).jsonBytes))
            let brightness: Int? = switch look {
            case .off: nil
            case .dim: WLEDRenderer.lowSegmentBrightness
            case .solid, .blink: 255
            }
            sent = WLEDSent(look: look, segmentBrightness: brightness, fill: nil, keptAliveAtMs: sent?.keptAliveAtMs)
        }
        guard var current = sent else { return out }
        var segment: [String: JSONValue] = ["id": .int(wled.segment)]
        var state: [String: JSONValue] = [:]
        if case .solid(let colour) = look {
            let up = WLEDRenderer.pulse(snapshot, now: now) ?? true
            let brightness = up ? 255 : WLEDRenderer.lowSegmentBrightness
            if brightness != current.segmentBrightness {
                segment["bri"] = .int(brightness)
                state["tt"] = .int(up ? 0 : WLEDRenderer.pulseFade)
                current.segmentBrightness = brightness
            }
            let lit = WLEDRenderer.fill(snapshot, display: wled)
            // Sent with every change of the segment: WLED drops a fill when a segment property changes.
            if let lit, lit != current.fill || segment.count > 1 {
                segment["i"] = WLEDRenderer.fillRanges(lit: lit, colour: colour, display: wled)
            }
            current.fill = lit
        }
        if segment.count > 1 {
            state["seg"] = [.object(segment)]
            out.append(DisplayMessage(topic: wled.apiTopic, payload: JSONValue.object(state).jsonBytes))
        }
        // Lit: the nightlight re-armed every `keepAliveMs`, so the strip goes dark by itself when
        // the node dies. Off: nothing to keep.
        if case .off = look {
            current.keptAliveAtMs = nil
        } else if current.keptAliveAtMs.map({ now - $0 >= WLEDRenderer.keepAliveMs }) ?? true {
            out.append(DisplayMessage(topic: wled.apiTopic, payload: Array(WLEDRenderer.keepAlive.utf8)))
            current.keptAliveAtMs = now
        }
        wledSent[key] = current
        return out
    }

    // MARK: Blank

    private func blank(_ display: DisplayConfiguration, timer: String) -> DisplayMessage {
        switch display {
        case .awtrix(let awtrix):
            DisplayMessage(topic: awtrix.appTopic(for: timer), payload: [])
        case .wled(let wled):
            DisplayMessage(topic: wled.apiTopic, payload: WLEDRenderer.lookState(.off, display: wled).jsonBytes)
        }
    }
}

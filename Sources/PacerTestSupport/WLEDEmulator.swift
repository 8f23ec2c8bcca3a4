public import PacerCore

/// A WLED strip as its JSON API documents it, for tests (no device needed): JSON state on
/// `<topic>/api` (`on`, `bri`, `tt`, `transition`, and per segment `id`, `start`, `stop`, `on`,
/// `bri`, `col`, `fx`, `i`), plus the plain `<topic>` (`ON`, `OFF`, `T` or a brightness). A
/// segment given `i` is frozen with those LEDs; any other change of the segment unfreezes it.
/// It renders the LEDs' colours (effects show their primary colour; `effect` tells which runs).
public struct WLEDEmulator: Sendable {
    public struct Segment: Sendable, Equatable {
        public var id: Int
        public var start: Int
        public var stop: Int
        public var on = true
        public var brightness = 255
        /// Primary, secondary, tertiary.
        public var colours: [Pixel] = [Pixel(255, 160, 0), .black, .black]
        public var effect = 0
        /// The LEDs set with `i` (frozen), relative to the segment; nil: running its effect.
        public var frozen: [Pixel]?
    }

    public let topic: String
    public let ledCount: Int
    public private(set) var on = false
    public private(set) var brightness = 128
    public private(set) var segments: [Int: Segment]
    /// The `tt` of the last message (WLED's 100 ms units), nil when it had none.
    public private(set) var lastTransition: Int?
    /// Messages taken, and those that were not valid JSON objects.
    public private(set) var received = 0
    public private(set) var rejected = 0

    public init(topic: String, ledCount: Int) {
        self.topic = topic
        self.ledCount = ledCount
        segments = [0: Segment(id: 0, start: 0, stop: ledCount)]
    }

    /// The topics the firmware subscribes to.
    public var subscriptions: [String] { [topic, "\(topic)/col", "\(topic)/api"] }

    public mutating func receive(topic: String, payload: [UInt8], now: Millis) {
        if topic == self.topic {
            received += 1
            let text = String(decoding: payload, as: UTF8.self)
            switch text {
            case "ON": on = true
            case "OFF": on = false
            case "T": on.toggle()
            default:
                if let value = Int(text), (0...255).contains(value) {
                    on = value > 0
                    if value > 0 { brightness = value }
                } else {
                    rejected += 1
                }
            }
        } else if topic == "\(self.topic)/api" {
            received += 1
            if payload.first != UInt8(ascii: "{") {
                // The HTTP API's form (`NL=1&NT=0&NF=0`): the nightlight's keys.
                applyHTTP(String(decoding: payload, as: UTF8.self), now: now)
                return
            }
            guard let json = try? JSONValue.parse(payload), case .object = json else { rejected += 1; return }
            apply(json)
        }
    }

    /// The nightlight as armed (`NL=` minutes, `NT=` its target brightness, `NF=0`: instant),
    /// and when it was armed; nil: off.
    public private(set) var nightlight: (minutes: Int, target: Int, armedAtMs: Millis)?

    /// An HTTP API command: `NL` (0: off; N: on for N minutes from now), `NT`, `NF`.
    mutating func applyHTTP(_ text: String, now: Millis) {
        var values: [String: Int] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let value = Int(parts[1]) else { rejected += 1; return }
            values[String(parts[0])] = value
        }
        if let minutes = values["NL"] {
            nightlight = minutes == 0 ? nil : (minutes, values["NT"] ?? nightlight?.target ?? 0, now)
        }
    }

    /// Lets time pass: an instant nightlight that ran its minutes sets its target brightness
    /// (0: the strip is off).
    public mutating func advance(to now: Millis) {
        guard let light = nightlight, now >= light.armedAtMs + Millis(light.minutes) * 60_000 else { return }
        nightlight = nil
        if light.target == 0 { on = false } else { brightness = light.target }
    }

    /// Applies a JSON state object.
    public mutating func apply(_ state: JSONValue) {
        if let value = state["on"]?.bool { on = value }
        if state["on"]?.string == "t" { on.toggle() }
        if let value = state["bri"]?.int, (0...255).contains(value) { brightness = value }
        lastTransition = state["tt"]?.int
        switch state["seg"] {
        case .object?:
            applySegment(state["seg"]!, defaultID: 0)
        case .array(let list)?:
            for (index, item) in list.enumerated() { applySegment(item, defaultID: index) }
        default:
            break
        }
    }

    private mutating func applySegment(_ json: JSONValue, defaultID: Int) {
        guard let members = json.object else { return }
        let id = json["id"]?.int ?? defaultID
        var segment = segments[id] ?? Segment(id: id, start: 0, stop: 0)
        if let value = json["start"]?.int { segment.start = value }
        if let value = json["stop"]?.int { segment.stop = min(ledCount, value) }
        if let value = json["on"]?.bool { segment.on = value }
        if let value = json["bri"]?.int, (0...255).contains(value) { segment.brightness = value }
        if let value = json["fx"]?.int { segment.effect = value }
        if let list = json["col"]?.array {
            for (slot, item) in list.prefix(3).enumerated() {
                if let colour = Pixel(json: item) { segment.colours[slot] = colour }
            }
        }
        // A change of any property other than the LEDs themselves unfreezes the segment.
        if members.keys.contains(where: { $0 != "id" && $0 != "i" }) { segment.frozen = nil }
        if let list = json["i"]?.array { applyLEDs(list, to: &segment) }
        segments[id] = segment
    }

    /// `i`: colours from LED 0 on; an index then a colour; or a start, a stop, then a colour.
    private func applyLEDs(_ list: [JSONValue], to segment: inout Segment) {
        let length = max(0, segment.stop - segment.start)
        var leds = segment.frozen ?? [Pixel](repeating: segment.colours[0], count: length)
        var next = 0
        var index = 0
        while index < list.count {
            if let first = list[index].int {
                if index + 1 < list.count, let second = list[index + 1].int, index + 2 < list.count,
                   let colour = Pixel(json: list[index + 2]) {
                    for led in max(0, first)..<max(max(0, first), min(length, second)) { leds[led] = colour }
                    next = second
                    index += 3
                } else if index + 1 < list.count, let colour = Pixel(json: list[index + 1]) {
                    if (0..<length).contains(first) { leds[first] = colour }
                    next = first + 1
                    index += 2
                } else {
                    index += 1
                }
            } else if let colour = Pixel(json: list[index]) {
                if (0..<length).contains(next) { leds[next] = colour }
                next += 1
                index += 1
            } else {
                index += 1
            }
        }
        segment.frozen = leds
    }

    /// Every LED's colour as shown: the segment's LEDs (or its primary colour), scaled by the
    /// segment's and the strip's brightness; dark when off.
    public var pixels: [Pixel] {
        var out = [Pixel](repeating: .black, count: ledCount)
        guard on else { return out }
        for segment in segments.values.sorted(by: { $0.id < $1.id }) where segment.on {
            for led in max(0, segment.start)..<max(max(0, segment.start), min(ledCount, segment.stop)) {
                let base = segment.frozen.map { $0[led - segment.start] } ?? segment.colours[0]
                out[led] = base.scaled(segment.brightness * brightness / 255)
            }
        }
        return out
    }
}

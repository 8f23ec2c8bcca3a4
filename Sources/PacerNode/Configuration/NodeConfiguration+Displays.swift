import PacerCore
import PacerDisplays
import PacerProtocol

extension NodeConfiguration {
    /// Reads `displays:` (docs/displays.md): a list of `type: awtrix` and `type: wled` entries.
    mutating func readDisplays(_ node: ConfigTree?, _ r: inout ConfigReader) {
        for (index, item) in r.sequence(node, key: "displays").enumerated() {
            let key = "displays[\(index)]"
            guard case .mapping(let pairs) = item.value else {
                r.fail(key, item, "expected a mapping with a type (awtrix or wled), like {type: awtrix, prefix: awtrix_clock, timers: [main]}")
                continue
            }
            let typeNode = pairs.first { $0.key == "type" }?.value
            guard let typeNode, let type = r.string(typeNode, key: "\(key).type") else {
                if typeNode == nil { r.fail("\(key).type", item, "missing: give awtrix or wled") }
                continue
            }
            switch type {
            case "awtrix":
                if let display = Self.awtrix(item, key: key, &r) { displays.append(.awtrix(display)) }
            case "wled":
                if let display = Self.wled(item, key: key, &r) { displays.append(.wled(display)) }
            default:
                r.fail("\(key).type", typeNode, "expected awtrix or wled, got '\(type)'")
            }
        }
    }

    /// A display saved by command (`save_display`), checked by the same rules as one in the
    /// file; the failure names the member and what to write (`display 'wall': prefix: ...`).
    static func display(fromCommand settings: JSONValue, id: String) -> Result<DisplayConfiguration, ReplyError> {
        var configuration = NodeConfiguration(nodeID: "save-display", dataDirectory: "/")
        var reader = ConfigReader(source: "save_display")
        configuration.readDisplays(ConfigTree(value: .sequence([ConfigTree(json: settings)]), line: nil), &reader)
        if let problem = reader.problems.first {
            let key = problem.key.replacingOccurrences(of: "displays[0].", with: "").replacingOccurrences(of: "displays[0]", with: "")
            return .failure(ReplyError(.invalidArgument, "display '\(id)': " + (key.isEmpty ? "" : key + ": ") + problem.reason + "; nothing changed"))
        }
        guard let display = configuration.displays.first else {
            return .failure(ReplyError(.invalidArgument, "display '\(id)': give its type (awtrix or wled) and settings; nothing changed"))
        }
        return .success(display)
    }

    /// One `type: awtrix` entry.
    private static func awtrix(_ node: ConfigTree, key: String, _ r: inout ConfigReader) -> AwtrixDisplay? {
        let a = r.mapping(node, key: key, known: [
            "type", "prefix", "timer", "timers", "app", "switch_to", "lifetime", "notify", "sound", "rtttl", "icons",
        ])
        let prefix = topic(a["prefix"], key: "\(key).prefix", parent: node, example: "awtrix_clock (the device's MQTT prefix)", &r)
        var timers: [String] = []
        if a["timer"] != nil, a["timers"] != nil {
            r.fail("\(key).timers", a["timers"], "give either timer or timers, not both")
        }
        if let one = a["timer"] {
            if let id = timerID(one, key: "\(key).timer", &r) { timers = [id] }
        } else if let list = a["timers"] {
            for (i, item) in r.sequence(list, key: "\(key).timers").enumerated() {
                if let id = timerID(item, key: "\(key).timers[\(i)]", &r) { timers.append(id) }
            }
            if case .sequence(let items) = list.value, items.isEmpty {
                r.fail("\(key).timers", list, "list at least one timer id, like [main]")
            }
        } else {
            r.fail("\(key).timers", node, "missing: give the timers this clock shows, like timers: [main]")
        }
        var display = AwtrixDisplay(prefix: prefix ?? "", timers: timers)
        if let app = r.string(a["app"], key: "\(key).app") {
            if app.isEmpty || app.contains(where: { $0 == " " || $0 == "/" || $0 == "+" || $0 == "#" }) {
                r.fail("\(key).app", a["app"], "an app name is one topic level without spaces, '/', '+' or '#', got '\(app)'")
            } else {
                display.app = app
            }
        }
        // The device removes every app whose name begins with the one being removed.
        let names = timers.map(display.appName(for:))
        for (i, name) in names.enumerated() {
            if let other = names.indices.first(where: { $0 != i && names[$0].hasPrefix(name) }) {
                r.fail("\(key).timers", a["timers"],
                       "the apps '\(name)' and '\(names[other])' clash: AWTRIX removes every app whose name begins with the one removed; rename a timer or show it on its own entry")
                break
            }
        }
        if let v = r.bool(a["switch_to"], key: "\(key).switch_to") { display.switchTo = v }
        if let v = r.duration(a["lifetime"], key: "\(key).lifetime", range: 2_000...3_600_000) {
            display.lifetimeSeconds = Int((v + 999) / 1000)
        }
        if let v = r.bool(a["notify"], key: "\(key).notify") { display.notify = v }
        if let v = r.string(a["sound"], key: "\(key).sound") { display.sound = v }
        if let v = r.string(a["rtttl"], key: "\(key).rtttl") {
            if a["sound"] != nil { r.fail("\(key).rtttl", a["rtttl"], "give either sound (a melody on the device) or rtttl, not both") }
            display.rtttl = v
        }
        let phases = Phase.allCases.map(\.rawValue)
        for (name, value) in r.mapping(a["icons"], key: "\(key).icons", known: Set(phases)) {
            guard let phase = Phase(rawValue: name), let icon = r.string(value, key: "\(key).icons.\(name)") else { continue }
            display.icons[phase] = icon
        }
        return prefix == nil || timers.isEmpty ? nil : display
    }

    /// One `type: wled` entry.
    private static func wled(_ node: ConfigTree, key: String, _ r: inout ConfigReader) -> WLEDDisplay? {
        let w = r.mapping(node, key: key, known: ["type", "topic", "timer", "timers", "segment", "brightness", "leds", "idle"])
        let topic = topic(w["topic"], key: "\(key).topic", parent: node, example: "wled/rig (the device topic of WLED's MQTT settings)", &r)
        var timer: String?
        if w["timer"] != nil, w["timers"] != nil {
            r.fail("\(key).timers", w["timers"], "give either timer or timers, not both")
        }
        if let item = w["timer"] {
            timer = timerID(item, key: "\(key).timer", &r)
        } else if let list = w["timers"] {
            // A light shows one timer; `timers` (a list of one) is the form a display saved by command takes.
            let items = r.sequence(list, key: "\(key).timers")
            if items.count == 1 {
                timer = timerID(items[0], key: "\(key).timers[0]", &r)
            } else {
                r.fail("\(key).timers", list, "a light shows one timer: give one, like timers: [main] (or timer: main)")
            }
        } else {
            r.fail("\(key).timer", node, "missing: give the timer this light shows, like timer: main")
        }
        var display = WLEDDisplay(topic: topic ?? "", timer: timer ?? "")
        if let v = r.int(w["segment"], key: "\(key).segment", range: 0...31) { display.segment = v }
        if let v = r.int(w["brightness"], key: "\(key).brightness", range: 1...255) { display.brightness = v }
        if let v = r.int(w["leds"], key: "\(key).leds", range: 1...1500) { display.progressLEDs = v }
        if let v = r.string(w["idle"], key: "\(key).idle") {
            if let idle = WLEDDisplay.Idle(rawValue: v) { display.idle = idle } else {
                r.fail("\(key).idle", w["idle"], "expected off or dim, got '\(v)'")
            }
        }
        return topic == nil || timer == nil ? nil : display
    }

    /// A device's topic or prefix: one or more levels, no wildcards, not `$`.
    private static func topic(_ node: ConfigTree?, key: String, parent: ConfigTree, example: String, _ r: inout ConfigReader) -> String? {
        guard let node else {
            r.fail(key, parent, "missing: give the device's topic, like \(example)")
            return nil
        }
        guard let text = r.string(node, key: key) else { return nil }
        if text.isEmpty || text.contains("+") || text.contains("#") || text.hasPrefix("/") || text.hasSuffix("/")
            || text.contains("//") || text.hasPrefix("$") {
            r.fail(key, node, "expected a topic without '+', '#', a leading '$' or empty levels, like \(example), got '\(text)'")
            return nil
        }
        return text
    }

    private static func timerID(_ node: ConfigTree, key: String, _ r: inout ConfigReader) -> String? {
        guard let id = r.string(node, key: key) else { return nil }
        do { try TimerMachine.validateID(id) } catch {
            r.fail(key, node, error.message)
            return nil
        }
        return id
    }
}

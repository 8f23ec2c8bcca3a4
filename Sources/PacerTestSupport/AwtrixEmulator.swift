public import PacerCore

/// A 24-bit pixel of an emulated device.
public struct Pixel: Sendable, Hashable, CustomStringConvertible {
    public var red: UInt8
    public var green: UInt8
    public var blue: UInt8

    public init(_ red: UInt8, _ green: UInt8, _ blue: UInt8) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    public static let black = Pixel(0, 0, 0)
    public var isLit: Bool { self != .black }
    public var description: String {
        "#" + [red, green, blue].map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }

    /// A colour as the AWTRIX and WLED APIs write it: `"#RRGGBB"`, `"RRGGBB"` or `[r, g, b]`.
    public init?(json: JSONValue) {
        switch json {
        case .string(let text):
            let hex = text.hasPrefix("#") ? String(text.dropFirst()) : text
            guard hex.count == 6, let value = UInt32(hex, radix: 16) else { return nil }
            self.init(UInt8(value >> 16), UInt8((value >> 8) & 0xff), UInt8(value & 0xff))
        case .array(let parts):
            let bytes = parts.prefix(3).compactMap { $0.int }.filter { (0...255).contains($0) }
            guard bytes.count == 3 else { return nil }
            self.init(UInt8(bytes[0]), UInt8(bytes[1]), UInt8(bytes[2]))
        case .null, .bool, .number, .object:
            return nil
        }
    }

    /// The pixel at `level` of 255.
    public func scaled(_ level: Int) -> Pixel {
        func scale(_ c: UInt8) -> UInt8 { UInt8((Int(c) * max(0, min(255, level)) + 127) / 255) }
        return Pixel(scale(red), scale(green), scale(blue))
    }
}

/// The 32×8 picture an emulated AWTRIX shows.
public struct Matrix: Sendable, Equatable {
    public static let width = 32
    public static let height = 8
    public private(set) var pixels = [Pixel](repeating: .black, count: width * height)

    public init() {}

    public subscript(x: Int, y: Int) -> Pixel {
        get { pixels[y * Self.width + x] }
        set {
            guard (0..<Self.width).contains(x), (0..<Self.height).contains(y) else { return }
            pixels[y * Self.width + x] = newValue
        }
    }

    /// The picture as text, one line per row: `#` lit, `.` dark.
    public var art: String {
        (0..<Self.height).map { y in String((0..<Self.width).map { self[$0, y].isLit ? "#" : "." }) }.joined(separator: "\n")
    }

    /// The text the font's glyphs spell in the text rows (1-5), from column `from` on.
    public func text(from: Int = 0) -> String {
        MatrixFont.read(from: from, to: Self.width, top: 1) { self[$0, $1].isLit }
    }

    /// The colour of the first lit pixel of the text rows (nil: no text).
    public var textColour: Pixel? {
        for x in 0..<Self.width { for y in 1...5 where self[x, y].isLit { return self[x, y] } }
        return nil
    }
}

/// An AWTRIX 3 clock as its MQTT API documents it, for tests (no device needed): custom apps on
/// `<prefix>/custom/<app>` (JSON creates or updates, an empty payload removes every app whose
/// name begins with it), `<prefix>/notify`, `<prefix>/switch`; `lifetime` drops an app not
/// updated for that many seconds. It draws the 32×8 matrix the way the firmware lays it out:
/// an 8×8 icon at the left (a placeholder: the emulator has no icon files), the text in a 3×5
/// font centred in the rest, the progress bar on the bottom row. The device's own apps (time,
/// date, …) are not emulated: with no custom app the matrix is dark. Time is a parameter.
public struct AwtrixEmulator: Sendable {
    /// One custom app as the device keeps it.
    public struct App: Sendable, Equatable {
        public var name: String
        /// The text as fragments: text and colour.
        public var text: [Fragment]
        public var icon: String?
        public var progress: Int?
        public var progressColour: Pixel
        public var progressBackground: Pixel
        public var center: Bool
        public var blinkMs: Int?
        public var lifetimeSeconds: Int
        /// When it was last created or updated.
        public var updatedAtMs: Millis

        public var plainText: String { text.map(\.text).joined() }
    }

    public struct Fragment: Sendable, Equatable {
        public var text: String
        public var colour: Pixel
    }

    /// A notification on screen.
    public struct Notification: Sendable, Equatable {
        public var app: App
        public var untilMs: Millis
        public var sound: String?
        public var rtttl: String?
    }

    public let prefix: String
    /// The custom apps, in the loop's order.
    public private(set) var apps: [App] = []
    /// The app switched to (`switch`), while it exists.
    public private(set) var switchedTo: String?
    public private(set) var notification: Notification?
    /// Every notification received, in order.
    public private(set) var notifications: [Notification] = []
    /// Payloads that were not JSON objects (the device ignores them).
    public private(set) var rejected = 0

    /// The firmware's default text colour.
    static let defaultColour = Pixel(255, 255, 255)

    public init(prefix: String) {
        self.prefix = prefix
    }

    /// The topics the firmware subscribes to.
    public var subscriptions: [String] { ["\(prefix)/#"] }

    /// The custom app named `name`.
    public func app(_ name: String) -> App? { apps.first { $0.name == name } }

    /// Takes one MQTT message at `now`.
    public mutating func receive(topic: String, payload: [UInt8], now: Millis) {
        advance(to: now)
        guard topic.hasPrefix(prefix + "/") else { return }
        let path = String(topic.dropFirst(prefix.count + 1))
        if path.hasPrefix("custom/") {
            let name = String(path.dropFirst("custom/".count))
            guard !name.isEmpty else { return }
            if payload.isEmpty {
                apps.removeAll { $0.name.hasPrefix(name) }
                return
            }
            guard let json = try? JSONValue.parse(payload), case .object = json else { rejected += 1; return }
            var app = Self.app(named: name, from: json, now: now)
            if let index = apps.firstIndex(where: { $0.name == name }) {
                app.updatedAtMs = now
                apps[index] = app
            } else {
                apps.append(app)
            }
        } else if path == "notify" {
            guard let json = try? JSONValue.parse(payload), case .object = json else { rejected += 1; return }
            let seconds = json["duration"]?.int ?? 5
            let note = Notification(app: Self.app(named: "notify", from: json, now: now), untilMs: now + Millis(seconds) * 1000,
                                    sound: json["sound"]?.string, rtttl: json["rtttl"]?.string)
            notification = note
            notifications.append(note)
        } else if path == "switch" {
            guard let json = try? JSONValue.parse(payload), let name = json["name"]?.string else { rejected += 1; return }
            if app(name) != nil { switchedTo = name }
        }
    }

    /// Lets time pass: apps past their `lifetime` go, a notification past its duration ends.
    public mutating func advance(to now: Millis) {
        apps.removeAll { $0.lifetimeSeconds > 0 && now - $0.updatedAtMs > Millis($0.lifetimeSeconds) * 1000 }
        if let note = notification, now >= note.untilMs { notification = nil }
        if let name = switchedTo, app(name) == nil { switchedTo = nil }
    }

    /// The app on screen: a notification, else the one switched to, else the loop's first.
    public var shown: App? {
        notification?.app ?? switchedTo.flatMap { app($0) } ?? apps.first
    }

    /// The matrix at `now` (after ``advance(to:)``).
    public func matrix(at now: Millis) -> Matrix {
        var matrix = Matrix()
        guard let app = shown else { return matrix }
        var left = 0
        if app.icon != nil {
            // A placeholder for the icon: a grey frame.
            for i in 0..<8 {
                for (x, y) in [(i, 0), (i, 7), (0, i), (7, i)] { matrix[x, y] = Pixel(96, 96, 96) }
            }
            left = 9
        }
        let room = Matrix.width - left
        let textWidth = MatrixFont.width(app.plainText)
        var x = left + (app.center && textWidth <= room ? (room - textWidth) / 2 : 0)
        let blinkedOff = app.blinkMs.map { $0 > 0 && (now / Millis($0)) % 2 == 1 } ?? false
        if !blinkedOff {
            for fragment in app.text {
                for character in fragment.text {
                    let glyph = MatrixFont.glyph(character)
                    for (row, line) in glyph.enumerated() {
                        for (column, cell) in line.enumerated() where cell == "#" && x + column < Matrix.width {
                            matrix[x + column, 1 + row] = fragment.colour
                        }
                    }
                    x += glyph[0].count + 1
                }
            }
        }
        if let progress = app.progress {
            let filled = room * max(0, min(100, progress)) / 100
            for column in 0..<room { matrix[left + column, 7] = column < filled ? app.progressColour : app.progressBackground }
        }
        return matrix
    }

    /// An app from the API's JSON keys (the ones a timer uses; others are ignored).
    static func app(named name: String, from json: JSONValue, now: Millis) -> App {
        let colour = json["color"].flatMap(Pixel.init(json:)) ?? defaultColour
        var fragments: [Fragment] = []
        switch json["text"] {
        case .string(let text)?:
            fragments = [Fragment(text: text, colour: colour)]
        case .array(let parts)?:
            fragments = parts.compactMap { part in
                guard let text = part["t"]?.string else { return nil }
                return Fragment(text: text, colour: part["c"].flatMap(Pixel.init(json:)) ?? colour)
            }
        default:
            break
        }
        let progress = json["progress"]?.int.flatMap { $0 < 0 ? nil : $0 }
        return App(
            name: name, text: fragments, icon: json["icon"]?.string, progress: progress,
            progressColour: json["progressC"].flatMap(Pixel.init(json:)) ?? Pixel(0, 255, 0),
            progressBackground: json["progressBC"].flatMap(Pixel.init(json:)) ?? Pixel(0x80, 0x80, 0x80),
            center: json["center"]?.bool ?? true, blinkMs: json["blinkText"]?.int,
            lifetimeSeconds: json["lifetime"]?.int ?? 0, updatedAtMs: now)
    }
}

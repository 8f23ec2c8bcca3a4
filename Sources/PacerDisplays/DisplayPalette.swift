public import PacerCore

/// A 24-bit colour as LEDs take it.
public struct RGB: Sendable, Hashable, CustomStringConvertible {
    public var red: UInt8
    public var green: UInt8
    public var blue: UInt8

    public init(_ red: UInt8, _ green: UInt8, _ blue: UInt8) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    /// `0xRRGGBB`.
    public init(hex: UInt32) {
        self.init(UInt8((hex >> 16) & 0xff), UInt8((hex >> 8) & 0xff), UInt8(hex & 0xff))
    }

    public static let black = RGB(0, 0, 0)
    public static let white = RGB(255, 255, 255)

    /// Upper-case hex without `#` (`0B8A3E`): AWTRIX's text fragments and WLED's `col` take it.
    public var hex: String {
        let digits = Array("0123456789ABCDEF")
        var text = ""
        for byte in [red, green, blue] {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return text
    }

    /// `#0B8A3E`.
    public var description: String { "#" + hex }

    /// The colour as a JSON `[r, g, b]` array.
    public var json: JSONValue { [.int(red), .int(green), .int(blue)] }

    /// The colour dimmed to `fraction` (0…1) of its brightness.
    public func scaled(_ fraction: Double) -> RGB {
        let f = min(1, max(0, fraction))
        func scale(_ c: UInt8) -> UInt8 { UInt8((Double(c) * f).rounded()) }
        return RGB(scale(red), scale(green), scale(blue))
    }
}

/// The phase colours of the web clock (`examples/dashboard/style.css`: `--work`, `--rest`,
/// `--prepare`, `--paused`, `--idle`, `--done`, `--expired` and the overtime colour), the one
/// table the LED displays take them from. `PaletteTests` checks it against the page's CSS, so
/// a colour changed on the page and not here fails a test.
public enum DisplayPalette {
    public static let work = RGB(hex: 0x0B8A3E)
    public static let rest = RGB(hex: 0xC4161C)
    public static let prepare = RGB(hex: 0xF5A300)
    public static let paused = RGB(hex: 0x1F4FD1)
    public static let idle = RGB(hex: 0x1B1F24)
    public static let done = RGB(hex: 0x2A2F36)
    public static let expired = RGB(hex: 0xC4161C)
    public static let overtime = RGB(hex: 0x6D28D9)

    /// The colour of a phase, as the page paints it (`body[data-phase=…]`).
    public static func colour(of phase: Phase) -> RGB {
        switch phase {
        case .work, .countdown, .session: work
        case .rest, .setRest, .cooldown: rest
        case .prepare, .scheduled: prepare
        case .paused: paused
        case .idle: idle
        case .finished, .cancelled: done
        case .overtime: overtime
        case .expired: expired
        }
    }
}

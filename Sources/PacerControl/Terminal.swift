import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The controlling terminal of `pacer watch`: its size, raw mode and the alternate screen.
///
/// ``enterFullScreen()`` switches to the alternate screen, hides the cursor and puts stdin
/// in raw mode (no line buffering, no echo; Ctrl-C still raises SIGINT); ``restore()`` undoes
/// all of it, once, whatever happened in between (it is safe to call more than once).
///
/// Threading: the saved terminal settings are behind a `Mutex`; writes go straight to fd 1
/// with `write(2)`, one frame per call.
public final class Terminal: Sendable {
    private struct State {
        var saved: termios?
        var fullScreen = false
    }
    private let state = Mutex(State())

    public init() {}

    /// Whether stdin and stdout are terminals.
    public static var isInteractive: Bool { isatty(0) == 1 && isatty(1) == 1 }

    /// The terminal's size (of stdout), or nil when it is not a terminal.
    public static func size() -> TerminalSize? {
        var size = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 else { return nil }
        return TerminalSize(columns: Int(size.ws_col), rows: Int(size.ws_row))
    }

    /// Alternate screen, hidden cursor, raw input.
    public func enterFullScreen() {
        state.withLock { state in
            guard !state.fullScreen else { return }
            var settings = termios()
            if tcgetattr(0, &settings) == 0 {
                state.saved = settings
                var raw = settings
                raw.c_lflag &= ~tcflag_t(ICANON | ECHO | IEXTEN)
                raw.c_iflag &= ~tcflag_t(IXON | ICRNL)
                withUnsafeMutableBytes(of: &raw.c_cc) { cc in
                    cc[Int(VMIN)] = 1
                    cc[Int(VTIME)] = 0
                }
                tcsetattr(0, TCSAFLUSH, &raw)
            }
            state.fullScreen = true
            Self.writeAll("\u{1B}[?1049h\u{1B}[?25l\u{1B}[2J")
        }
    }

    /// Back to the normal screen with the cursor and the saved input settings.
    public func restore() {
        state.withLock { state in
            guard state.fullScreen else { return }
            state.fullScreen = false
            Self.writeAll("\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l")
            if var saved = state.saved { tcsetattr(0, TCSAFLUSH, &saved) }
        }
    }

    /// Draws a frame: cursor home, each line cleared to its end, the rest of the screen cleared.
    public func draw(_ lines: [String]) {
        var frame = "\u{1B}[H"
        for (index, line) in lines.enumerated() {
            frame += line + "\u{1B}[K"
            if index < lines.count - 1 { frame += "\r\n" }
        }
        frame += "\u{1B}[J"
        Self.writeAll(frame)
    }

    /// Rings the terminal bell (BEL).
    public func bell() {
        Self.writeAll("\u{07}")
    }

    /// Writes all of `text` to stdout (retrying short writes and EINTR).
    static func writeAll(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            bytes = bytes.dropFirst(written)
        }
    }
}

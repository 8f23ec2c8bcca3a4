public import Foundation
public import PacerCore

/// A time of day when cues of some kinds are not played (`sound.quiet`, docs/sound.md):
/// from `from` (included) to `to` (excluded), in the node's local time; a window whose `to`
/// is before its `from` crosses midnight (`22:00` to `07:00`). Decided at each cue's due
/// instant. Only the speaker is quiet: the node's topics and events never change.
public struct QuietHours: Sendable, Equatable {
    public static let dayMs: Millis = 86_400_000

    /// Start, in milliseconds after local midnight.
    public var fromMs: Millis
    /// End (excluded), in milliseconds after local midnight.
    public var toMs: Millis
    /// The cues that are not played in the window.
    public var cues: Set<SoundCue>

    public init(fromMs: Millis, toMs: Millis, cues: Set<SoundCue> = Set(SoundCue.allCases)) {
        self.fromMs = fromMs
        self.toMs = toMs
        self.cues = cues
    }

    /// Whether `msOfDay` (milliseconds after local midnight) falls in the window.
    public func contains(msOfDay: Millis) -> Bool {
        fromMs <= toMs ? (msOfDay >= fromMs && msOfDay < toMs) : (msOfDay >= fromMs || msOfDay < toMs)
    }

    /// Milliseconds after local midnight in `timeZone` at the epoch instant `epochMs` (daylight
    /// saving time included: the offset in force at that instant).
    public static func msOfDay(epochMs: Millis, timeZone: TimeZone) -> Millis {
        let offset = Millis(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(epochMs) / 1000))) * 1000
        let local = epochMs + offset
        return ((local % dayMs) + dayMs) % dayMs
    }

    /// `HH:MM` (00:00 to 24:00; `24:00` is the end of the day) in milliseconds, or nil.
    public static func time(_ text: String) -> Millis? {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
              let hours = Int(parts[0]), let minutes = Int(parts[1]), minutes < 60,
              hours < 24 || (hours == 24 && minutes == 0) else { return nil }
        return Millis(hours * 60 + minutes) * 60_000
    }
}

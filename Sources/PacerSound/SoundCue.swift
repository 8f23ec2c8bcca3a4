import Foundation
public import PacerCore

/// The sounds the node plays (docs/sound.md): each a short pattern of tones generated in code.
public enum SoundCue: String, Sendable, CaseIterable, Hashable {
    /// A work segment starts (also a countdown or session segment): one long high tone.
    case work
    /// A rest segment starts (also prepare, set rest, cooldown): a falling two-tone.
    case rest
    /// One of the 3-2-1 cues before a segment ends: a short beep.
    case countdown
    /// The run completed: a rising three-tone.
    case finish
    /// The timer expired and waits for an acknowledgement (and each repeated alert): three urgent beeps.
    case expired

    /// The cue an event calls for, if any: segment starts, the countdown cues, completion and
    /// expiry. Pauses, commands that change nothing audible, and endings a person chose
    /// (cancel, acknowledge) are silent, and so is any other event (a new type is silent until
    /// it is given a cue here).
    public static func cue(for event: TimerEvent) -> SoundCue? {
        switch event.type {
        case .countdown: return .countdown
        case .expired, .alert: return .expired
        case .finished:
            switch event.reason {
            case .completed?, .finished?, .skipped?: return .finish
            case .acknowledged?, .autoDismissed?, nil: return nil
            }
        case .started, .phase, .skipped, .rewound:
            switch event.phase {
            case .work?, .countdown?, .session?: return .work
            case .rest?, .setRest?, .cooldown?, .prepare?: return .rest
            case .overtime?: return .finish
            case .idle?, .scheduled?, .paused?, .expired?, .finished?, .cancelled?, nil: return nil
            }
        default:
            return nil
        }
    }

    /// One tone of a pattern, followed by `gapMs` of silence.
    public struct Tone: Sendable, Equatable {
        public var frequency: Double
        public var durationMs: Int
        public var gapMs: Int
    }

    /// The tones, in order. Distinct in pitch and rhythm, so each cue is recognisable without
    /// looking at a display.
    public var tones: [Tone] {
        switch self {
        case .work: [Tone(frequency: 1320, durationMs: 500, gapMs: 0)]
        case .rest: [Tone(frequency: 660, durationMs: 250, gapMs: 60), Tone(frequency: 440, durationMs: 350, gapMs: 0)]
        case .countdown: [Tone(frequency: 880, durationMs: 150, gapMs: 0)]
        case .finish: [Tone(frequency: 880, durationMs: 150, gapMs: 60), Tone(frequency: 1100, durationMs: 150, gapMs: 60),
                       Tone(frequency: 1320, durationMs: 600, gapMs: 0)]
        case .expired: Array(repeating: Tone(frequency: 1760, durationMs: 150, gapMs: 100), count: 3)
        }
    }

    /// How long the whole pattern lasts.
    public var durationMs: Int { tones.reduce(0) { $0 + $1.durationMs + $1.gapMs } }
}

/// Renders cues as 16-bit mono samples: sine tones with short raised-cosine ramps (no clicks).
public struct ToneSynth: Sendable {
    public let sampleRate: Int
    /// Attack and release of every tone.
    public static let rampMs = 3

    public init(sampleRate: Int) { self.sampleRate = sampleRate }

    /// The samples of `cue` at `volume` (0...1 of full scale, with headroom for overlaps).
    public func render(_ cue: SoundCue, volume: Double) -> [Int16] {
        let amplitude = max(0, min(1, volume)) * 0.7 * Double(Int16.max)
        var out: [Int16] = []
        out.reserveCapacity(samples(ms: cue.durationMs))
        let ramp = samples(ms: Self.rampMs)
        for tone in cue.tones {
            let count = samples(ms: tone.durationMs)
            let step = 2 * Double.pi * tone.frequency / Double(sampleRate)
            for i in 0..<count {
                var envelope = 1.0
                if i < ramp { envelope = 0.5 - 0.5 * cos(Double.pi * Double(i) / Double(ramp)) }
                if count - 1 - i < ramp { envelope = min(envelope, 0.5 - 0.5 * cos(Double.pi * Double(count - 1 - i) / Double(ramp))) }
                out.append(Int16((amplitude * envelope * sin(step * Double(i))).rounded()))
            }
            out += repeatElement(0, count: samples(ms: tone.gapMs))
        }
        return out
    }

    /// Samples in `ms` milliseconds.
    public func samples(ms: Int) -> Int { Int((Int64(ms) * Int64(sampleRate) + 500) / 1000) }
}

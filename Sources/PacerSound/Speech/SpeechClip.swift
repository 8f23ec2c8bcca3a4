import Foundation

/// A spoken phrase ready to play: 16-bit mono samples at the player's rate, its leading and
/// trailing silence trimmed (so it starts sounding at its cue's instant) and its peak set to the
/// tones' level (so speech is as loud as the beeps).
public struct SpeechClip: Sendable, Equatable {
    /// What it says.
    public let text: String
    /// Mono samples at `SoundPlayer.sampleRate`.
    public let samples: [Int16]

    public init(text: String, samples: [Int16]) {
        self.text = text
        self.samples = samples
    }

    /// How long it sounds: what the cue-ahead signal announces, so music is ducked for all of it.
    public var durationMs: Int { samples.count * 1000 / SoundPlayer.sampleRate }

    /// The peak of a prepared clip, as a share of full scale: the tones' (ToneSynth) level.
    static let peak = 0.7

    /// A clip from an engine's WAV output: mixed down to mono, resampled to the player's rate,
    /// trimmed and levelled. Nil when the output holds no sound at all.
    static func prepare(text: String, wav: WAVFile) -> SpeechClip? {
        var samples = wav.resampled(to: SoundPlayer.sampleRate)
        // Trim: below 1 % of full scale is silence (an engine's lead-in and tail).
        let threshold: Int16 = 328
        guard let first = samples.firstIndex(where: { abs(Int32($0)) > threshold }),
              let last = samples.lastIndex(where: { abs(Int32($0)) > threshold }) else { return nil }
        samples = Array(samples[first...last])
        let loudest = samples.reduce(Int32(0)) { max($0, abs(Int32($1))) }
        let gain = peak * Double(Int16.max) / Double(loudest)
        samples = samples.map { Int16(clamping: Int32((Double($0) * gain).rounded())) }
        return SpeechClip(text: text, samples: samples)
    }

    /// The samples at `volume` (0...1).
    func scaled(by volume: Double) -> [Int16] {
        let v = max(0, min(1, volume))
        if v == 1 { return samples }
        return samples.map { Int16((Double($0) * v).rounded()) }
    }
}

/// A 16-bit PCM WAV file's content: what espeak-ng and Piper write, and what the speech cache
/// keeps on disk.
struct WAVFile: Sendable, Equatable {
    var sampleRate: Int
    var channels: Int
    /// Interleaved samples.
    var samples: [Int16]

    /// Reads a RIFF/WAVE file's `fmt ` and `data` chunks: 16-bit PCM, any rate, 1 or more
    /// channels. A `data` size past the end of the file (an engine that streamed it) is clamped.
    static func decode(_ data: Data) throws(SoundError) -> WAVFile {
        let bytes = [UInt8](data)
        func u32(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        guard bytes.count >= 12, bytes[0..<4].elementsEqual("RIFF".utf8), bytes[8..<12].elementsEqual("WAVE".utf8) else {
            throw SoundError("not a WAV file (no RIFF/WAVE header)")
        }
        var offset = 12
        var format: (channels: Int, rate: Int, bits: Int, tag: Int)?
        while offset + 8 <= bytes.count {
            let size = u32(offset + 4)
            let body = offset + 8
            if bytes[offset..<offset + 4].elementsEqual("fmt ".utf8), size >= 16, body + 16 <= bytes.count {
                format = (u16(body + 2), u32(body + 4), u16(body + 14), u16(body))
            } else if bytes[offset..<offset + 4].elementsEqual("data".utf8) {
                guard let format else { throw SoundError("a WAV file with its data before its format") }
                guard format.tag == 1 || format.tag == 0xFFFE, format.bits == 16, format.channels >= 1, format.rate > 0 else {
                    throw SoundError("a WAV file that is not 16-bit PCM (format \(format.tag), \(format.bits) bits)")
                }
                let end = min(bytes.count, body + size)
                let count = (end - body) / 2
                var samples = [Int16](repeating: 0, count: count)
                for i in 0..<count { samples[i] = Int16(bitPattern: UInt16(u16(body + 2 * i))) }
                return WAVFile(sampleRate: format.rate, channels: format.channels, samples: samples)
            }
            offset = body + size + (size & 1)
        }
        throw SoundError("a WAV file without sound data")
    }

    /// The file's bytes: a 44-byte header and the samples, little-endian.
    func encoded() -> Data {
        var data = Data(capacity: 44 + samples.count * 2)
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        let dataBytes = samples.count * 2
        data.append(contentsOf: Array("RIFF".utf8)); append(UInt32(36 + dataBytes))
        data.append(contentsOf: Array("WAVEfmt ".utf8)); append(UInt32(16))
        append(UInt16(1)); append(UInt16(channels))
        append(UInt32(sampleRate)); append(UInt32(sampleRate * channels * 2)); append(UInt16(channels * 2)); append(UInt16(16))
        data.append(contentsOf: Array("data".utf8)); append(UInt32(dataBytes))
        samples.withUnsafeBytes { raw in
            if Int16(1).littleEndian == 1 {
                data.append(contentsOf: raw)
            } else {
                for sample in samples { append(sample) }
            }
        }
        return data
    }

    /// Mono samples at `rate`: channels averaged, then linear interpolation (speech has little
    /// above 8 kHz, which this keeps well enough).
    func resampled(to rate: Int) -> [Int16] {
        let frames = samples.count / channels
        var mono = [Double](repeating: 0, count: frames)
        for frame in 0..<frames {
            var sum = 0.0
            for c in 0..<channels { sum += Double(samples[frame * channels + c]) }
            mono[frame] = sum / Double(channels)
        }
        guard rate != sampleRate, frames > 1 else { return mono.map { Int16(clamping: Int32($0.rounded())) } }
        let count = Int(Int64(frames) * Int64(rate) / Int64(sampleRate))
        let step = Double(sampleRate) / Double(rate)
        var out = [Int16](repeating: 0, count: count)
        for i in 0..<count {
            let position = Double(i) * step
            let index = min(Int(position), frames - 2)
            let fraction = position - Double(index)
            out[i] = Int16(clamping: Int32((mono[index] * (1 - fraction) + mono[index + 1] * fraction).rounded()))
        }
        return out
    }
}

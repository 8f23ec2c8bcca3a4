import Foundation

/// Renders cues into a 16-bit mono WAV file, each at its place on the sample timeline: sample
/// `n` is `origin + n / sampleRate`. For tests and for checking a setup without a speaker.
///
/// Threading: used only by the sound player's own thread.
final class WAVRenderer {
    let path: String
    let sampleRate: Int
    /// The file stops growing here (a node left running with a file output would fill memory).
    let maxSamples: Int
    private var samples: [Int16] = []

    init(path: String, sampleRate: Int, maxSeconds: Int = 600) {
        self.path = path
        self.sampleRate = sampleRate
        self.maxSamples = maxSeconds * sampleRate
    }

    /// Mixes `tone` in from sample `position` on (saturating); false when it lies beyond the cap.
    func mix(_ tone: [Int16], at position: Int) -> Bool {
        guard position >= 0, position + tone.count <= maxSamples else { return false }
        if samples.count < position + tone.count { samples += repeatElement(0, count: position + tone.count - samples.count) }
        for (i, sample) in tone.enumerated() {
            let sum = Int32(samples[position + i]) + Int32(sample)
            samples[position + i] = Int16(clamping: sum)
        }
        return true
    }

    /// Writes the whole file (to a temporary file, then renamed: a reader never sees half of one).
    func write() throws(SoundError) {
        let data = WAVFile(sampleRate: sampleRate, channels: 1, samples: samples).encoded()
        let temporary = path + ".tmp"
        do {
            try data.write(to: URL(fileURLWithPath: temporary))
        } catch {
            throw SoundError("cannot write the sound file \(path): \(error.localizedDescription)")
        }
        if rename(temporary, path) != 0 {
            throw SoundError("cannot write the sound file \(path): \(String(cString: strerror(errno)))")
        }
    }
}

/// A sound output that cannot be used, with a reason a person can act on.
public struct SoundError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

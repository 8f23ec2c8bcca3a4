import Foundation

/// A WAV file as sox reads it, for checking rendered sound cues: the samples (decoded by
/// `sox FILE -t dat -`), the runs of sound in them, and sox's `stat` over a stretch.
public struct SoxAnalysis: Sendable {
    public let path: String
    public let sampleRate: Int
    /// Mono samples, full scale ±1.
    public let samples: [Double]

    /// A stretch of sound, in seconds from the start of the file.
    public struct Run: Sendable, CustomStringConvertible {
        public var start: Double
        public var end: Double
        public var duration: Double { end - start }
        public var description: String { String(format: "%.4f-%.4f", start, end) }
    }

    /// Decodes `path` with sox (to raw 16-bit samples; the rate from `sox --i`). Throws when
    /// sox is missing (scripts/setup installs it) or fails. Raw bytes, not sox's text format:
    /// parsing a million lines of text took seconds in a debug build, on a thread of the
    /// tests' two-thread concurrency pool, and stalled every other live test's clock with it.
    public init(path: String) throws {
        self.path = path
        let rateText = String(decoding: try Self.soxData(["--i", "-r", path]), as: UTF8.self)
        guard let rate = Int(rateText.trimmingCharacters(in: .whitespacesAndNewlines)), rate > 0 else {
            throw SoxError("sox gave no sample rate for \(path): \(rateText.prefix(200))")
        }
        let raw = try Self.soxData([path, "-t", "raw", "-e", "signed-integer", "-b", "16", "-c", "1", "-L", "-"])
        self.sampleRate = rate
        self.samples = raw.withUnsafeBytes { bytes in
            (0..<bytes.count / 2).map { i in Double(Int16(littleEndian: bytes.loadUnaligned(fromByteOffset: i * 2, as: Int16.self))) / 32_768 }
        }
    }

    /// The stretches where |sample| exceeds `threshold`, with silences shorter than `mergeMs`
    /// (the zero crossings of a tone) merged.
    public func runs(threshold: Double = 0.02, mergeMs: Double = 5) -> [Run] {
        let merge = Int(mergeMs * Double(sampleRate) / 1000)
        var runs: [(Int, Int)] = []
        for (i, value) in samples.enumerated() where abs(value) > threshold {
            if let last = runs.last, i - last.1 <= merge { runs[runs.count - 1].1 = i } else { runs.append((i, i)) }
        }
        return runs.map { Run(start: Double($0.0) / Double(sampleRate), end: Double($0.1 + 1) / Double(sampleRate)) }
    }

    /// sox's rough frequency (Hz) and maximum amplitude over `duration` s from `start` s.
    public func stat(from start: Double, duration: Double) throws -> (frequency: Double, maxAmplitude: Double) {
        let text = try Self.sox([path, "-n", "trim", String(format: "%.4f", start), String(format: "%.4f", duration), "stat"])
        func value(_ label: String) -> Double? {
            text.split(whereSeparator: \.isNewline).first { $0.hasPrefix(label) }.flatMap { $0.split(separator: ":").last }
                .flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        }
        guard let frequency = value("Rough   frequency"), let amplitude = value("Maximum amplitude") else {
            throw SoxError("sox stat gave no frequency or amplitude:\n\(text)")
        }
        return (frequency, amplitude)
    }

    static func sox(_ arguments: [String]) throws -> String {
        String(decoding: try soxData(arguments, withErrors: true), as: UTF8.self)
    }

    /// sox's standard output; with `withErrors`, its standard error too (`stat` writes there).
    static func soxData(_ arguments: [String], withErrors: Bool = false) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sox"] + arguments
        let out = Pipe()
        process.standardOutput = out
        if withErrors { process.standardError = out } else { process.standardError = FileHandle.nullDevice }
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw SoxError("sox \(arguments.joined(separator: " ")) failed (install it with scripts/setup): \(String(decoding: data.prefix(500), as: UTF8.self))")
        }
        return data
    }
}

public struct SoxError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension SoxAnalysis {
    /// One tone a cue must hold.
    public struct Tone: Sendable {
        public var frequency: Double
        public var durationMs: Int
        public var gapMs: Int
        public init(frequency: Double, durationMs: Int, gapMs: Int) {
            self.frequency = frequency
            self.durationMs = durationMs
            self.gapMs = gapMs
        }
    }

    /// Checks one cue whose first tone must start at `start` s: each tone is a run of sound that
    /// starts where the pattern puts it and lasts its duration (both within `toleranceMs`), at
    /// its frequency (within 3 %, by sox's `stat`). Returns what is wrong (empty: all right).
    public func check(cueAt start: Double, tones: [Tone], runs: [Run], toleranceMs: Double = 5) throws -> [String] {
        var problems: [String] = []
        var cursor = start
        let tolerance = toleranceMs / 1000
        for (index, tone) in tones.enumerated() {
            guard let run = runs.first(where: { abs($0.start - cursor) <= tolerance }) else {
                let near = runs.filter { abs($0.start - cursor) < 0.5 }
                problems.append(String(format: "tone %d (%.0f Hz) does not start at %.4f s ±%.0f ms; runs nearby: %@", index, tone.frequency, cursor, toleranceMs, "\(near)"))
                return problems
            }
            let expected = Double(tone.durationMs) / 1000
            if abs(run.duration - expected) > tolerance {
                problems.append(String(format: "tone %d at %.4f s lasts %.1f ms, not %d ms", index, run.start, run.duration * 1000, tone.durationMs))
            }
            let measured = try stat(from: run.start + 0.01, duration: max(0.02, expected - 0.02)).frequency
            if abs(measured - tone.frequency) > tone.frequency * 0.03 {
                problems.append(String(format: "tone %d at %.4f s is %.0f Hz, not %.0f Hz", index, run.start, measured, tone.frequency))
            }
            cursor = run.start + Double(tone.durationMs + tone.gapMs) / 1000
        }
        return problems
    }
}

public import Foundation
import Synchronization

/// Turns text into a `SpeechClip` by running the speech engine (espeak-ng or Piper) as a
/// process that writes a WAV file. Slow (a few ms for espeak-ng, up to a second for Piper on a
/// Pi): never called on a cue's path, only by the speech cache's queue and `pacer sound test --say`.
///
/// Threading: a value; each `render` runs its own process and waits for it on the calling thread.
public struct SpeechRenderer: Sendable {
    public let engine: SpeechSettings.Engine
    /// The voice: espeak-ng's voice name, or the path of Piper's model.
    public let voice: String
    /// The executable as configured or found on PATH; nil when it is not installed.
    public let executable: String?
    /// A process that runs longer than this is stopped (a stuck engine never holds the queue).
    public var timeout: Duration

    /// - Parameters:
    ///   - defaultVoice: espeak-ng's voice when `settings.voice` is nil (the phrase table's).
    ///   - environment: where PATH is read (the process's).
    public init(settings: SpeechSettings, defaultVoice: String,
                environment: [String: String] = ProcessInfo.processInfo.environment) {
        engine = settings.engine
        voice = settings.voice ?? defaultVoice
        executable = Self.find(settings.command ?? settings.engine.defaultCommand, environment: environment)
        timeout = settings.engine == .piper ? .seconds(60) : .seconds(10)
    }

    /// What distinguishes its clips from another engine's or voice's (part of the cache key).
    public var identity: String { "\(engine.rawValue)\u{0}\(voice)" }

    /// A description for logs: `espeak-ng (voice en)`.
    public var description: String { "\(engine == .espeak ? "espeak-ng" : "Piper") (voice \(voice))" }

    /// Renders `text`.
    /// - Throws: `SpeechError.engineMissing` when the engine is not installed, `.failed` when it
    ///   fails, times out or says nothing.
    public func render(_ text: String) throws(SpeechError) -> SpeechClip {
        guard let executable else { throw .engineMissing(Self.installAdvice(engine)) }
        if engine == .piper, !FileManager.default.fileExists(atPath: voice) {
            throw .failed("the Piper voice \(voice) does not exist: set sound.speech.voice to a voice model (….onnx with its ….onnx.json beside it)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pacer-speech-\(UUID().uuidString)")
        do { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) } catch {
            throw .failed("cannot make a temporary directory for \(description): \(error.localizedDescription)")
        }
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("clip.wav").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        // The text goes on standard input: a label starting with '-' is never read as an option.
        switch engine {
        case .espeak: process.arguments = ["-v", voice, "-w", output, "--stdin"]
        case .piper: process.arguments = ["--model", voice, "--output_file", output]
        }
        // From a file, not a pipe: an engine that exits early can never raise SIGPIPE in the node.
        let textFile = directory.appendingPathComponent("text.txt")
        let input: FileHandle
        do {
            try Data((text + "\n").utf8).write(to: textFile)
            input = try FileHandle(forReadingFrom: textFile)
        } catch {
            throw .failed("cannot write the text for \(description): \(error.localizedDescription)")
        }
        defer { try? input.close() }
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        let ended = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in ended.signal() }
        do { try process.run() } catch {
            throw .failed("cannot run \(executable): \(error.localizedDescription)")
        }
        // Standard error is read on its own thread, so a chatty engine never blocks on a full pipe.
        let stderrText = StderrCollector(errors.fileHandleForReading)
        let ns = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        if ended.wait(timeout: .now() + .nanoseconds(Int(ns))) == .timedOut {
            process.terminate()
            _ = ended.wait(timeout: .now() + .seconds(2))
            throw .failed("\(description) took longer than \(timeout.components.seconds) s for \"\(text)\"")
        }
        guard process.terminationStatus == 0 else {
            let message = stderrText.text.trimmingCharacters(in: .whitespacesAndNewlines).prefix(300)
            throw .failed("\(description) failed (exit \(process.terminationStatus)) for \"\(text)\": \(message)")
        }
        guard let data = FileManager.default.contents(atPath: output) else {
            throw .failed("\(description) wrote no sound for \"\(text)\"")
        }
        let wav: WAVFile
        do { wav = try WAVFile.decode(data) } catch { throw .failed("\(description) for \"\(text)\": \(error)") }
        guard let clip = SpeechClip.prepare(text: text, wav: wav) else {
            throw .failed("\(description) rendered only silence for \"\(text)\"")
        }
        return clip
    }

    /// `name` when it is a path to an executable, else the first executable of that name on PATH.
    static func find(_ name: String, environment: [String: String]) -> String? {
        if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        let path = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    static func installAdvice(_ engine: SpeechSettings.Engine) -> String {
        switch engine {
        case .espeak: "espeak-ng is not installed: sudo apt install espeak-ng (or set sound.speech.command to its path)"
        case .piper: "Piper is not installed: pip install piper-tts into a virtualenv and set sound.speech.command to its piper (docs/sound.md, \"Voices\")"
        }
    }
}

/// Why a phrase could not be rendered.
public enum SpeechError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The engine's executable is not there; the text says how to install it.
    case engineMissing(String)
    /// The engine ran and failed (or timed out, or said nothing).
    case failed(String)

    public var description: String {
        switch self {
        case .engineMissing(let text), .failed(let text): text
        }
    }
}

/// Reads a pipe to its end on a thread of its own.
private final class StderrCollector: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let data = Mutex(Data())

    init(_ handle: FileHandle) {
        let thread = Thread { [self] in
            let bytes = (try? handle.readToEnd()) ?? Data()
            self.data.withLock { $0 = bytes.prefix(4096) }
            self.done.signal()
        }
        thread.start()
    }

    var text: String {
        _ = done.wait(timeout: .now() + .seconds(1))
        return String(decoding: data.withLock { $0 }, as: UTF8.self)
    }
}

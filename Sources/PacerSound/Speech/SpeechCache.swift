import Dispatch
import Foundation
public import Logging
import Synchronization

/// Rendered speech, ready before it is needed: an on-disk directory of clips keyed by a hash of
/// (engine, voice, text), bounded in count and bytes (the least recently used go first), and
/// the clips in use held in memory so that playing one needs no I/O (docs/sound.md, "Speech").
///
/// Rendering runs on the cache's own queue, never on a cue's path: `prepare` renders ahead (when
/// a timer is created or started), and `clip(for:)` only looks in memory; a miss returns nil (the
/// cue beeps) and loads or renders the clip for next time. A file that is missing or unreadable
/// is rendered again. An engine that is missing is logged once.
///
/// Threading: the index and the clips in memory are behind a `Mutex`; the files are touched only
/// on the cache's serial queue.
public final class SpeechCache: Sendable {
    /// The bounds of the cache.
    public struct Limits: Sendable, Equatable {
        /// At most this many clip files.
        public var maxClips: Int
        /// At most this many bytes of clip files.
        public var maxBytes: Int
        /// At most this many bytes of clips held in memory, ready to play (16 MB: about 3
        /// minutes of speech, far more than one workout's phrases).
        public var memoryBytes: Int

        public init(maxClips: Int = 500, maxBytes: Int = 50_000_000, memoryBytes: Int = 16_000_000) {
            self.maxClips = maxClips
            self.maxBytes = maxBytes
            self.memoryBytes = memoryBytes
        }
    }

    public let directory: String
    public let renderer: SpeechRenderer
    public let limits: Limits
    let logger: Logger

    private struct Entry {
        var bytes: Int
        var lastUse: UInt64
    }

    private struct State {
        /// The clip files on disk, by key.
        var files: [String: Entry] = [:]
        /// Clips ready to play, by key, with their last use.
        var memory: [String: (clip: SpeechClip, lastUse: UInt64)] = [:]
        var memoryBytes = 0
        /// Keys queued for loading or rendering.
        var queued: Set<String> = []
        /// Keys whose rendering failed: not tried again from `clip(for:)`, only by `prepare`.
        var failed: Set<String> = []
        var clock: UInt64 = 0
        /// Whether a failure was logged since the engine last worked (logged once).
        var failing = false
    }

    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "pacer-speech", qos: .utility)
    /// Told of each clip that becomes ready (`observe`), on the cache's queue.
    private let observers = Mutex<[@Sendable (_ text: String, _ durationMs: Int) -> Void]>([])

    /// - Parameters:
    ///   - directory: where the clips are kept (made if missing).
    ///   - renderer: the engine and voice.
    public init(directory: String, renderer: SpeechRenderer, limits: Limits = Limits(), logger: Logger) {
        self.directory = directory
        self.renderer = renderer
        self.limits = limits
        self.logger = logger
        queue.async { [self] in self.scan() }
    }

    /// Renders (or loads from disk) each of `texts` not ready yet, on the cache's queue, and
    /// holds them in memory. Returns at once. A text that failed before is tried again.
    public func prepare(_ texts: [String]) {
        let keys = texts.map { (text: $0, key: key(for: $0)) }
        let wanted = state.withLock { state in
            keys.filter { item in
                state.failed.remove(item.key)
                return state.memory[item.key] == nil && state.queued.insert(item.key).inserted
            }
        }
        guard !wanted.isEmpty else { return }
        queue.async { [self] in
            for item in wanted { self.make(item.text, key: item.key) }
        }
    }

    /// The clip of `text` when it is ready in memory: no I/O, no waiting. Nil otherwise, and the
    /// clip is loaded or rendered for next time (unless its rendering failed).
    public func clip(for text: String) -> SpeechClip? {
        let key = key(for: text)
        let (clip, schedule) = state.withLock { state -> (SpeechClip?, Bool) in
            state.clock += 1
            if var entry = state.memory[key] {
                entry.lastUse = state.clock
                state.memory[key] = entry
                state.files[key]?.lastUse = state.clock
                return (entry.clip, false)
            }
            guard !state.failed.contains(key) else { return (nil, false) }
            return (nil, state.queued.insert(key).inserted)
        }
        if schedule { queue.async { [self] in self.make(text, key: key) } }
        return clip
    }

    /// Calls `body` with each clip's text and length as it becomes ready to play (on the cache's
    /// queue; `body` must not block): the node learns a spoken cue's real length for its
    /// cue-ahead announcement.
    public func observe(_ body: @escaping @Sendable (_ text: String, _ durationMs: Int) -> Void) {
        observers.withLock { $0.append(body) }
    }

    /// Blocks until everything queued so far is done (`pacer sound test --say`, tests).
    public func waitUntilIdle() {
        queue.sync {}
    }

    /// How many clip files and bytes are on disk (as the cache counts them).
    public var usage: (clips: Int, bytes: Int) {
        state.withLock { state in (state.files.count, state.files.values.reduce(0) { $0 + $1.bytes }) }
    }

    /// The path of `text`'s clip file (whether it exists or not).
    public func path(for text: String) -> String { file(key(for: text)) }

    // MARK: - On the queue

    /// Indexes the files already there (a restart keeps its clips), oldest use first by their
    /// modification time, and removes leftovers of an interrupted write.
    private func scan() {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            logger.warning("sound: cannot make the speech cache directory \(directory): \(error.localizedDescription); spoken cues beep instead")
        }
        var found: [(key: String, bytes: Int, modified: Date)] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            let path = (directory as NSString).appendingPathComponent(name)
            if name.hasSuffix(".tmp") { try? FileManager.default.removeItem(atPath: path); continue }
            guard name.hasSuffix(".wav"), name.count == 36,
                  let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                  let size = (attributes[.size] as? NSNumber)?.intValue else { continue }
            found.append((String(name.dropLast(4)), size, (attributes[.modificationDate] as? Date) ?? .distantPast))
        }
        found.sort { $0.modified < $1.modified }
        state.withLock { state in
            for item in found where state.files[item.key] == nil {
                state.clock += 1
                state.files[item.key] = Entry(bytes: item.bytes, lastUse: state.clock)
            }
        }
        evict(keeping: nil)
    }

    /// Loads `text`'s clip from disk, or renders it when it is not there or unreadable.
    private func make(_ text: String, key: String) {
        defer { _ = state.withLock { $0.queued.remove(key) } }
        if state.withLock({ $0.memory[key] != nil }) { return }
        let path = file(key)
        if state.withLock({ $0.files[key] != nil }) {
            if let data = FileManager.default.contents(atPath: path), let wav = try? WAVFile.decode(data),
               wav.sampleRate == SoundPlayer.sampleRate, wav.channels == 1, !wav.samples.isEmpty {
                // Its modification time is its last use across restarts.
                try? FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: path)
                hold(SpeechClip(text: text, samples: wav.samples), key: key)
                return
            }
            logger.notice("sound: the speech clip \(path) for \"\(text)\" is missing or unreadable; rendering it again")
            try? FileManager.default.removeItem(atPath: path)
            state.withLock { _ = $0.files.removeValue(forKey: key) }
        }
        let clip: SpeechClip
        do {
            clip = try renderer.render(text)
        } catch {
            let first = state.withLock { state -> Bool in
                state.failed.insert(key)
                defer { state.failing = true }
                return !state.failing
            }
            if first { logger.warning("sound: cannot render speech: \(error); spoken cues beep instead until it works") }
            return
        }
        let recovered = state.withLock { state -> Bool in
            defer { state.failing = false }
            return state.failing
        }
        if recovered { logger.notice("sound: speech renders again with \(renderer.description)") }
        let data = WAVFile(sampleRate: SoundPlayer.sampleRate, channels: 1, samples: clip.samples).encoded()
        let temporary = path + ".tmp"
        if FileManager.default.createFile(atPath: temporary, contents: data), rename(temporary, path) == 0 {
            state.withLock { state in
                state.clock += 1
                state.files[key] = Entry(bytes: data.count, lastUse: state.clock)
            }
            evict(keeping: key)
        } else {
            try? FileManager.default.removeItem(atPath: temporary)
            logger.warning("sound: cannot write the speech clip \(path); it plays from memory only")
        }
        hold(clip, key: key)
    }

    /// Holds `clip` in memory, letting go of the least recently used beyond the memory bound.
    private func hold(_ clip: SpeechClip, key: String) {
        state.withLock { state in
            state.clock += 1
            state.memory[key] = (clip, state.clock)
            state.memoryBytes += clip.samples.count * 2
            while state.memoryBytes > limits.memoryBytes, state.memory.count > 1,
                  let oldest = state.memory.filter({ $0.key != key }).min(by: { $0.value.lastUse < $1.value.lastUse }) {
                state.memory.removeValue(forKey: oldest.key)
                state.memoryBytes -= oldest.value.clip.samples.count * 2
            }
        }
        for observer in observers.withLock({ $0 }) { observer(clip.text, clip.durationMs) }
    }

    /// Removes the least recently used files until the cache is within its limits (never `keeping`).
    private func evict(keeping: String?) {
        let victims = state.withLock { state -> [String] in
            var victims: [String] = []
            var bytes = state.files.values.reduce(0) { $0 + $1.bytes }
            let order = state.files.filter { $0.key != keeping }.sorted { $0.value.lastUse < $1.value.lastUse }
            for (key, entry) in order where state.files.count > limits.maxClips || bytes > limits.maxBytes {
                state.files.removeValue(forKey: key)
                bytes -= entry.bytes
                victims.append(key)
            }
            return victims
        }
        for key in victims { try? FileManager.default.removeItem(atPath: file(key)) }
    }

    // MARK: - Keys

    private func file(_ key: String) -> String { (directory as NSString).appendingPathComponent("\(key).wav") }

    /// 32 hex digits: two 64-bit FNV-1a hashes (different offsets) of the engine, voice and text.
    func key(for text: String) -> String {
        let bytes = Array(renderer.identity.utf8) + [0] + Array(text.utf8)
        func fnv(_ basis: UInt64) -> UInt64 {
            bytes.reduce(basis) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }
        }
        let hex = [fnv(0xCBF2_9CE4_8422_2325), fnv(0x84222325_CBF29CE4)].map { String($0, radix: 16) }
        return hex.map { String(repeating: "0", count: 16 - $0.count) + $0 }.joined()
    }
}

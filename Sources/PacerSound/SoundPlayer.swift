import Dispatch
import Foundation
public import Logging
public import PacerCore
import Synchronization

/// Plays the cues of timer events on its own thread, each at its event's due instant.
///
/// The engine hands over the events of each commit with `submit(_:nowMs:)`, which only queues
/// them and never blocks (no I/O, no waiting on the device). The player's thread does the rest:
/// - a device (ALSA): it sleeps until shortly before a cue's instant (`due_ms` + `latency`,
///   measured from the engine's `now` on the monotonic clock), writes silence up to the instant
///   and then the tones, mixing cues that overlap;
/// - a WAV file: it renders each cue at once at `due_ms` on the file's sample timeline, whose
///   sample 0 is logged when the first cue arrives.
///
/// A device that is missing or fails is logged once; the node goes on, and the player tries
/// the device again at most every 30 s (a speaker plugged in later is picked up).
///
/// With a speech cache (`speech`), `submit(_:nowMs:say:)` plays an event's phrase in place of its
/// beep when the phrase's clip is ready, and the beep when it is not: speech is never late.
///
/// Cues in quiet hours (`settings.quiet`, at their due instant) are not queued. With
/// `settings.music`, each cue (and each cue a countdown announces) is also handed to the
/// music's ducker (MusicDucker.swift), which lowers an MPD server's volume around it on a
/// thread of its own.
///
/// Threading: the queue is behind a `Mutex`; the output (ALSA handle or file buffer) lives
/// only on the player's thread.
public final class SoundPlayer: Sendable {
    public static let sampleRate = 44_100
    /// A cue more than this late when handed over is dropped (a timer restored after the node
    /// was down reports its end, but a beep for it now would only confuse).
    public static let maxLatenessMs: Millis = 1_000
    /// How long before a cue's instant the thread wakes to write it.
    static let leadNs: Int64 = 40_000_000
    /// The device is fed this many frames at a time (46 ms), so a cue due while a long clip
    /// plays is mixed into what is still to be written, at its place.
    static let chunkFrames = 2_048
    static let retryNs: Int64 = 30_000_000_000

    public let settings: SoundSettings
    let logger: Logger

    /// What a queued cue sounds like.
    fileprivate enum Sound {
        case tone(SoundCue)
        case speech(SpeechClip)
    }

    fileprivate struct Pending {
        var sound: Sound
        var volume: Double
        var dueMs: Millis
        /// When it should sound, in `DispatchTime` uptime nanoseconds.
        var startNs: Int64
    }

    private struct State {
        var pending: [Pending] = []
        var stopping = false
    }

    private let state = Mutex(State())
    /// The speaker as the node's `sound` command left it (muted; volume 0…1 of each cue's own).
    private let speaker = Mutex((muted: false, volume: 1.0))
    private let wake = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    private let running = Atomic<Bool>(false)

    /// The music's ducker (`sound.music`), nil without one.
    let ducker: MusicDucker?
    /// Rendered speech (`sound.speech`), nil without it.
    public let speech: SpeechCache?

    /// Makes the player; where the device goes through a sound server (`pulse`, `pipewire`,
    /// `default`), sets the cues' media role for its role-based ducking first (StreamRole.swift).
    /// - Parameter speech: the clips `submit(_:nowMs:say:)` and `play(_:dueMs:nowMs:)` may play.
    public init(settings: SoundSettings, logger: Logger, speech: SpeechCache? = nil) {
        self.settings = settings
        self.logger = logger
        self.speech = speech
        ducker = settings.music.map { MusicDucker(music: $0, logger: logger) }
        if case .alsa(let device) = settings.output {
            let set = StreamRole.apply(forDevice: device)
            if !set.isEmpty { logger.debug("sound: media role set for the sound server (\(set.joined(separator: ", ")))") }
        }
    }

    /// The engine's hook: queues the cues of `events` (those with a cue that is on and not in
    /// quiet hours at their due instant) and returns.
    /// - Parameter nowMs: the instant the engine handled them at, on the same timeline as `due_ms`.
    public func submit(_ events: [TimerEvent], nowMs: Millis) {
        submit(events, nowMs: nowMs, say: { _ in nil })
    }

    /// As `submit(_:nowMs:)`, saying `say(event)` (SpeechPlanner's utterance) in place of an
    /// event's beep when its clip is ready in the speech cache; when it is not (or the text is
    /// nil), the event's beep plays as before. Never blocks: the cache only looks in memory.
    public func submit(_ events: [TimerEvent], nowMs: Millis, say: (TimerEvent) -> String?) {
        // The node's `sound` command: muted plays nothing; the volume scales every cue's.
        let (muted, scale) = speaker.withLock { ($0.muted, $0.volume) }
        if muted { return }
        let nowNs = Int64(DispatchTime.now().uptimeNanoseconds)
        var added: [Pending] = []
        for event in events {
            guard nowMs - event.dueMs <= Self.maxLatenessMs else { continue }
            let cue = SoundCue.cue(for: event)
            let startNs = nowNs + (event.dueMs - nowMs + Millis(settings.latencyMs)) * 1_000_000
            if let speech, let text = say(event), let clip = speech.clip(for: text) {
                guard !isQuiet(speechOf: cue, atMs: event.dueMs) else { continue }
                let volume = settings.volume * (settings.speech?.volume ?? 1)
                added.append(Pending(sound: .speech(clip), volume: volume * scale, dueMs: event.dueMs, startNs: startNs))
                continue
            }
            guard let cue, let volume = settings.volume(of: cue), !settings.isQuiet(cue, atMs: event.dueMs) else { continue }
            added.append(Pending(sound: .tone(cue), volume: volume * scale, dueMs: event.dueMs, startNs: startNs))
        }
        guard !added.isEmpty else { return }
        state.withLock { $0.pending += added }
        wake.signal()
        if let ducker {
            for cue in added { ducker.cue(startNs: cue.startNs, endNs: cue.startNs + Int64(cue.durationMs) * 1_000_000) }
        }
    }

    /// Whether quiet hours silence the phrase of an event whose beep is `cue`: when they silence
    /// that beep, or (an event with no beep, like `halfway`) every kind of cue.
    private func isQuiet(speechOf cue: SoundCue?, atMs dueMs: Millis) -> Bool {
        if let cue { return settings.isQuiet(cue, atMs: dueMs) }
        return SoundCue.allCases.allSatisfy { settings.isQuiet($0, atMs: dueMs) }
    }

    /// Announces a cue due at `dueMs` that is not handed over yet (anything that knows a cue
    /// ahead): the music goes down `lead` before it. `kinds`: the cues it may be; none of them
    /// on at that instant (off, or quiet hours), nothing is done.
    public func expect(dueMs: Millis, kinds: Set<SoundCue>, nowMs: Millis) {
        let nowNs = Int64(DispatchTime.now().uptimeNanoseconds)
        guard let ducker, !speaker.withLock({ $0.muted }) else { return }
        // The shortest it may be: the cue itself, once handed over, extends the duck if longer.
        let audible = kinds.filter { settings.volume(of: $0) != nil && !settings.isQuiet($0, atMs: dueMs) }
        guard let shortest = audible.map(\.durationMs).min() else { return }
        let startNs = nowNs + (dueMs - nowMs + Millis(settings.latencyMs)) * 1_000_000
        ducker.cue(startNs: startNs, endNs: startNs + Int64(shortest) * 1_000_000)
    }

    /// Plays `cue` at `dueMs` whatever the settings say of it (on or off, quiet hours) at the
    /// cue's volume: `pacer sound test`. The music is ducked for it as for any cue.
    public func play(_ cue: SoundCue, dueMs: Millis, nowMs: Millis) {
        let nowNs = Int64(DispatchTime.now().uptimeNanoseconds)
        let startNs = nowNs + (dueMs - nowMs + Millis(settings.latencyMs)) * 1_000_000
        state.withLock { $0.pending.append(Pending(sound: .tone(cue), volume: settings.volume * settings.cue(cue).volume, dueMs: dueMs, startNs: startNs)) }
        wake.signal()
        ducker?.cue(startNs: startNs, endNs: startNs + Int64(cue.durationMs) * 1_000_000)
    }

    /// Plays `clip` at `dueMs` at the speech volume, whatever the settings say (on or off, quiet
    /// hours, muted): `pacer sound test --say`. The music is ducked for its whole length.
    public func play(_ clip: SpeechClip, dueMs: Millis, nowMs: Millis) {
        let nowNs = Int64(DispatchTime.now().uptimeNanoseconds)
        let startNs = nowNs + (dueMs - nowMs + Millis(settings.latencyMs)) * 1_000_000
        let volume = settings.volume * (settings.speech?.volume ?? 1)
        state.withLock { $0.pending.append(Pending(sound: .speech(clip), volume: volume, dueMs: dueMs, startNs: startNs)) }
        wake.signal()
        ducker?.cue(startNs: startNs, endNs: startNs + Int64(clip.durationMs) * 1_000_000)
    }

    /// The node's `sound` command: `muted` drops every cue from now on (one already queued still
    /// plays); `volume` (0…1) scales each cue's configured volume.
    public func setSpeaker(muted: Bool, volume: Double) {
        speaker.withLock { $0 = (muted, min(1, max(0, volume))) }
    }

    /// Starts the player's thread (once).
    public func start() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        ducker?.start()
        let thread = Thread { [self] in
            self.loop()
            self.ended.signal()
        }
        thread.name = "pacer-sound"
        thread.start()
    }

    /// Stops the thread: a file output renders what is queued first; a device drops it.
    /// Waits at most `timeout` for the thread to end; then brings the music back if it is
    /// ducked (at most 3 s more).
    public func stop(timeout: Duration = .seconds(2)) {
        state.withLock { $0.stopping = true }
        wake.signal()
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }  // not started, or stopped before
        let ns = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        _ = ended.wait(timeout: .now() + .nanoseconds(Int(ns)))
        ducker?.stop()
    }

    // MARK: - The thread

    private enum Next {
        case wait(untilNs: Int64?)
        case play([Pending])
        case stop
    }

    private func loop() {
        let synth = ToneSynth(sampleRate: Self.sampleRate)
        switch settings.output {
        case .file(let path):
            renderLoop(WAVRenderer(path: path, sampleRate: Self.sampleRate), synth: synth)
        case .alsa(let device):
            deviceLoop(ALSAOutput(device: device, sampleRate: Self.sampleRate), synth: synth)
        }
    }

    /// Waits for the semaphore until `untilNs` (or a new cue / stop).
    private func sleep(untilNs: Int64?) {
        if let untilNs {
            _ = wake.wait(timeout: DispatchTime(uptimeNanoseconds: UInt64(max(0, untilNs))))
        } else {
            wake.wait()
        }
    }

    private func renderLoop(_ file: WAVRenderer, synth: ToneSynth) {
        var originMs: Millis?
        var reported = false
        while true {
            let (batch, stopping) = state.withLock { state -> ([Pending], Bool) in
                defer { state.pending = [] }
                return (state.pending, state.stopping)
            }
            if batch.isEmpty {
                if stopping { return }
                sleep(untilNs: nil)
                continue
            }
            for cue in batch.sorted(by: { $0.dueMs < $1.dueMs }) {
                if originMs == nil {
                    // A whole second at least 1 s before the first cue.
                    let origin = (cue.dueMs / 1000 - 1) * 1000
                    originMs = origin
                    logger.info("sound: rendering cues to \(file.path); sample 0 is \(origin) ms (\(iso8601(ms: origin)))",
                                metadata: ["origin_ms": "\(origin)", "sample_rate": "\(Self.sampleRate)"])
                }
                let position = Int((cue.dueMs - originMs!) * Millis(Self.sampleRate) / 1000)
                if !file.mix(cue.samples(synth), at: position), !reported {
                    reported = true
                    logger.warning("sound: the file \(file.path) is full (\(file.maxSamples / Self.sampleRate) s); later cues are not rendered")
                }
            }
            do { try file.write() } catch {
                if !reported { logger.warning("sound: \(error); the node goes on without sound") }
                reported = true
            }
        }
    }

    private func deviceLoop(_ device: ALSAOutput, synth: ToneSynth) {
        /// Whether a failure was logged since the device last worked (logged once).
        var failing = false
        var nextAttemptNs: Int64 = 0
        /// Mixed samples not written yet: heard right after what the device still holds.
        var tail: [Int16] = []
        defer { device.close() }
        func ns(frames: Int) -> Int64 { Int64(frames) * 1_000_000_000 / Int64(Self.sampleRate) }
        while true {
            let nowNs = Int64(DispatchTime.now().uptimeNanoseconds)
            // A cue is taken once its start lies within what is already on its way to the
            // speaker (the device's queue and the tail) plus the lead: mixed at its place.
            let horizonNs = nowNs + ns(frames: device.queuedFrames() + tail.count) + Self.leadNs
            let writing = !tail.isEmpty
            let next = state.withLock { state -> Next in
                if state.stopping { return .stop }
                let ready = state.pending.filter { $0.startNs <= horizonNs }
                guard ready.isEmpty else {
                    state.pending.removeAll { $0.startNs <= horizonNs }
                    return .play(ready)
                }
                if writing { return .play([]) }
                guard let first = state.pending.min(by: { $0.startNs < $1.startNs }) else { return .wait(untilNs: nil) }
                return .wait(untilNs: first.startNs - Self.leadNs)
            }
            switch next {
            case .stop: return
            case .wait(let untilNs): sleep(untilNs: untilNs)
            case .play(let batch):
                if !device.isOpen {
                    tail = []
                    guard nowNs >= nextAttemptNs else { continue }  // the cues are dropped until the retry
                    do {
                        try device.open()
                        if failing { logger.notice("sound: the device \(device.device) works again") }
                        failing = false
                    } catch {
                        nextAttemptNs = nowNs + Self.retryNs
                        if !failing { logger.warning("sound: \(error); the node goes on without sound and tries again every 30 s") }
                        failing = true
                        continue
                    }
                }
                // The tail's first sample is heard after what the device still has queued.
                let startNs = Int64(DispatchTime.now().uptimeNanoseconds) + ns(frames: device.queuedFrames())
                for cue in batch {
                    let offset = max(0, Int((cue.startNs - startNs) * Int64(Self.sampleRate) / 1_000_000_000))
                    let samples = cue.samples(synth)
                    if tail.count < offset + samples.count { tail += repeatElement(0, count: offset + samples.count - tail.count) }
                    for (i, sample) in samples.enumerated() { tail[offset + i] = Int16(clamping: Int32(tail[offset + i]) + Int32(sample)) }
                }
                let count = min(tail.count, Self.chunkFrames)
                do {
                    try device.play(Array(tail[..<count]))
                    tail.removeFirst(count)
                } catch {
                    if !failing { logger.warning("sound: \(error); the node goes on without sound and tries again every 30 s") }
                    failing = true
                    device.close()
                    tail = []
                    nextAttemptNs = nowNs + Self.retryNs
                }
            }
        }
    }
}

extension SoundPlayer.Pending {
    /// How long it sounds.
    var durationMs: Int {
        switch sound {
        case .tone(let cue): cue.durationMs
        case .speech(let clip): clip.durationMs
        }
    }

    /// Its samples at its volume.
    func samples(_ synth: ToneSynth) -> [Int16] {
        switch sound {
        case .tone(let cue): synth.render(cue, volume: volume)
        case .speech(let clip): clip.scaled(by: volume)
        }
    }
}

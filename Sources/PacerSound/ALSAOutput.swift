import CALSA

/// An ALSA playback device, 16-bit mono. The only importer of CALSA.
///
/// Threading: used only by the sound player's own thread (SoundPlayer.swift), never shared:
/// the `snd_pcm_t` handle is C state without locks of its own.
final class ALSAOutput {
    let device: String
    let sampleRate: Int
    private var pcm: OpaquePointer?

    init(device: String, sampleRate: Int) {
        self.device = device
        self.sampleRate = sampleRate
    }

    deinit { close() }

    /// Opens the device (not blocking when it is busy) and sets 16-bit mono at `sampleRate`
    /// with a 100 ms buffer.
    func open() throws(SoundError) {
        pacer_alsa_silence_library_errors()  // failures are logged once, by the player
        var handle: OpaquePointer?
        var rc = snd_pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK)
        guard rc >= 0, let handle else { throw SoundError("cannot open the ALSA device '\(device)': \(Self.describe(rc))") }
        rc = snd_pcm_nonblock(handle, 0)  // open without waiting for a busy device; write blocking
        if rc >= 0 {
            rc = snd_pcm_set_params(handle, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, 1, UInt32(sampleRate), 1, 100_000)
        }
        guard rc >= 0 else {
            snd_pcm_close(handle)
            throw SoundError("cannot set up the ALSA device '\(device)' (16-bit mono, \(sampleRate) Hz): \(Self.describe(rc))")
        }
        pcm = handle
    }

    var isOpen: Bool { pcm != nil }

    /// Frames still queued: a sample written now is heard after them (0 when idle).
    func queuedFrames() -> Int {
        guard let pcm else { return 0 }
        var delay: snd_pcm_sframes_t = 0
        guard snd_pcm_state(pcm) == SND_PCM_STATE_RUNNING, snd_pcm_delay(pcm, &delay) >= 0 else { return 0 }
        return max(0, Int(delay))
    }

    /// Queues `samples` for playback (blocks while the device's buffer is full) and starts the
    /// device if it is not playing yet. An underrun between cues is normal and recovered.
    func play(_ samples: [Int16]) throws(SoundError) {
        guard let pcm else { throw SoundError("the ALSA device '\(device)' is not open") }
        var offset = 0
        var attempts = 0
        while offset < samples.count {
            let written = samples.withUnsafeBufferPointer { buffer in
                snd_pcm_writei(pcm, buffer.baseAddress! + offset, snd_pcm_uframes_t(samples.count - offset))
            }
            if written < 0 {
                attempts += 1
                let rc = snd_pcm_recover(pcm, Int32(written), 1)
                if rc < 0 || attempts > 3 { throw SoundError("cannot play on the ALSA device '\(device)': \(Self.describe(Int32(written)))") }
                continue
            }
            offset += Int(written)
        }
        // Short cues may not fill the buffer up to the start threshold: start explicitly.
        if snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED { _ = snd_pcm_start(pcm) }
    }

    func close() {
        guard let pcm else { return }
        snd_pcm_close(pcm)  // drops what is still queued: the node is stopping
        self.pcm = nil
    }

    private static func describe(_ rc: Int32) -> String {
        snd_strerror(rc).map { String(cString: $0) } ?? "error \(rc)"
    }
}

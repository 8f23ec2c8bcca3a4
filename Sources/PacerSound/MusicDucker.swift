import Dispatch
import Foundation
import Logging
import Synchronization

/// Lowers an MPD server's volume around each cue (docs/sound.md, "Music"): from `lead` before
/// the cue sounds until `hold` after it ends, to `duck_to` of the volume it read just before.
///
/// The sound player hands over each cue's instants with `cue(startNs:endNs:)`, which only
/// records them (never blocks); this type's own thread talks to MPD, so a slow or missing
/// server cannot delay a cue. Close cues make one duck (DuckPlan.swift). The music is never
/// left down: it is restored after each group, on `stop()`, and after a lost connection (once
/// the server is back). If someone changed the volume while it was down, the restore leaves
/// their volume alone.
///
/// The connection is opened when the player starts and kept (pinged every 20 s), so a cue
/// known only at its instant costs one round trip. An unreachable server is logged once (and
/// once when it works again); ducks are skipped meanwhile and the connection is tried again
/// with a backoff of 1 s doubling to 30 s.
///
/// Threading: the plan is behind a `Mutex`; the MPD connection lives only on the ducker's thread.
final class MusicDucker: Sendable {
    static let maxBackoffNs: Int64 = 30_000_000_000
    /// An idle connection is pinged this often (MPD closes one idle for 60 s by default).
    static let pingNs: Int64 = 20_000_000_000

    let music: SoundSettings.Music
    let logger: Logger

    private struct State {
        var plan = DuckPlan()
        var stopping = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    private let running = Atomic<Bool>(false)

    init(music: SoundSettings.Music, logger: Logger) {
        self.music = music
        self.logger = logger
    }

    /// A cue sounds over [`startNs`, `endNs`) (`DispatchTime` uptime nanoseconds): the music
    /// goes down `lead` before and comes back `hold` after.
    func cue(startNs: Int64, endNs: Int64) {
        let lead = Int64(music.leadMs) * 1_000_000, hold = Int64(music.holdMs) * 1_000_000
        state.withLock { $0.plan.add(startNs: startNs - lead, endNs: endNs + hold) }
        wake.signal()
    }

    func start() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in
            var shell = Shell(ducker: self)
            shell.loop()
            self.ended.signal()
        }
        thread.name = "pacer-music"
        thread.start()
    }

    /// Restores the music if it is down, then ends the thread (waits at most `timeout`).
    func stop(timeout: Duration = .seconds(3)) {
        state.withLock { $0.stopping = true }
        wake.signal()
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        let ns = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        _ = ended.wait(timeout: .now() + .nanoseconds(Int(ns)))
    }

    // MARK: - The thread

    /// The thread's own state: the connection, the volume it set, the failure bookkeeping.
    private struct Shell {
        let ducker: MusicDucker
        let client: MPDClient
        /// The music is down: the volume found before, and the one set.
        var ducked: (original: Int, set: Int)?
        var failing = false
        var reportedNoVolume = false
        var backoffNs: Int64 = 1_000_000_000
        var nextAttemptNs: Int64 = 0
        /// When the server last answered.
        var lastUsedNs: Int64 = 0

        init(ducker: MusicDucker) {
            self.ducker = ducker
            client = MPDClient(host: ducker.music.host, port: ducker.music.port)
        }

        var logger: Logger { ducker.logger }
        var music: SoundSettings.Music { ducker.music }

        static func now() -> Int64 { Int64(DispatchTime.now().uptimeNanoseconds) }

        func sleep(untilNs: Int64?) {
            if let untilNs {
                _ = ducker.wake.wait(timeout: DispatchTime(uptimeNanoseconds: UInt64(max(0, untilNs))))
            } else {
                ducker.wake.wait()
            }
        }

        mutating func loop() {
            defer { client.close() }
            // Connected from the start: a cue known only at its instant is ducked in one round
            // trip (`status`, `setvol`), and a missing server is reported at once.
            _ = connected(now: Self.now())
            while true {
                let now = Self.now()
                let isDucked = ducked != nil
                let (next, stopping) = ducker.state.withLock { state in
                    (state.plan.next(nowNs: now, ducked: isDucked), state.stopping)
                }
                if stopping {
                    if ducked != nil { nextAttemptNs = 0; restore(now: now) }
                    return
                }
                switch next {
                case .idle:
                    sleep(untilNs: maintain(now: now))
                case .wait(let until):
                    sleep(untilNs: min(until, maintain(now: now) ?? until))
                case .duck(let until):
                    // Not ducked: the server is out of reach (tried again when its backoff is
                    // over, if the window still runs) or has no volume (the window is skipped).
                    if !duck(now: now) { sleep(untilNs: nextAttemptNs > now ? min(until, nextAttemptNs) : until) }
                case .hold(let until):
                    sleep(untilNs: until)
                case .restore:
                    if !restore(now: now) { sleep(untilNs: max(nextAttemptNs, now + 1_000_000)) }
                }
            }
        }

        /// Keeps the connection between ducks: connects again once a backoff is over, and pings
        /// before MPD's `connection_timeout` (60 s by default) closes an idle one. Returns when
        /// it next has something to do (nil: never, it waits for a cue).
        mutating func maintain(now: Int64) -> Int64? {
            if !client.isConnected {
                guard connected(now: now) else { return nextAttemptNs }
            } else if now - lastUsedNs >= MusicDucker.pingNs {
                _ = withServer(now: now) { client throws(SoundError) in _ = try client.command("ping") }
                if !client.isConnected { return nextAttemptNs }
            }
            return lastUsedNs + MusicDucker.pingNs
        }

        /// Lowers the volume; false when it could not (the window is then skipped).
        mutating func duck(now: Int64) -> Bool {
            let duckTo = music.duckTo
            let result = withServer(now: now) { client throws(SoundError) -> (Int, Int)? in
                guard let volume = try client.volume() else { return nil }
                let target = Int((Double(volume) * duckTo).rounded())
                if target < volume { try client.setVolume(target) }
                return (volume, target)
            }
            switch result {
            case .some(.some(let (original, set))):
                ducked = (original, set)
                logger.debug("music: ducked \(original) → \(set)")
                return true
            case .some(nil):
                if !reportedNoVolume {
                    reportedNoVolume = true
                    logger.warning("sound: the MPD server \(client.address) reports no volume (its output has mixer_type \"none\", or it plays nothing): the music is not ducked")
                }
                return false
            case nil:
                return false
            }
        }

        /// Brings the volume back (unless someone changed it meanwhile); false when the server
        /// could not be reached (tried again later: the music is never left down).
        @discardableResult
        mutating func restore(now: Int64) -> Bool {
            guard let (original, set) = ducked else { return true }
            let result = withServer(now: now) { client throws(SoundError) -> Int? in
                let current = try client.volume()
                if current == set, set != original { try client.setVolume(original) }
                return current
            }
            guard let current = result else { return false }
            ducked = nil
            if current == set {
                logger.debug("music: restored \(set) → \(original)")
            } else {
                logger.info("sound: the music's volume was changed to \(current.map(String.init) ?? "none") during a cue; left as it is (it was \(original) before the cue)")
            }
            return true
        }

        /// Whether the connection is up, connecting when it is not and no backoff is running.
        mutating func connected(now: Int64) -> Bool {
            if client.isConnected { return true }
            guard now >= nextAttemptNs else { return false }
            do {
                try client.connect(password: music.password)
                lastUsedNs = now
                if failing { logger.notice("sound: the MPD server \(client.address) answers again; the music is ducked for cues") }
                failing = false
                backoffNs = 1_000_000_000
                return true
            } catch {
                failed(error, now: now)
                return false
            }
        }

        /// Runs `body` on the server. A connection the server closed while idle (MPD's
        /// `connection_timeout`) is opened again once, at once.
        mutating func withServer<T>(now: Int64, _ body: (MPDClient) throws(SoundError) -> T) -> T? {
            let reused = client.isConnected
            guard connected(now: now) else { return nil }
            do {
                let result = try body(client)
                lastUsedNs = now
                return result
            } catch {
                if reused, !client.isConnected, connected(now: now) {
                    do {
                        let result = try body(client)
                        lastUsedNs = now
                        return result
                    } catch { failed(error, now: now) }
                } else {
                    failed(error, now: now)
                }
                return nil
            }
        }

        mutating func failed(_ error: SoundError, now: Int64) {
            client.close()
            if !failing {
                logger.warning("sound: \(error); cues play without ducking the music, and the server is tried again (every 30 s at most)")
            }
            failing = true
            nextAttemptNs = now + backoffNs
            backoffNs = min(backoffNs * 2, MusicDucker.maxBackoffNs)
        }
    }
}

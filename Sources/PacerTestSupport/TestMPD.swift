public import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A real `mpd` (Debian's package) on 127.0.0.1 for the music ducking tests: a free port, a
/// temporary configuration, a null output with MPD's software mixer (so `setvol` works)
/// playing a quiet tone in a loop at volume 80, and a password with the `control` permission
/// (without it `setvol` is refused). Stopped by its PID.
public final class TestMPD: Sendable {
    public static let password = "duck-pass"
    public static let volume = 80
    public let process: TestProcess
    public let port: Int
    public let directory: URL

    /// - Parameter mixer: the output's `mixer_type`: `software` (the volume works), or `none`
    ///   (MPD then has no volume to set; it stays at none instead of `volume`).
    public init(mixer: String = "software") async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/mpd") else {
            throw TestSupportError("mpd is not installed: PACER_SETUP=test scripts/setup installs it (apt install mpd)")
        }
        directory = try makeTemporaryDirectory("pacer-mpd")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("music"), withIntermediateDirectories: true)
        _ = try TestProcess.run("sox", ["-n", "-r", "44100", "-c", "2", "music/tone.wav", "synth", "30", "sine", "300", "vol", "0.1"], in: directory)
        port = try freeLocalPort()
        let d = directory.path
        try """
            music_directory "\(d)/music"
            db_file "\(d)/db"
            state_file "\(d)/state"
            pid_file "\(d)/pid"
            log_file "\(d)/mpd.log"
            bind_to_address "127.0.0.1"
            port "\(port)"
            zeroconf_enabled "no"
            password "\(Self.password)@read,add,control,admin"
            default_permissions "read"
            audio_output {
              type "null"
              name "null"
              mixer_type "\(mixer)"
            }
            """.write(to: directory.appendingPathComponent("mpd.conf"), atomically: false, encoding: .utf8)
        process = try TestProcess.launch("/usr/bin/mpd", ["--no-daemon", directory.appendingPathComponent("mpd.conf").path],
                                         outputFile: directory.appendingPathComponent("mpd.out"))
        // Up, its database scanned (the tone can be queued), playing at `volume`. Generous: a
        // machine running the whole suite in parallel took more than 10 s to scan one file.
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            do {
                let client = try MPDTestClient(port: port, password: Self.password)
                defer { client.close() }
                _ = try client.command("add tone.wav")
                _ = try client.command("repeat 1")
                _ = try client.command("play")
                if mixer != "none" { _ = try client.command("setvol \(Self.volume)") }
                break
            } catch {
                if ContinuousClock.now > deadline || !process.isRunning {
                    await process.kill()
                    throw TestSupportError("mpd did not start: \(error)\n\(process.output)")
                }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    /// Stops mpd (by its PID) and removes its directory.
    public func stop() async {
        await process.terminate()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A new connection, logged in.
    public func client() throws -> MPDTestClient { try MPDTestClient(port: port, password: Self.password) }
}

/// The tests' own MPD connection (blocking, 2 s timeouts), apart from the node's client.
public final class MPDTestClient {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var open = true

    public init(port: Int, password: String?) throws {
        fd = connectToLoopback(port: port)
        guard fd >= 0 else { throw TestSupportError("cannot connect to mpd on 127.0.0.1:\(port)") }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let greeting = try readLine()
        guard greeting.hasPrefix("OK MPD") else { throw TestSupportError("not mpd: \(greeting)") }
        if let password { _ = try command("password \(password)") }
    }

    /// Sends `line`; the reply's lines before `OK`. Throws on `ACK`.
    public func command(_ line: String) throws -> [String] {
        let bytes = Array((line + "\n").utf8)
        guard send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw TestSupportError("mpd: send failed") }
        var lines: [String] = []
        while true {
            let reply = try readLine()
            if reply == "OK" { return lines }
            if reply.hasPrefix("ACK") { throw TestSupportError("mpd refused '\(line)': \(reply)") }
            lines.append(reply)
        }
    }

    /// The volume `status` reports (nil: none).
    public func volume() throws -> Int? {
        try command("status").first { $0.hasPrefix("volume: ") }.flatMap { Int($0.dropFirst(8)) }.flatMap { $0 >= 0 ? $0 : nil }
    }

    public func setVolume(_ volume: Int) throws { _ = try command("setvol \(volume)") }

    public func close() {
        if open { Glibc.close(fd) }
        open = false
    }

    deinit { close() }

    private func readLine() throws -> String {
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = recv(fd, &chunk, chunk.count, 0)
            guard n > 0 else { throw TestSupportError("mpd: connection closed or no answer within 2 s") }
            buffer += chunk[..<n]
        }
    }
}

/// MPD's volume over time, polled with `status` every 2 ms on a thread of its own.
public final class MPDVolumeTimeline: Sendable {
    public struct Sample: Sendable { public var ms: Double; public var volume: Int }
    private let samples = Mutex<[Sample]>([])
    private let stopping = Atomic<Bool>(false)
    private let ended = DispatchSemaphore(value: 0)

    public init(_ mpd: TestMPD) {
        let thread = Thread { [self] in
            defer { ended.signal() }
            guard let client = try? mpd.client() else { return }
            defer { client.close() }
            while !stopping.load(ordering: .relaxed) {
                // A failed poll means mpd is gone (a test that failed half-way): stop polling.
                guard let volume = try? client.volume() else { break }
                let ms = Date().timeIntervalSince1970 * 1000
                samples.withLock { $0.append(Sample(ms: ms, volume: volume)) }
                usleep(2_000)
            }
        }
        thread.start()
    }

    /// Stops polling; every sample, in order.
    public func stop() -> [Sample] {
        stopping.store(true, ordering: .relaxed)
        ended.wait()
        return samples.withLock { $0 }
    }

    /// A stretch below the normal volume: its start and end, each as (last sample before, first in).
    public struct Duck: Sendable, CustomStringConvertible {
        public var startBefore: Double, startAt: Double, endBefore: Double, endAt: Double
        public var low: Int, restored: Int
        public var description: String { String(format: "%.0f..%.0f→%d→%d", startAt, endAt, low, restored) }
    }

    public static func ducks(_ samples: [Sample], normal: Int) -> [Duck] {
        var ducks: [Duck] = []
        var current: Duck?
        for (i, s) in samples.enumerated() where i > 0 {
            let before = samples[i - 1]
            if s.volume < normal, before.volume >= normal {
                current = Duck(startBefore: before.ms, startAt: s.ms, endBefore: 0, endAt: 0, low: s.volume, restored: 0)
            } else if s.volume >= normal, before.volume < normal, var d = current {
                d.endBefore = before.ms
                d.endAt = s.ms
                d.restored = s.volume
                ducks.append(d)
                current = nil
            }
        }
        return ducks
    }
}

/// A cue as the ducking tests check it: when it sounds and ends (wall-clock ms), and whether
/// something announced it ahead (then it is ducked the full lead ahead).
public struct DuckedCue: Sendable {
    public var name: String
    public var soundMs: Double
    public var endMs: Double
    public var announced: Bool
    public init(name: String, soundMs: Double, endMs: Double, announced: Bool) {
        self.name = name
        self.soundMs = soundMs
        self.endMs = endMs
        self.announced = announced
    }
}

/// The ducks of a volume timeline against the cues, one duck per cue. Two kinds of problem:
/// `problems`, wrong on any machine (a duck earlier than the lead, music back before the hold
/// is over, a wrong volume), and `late`, which a starved machine can cause (a duck later than
/// its bound, music back late, ducks merged because a restore came late). The tests run a
/// scenario again when only `late` ones were found (docs/sound.md, "Music").
public struct DuckCheck: Sendable {
    public var problems: [String] = []
    public var late: [String] = []
    public var report: [String] = []

    public init(ducks: [MPDVolumeTimeline.Duck], cues: [DuckedCue], leadMs: Double, holdMs: Double, low: Int, normal: Int) {
        guard ducks.count == cues.count else {
            late.append("\(ducks.count) ducks for \(cues.count) cues (one each expected): \(ducks)")
            return
        }
        for (duck, cue) in zip(ducks, cues) {
            if duck.low != low || duck.restored != normal { problems.append("\(cue.name): \(normal) → \(duck.low) → \(duck.restored), expected \(normal) → \(low) → \(normal)") }
            // A change happened between the last poll before it and the first after it: it is
            // proven early when that first poll is early, proven late when the last one is late.
            // Never earlier than the lead, never back before the hold is over.
            if duck.startAt < cue.soundMs - leadMs - 5 { problems.append("\(cue.name): down \(Int(cue.soundMs - duck.startAt)) ms before it sounds, more than the lead") }
            if duck.endAt < cue.endMs + holdMs - 5 { problems.append("\(cue.name): back \(Int(duck.endAt - cue.endMs)) ms after it ends, before the hold is over") }
            if cue.announced {
                // Announced ahead: down well ahead, which a cue handed over at its instant
                // cannot be (it sounds `latency`, 50 ms, after it is handed over).
                if duck.startBefore > cue.soundMs - 100 { late.append("\(cue.name) (announced): down only \(Int(cue.soundMs - duck.startBefore)) ms ahead") }
            } else if duck.startBefore > cue.soundMs + 50 {
                // Handed over at its instant: down within `latency` of that (45-50 ms ahead
                // on a quiet machine); 50 ms after it sounds at most.
                late.append("\(cue.name): down \(Int(duck.startBefore - cue.soundMs)) ms after it sounds")
            }
            if duck.endBefore > cue.endMs + holdMs + 250 { late.append("\(cue.name): back \(Int(duck.endBefore - cue.endMs)) ms after it ends") }
            report.append(String(format: "%@%@: down %.0f–%.0f ms before it sounds, back %.0f–%.0f ms after it ends",
                                 cue.name, cue.announced ? " (announced)" : "", cue.soundMs - duck.startAt,
                                 cue.soundMs - duck.startBefore, duck.endBefore - cue.endMs, duck.endAt - cue.endMs))
        }
    }
}

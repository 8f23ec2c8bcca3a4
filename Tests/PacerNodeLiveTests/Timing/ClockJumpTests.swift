import Foundation
import PacerCore
import PacerTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A real `pacer run` whose wall clock is stepped while timers run (docs/timer-core.md, "Time").
///
/// The node runs with `Tests/Fixtures/fake-wall-clock.c` preloaded (compiled here with the
/// system C compiler): it adds an offset, read from a file the test rewrites, to
/// `CLOCK_REALTIME`, `gettimeofday` and `time` only. The monotonic clock and every timer
/// are untouched, so the node sleeps as usual while its wall clock jumps. (libfaketime is
/// not usable: it also moves monotonic timer deadlines, and Swift's sleeps stall or spin.)
///
/// Every bound is taken against the test's own clocks, which the shim does not touch: the
/// monotonic clock for how much real time passed, the real wall clock for `time`.
@Suite("Wall-clock jumps in a real node")
struct ClockJumpTests {
    /// The shim's offset file: signed milliseconds as text (replaced atomically).
    static let offsetVariable = "FAKE_WALL_CLOCK_OFFSET_FILE"
    /// Slack for millisecond truncation and NTP slewing the real clock during a run.
    static let slackMs: Int64 = 50
    /// How late a message may reach the probe on a loaded 2-core machine (as in TimingTests).
    static let arrivalBoundMs: Int64 = 5_000
    /// The node's CPU use after a step, as a fraction of one core (it idles near 0.01).
    static let cpuBound = 0.3

    @Test("forward +1 h and back -10 min: remaining time holds, ends_at moves, deadlines keep real time")
    func forwardAndBackward() async throws {
        let work = try makeTemporaryDirectory("pacer-clock-jump")
        defer { try? FileManager.default.removeItem(at: work) }
        let shim = try await compileShim(into: work)
        let offsetFile = work.appendingPathComponent("wall-offset-ms")
        try setOffset(0, offsetFile)
        var options = NodeOptions()
        options.environment = ["LD_PRELOAD": shim.path, Self.offsetVariable: offsetFile.path]

        try await withNode(options) { node in
            let pid = try #require(node.process?.pid)
            // Offset 0: the node's wall clock is the real one.
            try await expectNodeTime(node, offset: 0)

            // A 12 s countdown and an interval timer whose first 18 s work segment outlives both steps.
            let cdSent = ContinuousClock.now
            let cd = try await node.send(["action": "start", "spec": ["kind": "countdown", "duration": "12s"]], timer: "cd")
            let cdReplied = ContinuousClock.now
            let cdEnds = try #require(cd.state?["ends_at_ms"]?.int64, "\(cd)")
            let cdRevision = try #require(cd.revision, "\(cd)")
            let ivSent = ContinuousClock.now
            let iv = try await node.send(["action": "start", "spec": ["kind": "interval", "work": "18s", "rest": "4s", "rounds": 2]], timer: "iv")
            let ivReplied = ContinuousClock.now
            let ivEnds = try #require(iv.state?["ends_at_ms"]?.int64, "\(iv)")
            let ivRevision = try #require(iv.revision, "\(iv)")
            #expect(iv.state?["phase"] == "work", "\(iv)")
            // A paused timer: nothing wakes it, so only the jump itself republishes it.
            _ = try await node.send(["action": "start", "spec": ["kind": "countdown", "duration": "60s"]], timer: "ps")
            let ps = try await node.send(["action": "pause"], timer: "ps")
            let psRemaining = try #require(ps.state?["remaining_ms"]?.int64, "\(ps)")
            var psRevision = try #require(ps.revision, "\(ps)")

            // Forward: +1 h at about 3 s.
            try await Task.sleep(until: cdSent + .seconds(3), clock: .continuous)
            let mark = node.probe.count
            let stepped = ContinuousClock.now
            try setOffset(3_600_000, offsetFile)
            let jump = try await waitForJump(node, number: 1)
            #expect(abs(jump - 3_600_000) <= Self.slackMs, "the node logged jump_ms=\(jump) for a +3600000 ms step")

            let cdShifted = try await shiftedState(node, "cd", from: mark, after: cdRevision, stepped: stepped)
            #expect(cdShifted.json["status"] == "running", "\(cdShifted.json)")
            #expect(cdShifted.json["ends_at_ms"]?.int64 == cdEnds + jump,
                    "ends_at_ms did not move with the clock: \(cdEnds) before, \(cdShifted.json["ends_at_ms"] ?? nil) after a \(jump) ms jump")
            expectRemaining(cdShifted, segmentMs: 12_000, sent: cdSent, replied: cdReplied, notBefore: stepped)
            let ivShifted = try await shiftedState(node, "iv", from: mark, after: ivRevision, stepped: stepped)
            #expect(ivShifted.json["ends_at_ms"]?.int64 == ivEnds + jump, "\(ivShifted.json)")
            expectRemaining(ivShifted, segmentMs: 18_000, sent: ivSent, replied: ivReplied, notBefore: stepped)
            let psShifted = try await shiftedState(node, "ps", from: mark, after: psRevision, stepped: stepped)
            #expect(psShifted.json["status"] == "paused" && psShifted.json["remaining_ms"]?.int64 == psRemaining, "\(psShifted.json)")
            psRevision += 1
            try await expectNodeTime(node, offset: 3_600_000)
            // A retried request id is still a duplicate after the step (the dedup window is
            // measured on the moved timeline): the first reply again, nothing applied twice.
            let retried = try await node.send(["action": "pause", "id": try #require(ps.id)], timer: "ps")
            #expect(retried.ok && retried.revision == ps.revision, "a retried pause after the jump: \(retried), first: \(ps)")

            // The countdown ends 12 s after its start in real time, at its moved end instant.
            var cpu = try CPUSample(pid: pid)
            let finished = try await node.waitForEvent("cd", "finished", from: mark, timeout: .seconds(20))
            let finishedEvent = try #require(finished.json)
            #expect(finishedEvent["due_ms"]?.int64 == cdEnds + jump, "\(finishedEvent)")
            if let due = finishedEvent["due_ms"]?.int64, let at = finishedEvent["at_ms"]?.int64 {
                #expect(at >= due && at - due <= 1_000, "finished was emitted \(at - due) ms after it was due")
            }
            expectRealTime(of: finished, segmentMs: 12_000, sent: cdSent, replied: cdReplied, "the countdown's finished event")
            try cpu.expectIdle("between the forward step and the countdown's end")

            // Backward: -10 min, checked on the interval timer.
            let latestRevision = try #require(node.state("iv")?["revision"]?.int)
            let mark2 = node.probe.count
            let stepped2 = ContinuousClock.now
            try setOffset(3_600_000 - 600_000, offsetFile)
            let jump2 = try await waitForJump(node, number: 2)
            #expect(abs(jump2 + 600_000) <= Self.slackMs, "the node logged jump_ms=\(jump2) for a -600000 ms step")
            let ivBack = try await shiftedState(node, "iv", from: mark2, after: latestRevision, stepped: stepped2)
            #expect(ivBack.json["status"] == "running" && ivBack.json["phase"] == "work", "\(ivBack.json)")
            #expect(ivBack.json["ends_at_ms"]?.int64 == ivEnds + jump + jump2,
                    "ends_at_ms did not move back with the clock: \(ivEnds + jump) before, \(ivBack.json["ends_at_ms"] ?? nil) after a \(jump2) ms jump")
            expectRemaining(ivBack, segmentMs: 18_000, sent: ivSent, replied: ivReplied, notBefore: stepped2)
            let psBack = try await shiftedState(node, "ps", from: mark2, after: psRevision, stepped: stepped2)
            #expect(psBack.json["status"] == "paused" && psBack.json["remaining_ms"]?.int64 == psRemaining, "\(psBack.json)")
            try await expectNodeTime(node, offset: 3_600_000 - 600_000)

            // The work segment ends 18 s after the start in real time, at its moved end instant.
            cpu = try CPUSample(pid: pid)
            let rest = try await node.waitForEvent("iv", "phase", from: mark2, timeout: .seconds(20)) { $0["phase"] == "rest" }
            let restEvent = try #require(rest.json)
            #expect(restEvent["due_ms"]?.int64 == ivEnds + jump + jump2, "\(restEvent)")
            expectRealTime(of: rest, segmentMs: 18_000, sent: ivSent, replied: ivReplied, "the interval's rest phase")
            try cpu.expectIdle("between the backward step and the interval's rest phase")
            #expect(node.process?.isRunning == true, "the node ended")

            // Killed and restarted on the moved clock: the stored request ids moved with both
            // steps, so the retried pause (about 40 s ago in real time, well inside the
            // 10-minute dedup window) is still a duplicate: the first reply again, not
            // "not running". (Stored at their old instants, it would look 50 minutes old.)
            await node.kill()
            try await node.launch()
            let afterRestart = try await node.send(["action": "pause", "id": try #require(ps.id)], timer: "ps")
            #expect(afterRestart.ok && afterRestart.revision == ps.revision,
                    "a retried pause after two steps and a restart: \(afterRestart), first: \(ps)")
        }
    }

    // MARK: - Helpers

    /// Compiles the shim with the system C compiler into `directory`; fails when there is none.
    func compileShim(into directory: URL) async throws -> URL {
        let source = testsDirectory().appendingPathComponent("Fixtures/fake-wall-clock.c")
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let compilers = ["cc", "gcc", "clang"].flatMap { name in
            path.split(separator: ":").map { "\($0)/\(name)" }
        }
        guard let compiler = compilers.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw HarnessError("the clock-jump test needs a C compiler (cc, gcc or clang) on PATH to build \(source.path); install gcc and libc6-dev (scripts/test does)")
        }
        let library = directory.appendingPathComponent("fake-wall-clock.so")
        let log = directory.appendingPathComponent("cc.log")
        let process = try TestProcess.launch(compiler, ["-shared", "-fPIC", "-O2", "-o", library.path, source.path, "-ldl"], outputFile: log)
        await process.waitForExit(timeout: .seconds(120))
        await process.terminate()  // (it has ended: this only reaps its watchdog)
        let end = ProcessEnd(waitStatus: process.terminationStatus)
        guard end == .exited(0), FileManager.default.fileExists(atPath: library.path) else {
            let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            throw HarnessError("\(compiler) could not build \(source.path) (\(end)):\n\(output)")
        }
        return library
    }

    /// Sets the node's wall-clock offset (the shim re-reads the file at most every 20 ms).
    func setOffset(_ ms: Int64, _ file: URL) throws {
        try "\(ms)\n".write(to: file, atomically: true, encoding: .utf8)
    }

    /// Waits until the node has logged its `number`th wall-clock jump; returns its `jump_ms`.
    func waitForJump(_ node: TestNode, number: Int, timeout: Duration = .seconds(6)) async throws -> Int64 {
        let deadline = ContinuousClock.now + timeout
        while true {
            let jumps = node.log.split(separator: "\n")
                .filter { $0.contains("the wall clock jumped; running timers keep their remaining time and ends_at moves with the clock") }
                .map { line in line.split(separator: " ").first { $0.hasPrefix("jump_ms=") }.flatMap { Int64($0.dropFirst(8)) } }
            if jumps.count >= number {
                return try #require(jumps[number - 1], "no jump_ms in the node's jump log line")
            }
            if ContinuousClock.now >= deadline {
                throw HarnessError("the node logged \(jumps.count) wall-clock jump(s) within \(timeout), expected \(number)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The first `state` of `timer` from `start` on with a revision after `revision` (the
    /// jump adds one), which must arrive soon after the step.
    func shiftedState(_ node: TestNode, _ timer: String, from start: Int, after revision: Int, stepped: ContinuousClock.Instant) async throws -> StateSeen {
        let received = try await node.probe.waitFor(node.topic(timer, "state"), from: start, timeout: .seconds(8)) {
            ($0.json?["revision"]?.int ?? 0) > revision
        }
        let json = try #require(received.json)
        #expect(json["revision"]?.int == revision + 1, "the jump is one revision: \(json)")
        let delay = received.arrival - stepped
        #expect(delay < .milliseconds(Self.arrivalBoundMs), "the shifted state of \(timer) arrived \(delay) after the step")
        return StateSeen(json: json, arrival: received.arrival)
    }

    /// `remaining_ms` of a state published after the step is what is left of `segmentMs` in
    /// real time: the node started the segment between `sent` and `replied` and took the
    /// snapshot between `notBefore` and the state's arrival.
    func expectRemaining(
        _ state: StateSeen, segmentMs: Int64, sent: ContinuousClock.Instant, replied: ContinuousClock.Instant,
        notBefore: ContinuousClock.Instant, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let remaining = state.json["remaining_ms"]?.int64 ?? -1
        let low = segmentMs - milliseconds(state.arrival - sent) - Self.slackMs
        let high = segmentMs - milliseconds(notBefore - replied) + Self.slackMs
        #expect(remaining >= low && remaining <= high,
                "remaining_ms \(remaining) is not what is left in real time (\(low)...\(high)): \(state.json)", sourceLocation: sourceLocation)
        if let ends = state.json["ends_at_ms"]?.int64, let asOf = state.json["as_of_ms"]?.int64 {
            #expect(ends - asOf == remaining, "ends_at_ms - as_of_ms != remaining_ms: \(state.json)", sourceLocation: sourceLocation)
        }
    }

    /// An event due `segmentMs` after a start made between `sent` and `replied` arrived that
    /// long after it in real time: never before, and late by at most the arrival bound.
    func expectRealTime(
        of event: Received, segmentMs: Int64, sent: ContinuousClock.Instant, replied: ContinuousClock.Instant,
        _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let afterSent = milliseconds(event.arrival - sent)
        let afterReplied = milliseconds(event.arrival - replied)
        #expect(afterSent >= segmentMs - Self.slackMs, "\(what) arrived \(afterSent) ms after the start, before \(segmentMs) ms", sourceLocation: sourceLocation)
        #expect(afterReplied <= segmentMs + Self.arrivalBoundMs, "\(what) arrived \(afterReplied) ms after the start, expected \(segmentMs) ms", sourceLocation: sourceLocation)
    }

    /// The node's `time` reply is the real wall clock plus `offset`.
    func expectNodeTime(_ node: TestNode, offset: Int64, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let before = wallNowMs()
        let reply = try await node.send(["action": "time"])
        let after = wallNowMs()
        let now = try #require(reply.json["now_ms"]?.int64, "\(reply)", sourceLocation: sourceLocation)
        #expect(now >= before + offset - Self.slackMs && now <= after + offset + Self.slackMs,
                "the node's now_ms \(now) is not the real wall clock \(before)...\(after) + \(offset) ms (it is \(now - after) ms off)",
                sourceLocation: sourceLocation)
    }

    func milliseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

/// A `state` the probe received, decoded.
struct StateSeen {
    let json: JSONValue
    let arrival: ContinuousClock.Instant
}

/// CPU time of a process (utime + stime from /proc/<pid>/stat) since a starting point.
struct CPUSample {
    let pid: Int32
    let ticks: Int64
    let at: ContinuousClock.Instant

    init(pid: Int32) throws {
        self.pid = pid
        self.ticks = try Self.read(pid)
        self.at = .now
    }

    /// Fails when the process used more than `ClockJumpTests.cpuBound` of a core since the sample.
    func expectIdle(_ when: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let used = Double(try Self.read(pid) - ticks) / Double(sysconf(Int32(_SC_CLK_TCK)))
        let (seconds, attoseconds) = (ContinuousClock.now - at).components
        let elapsed = Double(seconds) + Double(attoseconds) * 1e-18
        let share = used / elapsed
        #expect(share < ClockJumpTests.cpuBound,
                "the node used \(Int(share * 100))% of a core (\(used) s CPU in \(elapsed) s) \(when)", sourceLocation: sourceLocation)
    }

    static func read(_ pid: Int32) throws -> Int64 {
        let text = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the command name (in parentheses, may hold spaces): state is field 3,
        // utime and stime are fields 14 and 15.
        guard let close = text.lastIndex(of: ")") else { throw HarnessError("unreadable /proc/\(pid)/stat: \(text)") }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let utime = Int64(fields[11]), let stime = Int64(fields[12]) else {
            throw HarnessError("unreadable /proc/\(pid)/stat: \(text)")
        }
        return utime + stime
    }
}

import Foundation
import Mosquitto
import PacerCore
@testable import PacerNode
import PacerTestSupport
import Testing

/// The optional command rate limit (`limits.command_rate`): the token bucket on an injected
/// clock, its keys, the configuration, and the engine's `rate_limited` reply.
@Suite("Command rate limit")
struct RateLimitTests {
    @Test("a bucket gives its burst at once, then one token per 1/rate s, never more than the burst")
    func tokenBucket() {
        var bucket = TokenBucket(perSecond: 4, burst: 3, now: 1_000)
        #expect(bucket.take(now: 1_000) == nil)
        #expect(bucket.take(now: 1_000) == nil)
        #expect(bucket.take(now: 1_000) == nil)
        #expect(bucket.take(now: 1_000) == 250, "empty: one token comes in 1/4 s")
        #expect(bucket.take(now: 1_100) == 150)
        #expect(bucket.take(now: 1_250) == nil)
        #expect(bucket.take(now: 1_250) == 250)
        // A long pause refills to the burst, not beyond.
        for _ in 0..<3 { #expect(bucket.take(now: 100_000) == nil) }
        #expect(bucket.take(now: 100_000) == 250)
        #expect(bucket.isFull(now: 100_749) == false)
        #expect(bucket.isFull(now: 100_750))
    }

    @Test("a clock that goes back refills nothing and counts on from there; a huge gap does not overflow")
    func tokenBucketClockEdges() {
        var bucket = TokenBucket(perSecond: 100_000, burst: 100_000, now: 0)
        for _ in 0..<100_000 { _ = bucket.take(now: 0) }
        #expect(bucket.take(now: -3_600_000) == 1, "an hour back: still empty")
        #expect(bucket.take(now: -3_599_999) == nil, "1 ms after the step a token is back, not an hour later")
        #expect(bucket.take(now: Millis.max / 2) == nil)
        var slow = TokenBucket(perSecond: 1, burst: 1, now: 0)
        #expect(slow.take(now: 0) == nil)
        #expect(slow.take(now: 1) == 999)
    }

    @Test("every key has its own bucket; the limiter remembers a bounded number of keys")
    func limiterKeys() {
        var limiter = CommandRateLimiter(CommandRateLimit(perSecond: 1, burst: 1))
        #expect(limiter.take(key: "a", now: 0) == nil)
        #expect(limiter.take(key: "a", now: 0) == 1_000)
        #expect(limiter.take(key: "b", now: 0) == nil)
        for k in 0..<(CommandRateLimiter.maxKeys * 2) { _ = limiter.take(key: "k\(k)", now: 0) }
        #expect(limiter.keyCount <= CommandRateLimiter.maxKeys)
        // Full buckets are forgotten first: later, every old key is full again.
        _ = limiter.take(key: "new", now: 10_000)
        #expect(limiter.keyCount == 1)
    }

    private func load(_ yaml: String) throws -> NodeConfiguration {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pacer-rate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("pacer.yaml").path
        try yaml.write(toFile: file, atomically: false, encoding: .utf8)
        return try NodeConfiguration.load(flags: .init(configFile: file), environment: [:], hostname: "box")
    }

    private func problems(_ yaml: String) -> [ConfigurationProblem] {
        do {
            _ = try load(yaml)
            return []
        } catch {
            return (error as? ConfigurationError)?.problems ?? []
        }
    }

    @Test("limits.command_rate and command_burst: off by default, burst defaults to the rate, bad values named")
    func configuration() throws {
        #expect(try load("node: x\n").limits.commandRate == nil)
        #expect(try load("limits: {command_rate: 20}\n").limits.commandRate == CommandRateLimit(perSecond: 20, burst: 20))
        #expect(try load("limits: {command_rate: 5, command_burst: 50}\n").limits.commandRate == CommandRateLimit(perSecond: 5, burst: 50))
        let zero = problems("limits: {command_rate: 0}\n")
        #expect(zero.count == 1 && zero.first?.key == "limits.command_rate", "\(zero)")
        let text = problems("limits: {command_rate: fast}\n")
        #expect(text.count == 1 && text.first?.key == "limits.command_rate", "\(text)")
        let alone = problems("limits: {command_burst: 10}\n")
        #expect(alone.count == 1 && alone.first?.key == "limits.command_burst" && alone.first?.reason.contains("needs limits.command_rate") == true, "\(alone)")
    }

    static let config = """
        limits: {command_rate: 2, command_burst: 3}
        timers:
          - {id: egg, name: Egg, spec: {kind: countdown, duration: 10m}}
        """

    @Test("over the limit a command is answered rate_limited with the wait, nothing written, nothing changed")
    func engineRefuses() async throws {
        let h = try await EngineHarness.make(config: Self.config)
        await h.connect()
        let started = try await h.send(["action": "start", "id": "s"], timer: "egg")
        #expect(started["ok"] == true)
        #expect(try await h.send(["action": "pause"], timer: "egg")["ok"] == true)
        #expect(try await h.send(["action": "resume"], timer: "egg")["ok"] == true)
        let start = h.journal.count
        let limited = try await h.send(["action": "pause", "id": "p2"], timer: "egg")
        #expect(limited["ok"] == false && limited["id"] == "p2", "\(limited)")
        #expect(limited["error"]?["code"] == "rate_limited", "\(limited)")
        #expect(limited["error"]?["message"]?.string?.hasSuffix("retry in 500 ms") == true, "\(limited)")
        #expect(!h.journal.since(start).contains { if case .write = $0 { true } else { false } }, "no store write: \(h.journal.since(start))")
        #expect(h.published(h.topic("egg", "state"), from: start).isEmpty)
        // Another sender (its own MQTT 5 response topic) has its own bucket.
        let other = h.journal.count
        await h.engine.handle(.message(MQTTMessage(topic: "\(h.base)/cmd", payload: Array(#"{"action":"time"}"#.utf8),
                                                   qos: .atLeastOnce, properties: MQTTProperties(responseTopic: "test/reply/other"))))
        #expect(h.journal.since(other).last { $0.topic == "test/reply/other" }?.json?["ok"] == true)
        // After the wait the same id is a new command (the refusal was not recorded), and applied.
        await h.pass(500)
        let retried = try await h.send(["action": "pause", "id": "p2"], timer: "egg")
        #expect(retried["ok"] == true && retried["state"]?["status"] == "paused", "\(retried)")
        #expect(try await h.send(["action": "list"])["error"]?["code"] == "rate_limited")
    }

    @Test("without limits.command_rate a burst of commands is never rate_limited")
    func engineOffByDefault() async throws {
        let h = try await EngineHarness.make(config: Self.config.replacingOccurrences(of: "limits: {command_rate: 2, command_burst: 3}\n", with: ""))
        await h.connect()
        for _ in 0..<50 {
            #expect(try await h.send(["action": "time"])["ok"] == true)
        }
    }
}

import PacerCore
import PacerProtocol
import PacerTestSupport
import Testing

/// `NodeCommand.json` is what a client sends: the node's parser must read it back as the
/// very same command, on the topic it names.
@Suite("Encoding commands (NodeCommand.json)")
struct NodeCommandEncodingTests {
    static func randomCommand(_ rng: inout SeededGenerator) -> NodeCommand {
        let ids = ["main", "kitchen", "t-1", "a_b"]
        let id = ids.randomElement(using: &rng)!
        func name() -> String? { rng.chance(0.3) ? ["Main clock", "Küche ⏱", "Row 2"].randomElement(using: &rng)! : nil }
        let request: NodeCommand.Request
        switch Int.random(in: 0..<15, using: &rng) {
        case 0:
            let plain = TimerAction.allCases.compactMap(\.plainOperation)
            request = .timer(id: id, operation: plain.randomElement(using: &rng)!, spec: nil, name: nil)
        case 1:
            var seconds = Int.random(in: -ProtocolLimits.maxAdjustSeconds...ProtocolLimits.maxAdjustSeconds, using: &rng)
            if seconds == 0 { seconds = 1 }
            request = .timer(id: id, operation: .adjust(seconds: seconds), spec: nil, name: nil)
        case 2:
            request = .timer(id: id, operation: .snooze(seconds: Int.random(in: 1...ProtocolLimits.maxSnoozeSeconds, using: &rng)), spec: nil, name: nil)
        case 3:
            let startAt: Millis? = rng.chance(0.3) ? Millis.random(in: 0...ProtocolLimits.latestInstantMs, using: &rng) : nil
            let spec: JSONValue? = switch Int.random(in: 0..<3, using: &rng) {
            case 0: nil
            case 1: ["kind": "interval", "work": "40s", "rest": "20s", "rounds": .int(Int.random(in: 1...20, using: &rng))]
            default: ["preset": "emom", "rounds": .int(Int.random(in: 1...30, using: &rng))]
            }
            request = .timer(id: id, operation: .start(spec: nil, startAt: startAt, restart: rng.chance(0.5)), spec: spec, name: name())
        case 4:
            request = .create(id: id, name: name(), spec: ["kind": "countdown", "duration": "10m"])
        case 5:
            request = .delete(id: id)
        case 6:
            request = [.list, .time].randomElement(using: &rng)!
        case 7:
            request = .saveWorkout(id: id, name: name(), spec: ["kind": "interval", "work": "45s", "rest": "15s", "rounds": .int(Int.random(in: 1...20, using: &rng))])
        case 8:
            request = .deleteWorkout(id: id)
        case 9:
            request = rng.chance(0.3) ? .clearAthlete(id: id) : .setAthlete(
                id: id, name: rng.chance(0.5) ? ["Alice", "Bo / Row 2", "Zoë"].randomElement(using: &rng)! : nil,
                colour: rng.chance(0.5) ? ["#e4572e", "#00aaff"].randomElement(using: &rng)! : nil,
                maxHR: rng.chance(0.5) ? Int.random(in: 100...250, using: &rng) : nil,
                leaderboard: rng.chance(0.3) ? rng.chance(0.5) : nil)
        case 11:
            let seconds = rng.chance(0.6) ? Int.random(in: 1...ProtocolLimits.maxAdjustSeconds, using: &rng) : nil
            let rounds = seconds == nil || rng.chance(0.4) ? Int.random(in: 1...TimerSpec.maxRounds, using: &rng) : nil
            request = .timer(id: id, operation: .extend(seconds: seconds, rounds: rounds), spec: nil, name: nil)
        case 13:
            request = [.deleteSchedule(id: id), .skipNext(schedule: id, timer: nil), .skipNext(schedule: nil, timer: id), .listSchedules,
                       .saveSchedule(schedule: ["id": .string(id), "timer": "main", "preset": "tabata"])].randomElement(using: &rng)!
        case 12:
            request = rng.chance(0.3) ? .deleteDisplay(id: id)
                : .saveDisplay(id: id, settings: ["type": "awtrix", "prefix": "awtrix_gym", "timers": .array([.string(id)])])
        case 10:
            request = .sound(muted: rng.chance(0.5) ? rng.chance(0.5) : nil, volume: rng.chance(0.5) ? Int.random(in: 0...100, using: &rng) : nil)
        default:
            request = .history(timer: rng.chance(0.5) ? id : nil,
                               sinceMs: rng.chance(0.5) ? Millis.random(in: 0...ProtocolLimits.latestInstantMs, using: &rng) : nil,
                               limit: Int(Int64.random(in: ProtocolLimits.historyLimit, using: &rng)))
        }
        return NodeCommand(
            requestID: rng.chance(0.5) ? "r\(rng.next() % 10_000)" : nil,
            at: rng.chance(0.3) ? Millis.random(in: 0...ProtocolLimits.latestInstantMs, using: &rng) : nil,
            ifRevision: rng.chance(0.3) ? Int.random(in: 0...1_000, using: &rng) : nil,
            request: request)
    }

    @Test("3,000 seeded commands: parse(json) gives the command back, on its own topic")
    func roundTrip() {
        var rng = SeededGenerator(seed: 28)
        let parser = CommandParser()
        let topics = Topics(base: "pacer/gym")
        var actions: Set<String> = []
        for _ in 0..<3_000 {
            let command = Self.randomCommand(&rng)
            actions.insert(command.action)
            let topic = command.topic(in: topics)
            let timer = topics.timerID(ofCommandTopic: topic)
            #expect(timer == command.topicTimer)
            #expect(parser.parse(command.json.jsonBytes, timerID: timer) == .success(command), "\(command.json) on \(topic)")
        }
        // Every action of the wire was tried.
        #expect(actions == Set(TimerAction.allCases.map(\.rawValue) + NodeAction.allCases.map(\.rawValue)))
    }

    @Test("a reply reads back: success with its state, refusal with the node's code and message")
    func replies() throws {
        let ok = try #require(Reply(["id": "r1", "ok": true, "timer": "main", "state": ["id": "main", "status": "running"]]))
        #expect(ok.id == "r1")
        #expect(ok.state?["status"] == "running")
        let error = ReplyError(.unknownTimer, "there is no timer 'x'")
        let refused = try #require(Reply(error.reply(id: "r2")))
        #expect(refused.id == "r2")
        #expect(refused.outcome == .failure(.init(code: "unknown_timer", message: "there is no timer 'x'")))
        #expect(try #require(Reply(ReplyError(.badJSON, "no").reply(id: .null))).id == nil)
        // A code this client does not know is kept as text.
        let newer = try #require(Reply(["ok": false, "error": ["code": "quota_exceeded", "message": "later"]]))
        guard case .failure(let refusal) = newer.outcome else { Issue.record("not a refusal"); return }
        #expect(refusal.code == "quota_exceeded" && refusal.knownCode == nil)
        #expect(Reply(["id": "r3"]) == nil)
        #expect(Reply(["ok": true, "now_ms": 1_795_320_000_000])?.nowMs == 1_795_320_000_000)
    }

    @Test("topics: a timer's, the filters, and the ids read back from them")
    func topics() {
        let topics = Topics(base: "pacer/gym")
        #expect(topics.timer("main").state == "pacer/gym/timers/main/state")
        #expect(topics.timer("+").event == "pacer/gym/timers/+/event")
        #expect(topics.timerID(ofEventTopic: "pacer/gym/timers/main/event") == "main")
        #expect(topics.timerID(ofEventTopic: "pacer/gym/timers/main/state") == nil)
        #expect(topics.timerID(ofStateTopic: "pacer/gym/timers/a/b/state") == nil)
        #expect(topics.reply(clientID: "cli-1") == "pacer/gym/reply/cli-1")
        #expect(topics.isReplyTopic(topics.reply(clientID: "cli-1")))
    }
}

import PacerControl
import PacerCore
import PacerProtocol
import Testing

@Suite("Building commands from the command line")
struct CommandBuildingTests {
    func start(_ build: (inout StartRequest) -> Void, presets: [String: JSONValue] = [:]) throws -> JSONValue {
        var request = StartRequest()
        build(&request)
        return try request.command(timer: "main", presets: presets).json
    }

    func usageError(_ build: (inout StartRequest) -> Void) -> String? {
        var request = StartRequest()
        build(&request)
        do {
            _ = try request.command(timer: "main")
            return nil
        } catch {
            #expect(error.kind == .usage)
            #expect(error.exitCode == 64)
            return error.message
        }
    }

    @Test func intervalFlagsBecomeACanonicalSpec() throws {
        let json = try start {
            $0.work = "40"; $0.rest = "0:20"; $0.rounds = 8; $0.sets = 2; $0.setRest = "1m"; $0.prepare = "10s"
            $0.exercises = ["Squat", "Row"]; $0.cooldown = "2 min"
        }
        #expect(json == [
            "action": "start",
            "spec": ["kind": "interval", "work": "40s", "rest": "20s", "rounds": 8, "sets": 2, "set_rest": "1m",
                     "prepare": "10s", "exercises": ["Squat", "Row"], "cooldown": "2m"],
        ])
    }

    @Test func eachKindOfTimer() throws {
        #expect(try start { $0.countdown = "1:30:00" } == ["action": "start", "spec": ["kind": "countdown", "duration": "1h30m"]])
        #expect(try start { $0.stopwatch = true; $0.target = "20m" } == ["action": "start", "spec": ["kind": "stopwatch", "target": "20m"]])
        #expect(try start { $0.stopwatch = true } == ["action": "start", "spec": ["kind": "stopwatch"]])
        #expect(try start { $0.rest = "90s"; $0.exercises = ["Bench"]; $0.next = "Row" }
            == ["action": "start", "spec": ["kind": "rest", "duration": "1m30s", "exercise": "Bench", "next": "Row"]])
        #expect(try start { $0.preset = "emom"; $0.rounds = 12 } == ["action": "start", "preset": "emom", "rounds": 12])
        #expect(try start { _ in } == ["action": "start"])
        #expect(try start { $0.restart = true; $0.name = "Main clock"; $0.startAt = "1795370400000" }
            == ["action": "start", "restart": true, "name": "Main clock", "start_at": 1_795_370_400_000])
        // ISO 8601 is read here, by the core's parser, and sent as epoch ms.
        #expect(try start { $0.startAt = "2026-11-22T18:00:00Z" } == ["action": "start", "start_at": 1_795_370_400_000])
    }

    @Test func aBadStartInstantFailsBeforeSending() {
        #expect(usageError { $0.startAt = "tomorrow" }?.hasPrefix("--start-at must be epoch milliseconds or ISO 8601") == true)
        #expect(usageError { $0.startAt = "2026-11-22T18:00:00+99:99" }?.contains("+99:99") == true)
        #expect(usageError { $0.startAt = "2100-01-01T00:00:01Z" }?.hasPrefix("--start-at must be between 1970") == true)
        #expect(usageError { $0.startAt = "-5" }?.hasPrefix("--start-at must be between 1970") == true)
    }

    @Test func badDurationsFailBeforeSendingAndNameTheFlag() {
        #expect(usageError { $0.work = "abc" }?.hasPrefix("--work must be a duration like 90") == true)
        #expect(usageError { $0.countdown = "1:99" }?.hasPrefix("--countdown must be a duration") == true)
        #expect(usageError { $0.work = "0s" } == "--work must be between 1 s and 7 days, got 0 s")
        #expect(usageError { $0.countdown = "0" }?.hasPrefix("--countdown must be between 1 s") == true)
        #expect(usageError { $0.rest = "-5s" } == "--rest must not be negative, got '-5s'")
        #expect(usageError { $0.work = "40s"; $0.rounds = 0 }?.hasPrefix("--rounds must be between 1 and 1,000, got 0") == true)
        #expect(usageError { $0.work = "40s"; $0.setRest = "8d" }?.hasPrefix("--set-rest must be between") == true)
    }

    @Test func flagsThatDoNotGoTogether() {
        #expect(usageError { $0.countdown = "5m"; $0.stopwatch = true }?.contains("--countdown and --stopwatch") == true)
        #expect(usageError { $0.preset = "tabata"; $0.countdown = "5m" } != nil)
        #expect(usageError { $0.countdown = "5m"; $0.rounds = 3 } == "--rounds cannot be used with --countdown")
        #expect(usageError { $0.rest = "90s"; $0.rounds = 3 }?.contains("need --work") == true)
        #expect(usageError { $0.rounds = 3 }?.contains("need a kind of timer") == true)
        #expect(usageError { $0.work = "40s"; $0.next = "Row" } == "--next is for a rest timer (--rest DURATION alone)")
        #expect(usageError { $0.work = "40s"; $0.target = "20m" }?.hasPrefix("--target is for a stopwatch") == true)
    }

    @Test func presetsAreCheckedWhenKnownAndLeftToTheNodeOtherwise() throws {
        #expect(usageError { $0.preset = "tabata"; $0.rounds = 0 }?.hasPrefix("--rounds must be between") == true)
        // Not built in and not in the local config: the node may know it.
        #expect(try start { $0.preset = "gym-special" } == ["action": "start", "preset": "gym-special"])
        // In the local config: checked.
        let presets: [String: JSONValue] = ["hiit": ["kind": "interval", "work": "45s", "rest": "15s", "rounds": 10]]
        var request = StartRequest()
        request.preset = "hiit"
        request.work = "0s"
        #expect(throws: ControlError.self) { try request.command(timer: "main", presets: presets) }
    }

    @Test func timerIDsAreCheckedAsTheNodeChecksThem() throws {
        #expect(throws: ControlError.self) { try ControlCommand.simple(.action(.pause), timer: "Main Clock") }
        #expect(throws: ControlError.self) { try ControlCommand.simple(.action(.pause), timer: "a/b") }
        #expect(throws: ControlError.self) { try ControlCommand.simple(.action(.pause), timer: "") }
        #expect((try? ControlCommand.simple(.action(.pause), timer: "main-2"))
            == ControlCommand(NodeCommand(request: .timer(id: "main-2", operation: .pause, spec: nil, name: nil))))
        #expect(try ControlCommand.simple(.action(.pause), timer: "main-2").json == ["action": "pause"])
        #expect(try ControlCommand.simple(.delete, timer: "main-2").timer == "main-2")
    }

    @Test("the simple commands are the protocol's actions that take no argument, and delete")
    func simpleCommandsComeFromTheProtocol() throws {
        #expect(SimpleTimerCommand.all.map(\.word) == ["pause", "resume", "toggle", "cancel", "reset", "finish", "skip", "back", "ack", "delete"])
        for simple in SimpleTimerCommand.all {
            let command = try ControlCommand.simple(simple, timer: "t")
            #expect(command.json == ["action": .string(simple.word)])
            #expect(try CommandParser().parse(command.json.jsonBytes, timerID: command.timer).get() == command.command)
        }
    }

    @Test func adjustAndSnoozeTakeWholeSeconds() throws {
        #expect(try ControlCommand.adjust(timer: "t", by: "+30s").json == ["action": "adjust", "seconds": 30])
        #expect(try ControlCommand.adjust(timer: "t", by: "-10").json == ["action": "adjust", "seconds": -10])
        #expect(try ControlCommand.adjust(timer: "t", by: "1m").json == ["action": "adjust", "seconds": 60])
        #expect(throws: ControlError.self) { try ControlCommand.adjust(timer: "t", by: "0") }
        #expect(throws: ControlError.self) { try ControlCommand.adjust(timer: "t", by: "1.5s") }
        #expect(throws: ControlError.self) { try ControlCommand.adjust(timer: "t", by: "25h") }
        #expect(throws: ControlError.self) { try ControlCommand.adjust(timer: "t", by: "soon") }
        #expect(try ControlCommand.snooze(timer: "t", for: nil).json == ["action": "snooze", "seconds": 60])
        #expect(try ControlCommand.snooze(timer: "t", for: "2m").json == ["action": "snooze", "seconds": 120])
        #expect(throws: ControlError.self) { try ControlCommand.snooze(timer: "t", for: "0") }
    }
}

@Suite("Clock offset")
struct ClockOffsetTests {
    @Test func theSampleWithTheSmallestRoundTripWins() throws {
        // The node's clock is 500 ms ahead. A slow sample whose reply came late is wrong by up to half its round trip.
        let samples: [ClockOffset.Sample] = [
            .init(sentMs: 1000, nodeMs: 1500 + 10, receivedMs: 1300),  // 300 ms round trip, reply made early
            .init(sentMs: 2000, nodeMs: 2504, receivedMs: 2008),       // 8 ms
            .init(sentMs: 3000, nodeMs: 3540, receivedMs: 3090),       // 90 ms
        ]
        let offset = try #require(ClockOffset(samples: samples))
        #expect(offset.roundTripMs == 8)
        #expect(offset.offsetMs == 500)
        #expect(offset.nodeTime(atLocal: 10_000) == 10_500)
        #expect(ClockOffset(samples: []) == nil)
    }

    @Test func aClockBehindGivesANegativeOffset() throws {
        let offset = try #require(ClockOffset(samples: [.init(sentMs: 10_000, nodeMs: 7_010, receivedMs: 10_020)]))
        #expect(offset.offsetMs == -3000)
    }
}

@Suite("Result lines")
struct OutputTests {
    @Test func aStateInOneLine() {
        let state: JSONValue = ["id": "main", "status": "running", "phase": "work", "display": "0:13", "round": 3, "rounds": 8,
                                "set": 1, "sets": 1, "label": "Burpees", "next_label": "Squat", "hr": 142, "counts_up": false]
        #expect(ControlOutput.stateLine(TimerState(state: state)!) == "main: running · work 0:13 · round 3/8 · Burpees → Squat · ♥ 142")
        let paused: JSONValue = ["id": "k", "status": "paused", "phase": "paused", "display": "4:59", "round": 1, "rounds": 1]
        #expect(ControlOutput.stateLine(TimerState(state: paused)!) == "k: paused · 4:59 left")
        #expect(ControlOutput.replyLine(Reply(["ok": true, "timer": "k", "deleted": true])!) == "k: deleted")
    }

    @Test func theListAsATable() {
        let reply: JSONValue = ["ok": true, "timers": [
            ["id": "kitchen", "name": "Kitchen", "status": "running", "phase": "countdown", "display": "11:02"],
            ["id": "main", "name": "Main clock", "status": "idle", "phase": "idle", "display": "0:40"],
        ]]
        #expect(ControlOutput.listLines(Reply(reply)!) == [
            "TIMER    NAME        STATUS   PHASE      TIME",
            "kitchen  Kitchen     running  countdown  11:02",
            "main     Main clock  idle     idle       0:40",
        ])
        #expect(ControlOutput.listLines(Reply(["ok": true, "timers": []])!).first?.hasPrefix("no timers") == true)
    }

    @Test func errorsNameTheNodesCode() {
        let error = ControlError(.refused(code: "invalid_state"), "cannot pause timer 'main': it is idle; start it first")
        #expect(ControlOutput.errorLine(command: "pause", error) == "pacer pause: cannot pause timer 'main': it is idle; start it first (invalid_state)")
        #expect(error.exitCode == 1)
        #expect(ControlError(.timeout, "").exitCode == 3)
        #expect(ControlError(.connection, "").exitCode == 4)
    }
}

@Suite("Result lines by status")
struct StatusLineTests {
    @Test func eachStatusSaysWhatMatters() {
        func line(_ status: String, _ phase: String, countsUp: Bool = false) -> String {
            ControlOutput.stateLine(TimerState(state: ["id": "t", "status": .string(status), "phase": .string(phase), "display": "1:05",
                                                       "round": 1, "rounds": 1, "counts_up": .bool(countsUp)])!)
        }
        #expect(line("running", "rest") == "t: running · rest 1:05")
        #expect(line("paused", "paused") == "t: paused · 1:05 left")
        #expect(line("paused", "paused", countsUp: true) == "t: paused · 1:05 elapsed")
        #expect(line("idle", "idle") == "t: idle · 1:05")
        #expect(line("expired", "expired") == "t: expired")
        #expect(line("finished", "finished") == "t: finished")
        #expect(line("cancelled", "cancelled") == "t: cancelled")
    }
}

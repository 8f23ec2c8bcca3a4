import Foundation
import Mosquitto
import PacerControl
import PacerCore
import PacerTestSupport
import Testing

/// The control commands as real processes against a real node on a real broker.
@Suite("Control commands against a node", .serialized, .timeLimit(.minutes(5)))
struct ControlLiveTests {
    func json(_ result: CommandResult) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(result.output.utf8))
    }

    func expectOK(_ result: CommandResult, _ line: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == 0, "\(result)", sourceLocation: sourceLocation)
        #expect(result.output.trimmingCharacters(in: .whitespacesAndNewlines) == line, sourceLocation: sourceLocation)
    }

    @Test func aTimerDrivenFromTheShell() async throws {
        try await withLiveNode { node in
            let start = try await node.pacer(["start", "t1", "--work", "40s", "--rest", "20s", "--rounds", "8",
                                              "--exercise", "Squat", "--exercise", "Row"])
            #expect(start.status == 0, "\(start)")
            #expect(start.output.hasPrefix("t1: running · work 0:"), "\(start)")
            #expect(start.output.contains("round 1/8 · Squat → Row"))

            expectOK(try await node.pacer(["pause", "t1"]), try await node.pacer(["status", "t1"]).output.trimmingCharacters(in: .newlines))
            let paused = try json(try await node.pacer(["status", "t1", "--json"]))
            #expect(paused["status"] == "paused")
            let left = try #require(paused["remaining_ms"]?.int64)
            #expect((30_000...40_000).contains(left))

            let adjusted = try await node.pacer(["adjust", "t1", "-10"])
            #expect(adjusted.status == 0, "\(adjusted)")
            #expect(try json(try await node.pacer(["status", "t1", "--json"]))["remaining_ms"]?.int64 == left - 10_000)
            #expect(try await node.pacer(["adjust", "t1", "+30s"]).status == 0)
            #expect(try json(try await node.pacer(["status", "t1", "--json"]))["remaining_ms"]?.int64 == left + 20_000)

            let resumed = try await node.pacer(["resume", "t1"])
            #expect(resumed.status == 0 && resumed.output.hasPrefix("t1: running · work "), "\(resumed)")
            let toggled = try await node.pacer(["toggle", "t1"])
            #expect(toggled.status == 0 && toggled.output.hasPrefix("t1: paused"), "\(toggled)")
            let skipped = try await node.pacer(["skip", "t1"])
            #expect(skipped.status == 0 && skipped.output.hasPrefix("t1: paused · 0:20 left · round 1/8"), "\(skipped)")
            #expect(try await node.pacer(["back", "t1"]).status == 0)
            let finished = try await node.pacer(["finish", "t1"])
            #expect(finished.status == 0 && finished.output.hasPrefix("t1: finished"), "\(finished)")
            let reset = try await node.pacer(["reset", "t1"])
            #expect(reset.status == 0 && reset.output.hasPrefix("t1: idle"), "\(reset)")

            let list = try await node.pacer(["list"])
            #expect(list.status == 0)
            #expect(list.output.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
                == [["TIMER", "NAME", "STATUS", "PHASE", "TIME"], ["t1", "t1", "idle", "idle", "0:40"]], "\(list)")

            expectOK(try await node.pacer(["delete", "t1"]), "t1: deleted")
            #expect(try json(try await node.pacer(["list", "--json"])) == [])
        }
    }

    @Test func everyKindOfTimerStarts() async throws {
        try await withLiveNode { node in
            let tabata = try await node.pacer(["start", "a", "--preset", "tabata", "--name", "Tabata"])
            #expect(tabata.status == 0 && tabata.output.hasPrefix("a: running · prepare 0:"), "\(tabata)")
            let emom = try await node.pacer(["start", "b", "--preset", "emom", "--rounds", "12"])
            #expect(emom.status == 0 && emom.output.contains("round 1/12"), "\(emom)")
            let countdown = try await node.pacer(["start", "c", "--countdown", "1:30:00"])
            #expect(countdown.status == 0 && countdown.output.hasPrefix("c: running · countdown 1:"), "\(countdown)")
            let stopwatch = try await node.pacer(["start", "d", "--stopwatch", "--target", "20m"])
            #expect(stopwatch.status == 0 && stopwatch.output.hasPrefix("d: running · session 0:0"), "\(stopwatch)")
            let rest = try await node.pacer(["start", "e", "--rest", "90s", "--exercise", "Bench", "--next", "Row"])
            #expect(rest.status == 0 && rest.output.hasPrefix("e: running · rest 1:"), "\(rest)")
            #expect(rest.output.contains("Bench → Row"), "\(rest)")
            // Starting a running timer again needs --restart.
            let again = try await node.pacer(["start", "c", "--countdown", "5m"])
            #expect(again.status == 1 && again.output.contains("(invalid_state)"), "\(again)")
            let restarted = try await node.pacer(["start", "c", "--countdown", "5m", "--restart"])
            #expect(restarted.status == 0 && restarted.output.hasPrefix("c: running · countdown 5:00"), "\(restarted)")
            let names = try json(try await node.pacer(["list", "--json"])).array?.compactMap { $0["id"]?.string }
            #expect(names == ["a", "b", "c", "d", "e"])
        }
    }

    @Test func theNodesRefusalExitsWithOneAndItsMessage() async throws {
        try await withLiveNode { node in
            let unknown = try await node.pacer(["pause", "nope"])
            #expect(unknown.status == 1, "\(unknown)")
            #expect(unknown.output.hasPrefix("pacer pause: there is no timer 'nope'"), "\(unknown)")
            #expect(unknown.output.contains("(unknown_timer)"))

            #expect(try await node.pacer(["start", "k", "--countdown", "10m"]).status == 0)
            let ack = try await node.pacer(["ack", "k"])
            #expect(ack.status == 1 && ack.output.contains("(invalid_state)"), "\(ack)")
            #expect(try await node.pacer(["pause", "k"]).status == 0)
            let twice = try await node.pacer(["pause", "k"])
            #expect(twice.status == 1 && twice.output.contains("(invalid_state)"), "\(twice)")
            let status = try await node.pacer(["status", "ghost"])
            #expect(status.status == 1 && status.output.contains("there is no timer 'ghost'"), "\(status)")
        }
    }

    @Test func badInputFailsBeforeAnythingIsSent() async throws {
        try await withLiveNode { node in
            for (arguments, message) in [
                (["start", "x", "--work", "0s"], "--work must be between 1 s and 7 days, got 0 s"),
                (["start", "x", "--countdown", "soon"], "--countdown must be a duration like 90"),
                (["start", "x", "--countdown", "5m", "--stopwatch"], "give only one of"),
                (["start", "Bad/Id", "--countdown", "5m"], "timer id"),
                (["adjust", "x", "soon"], "the amount must be a duration"),
                (["adjust", "x", "1.5s"], "whole seconds"),
                (["snooze", "x", "0"], "snooze takes whole seconds"),
            ] {
                let result = try await node.pacer(arguments)
                #expect(result.status == 64, "\(arguments): \(result)")
                #expect(result.output.contains(message), "\(arguments): \(result)")
            }
            #expect(try json(try await node.pacer(["list", "--json"])) == [], "nothing was created")
        }
    }

    @Test func noNodeMeansATimeoutThatSaysWhy() async throws {
        let port = try await LiveBroker.shared.port()
        let directory = FileManager.default.temporaryDirectory
        let ghost = "ghost" + UUID().uuidString.prefix(6).lowercased()
        let result = try await runPacer(["pause", "t", "--broker", "mqtt://127.0.0.1:\(port)", "--node", ghost, "--timeout", "1"], in: directory)
        #expect(result.status == 3, "\(result)")
        #expect(result.output.contains("no reply from the node at pacer/\(ghost) within 1 s"), "\(result)")
        #expect(result.output.contains("nothing was ever published on pacer/\(ghost)/status"), "\(result)")
        #expect(result.elapsed >= .seconds(1) && result.elapsed < .seconds(15), "\(result)")

        // A node that stopped: its status says offline, and so does the error.
        let node = try await LiveNode.start()
        await node.stop()
        let offline = try await node.pacer(["pause", "t", "--timeout", "1"])
        #expect(offline.status == 3, "\(offline)")
        #expect(offline.output.contains("the node is offline"), "\(offline)")
        await node.finish()
    }

    @Test func noBrokerExitsWithFour() async throws {
        let port = try freeLocalPort()
        let result = try await runPacer(["list", "--broker", "mqtt://127.0.0.1:\(port)", "--timeout", "1"],
                                        in: FileManager.default.temporaryDirectory)
        #expect(result.status == 4, "\(result)")
        #expect(result.output.contains("cannot connect to the broker at mqtt://127.0.0.1:\(port)"), "\(result)")
    }

    @Test func mqtt311RepliesComeOnTheReplyTopic() async throws {
        try await withLiveNode(mqttVersion: "3.1.1") { node in
            let start = try await node.pacer(["start", "t", "--countdown", "5m"])
            #expect(start.status == 0 && start.output.hasPrefix("t: running · countdown "), "\(start)")
            let unknown = try await node.pacer(["pause", "nope"])
            #expect(unknown.status == 1 && unknown.output.contains("(unknown_timer)"), "\(unknown)")
            let toggled = try await node.pacer(["toggle", "t"])
            #expect(toggled.status == 0 && toggled.output.hasPrefix("t: paused"), "\(toggled)")
        }
    }

    @Test func theSameConfigurationFileGivesTheNodesPresets() async throws {
        let config = "presets:\n  hiit: {kind: interval, work: 45s, rest: 15s, rounds: 10}\n"
        try await withLiveNode(config: config) { node in
            let file = node.directory.appendingPathComponent("pacer.yaml").path
            let started = try await node.pacer(["start", "t", "--preset", "hiit", "--config", file])
            #expect(started.status == 0 && started.output.hasPrefix("t: running · work 0:4") && started.output.contains("round 1/10"), "\(started)")
            // Checked here, with the file's presets: nothing is sent.
            let bad = try await node.pacer(["start", "u", "--preset", "hiit", "--rounds", "0", "--config", file])
            #expect(bad.status == 64 && bad.output.contains("--rounds must be between 1 and 1,000, got 0"), "\(bad)")
            // Without the file the tool does not know the preset and leaves it to the node, which knows it.
            let elsewhere = try await node.pacer(["start", "v", "--preset", "hiit"])
            #expect(elsewhere.status == 0, "\(elsewhere)")
            let unknown = try await node.pacer(["start", "w", "--preset", "nope"])
            #expect(unknown.status == 1 && unknown.output.contains("unknown preset 'nope'") && unknown.output.contains("(invalid_spec)"), "\(unknown)")
            let names = try json(try await node.pacer(["list", "--json"])).array?.compactMap { $0["id"]?.string }
            #expect(names == ["t", "v"])
        }
    }

    @Test func aClassesAthletesListedSetAndCleared() async throws {
        let straps = "hr-ctl-" + UUID().uuidString.prefix(8).lowercased()
        let config = """
            heart_rate:
              max_hr: 190
              athletes:
                topic: \(straps)/+
                profiles:
                  - {id: carl, name: Carl, max_hr: 180}

            """
        try await withLiveNode(config: config) { node in
            // The configuration's seed is listed before anyone walks in.
            let seeded = try await node.pacer(["athlete", "list"])
            #expect(seeded.status == 0, "\(seeded)")
            #expect(seeded.output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
                == [["ATHLETE", "NAME", "COLOUR", "MAX_HR", "PRESENT"], ["carl", "Carl", "-", "180", "no"]], "\(seeded)")

            expectOK(try await node.pacer(["athlete", "set", "alice", "--name", "Alice", "--colour", "#E4572E", "--max-hr", "188"]),
                     "alice: saved · Alice · #e4572e · max HR 188")
            expectOK(try await node.pacer(["athlete", "set", "carl", "--max-hr", "176"]), "carl: saved · max HR 176")
            // A strap's readings (one a poll, as a strap sends about one a second): the athlete is
            // present, with the profile set for it.
            let publisher = try MQTTClient(configuration: .v5(port: node.port, clientID: "pacer-ctl-hr-\(UUID().uuidString.prefix(8))",
                                                             cleanStart: true, sessionExpiryInterval: 0))
            try await publisher.connect()
            var list: JSONValue = .null
            for _ in 0..<30 {
                try await publisher.publish(to: "\(straps)/alice", payload: Array("151".utf8), qos: .atLeastOnce, retain: false)
                list = try json(try await node.pacer(["athlete", "list", "--json"]))
                if list["athletes"]?.array?.first?["present"] == true { break }
                try await Task.sleep(for: .milliseconds(300))
            }
            await publisher.disconnect()
            #expect(list["athletes"] == [
                ["id": "alice", "name": "Alice", "colour": "#e4572e", "max_hr": 188, "present": true],
                ["id": "carl", "name": "carl", "colour": nil, "max_hr": 176, "present": false],
            ], "\(list)")

            // Cleared: the configuration's profile applies again; a second clear is refused.
            expectOK(try await node.pacer(["athlete", "clear", "carl"]), "carl: cleared · Carl · max HR 180")
            let again = try await node.pacer(["athlete", "clear", "carl"])
            #expect(again.status == 1 && again.output.contains("no profile for athlete 'carl'") && again.output.contains("(unknown_athlete)"), "\(again)")
            let table = try await node.pacer(["athlete"])  // `list` is the default
            #expect(table.status == 0 && table.output.contains("carl     Carl   -        180     no"), "\(table)")

            // Bad input: nothing is sent.
            for (arguments, message) in [
                (["athlete", "set", "Alice", "--name", "A"], "an athlete id"),
                (["athlete", "set", "dana"], "give --name, --colour, --max-hr or --leaderboard"),
                (["athlete", "set", "dana", "--colour", "red"], "--colour: a colour is #rrggbb"),
                (["athlete", "set", "dana", "--max-hr", "300"], "--max-hr must be between 100 and 250"),
                (["athlete", "clear", "a/b"], "an athlete id"),
            ] {
                let result = try await node.pacer(arguments)
                #expect(result.status == 64, "\(arguments): \(result)")
                #expect(result.output.contains(message), "\(arguments): \(result)")
            }
            let after = try json(try await node.pacer(["athlete", "list", "--json"]))
            #expect(after["athletes"]?.array?.compactMap { $0["id"]?.string } == ["alice", "carl"], "\(after)")
        }
    }

    @Test func theTimetableListedSkippedSavedAndDeleted() async throws {
        let config = """
            time_zone: UTC
            timers:
              - {id: main, name: Main, spec: {kind: countdown, duration: "00:05:00"}}
            schedules:
              - id: hiit
                name: HIIT 45
                timer: main
                preset: tabata
                weekly:
                  - {days: daily, at: ["00:00", "23:59"]}

            """
        try await withLiveNode(config: config) { node in
            let list = try await node.pacer(["schedule", "list"])
            #expect(list.status == 0, "\(list)")
            let rows = list.output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            #expect(rows.first == ["SCHEDULE", "NAME", "TIMER", "SOURCE"], "\(list)")
            #expect(rows.contains(["hiit", "HIIT", "45", "main", "configuration"]), "\(list)")
            #expect(list.output.contains(" (UTC):\n"), "\(list)")
            #expect(rows.contains { $0.starts(with: ["00:00", "HIIT", "45", "main"]) }, "\(list)")
            #expect(rows.contains { $0.starts(with: ["23:59", "HIIT", "45", "main"]) }, "\(list)")

            // One saved by command, listed with its source, its next class skipped, then deleted.
            let schedule = #"{"id":"noon","timer":"main","preset":"emom","weekly":[{"days":"daily","at":"12:00"}]}"#
            expectOK(try await node.pacer(["schedule", "save", "--json", schedule]), "noon: saved")
            let file = node.directory.appendingPathComponent("late.json")
            try #"{"id":"late","name":"Late","timer":"main","preset":"amrap","dates":[{"date":"2099-01-01","at":"20:00"}]}"#
                .write(to: file, atomically: false, encoding: .utf8)
            expectOK(try await node.pacer(["schedule", "save", "--file", file.path]), "late: saved")
            let json = try json(try await node.pacer(["schedule", "list", "--json"]))
            let sources = json["schedules"]?.array?.map { [$0["id"]?.string ?? "?", $0["source"]?.string ?? "?"] }
            #expect(sources == [["hiit", "configuration"], ["late", "command"], ["noon", "command"]], "\(json)")
            #expect(json["classes"]?["time_zone"] == "UTC")
            expectOK(try await node.pacer(["schedule", "skip", "late"]), "late: skipped the class at 2099-01-01T20:00:00.000Z")
            let again = try await node.pacer(["schedule", "skip", "late"])
            #expect(again.status == 1 && again.output.contains("(invalid_state)"), "\(again)")
            expectOK(try await node.pacer(["schedule", "delete", "noon"]), "noon: deleted")
            let gone = try await node.pacer(["schedule", "delete", "noon"])
            #expect(gone.status == 1 && gone.output.contains("there is no schedule 'noon'") && gone.output.contains("(unknown_schedule)"), "\(gone)")
            let refused = try await node.pacer(["schedule", "save", "--json", #"{"id":"x","timer":"main","preset":"tabata","weekly":[{"days":"daily","at":"25:00"}]}"#])
            #expect(refused.status == 1 && refused.output.contains("(invalid_argument)"), "\(refused)")

            for (arguments, message) in [
                (["schedule", "skip", "HIIT"], "the schedule id is 1 to 64"),
                (["schedule", "save"], "give the schedule as --file FILE or --json"),
                (["schedule", "save", "--json", "{"], "--json is not JSON"),
                (["schedule", "save", "--json", #"{"id":"a","timer":"main"}"#], "exactly one of"),
                (["display", "save", "wall", "--json", #"{"type":"lametric"}"#], #"a display's "type" is "awtrix" or "wled""#),
                (["display", "delete", "a/b"], "the display id is 1 to 64"),
            ] {
                let result = try await node.pacer(arguments)
                #expect(result.status == 64 && result.output.contains(message), "\(arguments): \(result)")
            }
        }
    }

    @Test func displaysSavedListedAndDeleted() async throws {
        try await withLiveNode { node in
            let empty = try await node.pacer(["display", "list"])
            #expect(empty.status == 0 && empty.output.hasPrefix("no displays saved by command"), "\(empty)")
            expectOK(try await node.pacer(["display", "save", "wall", "--json", #"{"type":"awtrix","prefix":"awtrix_ctl","timers":["main"]}"#]),
                     "wall: saved")
            var listed = try await node.pacer(["display", "list"])
            // The retained document is published after the write: poll briefly for it.
            for _ in 0..<20 where !listed.output.contains("wall") {
                try await Task.sleep(for: .milliseconds(100))
                listed = try await node.pacer(["display", "list"])
            }
            #expect(listed.status == 0, "\(listed)")
            #expect(listed.output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
                == [["DISPLAY", "TYPE", "PREFIX/TOPIC", "TIMERS"], ["wall", "awtrix", "awtrix_ctl", "main"]], "\(listed)")
            let bad = try await node.pacer(["display", "save", "wall", "--json", #"{"type":"awtrix","prefix":"awtrix_ctl","timers":["main"],"brightness":0}"#])
            #expect(bad.status == 1 && bad.output.contains("brightness") && bad.output.contains("(invalid_argument)"), "\(bad)")
            expectOK(try await node.pacer(["display", "delete", "wall"]), "wall: deleted")
            let gone = try await node.pacer(["display", "delete", "wall"])
            #expect(gone.status == 1 && gone.output.contains("(unknown_display)"), "\(gone)")
        }
    }

    @Test func aNodeWithoutAClassSaysSo() async throws {
        try await withLiveNode { node in
            let list = try await node.pacer(["athlete", "list"])
            #expect(list.status == 1 && list.output.contains("it has no class; add heart_rate.athletes"), "\(list)")
            let set = try await node.pacer(["athlete", "set", "alice", "--name", "Alice"])
            #expect(set.status == 1 && set.output.contains("this node has no class") && set.output.contains("(invalid_argument)"), "\(set)")
        }
    }

    @Test func theClockOffsetOfANodeOnTheSameClockIsAboutZero() async throws {
        try await withLiveNode { node in
            var configuration = MQTTConfiguration.v5(port: node.port, clientID: ControlClient.makeClientID(node: node.nodeID),
                                                      cleanStart: true, sessionExpiryInterval: 0)
            configuration.connectTimeout = .seconds(10)
            let client = try ControlClient(configuration: configuration, baseTopic: node.base)
            try await client.connect()
            let offset = try await client.measureOffset(samples: 5, timeout: .seconds(10))
            await client.disconnect()
            // Same machine, same wall clock: the offset is within half the best round trip (+1 ms rounding).
            #expect(abs(offset.offsetMs) <= offset.roundTripMs / 2 + 1, "\(offset)")
            #expect(offset.roundTripMs < 2000, "\(offset)")
            #expect(client.nodeStatus == "online")
        }
    }
}

@Suite("Help")
struct HelpTests {
    @Test(arguments: ["start", "pause", "resume", "toggle", "cancel", "reset", "finish", "skip", "back", "adjust", "ack",
                      "snooze", "delete", "status", "list", "watch", "athlete", "athlete set", "athlete clear",
                      "schedule", "schedule list", "schedule skip", "schedule save", "schedule delete",
                      "display", "display list", "display save", "display delete"])
    func everyControlCommandHasHelpWithExamples(_ command: String) async throws {
        let result = try await runPacer(command.split(separator: " ").map(String.init) + ["--help"], in: FileManager.default.temporaryDirectory)
        #expect(result.status == 0, "\(result)")
        #expect(result.output.hasPrefix("OVERVIEW: "), "\(command): \(result.output.prefix(200))")
        #expect(result.output.contains("Examples:\n  pacer \(command)"), "\(command)")
        #expect(result.output.contains("Exit codes:"), "\(command)")
    }
}

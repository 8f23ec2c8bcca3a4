import PacerControl
import PacerCore
import PacerProtocol
import Testing

@Suite("Athlete commands from the command line")
struct AthleteCommandTests {
    /// What the node's own parser reads from the command's JSON (on `<base>/cmd`).
    func parsedByTheNode(_ command: ControlCommand) throws -> NodeCommand {
        #expect(command.timer == nil, "an athlete command goes to <base>/cmd")
        return try CommandParser().parse(command.json.jsonBytes, timerID: nil).get()
    }

    func usageMessage(_ build: () throws(ControlError) -> ControlCommand) -> String? {
        do {
            _ = try build()
            return nil
        } catch {
            #expect(error.kind == .usage)
            #expect(error.exitCode == 64)
            return error.message
        }
    }

    @Test func setSendsTheProfileTheNodeReadsBack() throws {
        let command = try ControlCommand.setAthlete("alice", name: "Alice B/C", colour: "#E4572E", maxHR: 188)
        #expect(command.json == ["action": "set_athlete", "athlete": "alice", "name": "Alice B/C", "colour": "#e4572e", "max_hr": 188])
        #expect(try parsedByTheNode(command) == command.command)
        // One member alone: the others are not sent (the node unsets them).
        let one = try ControlCommand.setAthlete("bob-2", name: nil, colour: nil, maxHR: 100)
        #expect(one.json == ["action": "set_athlete", "athlete": "bob-2", "max_hr": 100])
        #expect(try parsedByTheNode(one) == one.command)
        #expect(try ControlCommand.setAthlete("c", name: nil, colour: nil, maxHR: 250).json["max_hr"] == 250)
    }

    @Test func clearSendsTheAthlete() throws {
        let command = try ControlCommand.clearAthlete("alice")
        #expect(command.json == ["action": "clear_athlete", "athlete": "alice"])
        #expect(try parsedByTheNode(command) == command.command)
    }

    @Test func badInputFailsBeforeSendingAndNamesTheFlag() {
        #expect(usageMessage { () throws(ControlError) in try .setAthlete("Alice", name: "A", colour: nil, maxHR: nil) }?.hasPrefix("an athlete id") == true)
        #expect(usageMessage { () throws(ControlError) in try .setAthlete("hr/alice", name: "A", colour: nil, maxHR: nil) }?.contains("\"hr/alice\"") == true)
        #expect(usageMessage { () throws(ControlError) in try .clearAthlete("") }?.hasPrefix("an athlete id") == true)
        #expect(usageMessage { () throws(ControlError) in try .setAthlete("a", name: nil, colour: nil, maxHR: nil) }?
            .hasPrefix("give --name, --colour, --max-hr or --leaderboard") == true)
        #expect(usageMessage { () throws(ControlError) in try .setAthlete("a", name: nil, colour: "red", maxHR: nil) }?
            .hasPrefix("--colour: a colour is #rrggbb") == true)
        #expect(usageMessage { () throws(ControlError) in try .setAthlete("a", name: nil, colour: "#12345g", maxHR: nil) } != nil)
        #expect(usageMessage { () throws(ControlError) in try .setAthlete("a", name: nil, colour: nil, maxHR: 99) }
            == "--max-hr must be between 100 and 250 bpm, got 99")
        #expect(usageMessage { () throws(ControlError) in try .setAthlete("a", name: nil, colour: nil, maxHR: 251) } != nil)
        #expect(usageMessage { () throws(ControlError) in try .setAthlete("a", name: "", colour: nil, maxHR: nil) }?.hasPrefix("--name") == true)
        #expect(usageMessage { () throws(ControlError) in try .setAthlete("a", name: "tab\there", colour: nil, maxHR: nil) }?.hasPrefix("--name") == true)
        #expect(usageMessage { () throws(ControlError) in try .setAthlete("a", name: String(repeating: "x", count: 101), colour: nil, maxHR: nil) }
            == "--name is 101 characters; the limit is 100")
    }

    @Test func theRepliesInOneLine() {
        let saved: JSONValue = ["ok": true, "athlete": "alice", "saved": true,
                                "profile": ["id": "alice", "name": "Alice", "colour": "#e4572e", "max_hr": 188]]
        #expect(ControlOutput.athleteReplyLine(Reply(saved)!) == "alice: saved · Alice · #e4572e · max HR 188")
        let partial: JSONValue = ["ok": true, "athlete": "bob", "saved": true, "profile": ["id": "bob", "name": nil, "colour": nil, "max_hr": 176]]
        #expect(ControlOutput.athleteReplyLine(Reply(partial)!) == "bob: saved · max HR 176")
        // Cleared: what applies now (the configuration's profile, if any).
        let cleared: JSONValue = ["ok": true, "athlete": "alice", "cleared": true, "profile": ["id": "alice", "name": nil, "colour": nil, "max_hr": nil]]
        #expect(ControlOutput.athleteReplyLine(Reply(cleared)!) == "alice: cleared · no profile left on the node")
        let seeded: JSONValue = ["ok": true, "athlete": "carl", "cleared": true, "profile": ["id": "carl", "name": "Carl", "colour": nil, "max_hr": 190]]
        #expect(ControlOutput.athleteReplyLine(Reply(seeded)!) == "carl: cleared · Carl · max HR 190")
    }

    @Test func theListAsATable() {
        let list: JSONValue = ["athletes": [
            ["id": "alice", "name": "Alice", "colour": "#e4572e", "max_hr": 188, "present": true],
            ["id": "strap7", "name": "strap7", "colour": nil, "max_hr": nil, "present": false],
        ], "stale_after_ms": 10_000, "absent_after_ms": 180_000, "as_of_ms": 1]
        #expect(ControlOutput.athleteLines(list) == [
            "ATHLETE  NAME    COLOUR   MAX_HR  PRESENT",
            "alice    Alice   #e4572e  188     yes",
            "strap7   strap7  -        -       no",
        ])
        #expect(ControlOutput.athleteLines(["athletes": []]).first?.hasPrefix("no athletes yet") == true)
    }
}

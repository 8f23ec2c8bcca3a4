import PacerControl
import PacerCore
import PacerProtocol
import Testing

@Suite("Schedule and display commands from the command line")
struct TimetableCommandTests {
    /// What the node's own parser reads from the command's JSON (on `<base>/cmd`).
    func parsedByTheNode(_ command: ControlCommand) throws -> NodeCommand {
        #expect(command.timer == nil, "a schedule or display command goes to <base>/cmd")
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

    @Test func scheduleCommandsSendWhatTheNodeReadsBack() throws {
        let text = #"{"id":"hiit","timer":"main","preset":"tabata","weekly":[{"days":"weekdays","at":["06:30"]}]}"#
        let save = try ControlCommand.saveSchedule(json: text, flag: "--json")
        #expect(String(decoding: save.json.jsonBytes, as: UTF8.self)
            == #"{"action":"save_schedule","schedule":{"id":"hiit","preset":"tabata","timer":"main","weekly":[{"at":["06:30"],"days":"weekdays"}]}}"#)
        #expect(try parsedByTheNode(save) == save.command)

        let skip = try ControlCommand.skipNext("hiit")
        #expect(String(decoding: skip.json.jsonBytes, as: UTF8.self) == #"{"action":"skip_next","schedule":"hiit"}"#)
        #expect(try parsedByTheNode(skip) == skip.command)

        let delete = try ControlCommand.deleteSchedule("hiit-2")
        #expect(String(decoding: delete.json.jsonBytes, as: UTF8.self) == #"{"action":"delete_schedule","schedule":"hiit-2"}"#)
        #expect(try parsedByTheNode(delete) == delete.command)

        #expect(String(decoding: ControlCommand.listSchedules.json.jsonBytes, as: UTF8.self) == #"{"action":"list_schedules"}"#)
        #expect(try parsedByTheNode(.listSchedules) == ControlCommand.listSchedules.command)
    }

    @Test func displayCommandsSendWhatTheNodeReadsBack() throws {
        let save = try ControlCommand.saveDisplay("wall", json: #"{"type":"awtrix","prefix":"awtrix_gym","timers":["main"],"brightness":120}"#, flag: "--json")
        #expect(String(decoding: save.json.jsonBytes, as: UTF8.self)
            == #"{"action":"save_display","brightness":120,"display":"wall","prefix":"awtrix_gym","timers":["main"],"type":"awtrix"}"#)
        #expect(try parsedByTheNode(save) == save.command)
        // The id in the JSON may repeat the argument's; it is sent once.
        let same = try ControlCommand.saveDisplay("strip", json: #"{"display":"strip","type":"wled","topic":"wled/strip","timers":["main"]}"#, flag: "--json")
        #expect(String(decoding: same.json.jsonBytes, as: UTF8.self)
            == #"{"action":"save_display","display":"strip","timers":["main"],"topic":"wled/strip","type":"wled"}"#)
        #expect(try parsedByTheNode(same) == same.command)

        let delete = try ControlCommand.deleteDisplay("wall")
        #expect(String(decoding: delete.json.jsonBytes, as: UTF8.self) == #"{"action":"delete_display","display":"wall"}"#)
        #expect(try parsedByTheNode(delete) == delete.command)
    }

    @Test func badInputFailsBeforeSendingAndNamesTheFlag() {
        // Schedules.
        #expect(usageMessage { () throws(ControlError) in try .saveSchedule(json: "{", flag: "--json") }?.hasPrefix("--json is not JSON") == true)
        #expect(usageMessage { () throws(ControlError) in try .saveSchedule(json: "[1]", flag: "--file s.json") }?.hasPrefix("--file s.json is not a JSON object") == true)
        #expect(usageMessage { () throws(ControlError) in try .saveSchedule(json: #"{"timer":"main","preset":"tabata"}"#, flag: "--json") }
            == #"--json: the schedule has no "id" (a timer id's rules: a-z, 0-9, '_' and '-')"#)
        #expect(usageMessage { () throws(ControlError) in try .saveSchedule(json: #"{"id":"HIIT","timer":"main","preset":"tabata"}"#, flag: "--json") }
            == #"--json: the schedule's "id" is 1 to 64 characters of a-z, 0-9, '_' and '-', starting with a letter or digit; got "HIIT""#)
        #expect(usageMessage { () throws(ControlError) in try .saveSchedule(json: #"{"id":"h","timer":7,"preset":"tabata"}"#, flag: "--json") }?
            .hasPrefix(#"--json: the schedule's "timer" is 1 to 64"#) == true)
        #expect(usageMessage { () throws(ControlError) in try .saveSchedule(json: #"{"id":"h","preset":"tabata"}"#, flag: "--json") }?
            .hasPrefix(#"--json: the schedule has no "timer""#) == true)
        #expect(usageMessage { () throws(ControlError) in try .saveSchedule(json: #"{"id":"h","timer":"main"}"#, flag: "--json") }
            == #"--json: a schedule has exactly one of "workout", "preset" and "spec"; it has none"#)
        #expect(usageMessage { () throws(ControlError) in try .saveSchedule(json: #"{"id":"h","timer":"main","preset":"a","workout":"b"}"#, flag: "--json") }?
            .hasSuffix(#"it has "workout" and "preset""#) == true)
        #expect(usageMessage { () throws(ControlError) in try .skipNext("a/b") }?.hasPrefix("the schedule id is 1 to 64") == true)
        #expect(usageMessage { () throws(ControlError) in try .deleteSchedule("") }?.hasPrefix("the schedule id is 1 to 64") == true)
        // Displays.
        #expect(usageMessage { () throws(ControlError) in try .saveDisplay("Wall", json: #"{"type":"awtrix"}"#, flag: "--json") }?
            .hasPrefix("the display id is 1 to 64") == true)
        #expect(usageMessage { () throws(ControlError) in try .saveDisplay("wall", json: #"{"type":"lametric"}"#, flag: "--json") }
            == #"--json: a display's "type" is "awtrix" or "wled"; got "lametric""#)
        #expect(usageMessage { () throws(ControlError) in try .saveDisplay("wall", json: #"{"prefix":"p"}"#, flag: "--json") }?
            .hasSuffix("it has none") == true)
        #expect(usageMessage { () throws(ControlError) in try .saveDisplay("wall", json: #"{"type":"awtrix","display":"other"}"#, flag: "--json") }?
            .contains("leave it out") == true)
        #expect(usageMessage { () throws(ControlError) in try .saveDisplay("wall", json: #"{"type":"awtrix","timers":"main"}"#, flag: "--json") }?
            .hasPrefix(#"--json: "timers" is a list"#) == true)
        #expect(usageMessage { () throws(ControlError) in try .saveDisplay("wall", json: #"{"type":"awtrix","timers":["main","x/y"]}"#, flag: "--json") }?
            .hasPrefix(#"--json: a timer of "timers" is 1 to 64"#) == true)
        #expect(usageMessage { () throws(ControlError) in try .saveDisplay("wall", json: #"{"type":"wled","timer":"main"}"#, flag: "--json") }
            == #"--json: a saved display takes "timers", a list, not "timer": write "timers": ["main"]"#)
        #expect(usageMessage { () throws(ControlError) in try .deleteDisplay("wall#") }?.hasPrefix("the display id") == true)
    }

    @Test func theScheduleListAsTables() {
        let reply: JSONValue = [
            "ok": true,
            "schedules": [
                ["id": "hiit", "name": "HIIT 45", "timer": "main", "preset": "tabata", "source": "configuration"],
                ["id": "loop", "timer": "side", "preset": "emom", "enabled": false, "source": "command"],
            ],
            "classes": ["date": "2026-11-30", "time_zone": "UTC", "classes": [
                ["timer": "main", "schedule": "hiit", "name": "HIIT 45", "local_time": "06:30", "status": "started", "late_ms": 2500],
                ["timer": "main", "schedule": "hiit", "name": "HIIT 45", "local_time": "12:00", "status": "skipped", "reason": "requested"],
                ["timer": "main", "schedule": "hiit", "name": "HIIT 45", "local_time": "17:00", "status": "skipped", "reason": "late", "late_ms": 420_000],
                ["timer": "main", "schedule": "hiit", "name": "HIIT 45", "local_time": "18:00", "status": "upcoming"],
            ]],
        ]
        #expect(ControlOutput.scheduleLines(Reply(reply)!) == [
            "SCHEDULE  NAME        TIMER  SOURCE",
            "hiit      HIIT 45     main   configuration",
            "loop      loop (off)  side   command",
            "",
            "today, 2026-11-30 (UTC):",
            "TIME   NAME     TIMER  STATUS",
            "06:30  HIIT 45  main   started 2 s late",
            "12:00  HIIT 45  main   skipped (requested)",
            "17:00  HIIT 45  main   skipped (late, 7 min late)",
            "18:00  HIIT 45  main   upcoming",
        ])
        let empty: JSONValue = ["ok": true, "schedules": [], "classes": ["date": "2026-11-30", "time_zone": "Europe/London", "classes": []]]
        #expect(ControlOutput.scheduleLines(Reply(empty)!) == [
            "no schedules (add one: pacer schedule save --file schedule.json; docs/schedules.md)",
            "",
            "no classes today (2026-11-30, Europe/London)",
        ])
    }

    @Test func theRepliesInOneLine() {
        #expect(ControlOutput.scheduleReplyLine(Reply(["ok": true, "schedule": "hiit", "saved": true])!) == "hiit: saved")
        #expect(ControlOutput.scheduleReplyLine(Reply(["ok": true, "schedule": "hiit", "deleted": true])!) == "hiit: deleted")
        #expect(ControlOutput.scheduleReplyLine(Reply(["ok": true, "schedule": "hiit", "skipped": true, "start_at": "2026-11-30T18:00:00.000Z",
                                                       "start_at_ms": 1_796_061_600_000])!)
            == "hiit: skipped the class at 2026-11-30T18:00:00.000Z")
        #expect(ControlOutput.displayReplyLine(Reply(["ok": true, "display": "wall", "saved": true])!) == "wall: saved")
        #expect(ControlOutput.displayReplyLine(Reply(["ok": true, "display": "wall", "deleted": true])!) == "wall: deleted")
    }

    @Test func theDisplaysAsATable() {
        let document: JSONValue = ["displays": [
            ["display": "strip", "type": "wled", "topic": "wled/strip", "timers": ["main"]],
            ["display": "wall", "type": "awtrix", "prefix": "awtrix_gym", "timers": ["main", "side"]],
        ], "configured": 1]
        #expect(ControlOutput.displayLines(document) == [
            "DISPLAY  TYPE    PREFIX/TOPIC  TIMERS",
            "strip    wled    wled/strip    main",
            "wall     awtrix  awtrix_gym    main, side",
            "1 more in the node's configuration file",
        ])
        #expect(ControlOutput.displayLines(["displays": [], "configured": 0]).first?.hasPrefix("no displays saved by command") == true)
    }
}

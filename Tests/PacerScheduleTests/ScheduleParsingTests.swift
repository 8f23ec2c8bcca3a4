import PacerCore
import Testing
@testable import PacerSchedule

@Suite struct ScheduleParsingTests {
    func problems(_ json: JSONValue) -> [String] {
        switch Schedule.parseList(json) {
        case .success: return []
        case .failure(let error): return error.problems.map(\.description)
        }
    }

    @Test func aBadTimeNamesItsKeyAndWhatToWrite() {
        let list: JSONValue = [[
            "id": "hiit", "timer": "main", "preset": "tabata",
            "weekly": [["days": ["mon"], "at": "06:30"], ["days": ["tue"], "at": "25:00"]],
        ]]
        #expect(problems(list) == [#"schedules[0].weekly[1].at: "25:00" is not a time of day; write HH:MM (00:00 to 23:59)"#])
    }

    @Test func everyProblemIsReported() {
        let list: JSONValue = [
            ["id": "Bad Id", "timer": "main", "weekly": [["days": ["funday"], "at": ["6"]]], "grace": "1s", "colour": "red",
             "time_zone": "Europe/Lodnon"],
            ["id": "ok", "timer": "main", "workout": "x", "preset": "tabata", "loops": [["every": "30s"], ["after": "1m"]],
             "except": ["2026-02-30", ["from": "2026-03-02", "to": "2026-03-01"]]],
            ["id": "ok", "timer": "main", "spec": ["kind": "interval", "work": "-5"], "dates": [["date": "2026-12-24", "at": "10:00"]]],
            ["id": "none", "timer": "main", "preset": "tabata"],
        ]
        let found = problems(list)
        #expect(found == [
            #"schedules[0].colour: unknown key; expected one of: dates, enabled, except, grace, id, loops, name, preset, spec, time_zone, timer, weekly, workout"#,
            #"schedules[0].id: "Bad Id" is not an id: 1 to 64 characters of a-z, 0-9, '_' and '-', starting with a letter or digit"#,
            "schedules[0]: missing what to start: give workout (a saved workout's id), preset (like tabata) or spec (like {kind: interval, work: 40s, rest: 20s, rounds: 8})",
            #"schedules[0].time_zone: "Europe/Lodnon" is not a time zone this system knows; write an IANA name like Europe/London or America/New_York"#,
            "schedules[0].grace: grace must be between 2 s and 12 h, got 1 s",
            #"schedules[0].weekly[0].days[0]: "funday" is not a day; write mon, tue, wed, thu, fri, sat, sun, weekdays, weekends or daily"#,
            #"schedules[0].weekly[0].at[0]: "6" is not a time of day; write HH:MM (00:00 to 23:59)"#,
            "schedules[1]: give one of workout, preset and spec, not workout and preset",
            "schedules[1].loops[0].every: every must be between 1 m and 1 day, got 30 s",
            #"schedules[1].except[0]: "2026-02-30" is not a date; write YYYY-MM-DD, like 2026-12-24"#,
            "schedules[1].except[1].to: 2026-03-01 is before from (2026-03-02); the range includes both dates",
            "schedules[2].spec.work: " + (problemsOfSpec() ?? ""),
            "schedules[3]: no classes: give weekly, dates or loops, like weekly: [{days: [mon, wed], at: \"18:00\"}]",
        ])
    }

    func problemsOfSpec() -> String? {
        do { _ = try TimerSpec(json: ["kind": "interval", "work": "-5"]); return nil } catch { return error.message }
    }

    @Test func aLoopAfterEachEndIsItsSchedulesOnlyRule() {
        let list: JSONValue = [["id": "bike", "timer": "bike", "preset": "tabata",
                                "loops": [["after": "1m"]], "weekly": [["days": "daily", "at": "06:00"]]]]
        #expect(problems(list) == ["schedules[0].loops: a loop that starts again after each end (after) must be the schedule's only rule; put the other classes in a schedule of their own"])
    }

    @Test func duplicateIdsAndTooManySchedules() {
        let one: JSONValue = ["id": "a", "timer": "main", "preset": "tabata", "dates": [["date": "2026-12-24", "at": "10:00"]]]
        #expect(problems([one, one]) == ["schedules[1].id: 'a' is the id of schedules[0] too; give each schedule its own id"])
        let many = JSONValue.array((0...ScheduleLimits.maxSchedules).map { index in
            var o = one.object!
            o["id"] = .string("s\(index)")
            return .object(o)
        })
        #expect(problems(many) == ["schedules: at most 100 schedules, got 101; merge rules into fewer schedules"])
    }

    @Test func theCanonicalFormReadsBackTheSame() throws {
        let json: JSONValue = [
            "id": "gym", "name": "Gym", "timer": "main", "spec": ["kind": "interval", "work": "40s", "rest": "20s", "rounds": 8],
            "time_zone": "Europe/London", "grace": "10m", "enabled": false,
            "weekly": [["days": ["fri", "mon"], "at": ["18:00", "06:30", "06:30"]]],
            "dates": [["date": "2026-12-24", "at": "10:00"]],
            "loops": [["every": "15m", "from": "22:00", "to": "02:00", "days": "weekends"]],
            "except": ["2026-12-25", ["date": "2026-12-24", "at": "18:00"], ["from": "2026-12-31", "to": "2027-01-01"]],
        ]
        let parsed = try Schedule.parse(json).get()
        #expect(parsed.weekly[0].times.map(\.description) == ["06:30", "18:00"])
        #expect(parsed.loops[0].endsNextDay)
        #expect(try Schedule.parse(parsed.json).get() == parsed)
        #expect(parsed.json["weekly"]?[0]?["days"] == ["mon", "fri"])
        #expect(parsed.json["loops"]?[0]?["every"] == "15m")
    }

    @Test func aCommandsScheduleIsReadUnderItsOwnKey() {
        guard case .failure(let error) = Schedule.parse(["id": "a", "timer": "main", "preset": "tabata",
                                                         "dates": [["date": "24/12/2026", "at": "10:00"]]])
        else { Issue.record("accepted"); return }
        #expect(error.description == #"schedule.dates[0].date: "24/12/2026" is not a date; write YYYY-MM-DD, like 2026-12-24"#)
    }
}

public import PacerCore
public import PacerProtocol

/// The timetable and the displays kept on the node (docs/API.md, "Commands"): `save_schedule`,
/// `delete_schedule`, `skip_next`, `list_schedules`, `save_display` and `delete_display`.
/// What the tool can check (the ids by the timer-id rules, that a document is a JSON object,
/// the members a node needs to tell what it is) is checked before sending, naming the flag;
/// the rest (times, days, zones, a display's settings) is the node's to check, and its
/// `invalid_argument` names the member.
extension ControlCommand {
    /// `list_schedules`: every schedule and today's classes.
    public static let listSchedules = ControlCommand(NodeCommand(request: .listSchedules))

    /// `save_schedule` from a schedule as JSON (docs/schedules.md).
    ///
    /// - Parameters:
    ///   - text: the schedule's JSON, e.g. `{"id":"hiit","timer":"main","preset":"tabata",…}`.
    ///   - flag: where it came from, named in errors (`--json`, `--file schedule.json`).
    public static func saveSchedule(json text: String, flag: String) throws(ControlError) -> ControlCommand {
        let schedule = try object(text, flag: flag, example: #"{"id":"hiit","timer":"main","preset":"tabata","weekly":[{"days":"weekdays","at":["06:30"]}]}"#)
        guard let id = schedule["id"] else {
            throw ControlError(.usage, "\(flag): the schedule has no \"id\" (a timer id's rules: a-z, 0-9, '_' and '-')")
        }
        try checkID(id, of: "the schedule's \"id\"", flag: flag)
        guard let timer = schedule["timer"] else {
            throw ControlError(.usage, "\(flag): the schedule has no \"timer\" (the timer its classes start on)")
        }
        try checkID(timer, of: "the schedule's \"timer\"", flag: flag)
        let workouts = ["workout", "preset", "spec"].filter { schedule[$0] != nil }
        guard workouts.count == 1 else {
            throw ControlError(.usage, "\(flag): a schedule has exactly one of \"workout\", \"preset\" and \"spec\"; "
                + (workouts.isEmpty ? "it has none" : "it has \(workouts.map { "\"\($0)\"" }.joined(separator: " and "))"))
        }
        return ControlCommand(NodeCommand(request: .saveSchedule(schedule: schedule)))
    }

    /// `delete_schedule`: forgets a schedule saved by command.
    public static func deleteSchedule(_ id: String) throws(ControlError) -> ControlCommand {
        try checkID(.string(id), of: "the schedule id", flag: nil)
        return ControlCommand(NodeCommand(request: .deleteSchedule(id: id)))
    }

    /// `skip_next`: the schedule's next class is skipped.
    public static func skipNext(_ id: String) throws(ControlError) -> ControlCommand {
        try checkID(.string(id), of: "the schedule id", flag: nil)
        return ControlCommand(NodeCommand(request: .skipNext(schedule: id, timer: nil)))
    }

    /// `save_display` of display `id` from its settings as JSON (docs/displays.md): `type`
    /// (`awtrix` or `wled`), `prefix` or `topic`, `timers`, …
    public static func saveDisplay(_ id: String, json text: String, flag: String) throws(ControlError) -> ControlCommand {
        try checkID(.string(id), of: "the display id", flag: nil)
        let settings = try object(text, flag: flag, example: #"{"type":"awtrix","prefix":"awtrix_gym","timers":["main"]}"#)
        guard let type = settings["type"]?.string, type == "awtrix" || type == "wled" else {
            let got = settings["type"].map { " got \(printable($0.description, limit: 40))" } ?? " it has none"
            throw ControlError(.usage, "\(flag): a display's \"type\" is \"awtrix\" or \"wled\";\(got)")
        }
        if let other = settings["display"], other != .string(id) {
            throw ControlError(.usage, "\(flag): \"display\" is \(printable(other.description, limit: 70)) but the display id given is '\(id)'; leave it out")
        }
        if settings["timer"] != nil {
            // The node's rule: a display command's timers are always the list.
            throw ControlError(.usage, "\(flag): a saved display takes \"timers\", a list, not \"timer\": write \"timers\": [\"main\"]")
        }
        if let timers = settings["timers"] {
            guard let list = timers.array else {
                throw ControlError(.usage, "\(flag): \"timers\" is a list of timer ids, like [\"main\"]")
            }
            for timer in list { try checkID(timer, of: "a timer of \"timers\"", flag: flag) }
        }
        var members = settings.object ?? [:]
        members["display"] = nil
        return ControlCommand(NodeCommand(request: .saveDisplay(id: id, settings: .object(members))))
    }

    /// `delete_display`: forgets a display saved by command (what it showed goes blank).
    public static func deleteDisplay(_ id: String) throws(ControlError) -> ControlCommand {
        try checkID(.string(id), of: "the display id", flag: nil)
        return ControlCommand(NodeCommand(request: .deleteDisplay(id: id)))
    }

    /// `text` as a JSON object, or an error naming `flag` with an example.
    static func object(_ text: String, flag: String, example: String) throws(ControlError) -> JSONValue {
        let parsed: JSONValue
        do {
            parsed = try JSONValue.parse(Array(text.utf8))
        } catch {
            throw ControlError(.usage, "\(flag) is not JSON: \(error); write an object like \(example)")
        }
        guard case .object = parsed else {
            throw ControlError(.usage, "\(flag) is not a JSON object; write one like \(example)")
        }
        return parsed
    }

    /// An id by the timer-id rules (`[a-z0-9][a-z0-9_-]{0,63}`), `what` and `flag` named.
    static func checkID(_ value: JSONValue, of what: String, flag: String?) throws(ControlError) {
        let prefix = flag.map { "\($0): " } ?? ""
        guard let id = value.string, (try? TimerMachine.validateID(id)) != nil else {
            throw ControlError(.usage, "\(prefix)\(what) is 1 to 64 characters of a-z, 0-9, '_' and '-', starting with a letter or digit; got \(printable(value.description, limit: 70))")
        }
    }
}

extension ControlOutput {
    /// The line for a `save_schedule`, `delete_schedule` or `skip_next` reply:
    /// `hiit: saved`, `hiit: deleted`, `hiit: skipped the class at 2026-11-30T18:00:00.000Z`.
    public static func scheduleReplyLine(_ reply: Reply) -> String {
        let id = reply[.schedule]?.string ?? "?"
        if reply[.skipped]?.bool == true {
            return "\(id): skipped the class at \(reply[.startAt]?.string ?? "?")"
        }
        if reply.isDeleted { return "\(id): deleted" }
        if reply[.saved]?.bool == true { return "\(id): saved" }
        return "\(id): ok"
    }

    /// The `list_schedules` reply: the schedules (id, name, timer, source), then today's
    /// classes in the node's zone (time, name, timer, status).
    public static func scheduleLines(_ reply: Reply) -> [String] {
        var lines: [String] = []
        let schedules = reply[.schedules]?.array ?? []
        if schedules.isEmpty {
            lines.append("no schedules (add one: pacer schedule save --file schedule.json; docs/schedules.md)")
        } else {
            let rows = schedules.map { s -> [String] in
                let id = s["id"]?.string ?? "?"
                let off = s["enabled"]?.bool == false ? " (off)" : ""
                return [id, (s["name"]?.string ?? id) + off, s["timer"]?.string ?? "?", s["source"]?.string ?? "?"]
            }
            lines += table([["SCHEDULE", "NAME", "TIMER", "SOURCE"]] + rows)
        }
        let day = reply[.classes]
        let classes = day?[WireField.classes.rawValue]?.array ?? []
        let date = day?["date"]?.string ?? "?"
        let zone = day?["time_zone"]?.string ?? "?"
        lines.append("")
        guard !classes.isEmpty else {
            lines.append("no classes today (\(date), \(zone))")
            return lines
        }
        lines.append("today, \(date) (\(zone)):")
        let rows = classes.map { c -> [String] in
            [c["local_time"]?.string ?? "?", c["name"]?.string ?? "?", c["timer"]?.string ?? "?", classStatus(c)]
        }
        lines += table([["TIME", "NAME", "TIMER", "STATUS"]] + rows)
        return lines
    }

    /// A class's status with what qualifies it: `started 2 s late`, `skipped (late 6 min)`.
    static func classStatus(_ entry: JSONValue) -> String {
        let status = entry["status"]?.string ?? "?"
        let late = entry["late_ms"]?.int64
        switch status {
        case "started":
            guard let late, late >= 1000 else { return status }
            return "started \(lateness(late)) late"
        case "skipped":
            let reason = entry["reason"]?.string ?? "?"
            return "skipped (\(reason)" + (late.map { ", \(lateness($0)) late" } ?? "") + ")"
        default:
            return status
        }
    }

    /// `2 s`, `6 min`, `1 h 5 min`: whole seconds under a minute, else whole minutes.
    static func lateness(_ ms: Int64) -> String {
        let seconds = ms / 1000
        if seconds < 60 { return "\(seconds) s" }
        let minutes = seconds / 60
        if minutes < 60 { return "\(minutes) min" }
        return "\(minutes / 60) h" + (minutes % 60 == 0 ? "" : " \(minutes % 60) min")
    }

    /// The line for a `save_display` or `delete_display` reply: `wall: saved`, `wall: deleted`.
    public static func displayReplyLine(_ reply: Reply) -> String {
        let id = reply[.display]?.string ?? "?"
        if reply.isDeleted { return "\(id): deleted" }
        if reply[.saved]?.bool == true { return "\(id): saved" }
        return "\(id): ok"
    }

    /// The retained `<base>/displays` as a table (display, type, where, timers) and how many
    /// the configuration file has.
    public static func displayLines(_ document: JSONValue) -> [String] {
        let displays = document[.displays]?.array ?? []
        let configured = document[.configured]?.int ?? 0
        let inFile = "\(configured) more in the node's configuration file"
        guard !displays.isEmpty else {
            return ["no displays saved by command (save one: pacer display save ID --json '{\"type\":\"awtrix\",\"prefix\":\"awtrix_gym\",\"timers\":[\"main\"]}')"]
                + (configured > 0 ? [inFile] : [])
        }
        let rows = displays.map { d -> [String] in
            let timers = d["timers"]?.array?.compactMap(\.string) ?? []
            return [d[.display]?.string ?? "?", d[.type]?.string ?? "?",
                    d["prefix"]?.string ?? d["topic"]?.string ?? "-",
                    timers.isEmpty ? "-" : timers.joined(separator: ", ")]
        }
        return table([["DISPLAY", "TYPE", "PREFIX/TOPIC", "TIMERS"]] + rows) + (configured > 0 ? [inFile] : [])
    }
}

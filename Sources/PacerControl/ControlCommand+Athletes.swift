public import PacerCore
public import PacerProtocol

/// The class's athletes (docs/API.md, "Athletes (a class)"): `set_athlete` and `clear_athlete`,
/// checked as the node checks them, with the flags' names in the errors.
extension ControlCommand {
    /// `set_athlete`: the athlete's whole profile. A member left out is unset on the node (the
    /// protocol's rule), so at least one is needed: an empty profile is `clear`'s job.
    public static func setAthlete(_ id: String, name: String?, colour: String?, maxHR: Int?, leaderboard: Bool? = nil) throws(ControlError) -> ControlCommand {
        try checkAthleteID(id)
        guard name != nil || colour != nil || maxHR != nil || leaderboard != nil else {
            throw ControlError(.usage, "give --name, --colour, --max-hr or --leaderboard/--no-leaderboard (the ones left out are unset on the node); to forget a profile: pacer athlete clear \(id)")
        }
        if let name {
            guard name.count <= ProtocolLimits.maxNameLength else {
                throw ControlError(.usage, "--name is \(name.count) characters; the limit is \(ProtocolLimits.maxNameLength)")
            }
            do { try TimerMachine.validateName(name) } catch { throw ControlError(.usage, "--name: " + error.message) }
        }
        if let colour, let problem = AthleteColour.problem(colour) {
            throw ControlError(.usage, "--colour: " + problem)
        }
        if let maxHR, !AthleteColour.maxHRRange.contains(maxHR) {
            throw ControlError(.usage, "--max-hr must be between \(AthleteColour.maxHRRange.lowerBound) and \(AthleteColour.maxHRRange.upperBound) bpm, got \(maxHR)")
        }
        return ControlCommand(NodeCommand(request: .setAthlete(id: id, name: name, colour: colour?.lowercased(), maxHR: maxHR, leaderboard: leaderboard)))
    }

    /// `clear_athlete`: forgets the profile set by command (the configuration's applies again).
    public static func clearAthlete(_ id: String) throws(ControlError) -> ControlCommand {
        try checkAthleteID(id)
        return ControlCommand(NodeCommand(request: .clearAthlete(id: id)))
    }

    /// An athlete id has a timer id's rules (it is a topic level: `hr/<id>`).
    public static func checkAthleteID(_ id: String) throws(ControlError) {
        do {
            try TimerMachine.validateID(id)
        } catch {
            throw ControlError(.usage, "an athlete id (the last level of its heart-rate topic) is 1 to 64 characters of a-z, 0-9, '_' and '-', starting with a letter or digit; got \"\(printable(id, limit: 70, escapingQuotes: true))\"")
        }
    }
}

extension ControlOutput {
    /// The line for a `set_athlete` or `clear_athlete` reply: `alice: saved · Alice · #e4572e · max HR 188`.
    public static func athleteReplyLine(_ reply: Reply) -> String {
        let what = reply.isCleared ? "cleared" : "saved"
        var parts = ["\(reply.athlete ?? "?"): \(what)"]
        if let profile = reply.profile {
            if let name = profile.name { parts.append(name) }
            if let colour = profile.colour { parts.append(colour) }
            if let maxHR = profile.maxHR { parts.append("max HR \(maxHR)") }
        }
        if parts.count == 1 { parts.append(reply.isCleared ? "no profile left on the node" : "no name, colour or max HR") }
        return parts.joined(separator: " · ")
    }

    /// The retained `<base>/athletes` document as a table: id, name, colour, max HR, present;
    /// "no athletes" when it lists none.
    public static func athleteLines(_ list: JSONValue) -> [String] {
        let athletes = AthleteEntry.list(list)
        guard !athletes.isEmpty else {
            return ["no athletes yet (they appear with their first heart-rate reading; set a profile: pacer athlete set ID --name NAME)"]
        }
        let header = ["ATHLETE", "NAME", "COLOUR", "MAX_HR", "PRESENT"]
        let rows = athletes.map { a in
            [a.id, a.name ?? "", a.colour ?? "-", a.maxHR.map(String.init) ?? "-", a.present == true ? "yes" : "no"]
        }
        return table([header] + rows)
    }
}

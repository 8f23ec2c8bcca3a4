import Foundation
import PacerCore
public import PacerSchedule

extension NodeConfiguration {
    /// Reads `time_zone` (an IANA name like Europe/London; default: the system's) and
    /// `schedules:` (docs/schedules.md), each schedule checked by PacerSchedule's rules with the
    /// key of what is wrong.
    mutating func readSchedules(_ top: [String: ConfigTree], _ r: inout ConfigReader) {
        if let zone = r.string(top["time_zone"], key: "time_zone") {
            if ZoneRules(identifier: zone) == nil {
                r.fail("time_zone", top["time_zone"], "'\(zone)' is not a time zone this system knows; write an IANA name like Europe/London or America/New_York (timedatectl list-timezones)")
            } else {
                timeZone = zone
            }
        }
        guard let node = top["schedules"] else { return }
        switch Schedule.parseList(node.json, key: "schedules", presets: presets) {
        case .success(let list): schedules = list
        case .failure(let error):
            for problem in error.problems { r.fail(problem.key, node, problem.reason) }
        }
    }

    /// The zone the schedules are planned in: `time_zone`, else the system's, else UTC.
    public var scheduleZone: ZoneRules {
        timeZone.flatMap(ZoneRules.init(identifier:)) ?? ZoneRules(identifier: TimeZone.current.identifier) ?? ZoneRules(identifier: "UTC")!
    }
}

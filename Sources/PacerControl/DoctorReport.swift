public import PacerCore

/// How one check of `pacer doctor` came out.
public enum DoctorStatus: String, Sendable, Equatable, CaseIterable {
    /// All is as it should be.
    case ok
    /// It works, but something will bite later (an old version, a setting that wears the SD card).
    case warning
    /// Something is broken: the wall clock, the node or a command will not work as it should.
    case problem
    /// Not checked: not set up here (no sound, no Home Assistant) or an earlier problem hides it.
    case skipped

    /// The mark at the start of the check's line.
    public var symbol: String {
        switch self {
        case .ok: "✓"
        case .warning: "!"
        case .problem: "✗"
        case .skipped: "-"
        }
    }
}

/// One line of `pacer doctor`: what was checked, how it came out, and what to do about it.
public struct DoctorCheck: Sendable, Equatable {
    /// A stable name for scripts (`broker`, `page`, `clock`, …).
    public var id: String
    public var status: DoctorStatus
    /// What was found, in plain words.
    public var message: String
    /// What a person does about it: a command to run or a line to add, and where. Nil when
    /// there is nothing to do.
    public var fix: String?

    public init(_ id: String, _ status: DoctorStatus, _ message: String, fix: String? = nil) {
        self.id = id
        self.status = status
        self.message = message
        self.fix = fix
    }

    public static func ok(_ id: String, _ message: String) -> DoctorCheck { DoctorCheck(id, .ok, message) }
    public static func skipped(_ id: String, _ message: String) -> DoctorCheck { DoctorCheck(id, .skipped, message) }
    public static func warning(_ id: String, _ message: String, fix: String? = nil) -> DoctorCheck {
        DoctorCheck(id, .warning, message, fix: fix)
    }
    public static func problem(_ id: String, _ message: String, fix: String) -> DoctorCheck {
        DoctorCheck(id, .problem, message, fix: fix)
    }
}

/// Everything `pacer doctor` found, in the order it checked: printed for a person or as JSON.
public struct DoctorReport: Sendable, Equatable {
    /// What was checked (the node and broker), the report's first line.
    public var heading: String
    public var checks: [DoctorCheck]

    public init(heading: String, checks: [DoctorCheck] = []) {
        self.heading = heading
        self.checks = checks
    }

    public var problems: [DoctorCheck] { checks.filter { $0.status == .problem } }
    public var warnings: [DoctorCheck] { checks.filter { $0.status == .warning } }

    /// 0 when there is no problem (warnings allowed), 1 otherwise.
    public var exitCode: Int32 { problems.isEmpty ? 0 : 1 }

    /// The fix to do first: the first problem's, else the first warning's that has one.
    public var firstFix: String? {
        problems.first?.fix ?? warnings.first(where: { $0.fix != nil })?.fix
    }

    /// The last line: all is well (and with how many warnings), or how many problems and the first fix.
    public var summary: String {
        let p = problems.count, w = warnings.count
        let warningsText = "\(w) warning\(w == 1 ? "" : "s")"
        if p == 0 {
            guard w > 0 else { return "All is well." }
            return "All is well, with \(warningsText)" + (firstFix.map { ". First to look at: \($0)" } ?? " (above).")
        }
        let problemsText = "\(p) problem\(p == 1 ? "" : "s")" + (w > 0 ? " and \(warningsText)" : "")
        return "\(problemsText). First fix: \(firstFix ?? "see above")"
    }

    /// The report for a person: the heading, a line per check (its fix indented under it), the summary.
    public var text: String {
        var lines = [heading]
        for check in checks {
            lines.append("\(check.status.symbol) \(check.id): \(check.message)")
            if let fix = check.fix, check.status == .problem || check.status == .warning {
                lines.append("    fix: \(fix)")
            }
        }
        lines.append("")
        lines.append(summary)
        return lines.joined(separator: "\n")
    }

    /// The report as JSON: `ok`, counts, `first_fix`, and each check's `id`, `status`, `message`, `fix`.
    public var json: JSONValue {
        .object([
            "ok": .bool(problems.isEmpty),
            "heading": .string(heading),
            "problems": .int(problems.count),
            "warnings": .int(warnings.count),
            "first_fix": .optional(firstFix),
            "summary": .string(summary),
            "checks": .array(checks.map { check in
                .object(["id": .string(check.id), "status": .string(check.status.rawValue),
                         "message": .string(check.message), "fix": .optional(check.fix)])
            }),
        ])
    }
}

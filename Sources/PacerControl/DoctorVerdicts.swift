public import PacerCore

/// The judgements of `pacer doctor` that need no I/O: each takes what was measured or read
/// and says ok, warning or problem, with the fix.
public enum DoctorVerdict {
    // MARK: - The node's clock

    /// An offset under this (beyond the measurement's own uncertainty) is fine: displays
    /// count from the node's clock and agree within 20 ms of each other whatever it is.
    public static let clockWarningMs: Millis = 200
    /// Over this, what the page shows and what a phone's clock says disagree visibly.
    public static let clockProblemMs: Millis = 1_000

    /// The node's clock against this machine's: `offsetMs` is node minus local, measured
    /// NTP-style with a round trip of `roundTripMs` (the offset is right within half of it).
    public static func clock(offsetMs: Millis, roundTripMs: Millis) -> DoctorCheck {
        let uncertainty = roundTripMs / 2
        let beyond = max(0, abs(offsetMs) - uncertainty)
        let direction = offsetMs > 0 ? "ahead of" : "behind"
        let amount = seconds(abs(offsetMs))
        let measured = "round trip \(roundTripMs) ms"
        if beyond > clockProblemMs {
            return .problem("clock", "the node's clock is \(amount) \(direction) this machine's (\(measured)): the wall clock follows the node's, so displays disagree with phones and watches",
                            fix: "turn on time sync on the node's machine (and this one): sudo timedatectl set-ntp true, then check with timedatectl status; a node on another machine: see that its clock is synchronised")
        }
        if beyond > clockWarningMs {
            return .warning("clock", "the node's clock is \(amount) \(direction) this machine's (\(measured)); on one machine they should agree",
                            fix: "check time sync on both machines: timedatectl status (or chronyc tracking)")
        }
        return .ok("clock", "the node's clock agrees with this machine's (offset \(offsetMs) ms, \(measured))")
    }

    /// `1.2 s`, `30 s`, `2 min 5 s`.
    static func seconds(_ ms: Millis) -> String {
        if ms < 10_000 { return "\(Double(ms / 100) / 10) s" }
        let s = (ms + 500) / 1000
        if s < 120 { return "\(s) s" }
        return "\(s / 60) min \(s % 60) s"
    }

    /// A round trip this long to a broker on the same machine is the delayed ACK of a
    /// mosquitto without `set_tcp_nodelay` (43 ms measured; under 1 ms with it).
    public static let slowLocalRoundTripMs: Millis = 30

    /// The broker line made a warning when a `time` request's best round trip to a broker on
    /// this machine took `roundTripMs`; nil when it is fine (or the broker is elsewhere).
    public static func roundTrip(_ broker: DoctorCheck, roundTripMs: Millis, brokerIsLocal: Bool) -> DoctorCheck? {
        guard brokerIsLocal, roundTripMs >= slowLocalRoundTripMs, broker.status == .ok else { return nil }
        return .warning(broker.id, broker.message + "; but a request and its reply take \(roundTripMs) ms on this machine, as with a mosquitto without set_tcp_nodelay: every command and the page's clock sync wait for it",
                        fix: "add the line `set_tcp_nodelay true` to /etc/mosquitto/conf.d/pacer.conf (as deploy/mosquitto/pacer.conf), then sudo systemctl restart mosquitto")
    }

    // MARK: - System time sync

    /// `timedatectl show -p NTPSynchronized --value`: `yes` / `no`; nil for anything else.
    public static func timedatectlSynchronized(_ output: String) -> Bool? {
        switch output.trimmingWhitespace() {
        case "yes": true
        case "no": false
        default: nil
        }
    }

    /// `chronyc tracking`: its `Leap status` line (`Normal` when synchronised, `Not
    /// synchronised` otherwise); nil when there is none.
    public static func chronycSynchronized(_ output: String) -> Bool? {
        for line in output.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingWhitespace() == "Leap status" else { continue }
            let value = parts[1].trimmingWhitespace().lowercased()
            return !value.contains("not synchronised") && !value.contains("unsynchronised")
        }
        return nil
    }

    // MARK: - Free space

    /// Under this, a warning: the node's database and the journal grow a few MB a day.
    public static let spaceWarningBytes: Int64 = 200_000_000
    /// Under this, a problem: SQLite cannot write a command when the disk is full.
    public static let spaceProblemBytes: Int64 = 20_000_000

    /// The free space of the filesystem that holds `path`.
    public static func freeSpace(bytes: Int64, path: String) -> DoctorCheck {
        let figure = megabytes(bytes)
        let fix = "free space on the filesystem of \(path) (df -h \(path)): e.g. sudo journalctl --vacuum-size=50M and sudo apt clean, or move the data to a USB SSD (docs/deployment.md, \"The data directory on a USB SSD\")"
        if bytes < spaceProblemBytes {
            return .problem("free_space", "only \(figure) free for \(path): the node cannot save commands when it is full", fix: fix)
        }
        if bytes < spaceWarningBytes {
            return .warning("free_space", "\(figure) free for \(path); keep at least 200 MB", fix: fix)
        }
        return .ok("free_space", "\(figure) free for \(path)")
    }

    /// `12 MB`, `1.5 GB`.
    static func megabytes(_ bytes: Int64) -> String {
        if bytes >= 10_000_000_000 { return "\(bytes / 1_000_000_000) GB" }
        if bytes >= 1_000_000_000 { return "\(Double(bytes / 100_000_000) / 10) GB" }
        return "\(bytes / 1_000_000) MB"
    }

    // MARK: - Versions

    /// Compares dotted versions numerically (`0.10.0` > `0.9.1`); -1, 0 or 1.
    public static func compareVersions(_ a: String, _ b: String) -> Int {
        func parts(_ v: String) -> [Int] {
            v.split(whereSeparator: { $0 == "." || $0 == "-" || $0 == "+" }).map { Int($0) ?? 0 }
        }
        let x = parts(a), y = parts(b)
        for i in 0..<max(x.count, y.count) {
            let l = i < x.count ? x[i] : 0, r = i < y.count ? y[i] : 0
            if l != r { return l < r ? -1 : 1 }
        }
        return 0
    }

    /// The node's version (from its `info`) against this tool's.
    public static func version(node: String, tool: String) -> (status: DoctorStatus, message: String, fix: String?) {
        switch compareVersions(node, tool) {
        case 0:
            return (.ok, "version \(node), the same as this pacer", nil)
        case ..<0:
            return (.warning, "the node runs Pacer \(node), older than this pacer (\(tool))",
                    "upgrade the node: installed with install.sh, git pull && sudo deploy/install.sh; from the package, sudo apt install ./pacer_\(tool)_<arch>.deb (docs/deployment.md, \"Upgrades\")")
        default:
            return (.warning, "the node runs Pacer \(node), newer than this pacer (\(tool))",
                    "use the node's own pacer (the one installed with it), or upgrade this one to \(node)")
        }
    }

    // MARK: - Sound

    /// Whether `device` is among the names `aplay -L` lists: the exact name, or a card's
    /// device given without its `DEV=` (`plughw:CARD=Headphones` for `plughw:CARD=Headphones,DEV=0`).
    public static func alsaDeviceListed(_ device: String, in listing: String) -> Bool {
        let names = listing.split(separator: "\n").filter { !($0.first?.isWhitespace ?? true) }.map(String.init)
        if names.contains(device) { return true }
        return names.contains { $0.hasPrefix(device + ",") }
    }

    /// The card and device of a numbered hardware name (`hw:1,0`, `plughw:0`): ALSA's
    /// `/dev/snd/pcmC<card>D<device>p`. Nil for a named device (`default`, `plughw:CARD=X`).
    public static func numberedPCM(_ device: String) -> (card: Int, device: Int)? {
        let parts = device.split(separator: ":", maxSplits: 1)
        guard parts.count == 2, ["hw", "plughw"].contains(String(parts[0])) else { return nil }
        let numbers = parts[1].split(separator: ",").map { Int($0.trimmingWhitespace()) }
        guard let card = numbers.first ?? nil else { return nil }
        let dev = numbers.count > 1 ? (numbers[1] ?? 0) : 0
        return (card, dev)
    }
}

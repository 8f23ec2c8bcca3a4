/// One setting read from a configuration file: its key, its value and where it was written.
public struct DoctorSetting: Sendable, Equatable {
    public var key: String
    public var value: String
    public var file: String
    public var line: Int

    public init(key: String, value: String, file: String, line: Int) {
        self.key = key
        self.value = value
        self.file = file
        self.line = line
    }

    /// `file:line`.
    public var place: String { "\(file):\(line)" }
}

/// mosquitto's settings that decide how often it writes to the SD card (deploy/mosquitto/pacer.conf).
public enum DoctorMosquittoConf {
    /// What deploy/mosquitto/pacer.conf sets, and mosquitto's own default.
    public static let recommendedAutosaveInterval = 1800
    /// A save writes the whole database again: about 110 KB on the card (docs/deployment.md).
    static let bytesPerSave: Int64 = 112_000

    /// The `key value` lines of a mosquitto configuration (comments and blank lines left out).
    public static func parse(_ text: String, file: String) -> [DoctorSetting] {
        var settings: [DoctorSetting] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingWhitespace()
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            let parts = line.split(maxSplits: 1, whereSeparator: { $0 == " " || $0 == "\t" })
            settings.append(DoctorSetting(key: String(parts[0]), value: parts.count > 1 ? String(parts[1].trimmingWhitespace()) : "",
                                          file: file, line: index + 1))
        }
        return settings
    }

    /// The folders named by `include_dir` lines (mosquitto reads their `*.conf` files in order).
    public static func includeDirectories(_ settings: [DoctorSetting]) -> [String] {
        settings.filter { $0.key == "include_dir" && !$0.value.isEmpty }.map(\.value)
    }

    /// Judges `persistence`, `autosave_interval` and `autosave_on_changes` as mosquitto reads
    /// them (the last one written wins), against deploy/mosquitto/pacer.conf's choice.
    ///
    /// - Parameter snippet: the file to name in a fix (`/etc/mosquitto/conf.d/pacer.conf`).
    public static func verdict(_ settings: [DoctorSetting], snippet: String) -> DoctorCheck {
        func last(_ key: String) -> DoctorSetting? { settings.last { $0.key == key } }
        let restart = "then sudo systemctl restart mosquitto"
        let persistence = last("persistence")
        if persistence.map({ $0.value.lowercased() != "true" }) ?? true {
            let where_ = persistence.map { "persistence \($0.value) (\($0.place))" } ?? "persistence is not set (mosquitto's default: off)"
            return .warning("sd_mosquitto", "\(where_): after a broker restart the node's retained topics are gone until it reconnects, and phones' sessions are lost",
                            fix: "add the line `persistence true` to \(persistence?.file ?? snippet) (as deploy/mosquitto/pacer.conf), \(restart)")
        }
        let interval = last("autosave_interval")
        let seconds = interval.flatMap { Int($0.value) } ?? recommendedAutosaveInterval
        let onChanges = last("autosave_on_changes")
        if let onChanges, onChanges.value.lowercased() == "true" {
            return .warning("sd_mosquitto", "autosave_on_changes true (\(onChanges.place)): mosquitto saves its whole database every \(seconds) changes, and the node's per-second topics are changes: 24 MB a day or more on the SD card",
                            fix: "remove `autosave_on_changes true` from \(onChanges.file) (docs/deployment.md, \"mosquitto's persistence\"), \(restart)")
        }
        let setAt = interval.map { " (\($0.place))" } ?? " (mosquitto's default)"
        if seconds == 0 {
            return .warning("sd_mosquitto", "autosave_interval 0\(setAt): mosquitto saves only at a clean stop, so a power cut loses every session and queued message since the last one",
                            fix: "set `autosave_interval \(recommendedAutosaveInterval)` in \(interval?.file ?? snippet), \(restart)")
        }
        let perDay = Int64(86_400 / max(1, seconds)) * bytesPerSave
        if seconds < recommendedAutosaveInterval {
            return .warning("sd_mosquitto", "autosave_interval \(seconds)\(setAt): mosquitto writes its whole database every \(seconds) s, about \(DoctorVerdict.megabytes(perDay)) a day on the SD card (every 1800 s: 5 MB)",
                            fix: "set `autosave_interval \(recommendedAutosaveInterval)` in \(interval?.file ?? snippet) (an SSD may keep a shorter one; docs/deployment.md, \"SD cards\"), \(restart)")
        }
        return .ok("sd_mosquitto", "mosquitto: persistence true, autosave every \(seconds) s\(setAt), about \(DoctorVerdict.megabytes(perDay)) a day on the SD card")
    }
}

/// journald's settings for an SD card (deploy/journald-pacer.conf).
public enum DoctorJournaldConf {
    /// The `Key=value` lines of the `[Journal]` section.
    public static func parse(_ text: String, file: String) -> [DoctorSetting] {
        var settings: [DoctorSetting] = []
        var inJournal = false
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingWhitespace()
            guard !line.isEmpty, !line.hasPrefix("#"), !line.hasPrefix(";") else { continue }
            if line.hasPrefix("[") {
                inJournal = line == "[Journal]"
                continue
            }
            guard inJournal, let eq = line.firstIndex(of: "=") else { continue }
            settings.append(DoctorSetting(key: String(line[..<eq].trimmingWhitespace()),
                                          value: String(line[line.index(after: eq)...].trimmingWhitespace()),
                                          file: file, line: index + 1))
        }
        return settings
    }

    /// Judges `Storage=` and `SystemMaxUse=` (the last one read wins) against docs/deployment.md's
    /// choice: a persistent journal, bounded to 64 MB.
    ///
    /// - Parameter persistentDirectoryExists: whether `/var/log/journal` exists (`Storage=auto`
    ///   keeps the journal on disk only then).
    public static func verdict(_ settings: [DoctorSetting], persistentDirectoryExists: Bool) -> DoctorCheck {
        func last(_ key: String) -> DoctorSetting? { settings.last { $0.key == key && !$0.value.isEmpty } }
        let fix = "install Pacer's journald settings: sudo install -D -m 0644 deploy/journald-pacer.conf /etc/systemd/journald.conf.d/pacer.conf && sudo systemctl restart systemd-journald (from the package: /usr/share/pacer/journald-pacer.conf)"
        let storage = last("Storage")
        let value = storage?.value.lowercased() ?? "auto"
        let setAt = storage.map { " (\($0.place))" } ?? " (journald's default)"
        let persistent = value == "persistent" || (value == "auto" && persistentDirectoryExists)
        if !persistent {
            let why = value == "auto" ? "Storage=auto\(setAt) without /var/log/journal: the journal is kept in memory"
                                      : "Storage=\(storage?.value ?? value)\(setAt)"
            return .warning("sd_journald", "\(why): after a power cut the log of the boot that ended with it is gone, and that is the log that explains it", fix: fix)
        }
        guard let maxUse = last("SystemMaxUse") else {
            let kept = storage.map { "Storage=\($0.value) at \($0.place)" } ?? "Storage=auto, journald's default, with /var/log/journal"
            return .warning("sd_journald", "the journal is kept on the card (\(kept)) with no SystemMaxUse=: it may take 10% of the card, up to 4 GB", fix: fix)
        }
        return .ok("sd_journald", "journald: Storage=\(storage?.value ?? "auto")\(setAt), SystemMaxUse=\(maxUse.value) (\(maxUse.place))")
    }
}

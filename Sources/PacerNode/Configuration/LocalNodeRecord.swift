import Foundation

/// Where the node that `pacer run` started on this machine, for this user, can be reached.
///
/// `pacer run` writes it when it starts and removes it when it stops; the control commands
/// (`pacer list`, `pacer start`, `pacer history`, `pacer doctor` …) read it when neither
/// `--config` nor `PACER_CONFIG` is given, so that `pacer list` right after `pacer run` (or
/// `bash scripts/run`) needs no flags. Without a record, they read `/etc/pacer/pacer.yaml`
/// when it exists (the installed node), else the built-in defaults. A record whose process
/// is gone (a node killed with SIGKILL, a power cut) is ignored.
///
/// It holds what `pacer run` was started with — the configuration file and the settings
/// given by `PACER_…` variables and flags, with relative paths made absolute — never a
/// password (only the path of the password file). The file is
/// `$XDG_RUNTIME_DIR/pacer/node.json`, or `/tmp/pacer-<uid>/node.json` (a directory of the
/// user's own, mode 0700) where `XDG_RUNTIME_DIR` is not set. The last node started wins.
public struct LocalNodeRecord: Sendable, Equatable {
    /// The process id of the `pacer run` that wrote it.
    public var pid: Int32
    /// The settings it was started with: the configuration file (absolute), then what the
    /// environment and the flags set (the flags win). The log level is left out.
    public var settings: ConfigurationOverrides
    /// The wall clock's address, when the program that started the node serves it
    /// (`scripts/run` passes it in `PACER_PAGE_URL`); `pacer doctor` checks it.
    public var pageURL: String?

    public init(pid: Int32, settings: ConfigurationOverrides, pageURL: String? = nil) {
        self.pid = pid
        self.settings = settings
        self.pageURL = pageURL
    }

    /// The record of a node starting now with the given flags and environment.
    public static func starting(flags: ConfigurationOverrides, environment: [String: String],
                                currentDirectory: String? = nil) -> LocalNodeRecord {
        let currentDirectory = currentDirectory ?? FileManager.default.currentDirectoryPath
        let env = ConfigurationOverrides.environment(environment)
        func absolute(_ path: String?) -> String? {
            guard let path, !path.isEmpty else { return nil }
            return path.hasPrefix("/") ? path : (currentDirectory as NSString).appendingPathComponent(path)
        }
        let settings = ConfigurationOverrides(
            configFile: absolute(flags.configFile ?? env.configFile),
            broker: flags.broker ?? env.broker,
            node: flags.node ?? env.node,
            baseTopic: flags.baseTopic ?? env.baseTopic,
            dataDirectory: absolute(flags.dataDirectory ?? env.dataDirectory),
            username: flags.username ?? env.username,
            passwordFile: absolute(flags.passwordFile ?? env.passwordFile),
            caFile: absolute(flags.caFile ?? env.caFile),
            mqttVersion: flags.mqttVersion ?? env.mqttVersion)
        let page = environment["PACER_PAGE_URL"].flatMap { $0.isEmpty ? nil : $0 }
        return LocalNodeRecord(pid: getpid(), settings: settings, pageURL: page)
    }

    /// The record's directory for this user.
    public static func directory(environment: [String: String]? = nil) -> String {
        let environment = environment ?? ProcessInfo.processInfo.environment
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return runtime + "/pacer"
        }
        return "/tmp/pacer-\(getuid())"
    }

    /// The record's file for this user.
    public static func path(environment: [String: String]? = nil) -> String {
        directory(environment: environment) + "/node.json"
    }

    /// Writes the record (atomically: a reader never sees half of it).
    ///
    /// - Throws: when the directory cannot be made, belongs to another user, or the file
    ///   cannot be written. The node runs on without it: only the flag-less control commands
    ///   lose their way to it.
    public func write(environment: [String: String]? = nil) throws {
        let dir = Self.directory(environment: environment)
        try Self.ownDirectory(dir)
        var object: [String: Any] = ["pid": Int(pid)]
        let s = settings
        for (key, value) in [("config", s.configFile), ("broker", s.broker), ("node", s.node), ("base_topic", s.baseTopic),
                             ("data_dir", s.dataDirectory), ("username", s.username), ("password_file", s.passwordFile),
                             ("ca_file", s.caFile), ("mqtt_version", s.mqttVersion), ("page_url", pageURL)] {
            if let value { object[key] = value }
        }
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        try data.write(to: URL(fileURLWithPath: dir + "/node.json"), options: .atomic)
    }

    /// The record of a node that still runs, or nil (no record, another user's, unreadable,
    /// malformed, or its process is gone).
    public static func read(environment: [String: String]? = nil) -> LocalNodeRecord? {
        let file = path(environment: environment)
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: file),
              (attributes[.ownerAccountID] as? NSNumber)?.uint32Value == getuid(),
              ((attributes[.size] as? NSNumber)?.intValue ?? .max) <= 64 * 1024,
              let data = FileManager.default.contents(atPath: file),
              let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
              let pid = (object["pid"] as? NSNumber)?.int32Value, pid > 0
        else { return nil }
        // kill(pid, 0): the process exists (EPERM: it exists but is another user's).
        guard kill(pid, 0) == 0 || errno == EPERM else { return nil }
        func string(_ key: String) -> String? { object[key] as? String }
        let settings = ConfigurationOverrides(
            configFile: string("config"), broker: string("broker"), node: string("node"), baseTopic: string("base_topic"),
            dataDirectory: string("data_dir"), username: string("username"), passwordFile: string("password_file"),
            caFile: string("ca_file"), mqttVersion: string("mqtt_version"))
        return LocalNodeRecord(pid: pid, settings: settings, pageURL: string("page_url"))
    }

    /// Removes the record if it is still this process's (a node started later keeps its own).
    public static func remove(pid: Int32? = nil, environment: [String: String]? = nil) {
        let file = path(environment: environment)
        guard let data = FileManager.default.contents(atPath: file),
              let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
              (object["pid"] as? NSNumber)?.int32Value == (pid ?? getpid())
        else { return }
        try? FileManager.default.removeItem(atPath: file)
    }

    /// Makes `dir` (mode 0700) or checks that it is a real directory of this user's.
    private static func ownDirectory(_ dir: String) throws {
        var info = stat()
        if lstat(dir, &info) != 0 {
            guard mkdir(dir, 0o700) == 0 || errno == EEXIST else {
                throw LocalNodeRecordError(message: "cannot make \(dir): \(String(cString: strerror(errno)))")
            }
            guard lstat(dir, &info) == 0 else {
                throw LocalNodeRecordError(message: "cannot read \(dir): \(String(cString: strerror(errno)))")
            }
        }
        guard info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid() else {
            throw LocalNodeRecordError(message: "\(dir) is not a directory of this user's; the node's record is not written")
        }
    }
}

/// Why the local node record could not be written.
public struct LocalNodeRecordError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var description: String { message }
}

extension NodeConfiguration {
    /// The configuration of the node a control command talks to: the flags, `PACER_…`
    /// variables and `--config`/`PACER_CONFIG` as for `pacer run`; with neither `--config`
    /// nor `PACER_CONFIG`, first the settings of the node `pacer run` started on this machine
    /// (``LocalNodeRecord``), else `/etc/pacer/pacer.yaml` when it can be read (the installed
    /// node, with the account the service reads from `/etc/pacer/pacer.env` when that can be
    /// read too: `sudo pacer list` on the Pi) unless `--broker`/`PACER_BROKER` names another
    /// broker, else the built-in defaults. The record is used only when no flag or variable
    /// names a node (`--broker`, `--node`, `--data-dir`, … or their `PACER_…` variables): with
    /// one, the command is aimed at another node.
    ///
    /// - Returns: the configuration, and where its base came from (for `pacer doctor`).
    public static func loadForControl(
        flags: ConfigurationOverrides,
        environment: [String: String]? = nil,
        installedConfig: String = "/etc/pacer/pacer.yaml"
    ) throws(ConfigurationError) -> (NodeConfiguration, ControlTarget) {
        let environment = environment ?? ProcessInfo.processInfo.environment
        let env = ConfigurationOverrides.environment(environment)
        if flags.configFile != nil || env.configFile != nil {
            return (try load(flags: flags, environment: environment), .configuration(flags.configFile ?? env.configFile ?? ""))
        }
        // The record only when nothing names another node: any connection setting given as a
        // flag or a variable means the command is aimed elsewhere.
        if !flags.namesANode, !env.namesANode, let record = LocalNodeRecord.read(environment: environment) {
            var settings = record.settings
            settings.logLevel = flags.logLevel ?? env.logLevel
            return (try load(flags: settings, environment: environment), .localNode(record))
        }
        // The installed node's file unless the command names another broker.
        if flags.broker == nil, env.broker == nil, FileManager.default.isReadableFile(atPath: installedConfig) {
            var withFile = flags
            withFile.configFile = installedConfig
            // The node's own account on the local broker, which the service reads from
            // pacer.env beside the file (deploy/install.sh writes it); the environment wins.
            let envFile = (installedConfig as NSString).deletingLastPathComponent + "/pacer.env"
            let merged = readEnvironmentFile(envFile).merging(environment) { _, given in given }
            return (try load(flags: withFile, environment: merged), .configuration(installedConfig))
        }
        return (try load(flags: flags, environment: environment), .defaults)
    }
}

extension NodeConfiguration {
    /// The `PACER_…=value` lines of a systemd environment file (`#` comments, blank lines and
    /// other names skipped; a value in double or single quotes is unquoted); empty when the
    /// file cannot be read.
    static func readEnvironmentFile(_ path: String) -> [String: String] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [:] }
        var values: [String: String] = [:]
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            guard line.hasPrefix("PACER_"), let eq = line.firstIndex(of: "=") else { continue }
            var value = String(line[line.index(after: eq)...]).trimmingCharacters(in: .whitespaces)
            if value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first {
                value = String(value.dropFirst().dropLast())
            }
            values[String(line[..<eq])] = value
        }
        return values
    }
}

extension ConfigurationOverrides {
    /// Whether any setting that says which node to reach (or how) is given.
    var namesANode: Bool {
        [broker, node, baseTopic, dataDirectory, username, passwordFile, caFile, mqttVersion].contains { $0 != nil }
    }
}

/// Where a control command's configuration came from.
public enum ControlTarget: Sendable, Equatable {
    /// `--config`, `PACER_CONFIG` or the installed `/etc/pacer/pacer.yaml`.
    case configuration(String)
    /// The node `pacer run` started on this machine.
    case localNode(LocalNodeRecord)
    /// No file: the built-in defaults, the environment and the flags.
    case defaults
}

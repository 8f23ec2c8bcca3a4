import Foundation

/// The file-system side of `pacer doctor`: the data directory and its free space, and the
/// configuration files of mosquitto and journald. Reads only, except one empty file made and
/// removed again to prove the data directory takes writes.
enum DoctorFiles {
    /// The data directory as the node needs it: a directory its owner can write, with the
    /// database files belonging to that owner; checked by a real write when this user owns it
    /// (or is root), and as seen from this user otherwise (the service's directory).
    static func dataDirectory(_ path: String, installed: Bool) -> DoctorCheck {
        let me = getuid()
        let myName = userName(me)
        var info = stat()
        guard stat(path, &info) == 0 else {
            let missing = errno == ENOENT
            let parent = existingAncestor(of: path)
            if missing, access(parent, W_OK) == 0 {
                return .warning("data_dir", "\(path) does not exist yet: the node makes it when it starts",
                                fix: installed ? "sudo install -d -o pacer -g pacer -m 0750 \(path)" : "mkdir -p \(path)")
            }
            let why = missing ? "does not exist, and \(parent) is not writable by \(myName)" : String(cString: strerror(errno))
            return .problem("data_dir", "\(path): \(why)",
                            fix: installed ? "sudo install -d -o pacer -g pacer -m 0750 \(path)"
                                           : "sudo install -d -o \(myName) -m 0750 \(path), or choose another with --data-dir (data_dir: in the configuration)")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            return .problem("data_dir", "\(path) is not a directory", fix: "move it away, or choose another with --data-dir (data_dir: in the configuration)")
        }
        let owner = userName(info.st_uid)
        let group = groupName(info.st_gid)
        let mode = octal(info.st_mode)
        if info.st_mode & S_IWUSR == 0 {
            return .problem("data_dir", "\(path) is not writable by its owner \(owner) (mode \(mode)): the node cannot save its timers",
                            fix: info.st_uid == me ? "chmod u+w \(path)" : "sudo chmod u+w \(path)")
        }
        // The database files must be the directory owner's (a `pacer run` by hand as root leaves root's).
        for name in ["pacer.sqlite", "pacer.sqlite-wal", "pacer.sqlite-shm"] {
            var file = stat()
            guard stat(path + "/" + name, &file) == 0 else { continue }
            if file.st_uid != info.st_uid {
                return .problem("data_dir", "\(path)/\(name) belongs to \(userName(file.st_uid)), not to \(owner) who owns the directory: the node running as \(owner) cannot write it",
                                fix: "sudo chown -R \(owner):\(group) \(path)")
            }
            if file.st_mode & S_IWUSR == 0 {
                return .problem("data_dir", "\(path)/\(name) is read-only (mode \(octal(file.st_mode)))",
                                fix: "\(file.st_uid == me ? "" : "sudo ")chmod u+w \(path)/\(name)")
            }
        }
        if info.st_uid != me && me != 0 {
            // The service's directory (e.g. /var/lib/pacer of user pacer): we may not even read it.
            let readable = access(path, R_OK | X_OK) == 0
            return .ok("data_dir", "\(path) belongs to \(owner) (mode \(mode)), checked as seen from \(myName): "
                       + (readable ? "readable, its owner may write" : "not readable by \(myName); its owner may write (sudo pacer doctor looks inside)"))
        }
        // Ours (or we are root): prove it takes a write.
        let probe = "\(path)/.pacer-doctor-\(getpid())"
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            if code == EROFS {
                return .problem("data_dir", "\(path) is on a read-only file system: the node cannot save its timers",
                                fix: "mount it read-write (findmnt -T \(path) shows how it is mounted), or choose another with --data-dir (data_dir: in the configuration)")
            }
            if code == ENOSPC {
                return .problem("data_dir", "\(path): no space left on the device", fix: "free space: df -h \(path)")
            }
            return .problem("data_dir", "\(path) is not writable by \(myName) (mode \(mode), owner \(owner)): \(String(cString: strerror(code)))",
                            fix: info.st_uid == me ? "chmod u+w \(path)" : "sudo chown -R \(myName) \(path), or run the node as \(owner)")
        }
        close(fd)
        unlink(probe)
        let database = (try? FileManager.default.attributesOfItem(atPath: path + "/pacer.sqlite"))?[.size] as? Int64
        return .ok("data_dir", "\(path) (owner \(owner), mode \(mode)) takes writes"
                   + (database.map { "; pacer.sqlite is " + ($0 < 1_000_000 ? "\($0 / 1000) KB" : DoctorVerdict.megabytes($0)) } ?? ""))
    }

    /// A file mode as `ls` and `chmod` write it: `0755`.
    static func octal(_ mode: mode_t) -> String {
        let digits = String(mode & 0o7777, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// The free space, for this user, of the file system that holds `path` (or its nearest existing parent).
    static func freeBytes(_ path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(existingAncestor(of: path), &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// `path` itself when it exists, else its nearest existing parent.
    static func existingAncestor(of path: String) -> String {
        var current = path
        while !current.isEmpty, current != "/", access(current, F_OK) != 0 {
            current = (current as NSString).deletingLastPathComponent
        }
        return current.isEmpty ? "/" : current
    }

    static func userName(_ uid: uid_t) -> String {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "uid \(uid)" }
        return String(cString: name)
    }

    static func groupName(_ gid: gid_t) -> String {
        guard let entry = getgrgid(gid), let name = entry.pointee.gr_name else { return "\(gid)" }
        return String(cString: name)
    }

    /// A text file's content (up to 1 MiB), nil when it cannot be read.
    static func text(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 1 << 20) else { return "" }
        return String(decoding: data, as: UTF8.self)
    }

    /// The `*.conf` files of a folder, by name.
    static func confFiles(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(".conf") }.sorted().map { "\(directory)/\($0)" }
    }

    /// mosquitto's SD-card settings, from `<root>/etc/mosquitto/mosquitto.conf` and the folders
    /// it includes; skipped where there is no such file.
    static func mosquittoCheck(root: String) -> DoctorCheck {
        let main = root + "/etc/mosquitto/mosquitto.conf"
        guard let mainText = text(main) else {
            return .skipped("sd_mosquitto", "no \(main) here: the broker is not on this machine (or not mosquitto)")
        }
        var settings = DoctorMosquittoConf.parse(mainText, file: main)
        for dir in DoctorMosquittoConf.includeDirectories(settings) {
            for file in confFiles(in: root + dir) {
                settings += DoctorMosquittoConf.parse(text(file) ?? "", file: file)
            }
        }
        return DoctorMosquittoConf.verdict(settings, snippet: root + "/etc/mosquitto/conf.d/pacer.conf")
    }

    /// journald's SD-card settings: `journald.conf`, then the drop-ins of `/usr/lib`, `/run`
    /// and `/etc` in file-name order (a name in `/etc` hides the same name in the others);
    /// skipped where journald has no configuration (no systemd).
    static func journaldCheck(root: String) -> DoctorCheck {
        let main = root + "/etc/systemd/journald.conf"
        var byName: [String: String] = [:]
        for dir in ["/usr/lib/systemd/journald.conf.d", "/run/systemd/journald.conf.d", "/etc/systemd/journald.conf.d"] {
            for file in confFiles(in: root + dir) { byName[(file as NSString).lastPathComponent] = file }
        }
        let mainText = text(main)
        guard mainText != nil || !byName.isEmpty else {
            return .skipped("sd_journald", "no \(main) here: no systemd journal to set up (not a Pi's system)")
        }
        var settings = DoctorJournaldConf.parse(mainText ?? "", file: main)
        for name in byName.keys.sorted() {
            settings += DoctorJournaldConf.parse(text(byName[name]!) ?? "", file: byName[name]!)
        }
        var isDir: ObjCBool = false
        let persistentDir = FileManager.default.fileExists(atPath: root + "/var/log/journal", isDirectory: &isDir) && isDir.boolValue
        return DoctorJournaldConf.verdict(settings, persistentDirectoryExists: persistentDir)
    }
}

public import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// How a ``TestBroker`` is set up.
public struct TestBrokerOptions: Sendable {
    /// Users and passwords. Non-empty: a `password_file` made with `mosquitto_passwd -b`
    /// and `allow_anonymous false`. Empty: anonymous clients are allowed.
    public var users: [String: String]
    /// Serve TLS only, with a CA and a server certificate for 127.0.0.1 / localhost made
    /// with openssl in the broker's directory (see ``TestBroker/caFile``).
    public var tls: Bool
    /// Extra lines appended to mosquitto.conf.
    public var extraConfig: [String]
    /// Whether the broker saves its state (sessions, retained messages) across restarts.
    public var persistence: Bool
    /// TLS only: the broker demands a client certificate signed by its CA
    /// (`require_certificate true`); make one with ``TestBroker/makeClientCertificate(commonName:trusted:keyPassphrase:)``.
    public var requireClientCertificate: Bool
    /// With ``requireClientCertificate``: the certificate's common name becomes the
    /// client's username (`use_identity_as_username true`; shown as `u'<CN>'` in the log).
    public var useIdentityAsUsername: Bool

    /// Creates options; the defaults are an anonymous, plain, in-memory broker.
    public init(
        users: [String: String] = [:], tls: Bool = false, extraConfig: [String] = [], persistence: Bool = false,
        requireClientCertificate: Bool = false, useIdentityAsUsername: Bool = false
    ) {
        self.users = users
        self.tls = tls
        self.extraConfig = extraConfig
        self.persistence = persistence
        self.requireClientCertificate = requireClientCertificate
        self.useIdentityAsUsername = useIdentityAsUsername
    }
}

/// A client certificate and its key, made by ``TestBroker/makeClientCertificate(commonName:trusted:keyPassphrase:)``.
public struct TestClientCertificate: Sendable {
    /// The PEM certificate (extended key usage clientAuth).
    public let certificateFile: String
    /// The certificate's unencrypted PEM private key (EC P-256).
    public let keyFile: String
    /// The certificate's subject common name (the username with `use_identity_as_username`).
    public let commonName: String
    /// The PEM certificate of the CA that signed it.
    public let caFile: String
}

/// A real mosquitto broker for a test: on 127.0.0.1, on a free port, with its own
/// config file and directory, started as a child process and stopped by PID.
///
/// Always stop it (``stop()``), or use ``withTestBroker(_:_:)`` which does. A watchdog
/// also kills it if the test process dies first.
///
/// Threading: immutable apart from the running process, which is behind a `Mutex`.
public final class TestBroker: Sendable {
    /// The broker's address: always 127.0.0.1.
    public let host = "127.0.0.1"
    /// The broker's port (the same across ``restart()``).
    public let port: Int
    /// The broker's directory: config, password file, certificates, log, persistence.
    public let directory: URL
    /// The CA certificate that signed the server certificate (TLS brokers only).
    public let caFile: String?
    /// The options the broker was started with.
    public let options: TestBrokerOptions

    private let configFile: URL
    private let logFile: URL
    private let current: Mutex<TestProcess?>

    /// The running broker's process id (0 when stopped).
    public var pid: Int32 { current.withLock { $0?.pid ?? 0 } }

    /// Whether the broker process runs.
    public var isRunning: Bool { current.withLock { $0?.isRunning ?? false } }

    /// Everything the broker logged (across restarts), for failure messages.
    public var log: String {
        (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
    }

    private static var mosquittoPath: String {
        for candidate in ["/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto", "/usr/bin/mosquitto"]
        where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        return findInPath("mosquitto") ?? "/usr/sbin/mosquitto"
    }

    /// Starts a broker and waits until it accepts connections.
    ///
    /// - Throws: ``TestSupportError`` with the broker's log when it does not come up.
    public static func start(_ options: TestBrokerOptions = .init()) async throws -> TestBroker {
        PoolStallWatch.ensureStarted()
        if (options.requireClientCertificate || options.useIdentityAsUsername) && !options.tls {
            throw TestSupportError("requireClientCertificate and useIdentityAsUsername need tls: true")
        }
        if options.useIdentityAsUsername && !options.requireClientCertificate {
            throw TestSupportError("useIdentityAsUsername needs requireClientCertificate: true")
        }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("pacer-broker-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let caFile = options.tls ? try makeCertificates(in: directory) : nil
        let passwordFile = options.users.isEmpty ? nil : try makePasswordFile(options.users, in: directory)
        var lastError: (any Error)?
        for _ in 0..<3 {
            let port = try freeLocalPort()
            let broker = try TestBroker(
                port: port, directory: directory, caFile: caFile, passwordFile: passwordFile, options: options)
            do {
                try await broker.launch()
                return broker
            } catch {
                // Most likely someone took the port between freeLocalPort() and bind.
                lastError = error
                await broker.stop()
            }
        }
        throw lastError ?? TestSupportError("the broker did not start")
    }

    private init(port: Int, directory: URL, caFile: String?, passwordFile: String?, options: TestBrokerOptions) throws {
        self.port = port
        self.directory = directory
        self.caFile = caFile
        self.options = options
        self.configFile = directory.appendingPathComponent("mosquitto.conf")
        self.logFile = directory.appendingPathComponent("mosquitto.log")
        self.current = Mutex(nil)
        var lines = [
            "# Written by PacerTestSupport.TestBroker",
            "user root",  // do not drop privileges (it could not read this directory)
            "per_listener_settings false",
            // As the deployed broker (deploy/mosquitto/pacer.conf) and the suite's shared one:
            // without it, the broker holds a quick second message to a subscriber ~40 ms.
            "set_tcp_nodelay true",
            "log_dest stderr",
            "log_type error",
            "log_type warning",
            "log_type notice",
            "log_type information",
            "connection_messages true",
            "log_timestamp true",
            "log_timestamp_format %H:%M:%S",
            "max_queued_messages 10000",
            "persistence \(options.persistence)",
        ]
        if options.persistence {
            lines.append("persistence_location \(directory.path)/")
        }
        if let passwordFile {
            lines.append("allow_anonymous false")
            lines.append("password_file \(passwordFile)")
        } else {
            lines.append("allow_anonymous true")
        }
        lines.append("listener \(port) 127.0.0.1")
        if caFile != nil {
            lines.append("cafile \(directory.path)/ca.crt")
            lines.append("certfile \(directory.path)/server.crt")
            lines.append("keyfile \(directory.path)/server.key")
            if options.requireClientCertificate {
                lines.append("require_certificate true")
            }
            if options.useIdentityAsUsername {
                lines.append("use_identity_as_username true")
            }
        }
        lines += options.extraConfig
        try (lines.joined(separator: "\n") + "\n").write(to: configFile, atomically: false, encoding: .utf8)
    }

    private func launch() async throws {
        let process = try TestProcess.launch(Self.mosquittoPath, ["-c", configFile.path], outputFile: logFile)
        current.withLock { $0 = process }
        let deadline = ContinuousClock.now + .seconds(15)
        while !localPortAcceptsConnections(port) {
            if !process.isRunning {
                throw TestSupportError(
                    "mosquitto exited (status \(process.terminationStatus ?? -1)) instead of listening on 127.0.0.1:\(port). Its log:\n\(log)")
            }
            if ContinuousClock.now >= deadline {
                throw TestSupportError("mosquitto did not listen on 127.0.0.1:\(port) within 15 s. Its log:\n\(log)")
            }
            try await Task.sleep(for: .milliseconds(25))
        }
    }

    deinit {
        // A test that forgot stop(): ask the broker to go now (no waiting in deinit; the
        // watchdog kills it when the test process ends in any case).
        current.withLock { $0?.send(SIGTERM) }
    }

    /// Stops the broker: SIGTERM by PID, wait, SIGKILL if needed. Idempotent.
    public func stop() async {
        let process = current.withLock { process -> TestProcess? in
            defer { process = nil }
            return process
        }
        await process?.terminate()
    }

    /// Kills the broker with SIGKILL (no clean shutdown, no persistence save).
    public func kill() async {
        let process = current.withLock { process -> TestProcess? in
            defer { process = nil }
            return process
        }
        await process?.kill()
    }

    /// Stops the broker and starts it again on the same port with the same config.
    public func restart() async throws {
        await stop()
        try await launch()
    }

    /// Waits until the broker's log contains `text`. Returns whether it does.
    public func waitForLog(containing text: String, timeout: Duration = .seconds(10)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !log.contains(text) {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// Removes the broker's directory (call after ``stop()``).
    public func removeDirectory() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// Issues a client certificate and key (EC P-256, valid 2 days, extended key usage
    /// clientAuth) with openssl, no network.
    ///
    /// - Parameters:
    ///   - commonName: the subject CN (the username with ``TestBrokerOptions/useIdentityAsUsername``).
    ///   - trusted: `true` signs it with the broker's CA (``caFile``); `false` with a new CA
    ///     the broker has never seen (same CA name, different key), so the broker must
    ///     refuse it.
    ///   - keyPassphrase: when given, the key file is encrypted with it (AES-256, PKCS#8).
    /// - Throws: ``TestSupportError`` when the broker has no TLS or openssl fails.
    public func makeClientCertificate(
        commonName: String = "pacer-test-client", trusted: Bool = true, keyPassphrase: String? = nil
    ) throws -> TestClientCertificate {
        guard caFile != nil else { throw TestSupportError("client certificates need a TLS broker (TestBrokerOptions(tls: true))") }
        let name = "client-\(UUID().uuidString.prefix(8).lowercased())"
        let dir = directory.path
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        var ca = (certificate: "\(dir)/ca.crt", key: "\(dir)/ca.key")
        if !trusted {
            // Deliberately the same subject as the real CA: only the key differs.
            ca = ("\(dir)/\(name)-untrusted-ca.crt", "\(dir)/\(name)-untrusted-ca.key")
            try Self.run("openssl", ["req", "-x509"] + ec + ["-keyout", ca.key, "-out", ca.certificate, "-days", "2", "-subj", "/CN=Pacer Test CA"], in: directory)
        }
        try "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n"
            .write(toFile: "\(dir)/\(name).ext", atomically: false, encoding: .utf8)
        try Self.run("openssl", ["req"] + ec + ["-keyout", "\(dir)/\(name).key", "-out", "\(dir)/\(name).csr", "-subj", "/CN=\(commonName)"], in: directory)
        try Self.run("openssl", [
            "x509", "-req", "-in", "\(dir)/\(name).csr", "-CA", ca.certificate, "-CAkey", ca.key,
            "-CAcreateserial", "-out", "\(dir)/\(name).crt", "-days", "2", "-extfile", "\(dir)/\(name).ext",
        ], in: directory)
        var keyFile = "\(dir)/\(name).key"
        if let keyPassphrase {
            keyFile = "\(dir)/\(name)-encrypted.key"
            try Self.run("openssl", ["pkey", "-in", "\(dir)/\(name).key", "-aes256", "-passout", "pass:\(keyPassphrase)", "-out", keyFile], in: directory)
        }
        return TestClientCertificate(
            certificateFile: "\(dir)/\(name).crt", keyFile: keyFile, commonName: commonName,
            caFile: ca.certificate)
    }

    // MARK: Setup helpers

    private static func makePasswordFile(_ users: [String: String], in directory: URL) throws -> String {
        let path = directory.appendingPathComponent("passwd").path
        _ = FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        for (user, password) in users.sorted(by: { $0.key < $1.key }) {
            try run("mosquitto_passwd", ["-b", path, user, password], in: directory)
        }
        return path
    }

    /// A CA and a server certificate for 127.0.0.1 and localhost (EC P-256, valid 2 days).
    private static func makeCertificates(in directory: URL) throws -> String {
        let dir = directory.path
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
            .write(toFile: "\(dir)/server.ext", atomically: false, encoding: .utf8)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try run("openssl", ["req", "-x509"] + ec + ["-keyout", "\(dir)/ca.key", "-out", "\(dir)/ca.crt", "-days", "2", "-subj", "/CN=Pacer Test CA"], in: directory)
        try run("openssl", ["req"] + ec + ["-keyout", "\(dir)/server.key", "-out", "\(dir)/server.csr", "-subj", "/CN=127.0.0.1"], in: directory)
        try run("openssl", [
            "x509", "-req", "-in", "\(dir)/server.csr", "-CA", "\(dir)/ca.crt", "-CAkey", "\(dir)/ca.key",
            "-CAcreateserial", "-out", "\(dir)/server.crt", "-days", "2", "-extfile", "\(dir)/server.ext",
        ], in: directory)
        return "\(dir)/ca.crt"
    }

    /// Runs a tool to completion; throws with its output when it fails.
    static func run(_ tool: String, _ arguments: [String], in directory: URL) throws {
        guard let path = findInPath(tool) else { throw TestSupportError("\(tool) is not installed (apt: mosquitto, openssl)") }
        _ = try TestProcess.run(path, arguments, in: directory)
    }
}

/// Finds an executable in `PATH` (plus the sbin directories).
func findInPath(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for directory in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/sbin", "/sbin"] {
        let candidate = "\(directory)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// Runs `body` with a fresh broker and stops the broker afterwards, also when `body` throws.
public func withTestBroker<T>(
    _ options: TestBrokerOptions = .init(),
    isolation: isolated (any Actor)? = #isolation,
    _ body: (TestBroker) async throws -> T
) async throws -> T {
    let broker = try await TestBroker.start(options)
    do {
        let result = try await body(broker)
        await broker.stop()
        broker.removeDirectory()
        return result
    } catch {
        await broker.stop()
        print("--- log of the broker on 127.0.0.1:\(broker.port) (\(broker.directory.path)) ---\n\(broker.log)")
        throw error
    }
}

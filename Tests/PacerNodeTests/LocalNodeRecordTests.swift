import Foundation
import PacerNode
import Testing

/// The record `pacer run` leaves for the flag-less control commands, and the order in which
/// a control command finds its node: --config/PACER_CONFIG, the record, the installed file.
@Suite struct LocalNodeRecordTests {
    /// A runtime directory of the test's own (so no real record is read or overwritten).
    private func runtime() throws -> (dir: String, env: [String: String]) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pacer-record-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return (dir, ["XDG_RUNTIME_DIR": dir, "HOME": dir])
    }

    @Test func aRecordWrittenIsReadBackWithAbsolutePaths() throws {
        let (dir, env) = try runtime()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var startEnv = env
        startEnv["PACER_BROKER"] = "mqtt://127.0.0.1:18830"
        startEnv["PACER_PAGE_URL"] = "http://127.0.0.1:8080/"
        let record = LocalNodeRecord.starting(
            flags: .init(configFile: "examples/demo.yaml", node: "demo", dataDirectory: "data"),
            environment: startEnv, currentDirectory: "/srv/pacer")
        #expect(record.settings.configFile == "/srv/pacer/examples/demo.yaml")
        #expect(record.settings.dataDirectory == "/srv/pacer/data")
        #expect(record.settings.broker == "mqtt://127.0.0.1:18830")
        try record.write(environment: env)
        #expect(LocalNodeRecord.path(environment: env) == dir + "/pacer/node.json")
        let read = try #require(LocalNodeRecord.read(environment: env))
        #expect(read == record)
        #expect(read.pageURL == "http://127.0.0.1:8080/")
    }

    @Test func aRecordOfAProcessThatIsGoneIsIgnoredAndRemoveKeepsAnotherProcesssRecord() throws {
        let (dir, env) = try runtime()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A pid no process has (above the kernel's pid_max of 2^22).
        try LocalNodeRecord(pid: 5_000_000, settings: .init(node: "gone")).write(environment: env)
        #expect(LocalNodeRecord.read(environment: env) == nil)
        // remove() leaves a record that is not this process's.
        LocalNodeRecord.remove(environment: env)
        #expect(FileManager.default.fileExists(atPath: LocalNodeRecord.path(environment: env)))
        try LocalNodeRecord(pid: getpid(), settings: .init(node: "mine")).write(environment: env)
        #expect(LocalNodeRecord.read(environment: env)?.settings.node == "mine")
        LocalNodeRecord.remove(environment: env)
        #expect(!FileManager.default.fileExists(atPath: LocalNodeRecord.path(environment: env)))
    }

    @Test func aMalformedRecordIsIgnored() throws {
        let (dir, env) = try runtime()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/pacer", withIntermediateDirectories: true)
        for junk in ["", "{", "[1,2]", "{\"pid\":\"x\"}", "{\"pid\":-4}"] {
            try Data(junk.utf8).write(to: URL(fileURLWithPath: LocalNodeRecord.path(environment: env)))
            #expect(LocalNodeRecord.read(environment: env) == nil, "\(junk)")
        }
    }

    @Test func controlCommandsFindTheRecordThenTheInstalledFileThenTheDefaults() throws {
        let (dir, env) = try runtime()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let installed = dir + "/installed.yaml"
        try Data("node: installed\nbroker: {url: mqtt://127.0.0.1:1999}\n".utf8).write(to: URL(fileURLWithPath: installed))
        let missing = dir + "/missing.yaml"

        // Nothing: the defaults.
        let (bare, bareTarget) = try NodeConfiguration.loadForControl(flags: .init(), environment: env, installedConfig: missing)
        #expect(bareTarget == .defaults)
        #expect(bare.broker.port == 1883)

        // The installed file.
        let (inst, instTarget) = try NodeConfiguration.loadForControl(flags: .init(), environment: env, installedConfig: installed)
        #expect(instTarget == .configuration(installed))
        #expect(inst.nodeID == "installed" && inst.broker.port == 1999)
        #expect(inst.broker.username == nil)

        // With the service's account beside it (pacer.env), as install.sh writes it.
        try Data("pacer-secret\n".utf8).write(to: URL(fileURLWithPath: dir + "/mqtt-password"))
        try Data("# the node's account\nPACER_USERNAME=pacer\nPACER_PASSWORD_FILE='\(dir)/mqtt-password'\nOTHER=x\n".utf8)
            .write(to: URL(fileURLWithPath: dir + "/pacer.env"))
        let (account, _) = try NodeConfiguration.loadForControl(flags: .init(), environment: env, installedConfig: installed)
        #expect(account.broker.username == "pacer" && account.broker.password == "pacer-secret")
        var asCoach = env
        asCoach["PACER_USERNAME"] = "coach"
        let (coach, _) = try NodeConfiguration.loadForControl(flags: .init(), environment: asCoach, installedConfig: installed)
        #expect(coach.broker.username == "coach")

        // A running node's record wins over the installed file.
        let record = LocalNodeRecord(pid: getpid(), settings: .init(broker: "mqtt://127.0.0.1:18831", node: "demo", dataDirectory: dir + "/data"))
        try record.write(environment: env)
        let (local, localTarget) = try NodeConfiguration.loadForControl(flags: .init(), environment: env, installedConfig: installed)
        #expect(localTarget == .localNode(record))
        #expect(local.nodeID == "demo" && local.baseTopic == "pacer/demo" && local.broker.port == 18831)
        #expect(local.dataDirectory == dir + "/data")

        // A flag or a variable that names a node aims the command elsewhere: no record.
        var withEnv = env
        withEnv["PACER_NODE"] = "other"
        let (envd, envTarget) = try NodeConfiguration.loadForControl(flags: .init(broker: "mqtt://127.0.0.1:18832"), environment: withEnv, installedConfig: missing)
        #expect(envTarget == .defaults)
        #expect(envd.nodeID == "other" && envd.baseTopic == "pacer/other" && envd.broker.port == 18832)
        let (flagged, flaggedTarget) = try NodeConfiguration.loadForControl(flags: .init(node: "gym"), environment: env, installedConfig: installed)
        #expect(flaggedTarget == .configuration(installed))
        #expect(flagged.nodeID == "gym" && flagged.broker.port == 1999)

        // Another broker: not the installed node.
        let (elsewhere, elsewhereTarget) = try NodeConfiguration.loadForControl(flags: .init(broker: "mqtt://127.0.0.1:18833"), environment: env, installedConfig: installed)
        #expect(elsewhereTarget == .defaults)
        #expect(elsewhere.broker.port == 18833 && elsewhere.broker.username == nil)

        // --config (or PACER_CONFIG) names the node: no record, no installed file.
        let (explicit, explicitTarget) = try NodeConfiguration.loadForControl(flags: .init(configFile: installed, node: "x"), environment: env, installedConfig: missing)
        #expect(explicitTarget == .configuration(installed))
        #expect(explicit.nodeID == "x" && explicit.broker.port == 1999)
    }
}

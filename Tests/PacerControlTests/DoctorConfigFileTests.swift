import Foundation
@testable import PacerControl
import PacerTestSupport
import Testing

@Suite("pacer doctor: mosquitto's and journald's settings for an SD card")
struct DoctorConfigFileTests {
    func mosquitto(_ files: [(String, String)]) -> DoctorCheck {
        let settings = files.flatMap { DoctorMosquittoConf.parse($0.1, file: $0.0) }
        return DoctorMosquittoConf.verdict(settings, snippet: "/etc/mosquitto/conf.d/pacer.conf")
    }

    /// Debian's own mosquitto.conf: persistence on, conf.d included.
    let debian = ("/etc/mosquitto/mosquitto.conf", """
        # Place your local configuration in /etc/mosquitto/conf.d/
        pid_file /run/mosquitto/mosquitto.pid

        persistence true
        persistence_location /var/lib/mosquitto/

        log_dest file /var/log/mosquitto/mosquitto.log

        include_dir /etc/mosquitto/conf.d
        """)

    @Test func linesAreReadWithTheirPlaceAndIncludesAreFound() {
        let settings = DoctorMosquittoConf.parse(debian.1, file: debian.0)
        #expect(settings.map(\.key) == ["pid_file", "persistence", "persistence_location", "log_dest", "include_dir"])
        #expect(settings[1] == DoctorSetting(key: "persistence", value: "true", file: debian.0, line: 4))
        #expect(DoctorMosquittoConf.includeDirectories(settings) == ["/etc/mosquitto/conf.d"])
    }

    @Test func theShippedSnippetIsWhatDoctorRecommends() throws {
        let snippet = try String(contentsOf: testsDirectory().deletingLastPathComponent().appendingPathComponent("deploy/mosquitto/pacer.conf"), encoding: .utf8)
        let check = mosquitto([debian, ("/etc/mosquitto/conf.d/pacer.conf", snippet)])
        #expect(check.status == .ok)
        #expect(check.message.contains("autosave every 1800 s (/etc/mosquitto/conf.d/pacer.conf:"))
    }

    @Test func mosquittosDefaultIntervalIsFineButPersistenceOffIsNot() {
        #expect(mosquitto([debian]).status == .ok)
        #expect(mosquitto([debian]).message.contains("mosquitto's default"))
        let off = mosquitto([("/etc/mosquitto/mosquitto.conf", "listener 1883\n")])
        #expect(off.status == .warning)
        #expect(off.message.contains("persistence is not set"))
        #expect(off.fix?.contains("`persistence true` to /etc/mosquitto/conf.d/pacer.conf") == true)
        let false_ = mosquitto([debian, ("/etc/mosquitto/conf.d/z.conf", "persistence false\n")])
        #expect(false_.message.contains("persistence false (/etc/mosquitto/conf.d/z.conf:1)"))
    }

    @Test func aShortIntervalNamesItsFileAndWhatItWrites() {
        let check = mosquitto([debian, ("/etc/mosquitto/conf.d/pacer.conf", "autosave_interval 1800\n"),
                               ("/etc/mosquitto/conf.d/zz-old.conf", "# an old snippet\nautosave_interval 60\n")])
        #expect(check.status == .warning)
        #expect(check.message.contains("autosave_interval 60 (/etc/mosquitto/conf.d/zz-old.conf:2)"))
        #expect(check.message.contains("161 MB a day"))
        #expect(check.fix?.contains("set `autosave_interval 1800` in /etc/mosquitto/conf.d/zz-old.conf") == true)
        #expect(mosquitto([debian, ("/c", "autosave_interval 0\n")]).message.contains("only at a clean stop"))
        #expect(mosquitto([debian, ("/c", "autosave_on_changes true\n")]).fix?.contains("remove `autosave_on_changes true` from /c") == true)
    }

    func journald(_ text: String, persistentDirectory: Bool = true) -> DoctorCheck {
        DoctorJournaldConf.verdict(DoctorJournaldConf.parse(text, file: "/etc/systemd/journald.conf.d/pacer.conf"),
                                   persistentDirectoryExists: persistentDirectory)
    }

    @Test func theShippedJournaldDropInIsWhatDoctorRecommends() throws {
        let dropIn = try String(contentsOf: testsDirectory().deletingLastPathComponent().appendingPathComponent("deploy/journald-pacer.conf"), encoding: .utf8)
        let check = journald(dropIn)
        #expect(check.status == .ok)
        #expect(check.message.contains("Storage=persistent"))
        #expect(check.message.contains("SystemMaxUse=64M"))
    }

    @Test func journaldSettingsOutsideTheJournalSectionAreIgnored() {
        let settings = DoctorJournaldConf.parse("[Other]\nStorage=none\n[Journal]\n#Storage=auto\nStorage = volatile\n", file: "/f")
        #expect(settings == [DoctorSetting(key: "Storage", value: "volatile", file: "/f", line: 5)])
    }

    @Test func aVolatileOrUnboundedJournalIsAWarningWithTheDropIn() {
        let volatile = journald("[Journal]\nStorage=volatile\n")
        #expect(volatile.status == .warning)
        #expect(volatile.message.contains("Storage=volatile (/etc/systemd/journald.conf.d/pacer.conf:2)"))
        #expect(volatile.fix?.contains("deploy/journald-pacer.conf /etc/systemd/journald.conf.d/pacer.conf") == true)
        #expect(journald("", persistentDirectory: false).message.contains("kept in memory"))
        let unbounded = journald("[Journal]\n")
        #expect(unbounded.status == .warning)
        #expect(unbounded.message.contains("no SystemMaxUse="))
    }
}

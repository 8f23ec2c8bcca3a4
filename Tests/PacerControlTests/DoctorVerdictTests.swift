@testable import PacerControl
import PacerCore
import Testing

@Suite("pacer doctor: the report and the verdicts")
struct DoctorVerdictTests {
    // MARK: - The report

    @Test func allIsWellWithoutProblemsAndSaysHowManyWarnings() {
        var report = DoctorReport(heading: "pacer doctor: test", checks: [.ok("broker", "reached"), .skipped("sound", "off")])
        #expect(report.exitCode == 0)
        #expect(report.summary == "All is well.")
        report.checks.append(.warning("sd_journald", "no SystemMaxUse", fix: "install the drop-in"))
        #expect(report.exitCode == 0)
        #expect(report.summary == "All is well, with 1 warning. First to look at: install the drop-in")
        #expect(report.text.hasSuffix("\nAll is well, with 1 warning. First to look at: install the drop-in"))
    }

    @Test func aProblemExitsOneAndTheFirstProblemsFixComesLast() {
        let report = DoctorReport(heading: "h", checks: [
            .warning("node", "old version", fix: "upgrade"),
            .problem("broker", "nothing listens", fix: "sudo systemctl start mosquitto"),
            .problem("page", "wrong type", fix: "serve it with lighttpd"),
        ])
        #expect(report.exitCode == 1)
        #expect(report.firstFix == "sudo systemctl start mosquitto")
        #expect(report.summary == "2 problems and 1 warning. First fix: sudo systemctl start mosquitto")
        let lines = report.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines[0] == "h")
        #expect(lines[1] == "! node: old version")
        #expect(lines[2] == "    fix: upgrade")
        #expect(lines[3] == "✗ broker: nothing listens")
        #expect(lines[4] == "    fix: sudo systemctl start mosquitto")
        #expect(lines.last == report.summary)
    }

    @Test func theJSONHasEveryCheckWithItsStatusAndFix() throws {
        let report = DoctorReport(heading: "h", checks: [.ok("broker", "reached"), .problem("page", "wrong type", fix: "lighttpd")])
        let json = try JSONValue.parse(Array(report.json.description.utf8))
        #expect(json["ok"] == false)
        #expect(json["problems"] == 1)
        #expect(json["first_fix"] == "lighttpd")
        #expect(json["checks"]?[0] == ["id": "broker", "status": "ok", "message": "reached", "fix": nil])
        #expect(json["checks"]?[1]?["status"] == "problem")
        #expect(json["checks"]?[1]?["fix"] == "lighttpd")
    }

    // MARK: - Clock

    @Test func aClockOffsetIsJudgedBeyondHalfTheRoundTrip() {
        #expect(DoctorVerdict.clock(offsetMs: 3, roundTripMs: 2).status == .ok)
        #expect(DoctorVerdict.clock(offsetMs: -150, roundTripMs: 4).status == .ok)
        #expect(DoctorVerdict.clock(offsetMs: 400, roundTripMs: 4).status == .warning)
        // 1.1 s measured over a 400 ms round trip may be 0.9 s: not yet a problem.
        #expect(DoctorVerdict.clock(offsetMs: 1_100, roundTripMs: 400).status == .warning)
        let far = DoctorVerdict.clock(offsetMs: 30_012, roundTripMs: 3)
        #expect(far.status == .problem)
        #expect(far.message.contains("30 s ahead of"))
        #expect(far.fix?.contains("timedatectl set-ntp true") == true)
        #expect(DoctorVerdict.clock(offsetMs: -2_500, roundTripMs: 3).message.contains("2.5 s behind"))
    }

    @Test func timeSyncToolsAreRead() {
        #expect(DoctorVerdict.timedatectlSynchronized("yes\n") == true)
        #expect(DoctorVerdict.timedatectlSynchronized("no") == false)
        #expect(DoctorVerdict.timedatectlSynchronized("") == nil)
        let synced = "Reference ID    : C0A80001 (router)\nStratum         : 3\nLeap status     : Normal\n"
        #expect(DoctorVerdict.chronycSynchronized(synced) == true)
        #expect(DoctorVerdict.chronycSynchronized("Reference ID    : 00000000 ()\nLeap status     : Not synchronised\n") == false)
        #expect(DoctorVerdict.chronycSynchronized("506 Cannot talk to daemon") == nil)
    }

    // MARK: - Space, versions, sound

    @Test func freeSpaceIsAWarningUnder200MBAndAProblemUnder20MB() {
        #expect(DoctorVerdict.freeSpace(bytes: 5_000_000_000, path: "/var/lib/pacer").status == .ok)
        let low = DoctorVerdict.freeSpace(bytes: 150_000_000, path: "/var/lib/pacer")
        #expect(low.status == .warning)
        #expect(low.message.contains("150 MB"))
        let full = DoctorVerdict.freeSpace(bytes: 12_000_000, path: "/var/lib/pacer")
        #expect(full.status == .problem)
        #expect(full.message.contains("12 MB"))
        #expect(full.fix?.contains("df -h /var/lib/pacer") == true)
        #expect(DoctorVerdict.megabytes(1_500_000_000) == "1.5 GB")
    }

    @Test func versionsCompareNumerically() {
        #expect(DoctorVerdict.compareVersions("0.10.0", "0.9.1") == 1)
        #expect(DoctorVerdict.compareVersions("0.1.0", "0.1") == 0)
        #expect(DoctorVerdict.compareVersions("0.1.0", "0.2.0") == -1)
        #expect(DoctorVerdict.version(node: "0.1.0", tool: "0.1.0").status == .ok)
        let older = DoctorVerdict.version(node: "0.0.9", tool: "0.1.0")
        #expect(older.status == .warning)
        #expect(older.fix?.contains("sudo deploy/install.sh") == true)
        #expect(DoctorVerdict.version(node: "0.2.0", tool: "0.1.0").message.contains("newer than this pacer"))
    }

    @Test func soundDevicesAreFoundInAplaysListing() {
        let listing = """
            null
                Discard all samples (playback) or generate zero samples (capture)
            default
                Playback/recording through the PulseAudio sound server
            plughw:CARD=Headphones,DEV=0
                bcm2835 Headphones, bcm2835 Headphones
            """
        #expect(DoctorVerdict.alsaDeviceListed("default", in: listing))
        #expect(DoctorVerdict.alsaDeviceListed("plughw:CARD=Headphones", in: listing))
        #expect(DoctorVerdict.alsaDeviceListed("plughw:CARD=Headphones,DEV=0", in: listing))
        #expect(!DoctorVerdict.alsaDeviceListed("plughw:CARD=USB", in: listing))
        #expect(!DoctorVerdict.alsaDeviceListed("Discard", in: listing))
        #expect(DoctorVerdict.numberedPCM("hw:1,0")! == (1, 0))
        #expect(DoctorVerdict.numberedPCM("plughw:0")! == (0, 0))
        #expect(DoctorVerdict.numberedPCM("plughw:CARD=Headphones") == nil)
        #expect(DoctorVerdict.numberedPCM("default") == nil)
    }

    @Test func topicFiltersMatchLikeTheBroker() {
        #expect(DoctorBrokerConnection.matches("pacer/+/status", "pacer/gym/status"))
        #expect(!DoctorBrokerConnection.matches("pacer/+/status", "pacer/gym/timers/a/status"))
        #expect(DoctorBrokerConnection.matches("homeassistant/#", "homeassistant/device/gym_main/config"))
        #expect(!DoctorBrokerConnection.matches("pacer/gym", "pacer/gym/status"))
    }
}

@Suite("pacer doctor: a slow local broker")
struct DoctorRoundTripTests {
    @Test func aLocalBrokerThatTakes40msIsMissingSetTcpNodelay() throws {
        let reached = DoctorCheck.ok("broker", "mqtt://127.0.0.1:1883 reached")
        let slow = try #require(DoctorVerdict.roundTrip(reached, roundTripMs: 41, brokerIsLocal: true))
        #expect(slow.status == .warning)
        #expect(slow.message.hasPrefix("mqtt://127.0.0.1:1883 reached; but a request and its reply take 41 ms"))
        #expect(slow.fix?.contains("`set_tcp_nodelay true`") == true)
        #expect(DoctorVerdict.roundTrip(reached, roundTripMs: 1, brokerIsLocal: true) == nil)
        #expect(DoctorVerdict.roundTrip(reached, roundTripMs: 41, brokerIsLocal: false) == nil, "over a network 40 ms may be the network")
    }
}

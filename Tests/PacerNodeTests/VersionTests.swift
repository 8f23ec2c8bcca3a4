import Foundation
import PacerNode
import PacerTestSupport
import Testing

/// The version a user sees (`pacer --version`, `info`, the package) is the changelog's newest.
@Suite struct VersionTests {
    @Test func theVersionIsTheChangelogsNewest() throws {
        let changelog = testsDirectory().deletingLastPathComponent().appendingPathComponent("CHANGELOG.md")
        let text = try String(contentsOf: changelog, encoding: .utf8)
        // The first "## [x.y.z] - date" heading (an "## [Unreleased]" one above it lists what is
        // on main and not yet in a version).
        let heading = try #require(text.split(separator: "\n").first { $0.hasPrefix("## [") && !$0.hasPrefix("## [Unreleased]") })
        let version = heading.dropFirst(4).prefix { $0 != "]" }
        #expect(String(version) == PacerVersion.current, "CHANGELOG.md's newest entry is \(version), the code says \(PacerVersion.current)")
        #expect(PacerVersion.current.split(separator: ".").count == 3)
    }
}

import Foundation
import PacerTestSupport

/// A unique lower-case name usable as a node id, a timer id or a topic level.
func uniqueName(_ prefix: String) -> String {
    "\(prefix)\(UUID().uuidString.prefix(8).lowercased())"
}

/// The `pacer` executable built beside this test bundle (`swift build --build-tests` puts
/// both in the same bin directory). `PACER_EXECUTABLE` overrides the search.
enum PacerExecutable {
    static let path: Result<String, HarnessError> = locate()

    static func require() throws -> String {
        try path.get()
    }

    private static func locate() -> Result<String, HarnessError> {
        let fm = FileManager.default
        if let explicit = ProcessInfo.processInfo.environment["PACER_EXECUTABLE"], !explicit.isEmpty {
            return fm.isExecutableFile(atPath: explicit)
                ? .success(explicit) : .failure(HarnessError("PACER_EXECUTABLE=\(explicit) is not an executable file"))
        }
        var starts: [String] = []
        if let exe = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe") { starts.append(exe) }
        starts.append(CommandLine.arguments.first ?? "")
        starts.append(Bundle.main.bundlePath)
        if let exe = Bundle.main.executablePath { starts.append(exe) }
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") { starts.append(bundle.bundlePath) }
        var looked: [String] = []
        for start in starts where !start.isEmpty {
            var directory = URL(fileURLWithPath: start).standardizedFileURL.deletingLastPathComponent()
            for _ in 0..<6 {
                let candidate = directory.appendingPathComponent("pacer").path
                looked.append(candidate)
                var isDirectory: ObjCBool = false
                if fm.fileExists(atPath: candidate, isDirectory: &isDirectory), !isDirectory.boolValue,
                   fm.isExecutableFile(atPath: candidate) {
                    return .success(candidate)
                }
                let parent = directory.deletingLastPathComponent()
                if parent.path == directory.path { break }
                directory = parent
            }
        }
        return .failure(HarnessError(
            "the pacer executable was not found beside the test bundle; build it with `swift build --build-tests` (same --scratch-path) or set PACER_EXECUTABLE. Looked at: \(looked.prefix(12).joined(separator: ", "))"))
    }
}

/// The broker most tests share: the one `scripts/test` starts (`PACER_TEST_BROKER_PORT`),
/// else one mosquitto started for this test process on first use (its watchdog stops it
/// when the process ends). Tests that restart or kill a broker start their own.
actor SharedBroker {
    static let shared = SharedBroker()
    /// One start for every caller: the actor is re-entered while the broker starts.
    private var starting: Task<TestBroker, any Error>?

    func port() async throws -> Int {
        if let text = ProcessInfo.processInfo.environment["PACER_TEST_BROKER_PORT"], let port = Int(text) {
            return port
        }
        if starting == nil { starting = Task { try await TestBroker.start() } }
        return try await starting!.value.port
    }
}


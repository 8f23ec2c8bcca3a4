public import Foundation
public import PacerCore

// Helpers shared by the node's in-process tests (PacerNodeTests) and its live tests
// (PacerNodeLiveTests).

/// An error of the test harness, with a message that says what was expected and what was seen.
public struct HarnessError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A fresh temporary directory for one node or one test.
public func makeTemporaryDirectory(_ prefix: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// The node's clock and ours are the same system wall clock: epoch milliseconds now.
public func wallNowMs() -> Int64 {
    Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
}

/// A JSON value from bytes, read by Foundation's JSONDecoder (the Codable path: a reader
/// independent of the node's own parser), nil when it is not JSON.
public func decodeJSON(_ bytes: [UInt8]) -> JSONValue? {
    try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
}

extension JSONValue {
    /// The object with `key` set to `value` (unchanged when not an object).
    public func adding(_ key: String, _ value: JSONValue) -> JSONValue {
        guard case .object(var members) = self else { return self }
        members[key] = value
        return .object(members)
    }

    /// The JSON text as bytes (compact, keys sorted).
    public var bytes: [UInt8] { Array(description.utf8) }
}

/// The repository's `Tests` folder, found from a test file's path (`#filePath`) wherever in it
/// the file lives: test files move between feature folders without their fixture paths breaking.
public func testsDirectory(_ filePath: String = #filePath) -> URL {
    var url = URL(fileURLWithPath: filePath).deletingLastPathComponent()
    while url.path != "/" && url.lastPathComponent != "Tests" { url.deleteLastPathComponent() }
    return url
}

import Foundation
@testable import PacerStore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs `body` with a fresh directory under the system temporary directory and
/// removes it afterwards (restoring write permission first).
func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
    let path = NSTemporaryDirectory() + "pacer-store-tests-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer {
        _ = chmod(path, 0o755)
        try? FileManager.default.removeItem(atPath: path)
    }
    return try body(path)
}

var runningAsRoot: Bool { geteuid() == 0 }

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

func timer(_ id: String, revision: Int = 1, policy: String? = nil, at: Int64 = 1_000) -> TimerRecord {
    TimerRecord(
        id: id, machine: bytes(#"{"id":"\#(id)","revision":\#(revision)}"#), revision: revision,
        restorePolicy: policy, updatedAtMs: at)
}

func event(
    _ timer: String, _ type: String, revision: Int = 1, due: Int64 = 5_000, at: Int64 = 5_010,
    published: Bool = false
) -> EventRecord {
    EventRecord(
        timer: timer, type: type, revision: revision, dueMs: due, atMs: at,
        payload: bytes(#"{"type":"\#(type)","timer":"\#(timer)","revision":\#(revision)}"#),
        published: published)
}

func batch(
    upsert: [TimerRecord] = [], delete: [String] = [], events: [EventRecord] = [],
    requests: [RequestRecord] = [], published: [Int64] = [], meta: [String: String] = [:]
) -> StoreBatch {
    var batch = StoreBatch()
    batch.upsertTimers = upsert
    batch.deleteTimers = delete
    batch.appendEvents = events
    batch.requests = requests
    batch.markPublished = published
    batch.meta = meta
    return batch
}

/// Opens a writer that must not need recovery.
func openFresh(_ directory: String) throws -> PacerDatabase {
    let (database, recovery) = try PacerDatabase.open(directory: directory)
    if let recovery { throw StoreError(.io, "unexpected recovery: \(recovery)") }
    return database
}

func fileExists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

func contents(of directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
}

/// Overwrites `count` bytes at `offset` in the file at `path` with garbage.
func scribble(_ path: String, offset: UInt64, count: Int) throws {
    let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    try handle.seek(toOffset: offset)
    try handle.write(contentsOf: Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }))
}

func fileSize(_ path: String) -> UInt64 {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.uint64Value ?? 0
}

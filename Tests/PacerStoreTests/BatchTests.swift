import Foundation
import Testing
@testable import PacerStore

@Suite("Batches")
struct BatchTests {
    @Test("timers: insert, upsert replaces, delete; loaded in id order")
    func timers() throws {
        try withTemporaryDirectory { directory in
            let database = try openFresh(directory)
            try database.apply(batch(upsert: [timer("b"), timer("a", policy: "resume")]))
            #expect(try database.loadTimers() == [timer("a", policy: "resume"), timer("b")])

            let updated = TimerRecord(
                id: "a", machine: bytes(#"{"new":true}"#), revision: 7, restorePolicy: "discard", updatedAtMs: 9_999)
            try database.apply(batch(upsert: [updated]))
            #expect(try database.loadTimers() == [updated, timer("b")])

            // Back to no policy.
            try database.apply(batch(upsert: [timer("a", revision: 8)]))
            #expect(try database.loadTimers().first?.restorePolicy == nil)

            try database.apply(batch(delete: ["a", "unknown"]))
            #expect(try database.loadTimers() == [timer("b")])
        }
    }

    @Test("blobs round-trip byte for byte, including empty and non-UTF-8")
    func blobs() throws {
        try withTemporaryDirectory { directory in
            let database = try openFresh(directory)
            let odd: [UInt8] = [0, 0xFF, 0xFE, 0x80, 10, 0]
            try database.apply(batch(
                upsert: [TimerRecord(id: "empty", machine: [], revision: 0, updatedAtMs: 0),
                         TimerRecord(id: "odd", machine: odd, revision: 0, updatedAtMs: 0)],
                events: [EventRecord(timer: "odd", type: "x", revision: 0, dueMs: 0, atMs: 0, payload: odd)],
                requests: [RequestRecord(id: "r", reply: [], atMs: 0)]))
            #expect(try database.loadTimers().map(\.machine) == [[], odd])
            #expect(try database.unpublishedEvents().map(\.payload) == [odd])
            #expect(try database.loadRequests(sinceMs: 0).map(\.reply) == [[]])
        }
    }

    @Test("events get increasing seqs; markPublished empties the outbox in seq order")
    func eventsAndOutbox() throws {
        try withTemporaryDirectory { directory in
            let database = try openFresh(directory)
            let first = try database.apply(batch(events: [event("a", "started"), event("b", "started")]))
            #expect(first.count == 2)
            #expect(first[0] < first[1])
            let second = try database.apply(batch(events: [event("a", "phase", revision: 2)]))
            #expect(second.count == 1)
            #expect(second[0] > first[1])

            var outbox = try database.unpublishedEvents()
            #expect(outbox.map(\.seq) == (first + second).map { Optional($0) })
            #expect(outbox.map(\.type) == ["started", "started", "phase"])
            #expect(outbox[0] == {
                var expected = event("a", "started")
                expected.seq = first[0]
                return expected
            }())

            try database.apply(batch(published: [first[1], 999_999]))  // unknown seqs are ignored
            outbox = try database.unpublishedEvents()
            #expect(outbox.compactMap(\.seq) == [first[0], second[0]])
            #expect(try database.history(HistoryQuery()).first { $0.seq == first[1] }?.published == true)

            // An event can be appended and its earlier sibling marked in one batch.
            let third = try database.apply(batch(events: [event("a", "finished", revision: 3)], published: [first[0], second[0]]))
            #expect(try database.unpublishedEvents().compactMap(\.seq) == third)
        }
    }

    @Test("seqs are never reused, even after every event has been pruned")
    func seqsNeverReused() throws {
        try withTemporaryDirectory { directory in
            let database = try openFresh(directory)
            let seqs = try database.apply(batch(events: [event("a", "started"), event("a", "finished", revision: 2)]))
            try database.apply(batch(published: seqs))
            try database.prune(RetentionPolicy(maxAgeMs: 0, maxEvents: 0), nowMs: 1_000_000)
            #expect(try database.history(HistoryQuery()).isEmpty)
            let next = try database.apply(batch(events: [event("a", "started", revision: 5)]))
            #expect(next[0] > seqs[1])
        }
    }

    @Test("a duplicate event is ignored, gets no seq, and is reported by commit")
    func duplicates() throws {
        try withTemporaryDirectory { directory in
            let database = try openFresh(directory)
            let seqs = try database.apply(batch(events: [event("a", "finished", revision: 4)]))
            try database.apply(batch(published: seqs))

            // Same timer, type, revision and due instant: a duplicate, even with another payload/at.
            var again = event("a", "finished", revision: 4, at: 99_999)
            again.payload = bytes("other")
            let result = try database.commit(batch(events: [again, event("a", "expired", revision: 4)]))
            #expect(result.duplicates == [again])
            #expect(result.appended.map(\.type) == ["expired"])
            #expect(result.appended.allSatisfy { $0.seq != nil })

            // apply returns only the new seqs.
            let onlyDuplicates = try database.apply(batch(events: [again]))
            #expect(onlyDuplicates.isEmpty)

            // The stored event is the first one, still published.
            let stored = try database.history(HistoryQuery(timer: "a")).filter { $0.type == "finished" }
            #expect(stored.count == 1)
            #expect(stored.first?.published == true)
            #expect(stored.first?.atMs == 5_010)
            #expect(try database.unpublishedEvents().map(\.type) == ["expired"])

            // Duplicates within one batch too.
            let twice = try database.commit(batch(events: [event("b", "started"), event("b", "started")]))
            #expect(twice.appended.count == 1)
            #expect(twice.duplicates.count == 1)
        }
    }

    @Test("events with the same revision but another due instant are distinct (countdown 3, 2, 1)")
    func sameRevisionOtherDue() throws {
        try withTemporaryDirectory { directory in
            let database = try openFresh(directory)
            let seqs = try database.apply(batch(events: [
                event("a", "countdown", revision: 2, due: 7_000),
                event("a", "countdown", revision: 2, due: 8_000),
                event("a", "countdown", revision: 2, due: 9_000),
            ]))
            #expect(seqs.count == 3)
        }
    }

    @Test("hasEvent finds stored events across restarts")
    func hasEvent() throws {
        try withTemporaryDirectory { directory in
            do {
                let database = try openFresh(directory)
                #expect(try !database.hasEvent(timer: "a", type: "finished", revision: 4))
                try database.apply(batch(events: [event("a", "finished", revision: 4)]))
                #expect(try database.hasEvent(timer: "a", type: "finished", revision: 4))
            }
            let reopened = try openFresh(directory)
            #expect(try reopened.hasEvent(timer: "a", type: "finished", revision: 4))
            #expect(try !reopened.hasEvent(timer: "a", type: "finished", revision: 5))
            #expect(try !reopened.hasEvent(timer: "a", type: "expired", revision: 4))
            #expect(try !reopened.hasEvent(timer: "b", type: "finished", revision: 4))
        }
    }

    @Test("requests: loaded since an instant in time order; a repeated id keeps its first reply")
    func requests() throws {
        try withTemporaryDirectory { directory in
            let database = try openFresh(directory)
            try database.apply(batch(requests: [
                RequestRecord(id: "late", reply: bytes("3"), atMs: 300),
                RequestRecord(id: "early", reply: bytes("1"), atMs: 100),
                RequestRecord(id: "middle", reply: bytes("2"), atMs: 200),
            ]))
            #expect(try database.loadRequests(sinceMs: 0).map(\.id) == ["early", "middle", "late"])
            #expect(try database.loadRequests(sinceMs: 200).map(\.id) == ["middle", "late"])
            #expect(try database.loadRequests(sinceMs: 301).isEmpty)

            try database.apply(batch(requests: [RequestRecord(id: "early", reply: bytes("again"), atMs: 400)]))
            #expect(try database.request(id: "early") == RequestRecord(id: "early", reply: bytes("1"), atMs: 100))
            #expect(try database.request(id: "missing") == nil)
        }
    }

    @Test("shiftRequestsMs moves every stored request (a wall-clock jump), before the batch's own requests are inserted")
    func shiftRequests() throws {
        try withTemporaryDirectory { directory in
            let database = try openFresh(directory)
            try database.apply(batch(requests: [
                RequestRecord(id: "a", reply: bytes("1"), atMs: 1_000),
                RequestRecord(id: "b", reply: bytes("2"), atMs: 2_000),
            ]))
            var forward = batch(requests: [RequestRecord(id: "c", reply: bytes("3"), atMs: 3_602_500)])
            forward.shiftRequestsMs = 3_600_000
            #expect(!forward.isEmpty)
            try database.apply(forward)
            #expect(try database.loadRequests(sinceMs: 0).map(\.atMs) == [3_601_000, 3_602_000, 3_602_500])
            var backward = StoreBatch()
            backward.shiftRequestsMs = -600_000
            #expect(!backward.isEmpty)
            try database.apply(backward)
            #expect(try database.request(id: "a") == RequestRecord(id: "a", reply: bytes("1"), atMs: 3_001_000))
            #expect(try database.request(id: "c")?.atMs == 3_002_500)
            // Reopened (a restart), the shifted instants are what the dedup window sees.
            try database.close()
            let reopened = try openFresh(directory)
            #expect(try reopened.loadRequests(sinceMs: 3_001_500).map(\.id) == ["b", "c"])
        }
    }

    @Test("meta: set, overwrite, read; in a batch too")
    func meta() throws {
        try withTemporaryDirectory { directory in
            let database = try openFresh(directory)
            #expect(try database.meta("wall_clock_ms") == nil)
            try database.setMeta("wall_clock_ms", "1000")
            #expect(try database.meta("wall_clock_ms") == "1000")
            try database.setMeta("wall_clock_ms", "2000")
            #expect(try database.meta("wall_clock_ms") == "2000")
            try database.apply(batch(upsert: [timer("a")], meta: ["wall_clock_ms": "3000", "node": "gym"]))
            #expect(try database.meta("wall_clock_ms") == "3000")
            #expect(try database.meta("node") == "gym")
        }
    }

    @Test("an empty batch writes nothing and returns no seqs")
    func emptyBatch() throws {
        try withTemporaryDirectory { directory in
            let database = try openFresh(directory)
            #expect(StoreBatch().isEmpty)
            #expect(!batch(meta: ["k": "v"]).isEmpty)
            #expect(try database.apply(StoreBatch()).isEmpty)
        }
    }

    @Test("a failing batch is atomic: nothing of it is written", arguments: [
        "bad restore policy", "empty event type", "empty timer id", "empty request id",
    ])
    func atomic(failure: String) throws {
        try withTemporaryDirectory { directory in
            let database = try openFresh(directory)
            try database.apply(batch(upsert: [timer("keep", revision: 1)], meta: ["k": "before"]))

            var bad = batch(
                upsert: [timer("new"), timer("keep", revision: 2)],
                delete: ["keep"],
                events: [event("new", "started")],
                requests: [RequestRecord(id: "r", reply: [], atMs: 1)],
                meta: ["k": "after"])
            switch failure {
            case "bad restore policy": bad.upsertTimers.append(timer("x", policy: "sometimes"))
            case "empty event type": bad.appendEvents.append(event("new", ""))
            case "empty timer id": bad.upsertTimers.append(timer(""))
            default: bad.requests.append(RequestRecord(id: "", reply: [], atMs: 1))
            }
            let error = #expect(throws: StoreError.self) { try database.apply(bad) }
            #expect(error?.kind == .invalid)
            #expect(error?.sqliteCode != nil)
            #expect(error?.message.contains(database.path) == true)

            #expect(try database.loadTimers() == [timer("keep", revision: 1)])
            #expect(try database.unpublishedEvents().isEmpty)
            #expect(try database.loadRequests(sinceMs: 0).isEmpty)
            #expect(try database.meta("k") == "before")

            // The database is still usable afterwards.
            try database.apply(batch(upsert: [timer("new")]))
            #expect(try database.loadTimers().map(\.id) == ["keep", "new"])
        }
    }

    @Test("within a batch, upserts come before deletes")
    func order() throws {
        try withTemporaryDirectory { directory in
            let database = try openFresh(directory)
            try database.apply(batch(upsert: [timer("a")], delete: ["a"]))
            #expect(try database.loadTimers().isEmpty)
        }
    }

    @Test("writes from many threads are serialised and all land")
    func concurrentWrites() async throws {
        try await withTemporaryDirectoryAsync { directory in
            let database = try openFresh(directory)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        try database.apply(batch(
                            upsert: [timer("t\(index)")], events: [event("t\(index)", "started")]))
                        _ = try database.loadTimers()
                    }
                }
                try await group.waitForAll()
            }
            #expect(try database.loadTimers().count == 20)
            let seqs = try database.unpublishedEvents().compactMap(\.seq)
            #expect(seqs.count == 20)
            #expect(seqs == seqs.sorted())
        }
    }
}

func withTemporaryDirectoryAsync<T>(_ body: (String) async throws -> T) async throws -> T {
    let path = NSTemporaryDirectory() + "pacer-store-tests-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}

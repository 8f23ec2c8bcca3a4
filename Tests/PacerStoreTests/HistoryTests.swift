import Testing
@testable import PacerStore

@Suite("History and retention")
struct HistoryTests {
    /// a: started@1000, b: started@2000, a: phase@3000, b: finished@4000, a: finished@5000
    func seeded(_ directory: String) throws -> (PacerDatabase, [Int64]) {
        let database = try openFresh(directory)
        var seqs: [Int64] = []
        for (timer, type, at) in [("a", "started", 1_000), ("b", "started", 2_000), ("a", "phase", 3_000),
                                  ("b", "finished", 4_000), ("a", "finished", 5_000)] as [(String, String, Int64)] {
            seqs += try database.apply(batch(events: [event(timer, type, revision: Int(at / 1_000), due: at, at: at)]))
        }
        return (database, seqs)
    }

    @Test("history is newest first, filtered by timer and since, and limited to the newest")
    func filters() throws {
        try withTemporaryDirectory { directory in
            let (database, seqs) = try seeded(directory)
            #expect(try database.history(HistoryQuery()).compactMap(\.seq) == seqs.reversed())
            #expect(try database.history(HistoryQuery(timer: "a")).map(\.type) == ["finished", "phase", "started"])
            #expect(try database.history(HistoryQuery(timer: "b")).map(\.atMs) == [4_000, 2_000])
            #expect(try database.history(HistoryQuery(timer: "nobody")).isEmpty)
            #expect(try database.history(HistoryQuery(sinceMs: 3_000)).map(\.atMs) == [5_000, 4_000, 3_000])
            #expect(try database.history(HistoryQuery(timer: "a", sinceMs: 2_000)).map(\.atMs) == [5_000, 3_000])
            #expect(try database.history(HistoryQuery(limit: 2)).map(\.atMs) == [5_000, 4_000])
            #expect(try database.history(HistoryQuery(timer: "a", limit: 1)).map(\.type) == ["finished"])
            #expect(try database.history(HistoryQuery(limit: 0)).isEmpty)
            #expect(try database.history(HistoryQuery(limit: -3)).isEmpty)
            #expect(try database.history(HistoryQuery(limit: 1_000)).count == 5)
            // Paging backwards.
            let page1 = try database.history(HistoryQuery(limit: 2))
            let page2 = try database.history(HistoryQuery(beforeSeq: page1.last?.seq, limit: 2))
            let page3 = try database.history(HistoryQuery(beforeSeq: page2.last?.seq, limit: 2))
            #expect((page1 + page2 + page3).compactMap(\.seq) == seqs.reversed())
        }
    }

    @Test("history order is commit order even when the wall clock went backwards")
    func commitOrder() throws {
        try withTemporaryDirectory { directory in
            let database = try openFresh(directory)
            try database.apply(batch(events: [event("a", "started", at: 9_000)]))
            try database.apply(batch(events: [event("a", "finished", revision: 2, at: 1_000)]))  // clock corrected
            #expect(try database.history(HistoryQuery()).map(\.type) == ["finished", "started"])
        }
    }

    @Test("prune by age removes old published events, keeps unpublished ones and recent ones")
    func pruneByAge() throws {
        try withTemporaryDirectory { directory in
            let (database, seqs) = try seeded(directory)
            // Everything but a's phase@3000 has been published.
            try database.apply(batch(published: seqs.filter { $0 != seqs[2] }))
            let result = try database.prune(RetentionPolicy(maxAgeMs: 2_500), nowMs: 6_000)  // cutoff 3500
            #expect(result == PruneResult(eventsByAge: 2, eventsByCount: 0, requests: 0))
            #expect(try database.history(HistoryQuery()).map(\.atMs) == [5_000, 4_000, 3_000])
            #expect(try database.unpublishedEvents().map(\.atMs) == [3_000])
            // Again: nothing more to do.
            #expect(try database.prune(RetentionPolicy(maxAgeMs: 2_500), nowMs: 6_000) == PruneResult())
        }
    }

    @Test("prune by count keeps the newest events, and every unpublished one")
    func pruneByCount() throws {
        try withTemporaryDirectory { directory in
            let (database, seqs) = try seeded(directory)
            try database.apply(batch(published: Array(seqs.dropFirst())))  // the oldest stays unpublished
            let result = try database.prune(RetentionPolicy(maxEvents: 3), nowMs: 6_000)
            #expect(result.eventsByCount == 2)
            #expect(try database.history(HistoryQuery()).compactMap(\.seq) == [seqs[4], seqs[3], seqs[0]])

            // With more unpublished events than the limit, all of them stay.
            let more = try database.apply(batch(events: (10..<15).map { event("c", "phase", revision: $0) }))
            #expect(more.count == 5)
            try database.prune(RetentionPolicy(maxEvents: 2), nowMs: 6_000)
            let left = try database.history(HistoryQuery(limit: 100))
            #expect(left.allSatisfy { !$0.published })
            #expect(left.count == 6)
        }
    }

    @Test("prune removes requests older than the window")
    func pruneRequests() throws {
        try withTemporaryDirectory { directory in
            let database = try openFresh(directory)
            try database.apply(batch(requests: [
                RequestRecord(id: "old", reply: [], atMs: 0),
                RequestRecord(id: "edge", reply: [], atMs: 400_000),
                RequestRecord(id: "new", reply: [], atMs: 900_000),
            ]))
            let result = try database.prune(RetentionPolicy(), nowMs: 1_000_000)  // window 10 min: cutoff 400000
            #expect(result.requests == 1)
            #expect(try database.loadRequests(sinceMs: 0).map(\.id) == ["edge", "new"])
        }
    }

    @Test("prune with extreme values does not trap")
    func extremes() throws {
        try withTemporaryDirectory { directory in
            let (database, seqs) = try seeded(directory)
            try database.apply(batch(published: seqs))
            try database.prune(RetentionPolicy(maxAgeMs: .max, maxEvents: .max, requestWindowMs: .max), nowMs: .min)
            #expect(try database.history(HistoryQuery()).count == 5)
            try database.prune(RetentionPolicy(maxAgeMs: -5, maxEvents: -5, requestWindowMs: -5), nowMs: .max)
            #expect(try database.history(HistoryQuery()).isEmpty)
        }
    }

    @Test("default retention policy values")
    func defaults() {
        let policy = RetentionPolicy()
        #expect(policy.maxAgeMs == 30 * 24 * 60 * 60 * 1_000)
        #expect(policy.maxEvents == 100_000)
        #expect(policy.requestWindowMs == 10 * 60 * 1_000)
        #expect(HistoryQuery().limit == 100)
    }
}

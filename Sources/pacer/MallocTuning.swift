#if canImport(Glibc)
import CMalloc

/// glibc's malloc thresholds, fixed for the node's process: no page faults on a command's path.
///
/// By default a thread's arena gives the top of its heap back to the kernel as soon as 128 KB are
/// free there, and takes it again on the next allocation. A command's write does exactly that:
/// SQLite allocates and frees an 87 KB page-cache block at the start of a transaction, so the
/// engine thread's arena shrank (`madvise`) and grew (`mprotect`) around one write in three, and
/// the next statements took a page fault for each 4 KB page again (a third of a toggle's
/// statements; the figures are in docs/benchmarks/history.md, 2026-11-27, "a toggle's own work, around its fsync").
/// Fixed thresholds keep up to 2 MB free at the top of each arena, and blocks under 1 MB in the
/// heap rather than in a mapping of their own. glibc would raise both thresholds by itself after
/// freeing its first large mapped block; fixing them only stops the shrinking and growing around
/// small blocks.
enum MallocTuning {
    static let mmapThreshold: Int32 = 1 << 20
    static let trimThreshold: Int32 = 2 << 20

    /// Sets the thresholds. Call once, before the node starts its threads.
    static func apply() {
        _ = mallopt(M_MMAP_THRESHOLD, mmapThreshold)
        _ = mallopt(M_TRIM_THRESHOLD, trimThreshold)
    }
}
#else
enum MallocTuning {
    static func apply() {}
}
#endif

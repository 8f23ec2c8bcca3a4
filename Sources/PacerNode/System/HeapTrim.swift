import CMalloc

/// Gives freed heap pages back to the system (glibc's `malloc_trim`). A restore or a connect
/// allocates in bursts (10,000 records decoded, 80,000 messages queued) on several threads,
/// whose arenas glibc otherwise keeps at their peak for the life of the process.
enum HeapTrim {
    /// Trims now.
    static func now() {
        _ = malloc_trim(0)
    }

    /// Trims 3 s, 10 s and 30 s from now (the messages of a connect are freed by the network
    /// thread once the broker acknowledged them, later when it is slow); nothing of the engine
    /// waits for it.
    static func later() {
        Task.detached(priority: .background) {
            for delay in [Duration.seconds(3), .seconds(7), .seconds(20)] {
                try? await Task.sleep(for: delay)
                now()
            }
        }
    }
}

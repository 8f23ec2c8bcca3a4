/// Runs `body` and returns its value, or nil when `timeout` passes first (`body` is then
/// cancelled). The one way the control commands wait for a reply or a retained message.
public func value<T: Sendable>(within timeout: Duration, _ body: @escaping @Sendable () async -> T?) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await body() }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

import Glibc

/// The descriptors of one `poll`, each added under a role and its readiness read back by that
/// role: a loop host's own descriptors and a hosted connection's (``MQTTHostedLoop``) share one
/// wait, and nobody counts positions in a `pollfd` array.
///
/// Threading: a value used by the thread that waits on it.
public struct PollSet<Role: Equatable> {
    private var descriptors: [pollfd] = []
    private var roles: [Role] = []

    public init() {
        descriptors.reserveCapacity(4)
        roles.reserveCapacity(4)
    }

    /// Adds `fd`, waited on for `events` (`POLLIN`, `POLLOUT`), under `role` (once per role).
    public mutating func add(_ role: Role, fd: Int32, events: Int16) {
        precondition(!roles.contains(role), "PollSet: a role added twice")
        descriptors.append(pollfd(fd: fd, events: events, revents: 0))
        roles.append(role)
    }

    /// Waits until a descriptor is ready, at most `timeoutMs` (-1: no bound; 0: only looks).
    /// - Returns: `poll`'s result: the number of ready descriptors, 0 on timeout, -1 (errno) on error.
    @discardableResult
    public mutating func wait(timeoutMs: Int32) -> Int32 {
        for index in descriptors.indices { descriptors[index].revents = 0 }
        return poll(&descriptors, nfds_t(descriptors.count), timeoutMs)
    }

    /// What the last `wait` reported for `role` (`revents`: `POLLIN`, `POLLOUT`, `POLLERR`,
    /// `POLLHUP`, ...); 0 when it reported nothing or no descriptor has that role.
    public func readiness(of role: Role) -> Int16 {
        guard let index = roles.firstIndex(of: role) else { return 0 }
        return descriptors[index].revents
    }
}

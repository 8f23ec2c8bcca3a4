import Dispatch
import Foundation
import ServiceLifecycle
import Synchronization

/// SIGTERM and SIGINT caught from the first moment of `pacer run`, before the service group
/// installs its own handling (while the configuration loads and the database opens).
///
/// Without it a signal in that window kills the node by the default action (seen under load:
/// systemd stopping a node that is still starting, or a test signalling right after launch),
/// so it never exits 0 and never publishes `offline`. The signals are set to be ignored by
/// the kernel and watched with dispatch sources instead; one that arrives before the group
/// exists is remembered and passed on as soon as it does (the group then starts its services
/// and stops them gracefully at once). Later signals reach the group's own handlers too;
/// passing them on again is harmless (`triggerGracefulShutdown` is idempotent).
final class EarlySignals: Sendable {
    private struct State {
        var caught: Int32?
        var group: ServiceGroup?
    }

    private let state = Mutex(State())

    private init() {}

    /// Starts watching `signals`. Keep the returned sources alive for as long as they must be
    /// watched (for `pacer run`: until it returns).
    static func watch(_ signals: [Int32] = [SIGTERM, SIGINT]) -> (EarlySignals, [any DispatchSourceSignal]) {
        let relay = EarlySignals()
        let sources = signals.map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { relay.caught(number) }
            source.resume()
            return source
        }
        return (relay, sources)
    }

    /// The signal caught before `attach`, if any.
    var caughtBeforeStart: Int32? { state.withLock { $0.group == nil ? $0.caught : nil } }

    /// From now on a caught signal shuts `group` down gracefully; one caught already does so now.
    func attach(_ group: ServiceGroup) async {
        let pending = state.withLock { s -> Bool in
            s.group = group
            return s.caught != nil
        }
        if pending { await group.triggerGracefulShutdown() }
    }

    private func caught(_ number: Int32) {
        let group = state.withLock { s -> ServiceGroup? in
            if s.caught == nil { s.caught = number }
            return s.group
        }
        if let group { Task { await group.triggerGracefulShutdown() } }
    }
}

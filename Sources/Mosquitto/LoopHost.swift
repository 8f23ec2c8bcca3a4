import Dispatch
import Glibc
import Synchronization

/// A thread that serves a client's connection in its own wait, in place of the client's
/// network thread (``MQTTClient/serveConnections(on:)``; plain TCP only).
///
/// Why: a message then reaches the code that handles it with no thread switch. On this project's
/// 2-core VM, a command answered in libmosquitto's callback came back in 0.08 ms; handed to another
/// thread first (a condition variable or an eventfd), in 0.26–0.30 ms (docs/benchmarks/history.md, 2026-11-27,
/// "the engine thread reads its own commands"). The node's engine thread is the host of its command
/// connection: it reads the command, handles it and writes the answer in one wake-up.
///
/// The contract, per connection (the network thread still connects, reconnects and backs
/// off; it hands each connection over once the CONNECT is sent and waits):
/// - `adopt` is called on the network thread. From then on the host adds the connection's
///   descriptors to each of its waits (``MQTTHostedLoop/addDescriptors(to:as:)``, a typed
///   ``PollSet``; it must not wait longer than ``MQTTHostedLoop/millisecondsToNextTurn()``), and
///   after each wait calls ``MQTTHostedLoop/turn(after:as:)``, never from two threads at once.
/// - The loop is over when `turn` returns false: the connection ended, and the network thread
///   has it back (to reconnect or stop). The host drops the loop.
/// - A host that stops before that calls ``MQTTHostedLoop/release()`` once: the network
///   thread serves the connection itself from there.
/// - A host busy elsewhere delays reads, writes of what the socket did not take, and the
///   keep-alive; it should be idle most of the time (the keep-alive allows 1.5 × its
///   interval).
public protocol MQTTLoopHost: AnyObject, Sendable {
    /// Takes `loop` (see the contract above). Returns false when the host cannot (it is
    /// stopping): the network thread serves the connection itself.
    func adopt(_ loop: MQTTHostedLoop) -> Bool
}

/// A hosted connection's two descriptors, as a host's ``PollSet`` tells them apart.
public enum MQTTConnectionDescriptor: Equatable, Sendable {
    /// The connection's socket.
    case socket
    /// The client's wake-up pipe.
    case wakeUp
}

/// One connection of a client served by an ``MQTTLoopHost`` (see the contract there).
///
/// `@unchecked Sendable`: `turnState` is used by one thread at a time: the host's thread
/// between `adopt` and the end (turn false, or `release`), the network thread before and
/// after; the hand-over goes through `handBack`'s semaphore and the host's own locks, which
/// order the accesses. `outcome` is a `Mutex`.
public final class MQTTHostedLoop: @unchecked Sendable {
    /// How the hosting ended, for the waiting network thread.
    enum Outcome {
        /// The connection ended with this libmosquitto result and errno.
        case ended(rc: Int32, errno: Int32)
        /// The host stopped: the network thread serves the connection from here.
        case released
    }

    let core: MQTTClientCore
    var turnState: MQTTClientCore.TurnState
    private let outcome = Mutex<Outcome?>(nil)
    private let handBack = DispatchSemaphore(value: 0)

    init(core: MQTTClientCore, turnState: MQTTClientCore.TurnState) {
        self.core = core
        self.turnState = turnState
    }

    /// Adds the connection's socket (read, and write while something waits to be written) and
    /// the client's wake-up pipe (written when an API call queued a packet or asked to
    /// disconnect) to `set`, each under the role `role` gives it.
    public func addDescriptors<Role>(to set: inout PollSet<Role>, as role: (MQTTConnectionDescriptor) -> Role) {
        let (socket, wakeUp) = core.pollDescriptors()
        set.add(role(.socket), fd: socket.fd, events: socket.events)
        set.add(role(.wakeUp), fd: wakeUp.fd, events: wakeUp.events)
    }

    /// The longest the host may wait before the next turn (the keep-alive, or the end of a
    /// disconnect's grace), in ms; 0 when a turn is due now.
    public func millisecondsToNextTurn() -> Int32 {
        core.millisecondsToNextTurn(turnState)
    }

    /// Serves the connection after a wait on `set` (to which ``addDescriptors(to:as:)`` added
    /// it under `role`), when its descriptors were ready or a turn is due: reads what arrived
    /// (callbacks run here, on the host's thread), writes what waits, does the keep-alive.
    /// Returns false when the connection ended: the network thread has it back, and the host
    /// drops the loop.
    public func turn<Role>(after set: PollSet<Role>, as role: (MQTTConnectionDescriptor) -> Role) -> Bool {
        let socketEvents = set.readiness(of: role(.socket)), wakeEvents = set.readiness(of: role(.wakeUp))
        guard socketEvents != 0 || wakeEvents != 0 || millisecondsToNextTurn() == 0 else { return true }
        guard let end = core.hostedTurn(socketEvents: socketEvents, wakeEvents: wakeEvents, &turnState) else { return true }
        finish(.ended(rc: end.rc, errno: end.errno))
        return false
    }

    /// The host stops serving: the network thread serves the connection from here.
    public func release() {
        finish(.released)
    }

    private func finish(_ result: Outcome) {
        let first = outcome.withLock { outcome -> Bool in
            guard outcome == nil else { return false }
            outcome = result
            return true
        }
        if first { handBack.signal() }
    }

    /// Blocks the network thread until the host hands the connection back.
    func waitForHandBack() -> Outcome {
        handBack.wait()
        return outcome.withLock { $0 } ?? .released
    }
}

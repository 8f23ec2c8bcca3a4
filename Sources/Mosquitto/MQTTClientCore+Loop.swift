import CMosquitto
import Dispatch
import Glibc

/// Wakes the thread serving a client's connection from its poll: a non-blocking, close-on-exec
/// pipe. One byte per hand-over (a packet queued by another thread, a disconnect); the serving
/// thread drains it.
///
/// Threading: both ends are made in `init` and closed in `deinit`; `wake` from any thread,
/// `drain` by the serving thread.
final class WakePipe: Sendable {
    /// The end a poll waits on.
    let readEnd: Int32
    private let writeEnd: Int32

    /// Nil when no pipe can be made (errno tells why).
    init?() {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
        }
        (readEnd, writeEnd) = (fds[0], fds[1])
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    func wake() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)  // EAGAIN when the pipe is full: a wake-up is pending anyway
    }

    func drain() {
        var bytes = [UInt8](repeating: 0, count: 256)
        while read(readEnd, &bytes, bytes.count) > 0 {}
    }
}

/// The network loop of both profiles: one turn waits in poll() on the socket and the wake-up
/// pipe, then does what `mosquitto_loop` does after its wait (`mosquitto_loop_read`,
/// `mosquitto_loop_write`, `mosquitto_loop_misc`). The `engine` profile adds its direct lane,
/// corked writes and loop host to the same turn.
///
/// Why not `mosquitto_loop`: it waits with select(), which cannot watch a descriptor numbered
/// FD_SETSIZE (1024) or more, so it returns MOSQ_ERR_INVAL for such a socket: any program with
/// many descriptors open (a test process, an app) would lose its connection
/// (HighDescriptorTests). `mosquitto_loop_forever` and `mosquitto_loop_start` use it too.
///
/// TLS: OpenSSL may hold decrypted bytes that poll cannot see. `mosquitto_loop_read` reads on
/// while it does (`SSL_pending`), as under `mosquitto_loop`; what OpenSSL has not read yet is
/// still in the socket, where poll sees it. `SSL_ERROR_WANT_WRITE` makes `mosquitto_want_write`
/// true, so the next wait includes POLLOUT. Nothing waits unseen.
extension MQTTClientCore {
    /// The socket (read; write too while something waits to be written) and the wake-up pipe,
    /// as a turn waits on them.
    func pollDescriptors() -> (socket: pollfd, wakeUp: pollfd) {
        let socket = mosquitto_socket(mosq)
        let write = mosquitto_want_write(mosq) || (engine?.direct.withLock { $0.pending > 0 } ?? false)
        return (pollfd(fd: socket, events: Int16(POLLIN) | (write ? Int16(POLLOUT) : 0), revents: 0),
                pollfd(fd: wakePipe.readEnd, events: Int16(POLLIN), revents: 0))
    }

    /// One turn of the network thread's loop: waits (at most 1 s, for the keep-alive) for the
    /// socket or a wake-up, then serves the socket (`afterWait`). Unlike `mosquitto_loop` it
    /// does not watch libmosquitto's socket pair (which gets one byte per queued packet, and
    /// whose descriptor no API gives): the thread that queues a packet wakes this one through
    /// `wakePipe` (`packetQueued`); under `engine` a batch of publishes costs one wake-up. The
    /// bytes left in the socket pair are never read; once its buffer is full, the non-blocking
    /// write in libmosquitto fails harmlessly. Returns the result and errno that ended the
    /// connection, nil to go on.
    func pollTurn(_ turn: inout TurnState) -> (rc: Int32, errno: Int32)? {
        requestDisconnectIfAsked(&turn)
        let (socket, wakeUp) = pollDescriptors()
        guard socket.fd >= 0 else { return (MOSQ_ERR_NO_CONN.rawValue, errno) }
        var set = PollSet<MQTTConnectionDescriptor>()
        set.add(.socket, fd: socket.fd, events: socket.events)
        set.add(.wakeUp, fd: wakeUp.fd, events: wakeUp.events)
        let ready = set.wait(timeoutMs: 1000)
        if ready < 0 && errno != EINTR { return (MOSQ_ERR_ERRNO.rawValue, errno) }
        return afterWait(socketEvents: set.readiness(of: .socket), wakeEvents: set.readiness(of: .wakeUp), readsAll: false, &turn)
    }

    /// A turn on a loop host's thread (``MQTTHostedLoop/turn(after:as:)``, `engine` only),
    /// after the host's wait. Reads every packet already in the socket (up to
    /// `hostedReadLimit`), not one: the host handles what arrived before it waits again, so a
    /// burst of commands that came in during one write is handled (and written) as one group,
    /// and the broker's acknowledgements queued behind a burst's commands are reached soon.
    func hostedTurn(socketEvents: Int16, wakeEvents: Int16, _ turn: inout TurnState) -> (rc: Int32, errno: Int32)? {
        requestDisconnectIfAsked(&turn)
        return afterWait(socketEvents: socketEvents, wakeEvents: wakeEvents, readsAll: true, &turn)
    }

    /// How long a host may wait before the next turn, in ms (the keep-alive's second, or the
    /// end of a disconnect's grace).
    func millisecondsToNextTurn(_ turn: TurnState) -> Int32 {
        var next = turn.lastTurn.advanced(by: .seconds(1))
        if let stop = turn.stopDeadline, stop < next { next = stop }
        let (seconds, attoseconds) = ContinuousClock.now.duration(to: next).components
        let ms = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return Int32(clamping: max(0, ms + (attoseconds % 1_000_000_000_000_000 > 0 ? 1 : 0)))
    }

    /// The work of a turn once its wait is over: reads, writes and the keep-alive
    /// (`serviceSocket`; under `engine`, holding the lane's lock), then the publishes kept
    /// while disconnected. Returns the result and errno that ended the connection, nil to go on.
    private func afterWait(socketEvents: Int16, wakeEvents: Int16, readsAll: Bool, _ turn: inout TurnState) -> (rc: Int32, errno: Int32)? {
        turn.lastTurn = .now
        if wakeEvents != 0 { wakePipe.drain() }
        let socket = mosquitto_socket(mosq)
        guard socket >= 0 else { return (MOSQ_ERR_NO_CONN.rawValue, errno) }
        // As select() reports them to `mosquitto_loop`: an error or a hang-up reads as readable.
        let readable = socketEvents & Int16(POLLIN | POLLERR | POLLHUP) != 0
        let rc: Int32
        if let io = engine {
            // Every libmosquitto call under the lane's lock (DirectLane rule 1; the publishing
            // thread's writes).
            rc = io.direct.withLock { lane in
                let rc = serviceSocket(socket, readable: readable, readsAll: readsAll, lane: &lane)
                if lane.socket >= 0 && lane.socket != mosquitto_socket(mosq) { lane.close() }
                return rc
            }
        } else {
            var noLane = DirectLane()  // `library` has none: a closed one, which adds nothing
            rc = serviceSocket(socket, readable: readable, readsAll: readsAll, lane: &noLane)
        }
        let savedErrno = errno
        if rc != MOSQ_ERR_SUCCESS.rawValue { return (rc, savedErrno) }
        flushKeptPublishes()
        engine?.direct.withLock { lane in if lane.socket >= 0 { releaseDirectLane(&lane) } }
        if let stop = turn.stopDeadline, ContinuousClock.now >= stop { return (MOSQ_ERR_SUCCESS.rawValue, savedErrno) }
        return nil
    }

    /// Packets a host's turn reads at most: a turn stays a few milliseconds long.
    static let hostedReadLimit = 256

    /// Whether bytes wait in the socket's receive buffer (a peek, never blocks).
    private func socketHasBytes(_ socket: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(socket, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }

    /// The read, the writes and the keep-alive of one turn (`afterWait`), as `mosquitto_loop`
    /// does them after its wait. Writes whenever libmosquitto has something queued (a packet
    /// queued by another thread woke the wait, or the read queued an acknowledgement); on a
    /// full socket the write just stops (EAGAIN). With the direct lane (`engine`, held locked
    /// by the caller): opens it after an accepted CONNACK, writes what it holds before
    /// libmosquitto's queue, and records what libmosquitto left (rules 3 and 4).
    private func serviceSocket(_ socket: Int32, readable: Bool, readsAll: Bool, lane: inout DirectLane) -> Int32 {
        func ended(_ rc: Int32) -> Int32? {
            if rc != MOSQ_ERR_SUCCESS.rawValue { return rc }
            return mosquitto_socket(mosq) < 0 ? MOSQ_ERR_NO_CONN.rawValue : nil
        }
        if readable {
            var reads = 0
            repeat {
                if let rc = ended(mosquitto_loop_read(mosq, 1)) { return rc }
                reads += 1
            } while readsAll && reads < Self.hostedReadLimit && socketHasBytes(socket)
        }
        if let io = engine, io.connackAccepted.exchange(false, ordering: .acquiringAndReleasing) {
            lane.open(socket: mosquitto_socket(mosq))
        }
        if lane.pending > 0, lane.socket >= 0 { lane.flush() }
        let directLeft = lane.pending
        if directLeft == 0 && mosquitto_want_write(mosq) {
            // Under `engine`, corked: libmosquitto writes each queued packet with its own
            // send(), and a batch's burst of them then leaves as full segments when uncorked
            // below (one wake-up of the broker, not one per packet); a lone packet still goes
            // out at once. `library` writes as `mosquitto_loop` does.
            let corked = engine != nil
            if corked { setCork(socket, true) }
            let rc = mosquitto_loop_write(mosq, 1)
            if corked { setCork(socket, false) }
            if let rc = ended(rc) { return rc }
        }
        // Checked under the lane's lock, which every API publish to libmosquitto takes:
        // an empty queue here holds nothing published after the lane's bytes.
        if engine != nil { releaseDirectLane(&lane) }
        // What the socket did not take stays queued: the write backlog.
        if !mosquitto_want_write(mosq) && directLeft == 0 {
            backlogSinceNs.store(0, ordering: .releasing)
        } else if backlogSinceNs.load(ordering: .acquiring) == 0 {
            backlogSinceNs.store(DispatchTime.now().uptimeNanoseconds, ordering: .releasing)
        }
        return mosquitto_loop_misc(mosq)
    }

    /// TCP_CORK on the broker socket (fails harmlessly on a socket that is not TCP).
    func setCork(_ socket: Int32, _ on: Bool) {
        var value: Int32 = on ? 1 : 0
        _ = setsockopt(socket, Int32(IPPROTO_TCP), TCP_CORK, &value, socklen_t(MemoryLayout<Int32>.size))
    }
}

import CMosquitto
import Dispatch
import Glibc
import Synchronization

/// Which threads do a client's socket I/O (``MQTTConfiguration/ioProfile``): one choice, not
/// flags (issue 28).
public enum MQTTIOProfile: String, Sendable, Equatable, CaseIterable {
    /// libmosquitto's own loop (`mosquitto_loop`) on the client's network thread, as STYLE.md's
    /// canonical sequence: every queued packet wakes that thread through libmosquitto's socket
    /// pair, and it writes. The default, and the only profile over TLS.
    case library
    /// For a program whose own thread publishes in batches and can serve the connection (the
    /// node's engine thread). Plain TCP only (over TLS the client uses `library`). Four parts,
    /// each measured against the profile without it in one `scripts/bench` run (BENCHMARKS.md,
    /// 2026-11-27, issue 28):
    /// - our poll over the socket and a pipe of ours, in place of `mosquitto_loop`: a batch of
    ///   publishes (``MQTTClient/beginPublishBatch()``) wakes the writer once, not once per packet;
    /// - a loop host may serve the connection (``MQTTClient/serveConnections(on:)``,
    ///   LoopHost.swift): a message reaches its reader with no thread switch;
    /// - the publishing thread writes libmosquitto's queue itself at the end of a batch;
    /// - QoS 0 publishes without properties are encoded and written by the publishing thread,
    ///   one `send` per batch (the direct lane, DirectLane.swift).
    case engine
}

/// The `engine` profile's own state (``MQTTIOProfile/engine``); a client under `library` has none.
///
/// Threading: every field is a lock or an atomic, and `wakePipe` is made in `init` and closed
/// in `deinit`. Lock order: `direct`, then libmosquitto's mutexes (its calls are made under
/// it by the thread serving the connection and by a publishing thread that writes), then the
/// core's `state` (libmosquitto's callbacks take it). The direct lane's rules: DirectLane.swift.
final class EngineIO: Sendable {
    /// Wakes the thread serving the connection (the network thread's poll, or its loop host's):
    /// a non-blocking pipe, `[read end, write end]`. One byte per hand-over of queued packets.
    let wakePipe: [Int32]
    /// While above zero, a queued packet does not wake the serving thread: a batch is handed
    /// over with one wake-up at its end (`beginBatch`/`endBatch`).
    let batchDepth = Atomic<Int>(0)
    /// A packet was queued while a batch was open: its end must hand it over.
    let batchHasPackets = Atomic<Bool>(false)
    /// The direct lane, and the lock under which every write to the socket happens.
    let direct = Mutex(DirectLane())
    /// The broker accepted a connection (set in on_connect, where the serving thread already
    /// holds `direct`): the lane opens after that read.
    let connackAccepted = Atomic<Bool>(false)
    /// The thread that serves this client's connections in place of the network thread
    /// (``MQTTClient/serveConnections(on:)``); held weakly: its owner keeps it.
    let loopHost = Mutex(WeakLoopHost())
    struct WeakLoopHost {
        weak var host: (any MQTTLoopHost)?
    }

    /// Nil when no pipe can be made (the client then runs `library`).
    init?() {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
        }
        wakePipe = fds
    }

    deinit {
        for fd in wakePipe { close(fd) }
    }

    /// Wakes the serving thread's poll.
    func wake() {
        var byte: UInt8 = 1
        _ = write(wakePipe[1], &byte, 1)  // EAGAIN when the pipe is full: a wake-up is pending anyway
    }
}

/// The `engine` profile's I/O: batches, the serving thread's turns (its own or a loop host's),
/// the publishing thread's writes and the direct lane.
extension MQTTClientCore {
    // MARK: Handing packets to the network thread

    /// A packet was queued in libmosquitto from an API thread: it must be written. Under
    /// `library`, `mosquitto_loop` is woken by libmosquitto itself (its socket pair); under
    /// `engine`, it is written here or our poll is woken, at once, or once at the end of a batch.
    /// - Parameter awaited: the caller waits for the broker's answer (SUBACK, UNSUBACK), so
    ///   it goes out at once, even inside a batch.
    func packetQueued(awaited: Bool = false) {
        guard let io = engine else { return }
        guard awaited || io.batchDepth.load(ordering: .acquiring) == 0 else {
            io.batchHasPackets.store(true, ordering: .releasing)
            return
        }
        handOver(io)
    }

    /// Gets what libmosquitto holds written: by this thread when it may, else, or for what the
    /// socket did not take, by the serving thread, woken.
    private func handOver(_ io: EngineIO) {
        if writeQueued(io) { io.wake() }
    }

    /// Writes libmosquitto's queue from the calling thread (the publishing thread's writes),
    /// behind what the direct lane holds. Returns whether the network thread must be woken:
    /// no connection up (it writes after the CONNACK), packets left (the socket is full), or
    /// the write failed (libmosquitto closed the socket; the network thread reports it).
    private func writeQueued(_ io: EngineIO) -> Bool {
        io.direct.withLock { lane -> Bool in
            guard lane.connectionUp, lane.publisherWriteFailure == nil else { return true }
            let socket = mosquitto_socket(mosq)
            guard socket >= 0 else { return true }
            if lane.pending > 0 {
                if lane.socket >= 0 { lane.flush() }
                if lane.pending > 0 { return true }  // the lane's bytes go first (DirectLane rule 3)
            }
            guard mosquitto_want_write(mosq) else { return false }
            lane.countPublisherWrite()
            setCork(socket, true)
            let rc = mosquitto_loop_write(mosq, 1)
            let savedErrno = errno
            setCork(socket, false)
            if rc != MOSQ_ERR_SUCCESS.rawValue || mosquitto_socket(mosq) < 0 {
                lane.publisherWriteFailure = (rc == MOSQ_ERR_SUCCESS.rawValue ? MOSQ_ERR_CONN_LOST.rawValue : rc, savedErrno)
                return true
            }
            releaseDirectLane(&lane)
            return mosquitto_want_write(mosq)
        }
    }

    /// Publishes until the matching `endBatch()` do not wake the network thread one by one.
    func beginBatch() {
        engine?.batchDepth.add(1, ordering: .acquiringAndReleasing)
    }

    /// Ends a batch: one wake-up hands everything queued in it to the network thread; none
    /// when nothing was queued (a node's tick that published only over its other connection).
    func endBatch() {
        guard let io = engine, io.batchDepth.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        flushDirect(io)
        if io.batchHasPackets.exchange(false, ordering: .acquiringAndReleasing) {
            handOver(io)
        }
    }

    /// Writes a QoS 0 publish through the direct lane (at once, or at the end of the open
    /// batch). False when the lane cannot take it now: the caller publishes through
    /// libmosquitto, which keeps the order (DirectLane rule 3).
    func writeDirectly(topic: String, payload: [UInt8], retain: Bool) -> Bool {
        guard let io = engine, payload.count <= DirectLane.largestPayload else { return false }
        let inBatch = io.batchDepth.load(ordering: .acquiring) > 0
        let outcome: Bool? = io.direct.withLock { lane in
            guard lane.canAppend else { return nil }
            lane.append(topic: topic, payload: payload, retain: retain, version: speaksMQTT5.load(ordering: .acquiring) ? .v5 : .v3_1_1)
            if inBatch { return false }
            lane.flush()
            return lane.pending > 0
        }
        guard let outcome else { return false }
        if outcome { io.wake() }  // the socket is full: the network thread writes the rest
        return true
    }

    /// Writes what the direct lane holds (the end of a batch); wakes the network thread for
    /// what the socket does not take now.
    private func flushDirect(_ io: EngineIO) {
        let left = io.direct.withLock { lane -> Bool in
            guard lane.pending > 0, !lane.libraryBusy, lane.socket >= 0 else { return false }
            lane.flush()
            return lane.pending > 0
        }
        if left { io.wake() }
    }

    /// Records what libmosquitto has left to write (the caller holds the lane's lock, which every
    /// API publish to libmosquitto takes: what is seen here is all there is). The lane takes
    /// bytes again once nothing of ours waits there: no packet in its queue, no QoS 1/2
    /// message held back or unacknowledged, no kept publish still to hand over (after a
    /// CONNACK, `flushKeptPublishes`).
    private func releaseDirectLane(_ lane: inout DirectLane) {
        let left = mosquitto_want_write(mosq)
        lane.libraryBusy = left
        if !left, lane.libraryQueued, !state.withLock({ $0.reliablePublishMayWait }) { lane.libraryQueued = false }
    }

    /// Bytes the direct lane has written (tests).
    var directBytesWritten: Int { engine?.direct.withLock { $0.bytesWritten } ?? 0 }
    /// Times a publishing thread wrote libmosquitto's queue itself (tests).
    var publisherWriteCount: Int { engine?.direct.withLock { $0.publisherWrites } ?? 0 }
    /// The socket (read; write too while something waits to be written) and the wake-up pipe,
    /// as one turn of the loop waits on them (plain TCP).
    func pollDescriptors(_ io: EngineIO) -> (socket: pollfd, wakeUp: pollfd) {
        let socket = mosquitto_socket(mosq)
        let write = mosquitto_want_write(mosq) || io.direct.withLock { $0.pending > 0 }
        return (pollfd(fd: socket, events: Int16(POLLIN) | (write ? Int16(POLLOUT) : 0), revents: 0),
                pollfd(fd: io.wakePipe[0], events: Int16(POLLIN), revents: 0))
    }

    /// One turn of the network loop over plain TCP, in place of `mosquitto_loop`: waits (at
    /// most 1 s, for the keep-alive) for the socket or a wake-up, then serves the socket
    /// (`afterWait`). Unlike `mosquitto_loop` it does not watch libmosquitto's socket pair,
    /// which gets one byte per queued packet: a batch of publishes costs one wake-up of this
    /// thread (through `wakePipe`), not one per packet. The bytes left in the socket pair are
    /// never read; once its buffer is full, the non-blocking write in libmosquitto fails
    /// harmlessly. Returns the result and errno that ended the connection, nil to go on.
    func ownPollTurn(_ io: EngineIO, _ turn: inout TurnState) -> (rc: Int32, errno: Int32)? {
        requestDisconnectIfAsked(&turn)
        let (socket, wakeUp) = pollDescriptors(io)
        guard socket.fd >= 0 else { return (MOSQ_ERR_NO_CONN.rawValue, errno) }
        var set = PollSet<MQTTConnectionDescriptor>()
        set.add(.socket, fd: socket.fd, events: socket.events)
        set.add(.wakeUp, fd: wakeUp.fd, events: wakeUp.events)
        let ready = set.wait(timeoutMs: 1000)
        if ready < 0 && errno != EINTR { return (MOSQ_ERR_ERRNO.rawValue, errno) }
        return afterWait(io, socketEvents: set.readiness(of: .socket), wakeEvents: set.readiness(of: .wakeUp), readsAll: false, &turn)
    }

    /// A turn on a loop host's thread (``MQTTHostedLoop/turn(after:as:)``),
    /// after the host's wait. Reads every packet already in the socket (up to
    /// `hostedReadLimit`), not one: the host handles what arrived before it waits again, so a
    /// burst of commands that came in during one write is handled (and written) as one group,
    /// and the broker's acknowledgements queued behind a burst's commands are reached soon.
    func hostedTurn(_ io: EngineIO, socketEvents: Int16, wakeEvents: Int16, _ turn: inout TurnState) -> (rc: Int32, errno: Int32)? {
        requestDisconnectIfAsked(&turn)
        return afterWait(io, socketEvents: socketEvents, wakeEvents: wakeEvents, readsAll: true, &turn)
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
    /// (`serviceSocket`, under the lane's lock), then the publishes kept while disconnected.
    /// Returns the result and errno that ended the connection, nil to go on.
    private func afterWait(_ io: EngineIO, socketEvents: Int16, wakeEvents: Int16, readsAll: Bool, _ turn: inout TurnState) -> (rc: Int32, errno: Int32)? {
        turn.lastTurn = .now
        if wakeEvents != 0 {
            var drain = [UInt8](repeating: 0, count: 256)
            while read(io.wakePipe[0], &drain, drain.count) > 0 {}
        }
        let socket = mosquitto_socket(mosq)
        guard socket >= 0 else { return (MOSQ_ERR_NO_CONN.rawValue, errno) }
        let readable = socketEvents & Int16(POLLIN | POLLERR | POLLHUP) != 0
        // Every libmosquitto call under the lane's lock (DirectLane rule 1; the publishing
        // thread's writes).
        let rc = io.direct.withLock { lane in
            let rc = serviceSocket(io, socket, readable: readable, readsAll: readsAll, lane: &lane)
            if lane.socket >= 0 && lane.socket != mosquitto_socket(mosq) { lane.close() }
            return rc
        }
        let savedErrno = errno
        if rc != MOSQ_ERR_SUCCESS.rawValue { return (rc, savedErrno) }
        flushKeptPublishes()
        io.direct.withLock { lane in if lane.socket >= 0 { releaseDirectLane(&lane) } }
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

    /// The read, the writes and the keep-alive of one turn (`afterWait`). With the direct
    /// lane (held locked by the caller): opens it after an accepted CONNACK, writes what it
    /// holds before libmosquitto's queue, and records what libmosquitto left (rules 3 and 4).
    private func serviceSocket(_ io: EngineIO, _ socket: Int32, readable: Bool, readsAll: Bool, lane: inout DirectLane) -> Int32 {
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
        if io.connackAccepted.exchange(false, ordering: .acquiringAndReleasing) {
            lane.open(socket: mosquitto_socket(mosq))
        }
        if lane.pending > 0, lane.socket >= 0 { lane.flush() }
        let directLeft = lane.pending
        if directLeft == 0 && mosquitto_want_write(mosq) {
            // libmosquitto writes each queued packet with its own send(): corked, a burst of
            // them leaves as full segments when uncorked below (one wake-up of the broker,
            // not one per packet); a lone packet still goes out at once.
            setCork(socket, true)
            let rc = mosquitto_loop_write(mosq, 1)
            setCork(socket, false)
            if let rc = ended(rc) { return rc }
        }
        // Checked under the lane's lock, which every API publish to libmosquitto takes:
        // an empty queue here holds nothing published after the lane's bytes.
        releaseDirectLane(&lane)
        if !mosquitto_want_write(mosq) && directLeft == 0 {
            backlogSinceNs.store(0, ordering: .releasing)
        } else if backlogSinceNs.load(ordering: .acquiring) == 0 {
            backlogSinceNs.store(DispatchTime.now().uptimeNanoseconds, ordering: .releasing)
        }
        return mosquitto_loop_misc(mosq)
    }

    /// TCP_CORK on the broker socket (fails harmlessly on a socket that is not TCP).
    private func setCork(_ socket: Int32, _ on: Bool) {
        var value: Int32 = on ? 1 : 0
        _ = setsockopt(socket, Int32(IPPROTO_TCP), TCP_CORK, &value, socklen_t(MemoryLayout<Int32>.size))
    }
}

import CMosquitto
import Dispatch
import Glibc
import Synchronization

/// Which threads do a client's socket I/O (``MQTTConfiguration/ioProfile``): one choice, not
/// flags. Both serve the connection with one loop of ours (MQTTClientCore+Loop.swift):
/// poll() over the socket and a wake-up pipe, then libmosquitto's `mosquitto_loop_read`,
/// `mosquitto_loop_write` and `mosquitto_loop_misc`. Not `mosquitto_loop`: its select() refuses
/// a socket numbered 1024 (FD_SETSIZE) or more.
public enum MQTTIOProfile: String, Sendable, Equatable, CaseIterable {
    /// Our poll loop on the client's network thread (libmosquitto's canonical sequence, with
    /// `mosquitto_loop_read`/`_write`/`_misc` in place of `mosquitto_loop`): every queued packet
    /// wakes that thread, and it writes. The client's default, and the only profile over TLS.
    case library
    /// For a program whose own thread publishes in batches and can serve the connection (the node's
    /// engine thread). Plain TCP only (over TLS the client uses `library`). Four parts, each
    /// kept because the profile without it was at least 20 % worse on a figure users feel, against
    /// `library` in the same `scripts/bench` runs (docs/benchmarks/history.md, 2026-11-29, "the
    /// fast path, part by part, against today's `library`"):
    /// - a batch of publishes (``MQTTClient/beginPublishBatch()``) wakes the writer once, not
    ///   once per packet, and its packets leave corked;
    /// - a loop host may serve the connection (``MQTTClient/serveConnections(on:)``,
    ///   LoopHost.swift): a message reaches its reader with no thread switch;
    /// - the publishing thread writes libmosquitto's queue itself at the end of a batch;
    /// - QoS 0 publishes without properties are encoded and written by the publishing thread,
    ///   one `send` per batch (the direct lane, DirectLane.swift).
    case engine
}

/// The `engine` profile's own state (``MQTTIOProfile/engine``); a client under `library` has none.
///
/// Threading: every field is a lock or an atomic. Lock order: `direct`, then libmosquitto's
/// mutexes (its calls are made under it by the thread serving the connection and by a publishing
/// thread that writes), then the core's `state` (libmosquitto's callbacks take it). The direct lane's rules: DirectLane.swift.
final class EngineIO: Sendable {
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
}

/// The `engine` profile's I/O: batches, the publishing thread's writes and the direct lane (the
/// serving thread's turns, its own or a loop host's, are both profiles': MQTTClientCore+Loop.swift).
extension MQTTClientCore {
    // MARK: Handing packets to the network thread

    /// A packet was queued in libmosquitto from an API thread: it must be written. Under
    /// `library`, the serving thread's poll is woken (`wakePipe`); under `engine`, it is written
    /// here or that poll is woken, at once, or once at the end of a batch.
    /// - Parameter awaited: the caller waits for the broker's answer (SUBACK, UNSUBACK), so
    ///   it goes out at once, even inside a batch.
    func packetQueued(awaited: Bool = false) {
        guard let io = engine else {
            wakePipe.wake()
            return
        }
        guard awaited || io.batchDepth.load(ordering: .acquiring) == 0 else {
            io.batchHasPackets.store(true, ordering: .releasing)
            return
        }
        handOver(io)
    }

    /// Gets what libmosquitto holds written: by this thread when it may, else, or for what the
    /// socket did not take, by the serving thread, woken.
    private func handOver(_ io: EngineIO) {
        if writeQueued(io) { wakePipe.wake() }
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
        if outcome { wakePipe.wake() }  // the socket is full: the network thread writes the rest
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
        if left { wakePipe.wake() }
    }

    /// Records what libmosquitto has left to write (the caller holds the lane's lock, which every
    /// API publish to libmosquitto takes: what is seen here is all there is). The lane takes
    /// bytes again once nothing of ours waits there: no packet in its queue, no QoS 1/2
    /// message held back or unacknowledged, no kept publish still to hand over (after a
    /// CONNACK, `flushKeptPublishes`).
    func releaseDirectLane(_ lane: inout DirectLane) {
        let left = mosquitto_want_write(mosq)
        lane.libraryBusy = left
        if !left, lane.libraryQueued, !state.withLock({ $0.reliablePublishMayWait }) { lane.libraryQueued = false }
    }

    /// Bytes the direct lane has written (tests).
    var directBytesWritten: Int { engine?.direct.withLock { $0.bytesWritten } ?? 0 }
    /// Times a publishing thread wrote libmosquitto's queue itself (tests).
    var publisherWriteCount: Int { engine?.direct.withLock { $0.publisherWrites } ?? 0 }
}

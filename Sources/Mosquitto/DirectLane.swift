import Glibc

/// QoS 0 publishes written to the broker's socket by the publishing thread, bypassing
/// libmosquitto's queue (part of ``MQTTIOProfile/engine``, plain TCP only).
///
/// Why: through libmosquitto every publish costs an allocation, a byte written to its socket
/// pair, a hand-off to the network thread and a `send` of its own. A node's instant of
/// per-second values (dozens of them) becomes here one encoded buffer and one `send`, made by
/// the thread that published them; the network thread is woken only when the socket is full.
///
/// `EngineIO.direct` (a `Mutex`) holds it. The rules that keep the byte stream whole and
/// in order:
/// 1. Bytes reach the socket only under that lock, and the thread serving the connection (the
///    network thread, or its loop host) holds it whenever it calls libmosquitto with a
///    connection up (read, write, keep-alive, which may close the socket). So our writes never
///    interleave with libmosquitto's, and never go to a closed (or reused) descriptor.
/// 2. The lane is open only from an accepted CONNACK to the end of that connection (nothing
///    before CONNECT, nothing on the next connection's socket).
/// 3. Bytes are appended only while `libraryQueued` is false, that is while no packet handed to
///    libmosquitto through this client's API waits in its queue: everything in `buffer` was
///    published before everything of ours in libmosquitto's queue, so the buffer is written
///    first. A QoS 0 publish made while `libraryQueued` is true goes through libmosquitto, behind
///    the packet that set it. The network thread clears it once libmosquitto's queue is empty.
/// 4. Nothing is appended while libmosquitto may have written half a packet (`libraryBusy`:
///    its last write left packets queued), and libmosquitto writes only once the buffer is
///    out: so neither side ever starts writing in the middle of the other's packet.
struct DirectLane {
    /// The socket of the connection the lane is open on; -1 while closed.
    private(set) var socket: Int32 = -1
    /// Encoded PUBLISH packets, from `written` on not yet on the socket.
    private var buffer: [UInt8] = []
    private var written = 0
    /// A packet handed to libmosquitto through the API may wait in its queue (rule 3).
    var libraryQueued = true
    /// libmosquitto's last write left packets in its queue, one maybe half-written (rule 4).
    var libraryBusy = false
    /// A write failed: nothing more until the connection ends (libmosquitto sees the error).
    private var failed = false
    /// Bytes written to sockets so far (tests: the lane is really used).
    private(set) var bytesWritten = 0
    /// The network thread has a connection whose CONNECT is sent (set and cleared under the
    /// lock): a publishing thread may then call libmosquitto's write itself
    /// (``MQTTIOProfile/engine``). Kept by `open` and `close`.
    var connectionUp = false
    /// The publishing thread's write of libmosquitto's queue failed, which closed the
    /// connection: its result and errno, for the network thread to report (it sees only a
    /// closed socket).
    var publisherWriteFailure: (rc: Int32, errno: Int32)?
    /// Times a publishing thread wrote libmosquitto's queue itself (tests).
    private(set) var publisherWrites = 0

    mutating func countPublisherWrite() { publisherWrites += 1 }

    /// Unwritten bytes beyond which a publish goes through libmosquitto instead (the broker
    /// reads slower than we publish; libmosquitto's queue then reports the backlog).
    static let limit = 1 << 20
    /// Larger payloads go through libmosquitto, which checks them against the broker's limits.
    static let largestPayload = 16 * 1024

    var pending: Int { buffer.count - written }

    /// Whether a publish can be appended now (rules 2, 3 and 4).
    var canAppend: Bool { socket >= 0 && !failed && !libraryQueued && !libraryBusy && pending < Self.limit }

    /// Opens the lane on a connection the broker accepted. libmosquitto's queue may hold what
    /// the CONNACK set off (resent messages, subscriptions): the lane waits for it (rule 3).
    mutating func open(socket: Int32) {
        self = DirectLane(socket: socket, keeping: self)
    }

    /// The connection ended: unwritten bytes die with it, as unsent QoS 0 messages do.
    mutating func close() {
        self = DirectLane(socket: -1, keeping: self)
    }

    private init(socket: Int32, keeping old: DirectLane) {
        self.socket = socket
        self.bytesWritten = old.bytesWritten
        self.connectionUp = old.connectionUp
        self.publisherWriteFailure = old.publisherWriteFailure
        self.publisherWrites = old.publisherWrites
    }

    init() {}

    /// Appends a QoS 0 PUBLISH packet (MQTT 3.1.1, or 5 with no properties).
    mutating func append(topic: String, payload: [UInt8], retain: Bool, version: MQTTVersion) {
        if written > 0 && written == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 64 * 1024)
            written = 0
        }
        Self.encodePublish(topic: topic, payload: payload, retain: retain, version: version, into: &buffer)
    }

    /// Writes what is pending, as far as the socket takes it (non-blocking). Returns false
    /// when the write failed (the pending bytes are dropped; libmosquitto sees the error).
    @discardableResult
    mutating func flush() -> Bool {
        while pending > 0 {
            let n = buffer.withUnsafeBytes { bytes in
                Glibc.send(socket, bytes.baseAddress! + written, pending, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                written += n
                bytesWritten += n
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                return true  // the rest when the socket is writable again (the network thread)
            } else {
                failed = true
                buffer = []
                written = 0
                return false
            }
        }
        buffer.removeAll(keepingCapacity: buffer.capacity <= 64 * 1024)
        written = 0
        return true
    }

    /// The bytes of a QoS 0 PUBLISH: fixed header, topic, (MQTT 5: an empty property list),
    /// payload.
    static func encodePublish(topic: String, payload: [UInt8], retain: Bool, version: MQTTVersion, into out: inout [UInt8]) {
        let topicLength = topic.utf8.count
        var remaining = 2 + topicLength + payload.count + (version == .v5 ? 1 : 0)
        out.append(0x30 | (retain ? 1 : 0))
        repeat {
            var byte = UInt8(remaining & 0x7F)
            remaining >>= 7
            if remaining > 0 { byte |= 0x80 }
            out.append(byte)
        } while remaining > 0
        out.append(UInt8(topicLength >> 8))
        out.append(UInt8(topicLength & 0xFF))
        out.append(contentsOf: topic.utf8)
        if version == .v5 { out.append(0) }
        out.append(contentsOf: payload)
    }
}

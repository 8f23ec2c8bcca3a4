import PacerCore
import PacerSound
import PacerStore

// The machine's own words for what comes in and what goes out. They are plain values: the
// machine knows no MQTT client (the shell, Shell/NodeEngine.swift, copies the client's
// messages and events into these and carries the effects out on it).

/// A message as the machine reads it.
struct InboundMessage: Sendable, Equatable {
    var topic: String
    var payload: [UInt8]
    /// Sent from the broker's retained store (a retained command is never replayed).
    var retain: Bool
    /// MQTT 5 request/response: where the sender wants its reply, and the data it echoes.
    var responseTopic: String?
    var correlationData: [UInt8]?

    init(topic: String, payload: [UInt8], retain: Bool = false, responseTopic: String? = nil, correlationData: [UInt8]? = nil) {
        self.topic = topic
        self.payload = payload
        self.retain = retain
        self.responseTopic = responseTopic
        self.correlationData = correlationData
    }
}

/// A change of a broker connection.
enum LinkEvent: Sendable, Equatable {
    /// The broker accepted the connection; `mqtt5`: the version settled on speaks MQTT 5.
    case connected(sessionPresent: Bool, mqtt5: Bool = true)
    case disconnected(reason: String)
    /// The broker refused the connection (bad credentials, not authorised, ...).
    case refused(String)
    /// The client's network thread stopped on an error retrying cannot fix.
    case loopExited(String)
}

/// The machine's own token for a tracked publish (the shell maps the client's to it).
struct PublishToken: Sendable, Hashable {
    var rawValue: UInt64
}

/// The broker's answer to a tracked publish.
struct PublishAck: Sendable, Equatable {
    var token: PublishToken
    /// The MQTT 5 reason code (0 with MQTT 3.1.1); 0x80 and above are refusals.
    var reasonCode: Int32
    var isAccepted: Bool { reasonCode < 0x80 }
}

/// What the store's write of an input gave (nil: nothing was written, or no store).
typealias WriteResult = Result<StoreCommit, StoreError>?

/// What the machine handles, one at a time, in arrival order (`EngineMachine.step`).
enum EngineInput: Sendable {
    case message(InboundMessage)
    /// Commands queued one behind another: handled in order, written together (one write,
    /// one fsync for a burst; Shell/NodeEngine+GroupCommit.swift).
    case commands([InboundMessage])
    case connection(LinkEvent)
    /// The plain topics' own connection (`publish.plain_connection: separate`) changed.
    case plainLink(LinkEvent)
    /// The deadline alarm fired.
    case deadline
    /// The broker acknowledged a tracked publish (an event from the outbox).
    case delivered(PublishAck)
    /// The write the last step asked for (`EngineEffect.write`) is done; on a connect, with the
    /// store's unpublished events read after it.
    case written(WriteResult, unpublished: [EventRecord])
    /// The speech cache has a spoken cue's clip ready: its text and real length.
    case speechReady(text: String, durationMs: Int)
}

/// The instant an input is handled at, and what the shell saw of the world just before.
struct Moment: Sendable {
    var now: Millis
    /// The wall clock stepped by this much since the last input (NTP).
    var clockJumpMs: Millis?
    /// The broker reads slower than the node publishes: per-second values are shed.
    var backlogged = false
    var plainBacklogged = false

    init(now: Millis, clockJumpMs: Millis? = nil, backlogged: Bool = false, plainBacklogged: Bool = false) {
        self.now = now
        self.clockJumpMs = clockJumpMs
        self.backlogged = backlogged
        self.plainBacklogged = plainBacklogged
    }
}

/// What the machine asks the shell to do, in order: the only I/O the node's decisions cause.
enum EngineEffect {
    /// Write this batch, then hand the result back as `.written` (with the store's unpublished
    /// events when `readOutbox`). Always the last effect of a step: nothing that depends on the
    /// write is decided before it is durable.
    case write(StoreBatch, readOutbox: Bool)
    /// A QoS 1 publish on the main connection (`correlation`: a reply's MQTT 5 correlation data).
    case publish(topic: String, payload: [UInt8], retain: Bool, correlation: [UInt8]? = nil)
    /// A retained per-second value the next second replaces (QoS 0, main connection).
    case publishSuperseding(topic: String, payload: [UInt8])
    /// A plain topic on the plain topics' own connection: QoS 0 for a value, QoS 1
    /// (`confirmed`) for a deleted timer's clear.
    case publishPlain(topic: String, payload: [UInt8], confirmed: Bool)
    /// A QoS 1 publish whose acknowledgement the shell hands back as `.delivered` with `token`.
    case publishTracked(topic: String, payload: [UInt8], retain: Bool, token: PublishToken)
    /// The publishes so far go to the network thread now (a connect's republish, in chunks).
    case flush
    case subscribe(filter: String)
    case unsubscribe(filter: String)
    /// Events the broker acknowledged, marked published in a write of their own.
    case writeMarks([Int64])
    /// A `history` request: read the store, reply on `reply.topic` (`CommandGate.historyReply`).
    case history(HistoryQuery, reply: EngineOutput.Reply)
    /// The speaker's cues (PacerSound; placed on their due instants from the shell's clock),
    /// with the text each event says (`sound.speech`) in place of its beep when its clip is ready.
    case sound([TimerEvent], say: [EventKey: String])
    /// Render these phrases ahead into the speech cache (a timer created, started, restored).
    case prepareSpeech([String])
    /// A cue the node will sound at `dueMs`, told ahead to the music's ducker (`sound.music`).
    case expectCue(dueMs: Millis, cue: SoundCue)
    /// The speaker muted or not, and its volume in percent (the `sound` command, a restore).
    case speaker(muted: Bool, volume: Int)
    /// Prune old history and request ids (after a write, at most once an hour).
    case prune(RetentionPolicy)
    /// A connect's burst was freed: give the heap's pages back soon.
    case trimHeap
}

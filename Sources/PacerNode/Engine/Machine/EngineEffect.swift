import Mosquitto
import PacerCore
import PacerSound
import PacerStore

/// What the machine (`EngineMachine`) asks the shell (`NodeEngine`) to do after a write, in
/// order: the only I/O the node's decisions cause.
enum EngineEffect {
    /// A QoS 1 publish on the main connection.
    case publish(topic: String, payload: [UInt8], retain: Bool, properties: MQTTProperties)
    /// A retained per-second value the next second replaces (QoS 0, main connection).
    case publishSuperseding(topic: String, payload: [UInt8])
    /// A plain topic on the plain topics' own connection (QoS 0 for a value, 1 for a clear).
    case publishPlain(topic: String, payload: [UInt8], qos: MQTTQoS)
    /// A QoS 1 publish whose PUBACK the shell reports as `.delivered` with the machine's `token`.
    case publishTracked(topic: String, payload: [UInt8], retain: Bool, token: MQTTDeliveryToken)
    /// The publishes so far go to the network thread now (a connect's republish, in chunks).
    case flush
    case subscribe(filter: String)
    case unsubscribe(filter: String)
    /// Events the broker acknowledged, marked published in a write of their own.
    case writeMarks([Int64])
    /// A `history` request: read the store, reply on `topic` (`EngineMachine.historyReply`).
    case history(HistoryQuery, reply: EngineOutput.Reply)
    /// The speaker's cues (PacerSound; placed on their due instants from the shell's clock).
    case sound([TimerEvent])
    /// A cue the node will sound at `dueMs`, told ahead to the music's ducker (`sound.music`).
    case expectCue(dueMs: Millis, cue: SoundCue)
    /// The speaker muted or not, and its volume in percent (the `sound` command).
    case speaker(muted: Bool, volume: Int)
    /// Prune old history and request ids (after a write, at most once an hour).
    case prune(RetentionPolicy)
    /// A connect's burst was freed: give the heap's pages back soon.
    case trimHeap
}

import PacerCore

/// Where the machine's parts put the effects they decide, in order (`EngineMachine.step`
/// returns them), and the source of the machine's own tokens for tracked publishes.
struct EffectSink {
    private var effects: [EngineEffect] = []
    /// A tracked publish gets a token of the machine's own when it is decided; the shell maps
    /// the client's token to it (the machine never waits for the client).
    private var lastToken: UInt64 = 0

    /// What a step decided after a republish in parts began (`holdWhatFollows`): it follows
    /// the republish's last part, so the order is the one of a republish in one piece.
    private var held: [EngineEffect] = []
    private var holdFrom: Int?

    mutating func emit(_ effect: EngineEffect) { effects.append(effect) }

    /// The effects emitted from here to the end of this step wait for `releaseHeld`.
    mutating func holdWhatFollows() { holdFrom = effects.count }

    /// A republish's last part is out: what was held follows it.
    mutating func releaseHeld() {
        effects.append(contentsOf: held)
        held = []
    }

    /// One QoS 1 publish on the main connection. A failure is logged by the shell, never fatal
    /// (the client keeps QoS 1 publishes made while disconnected, and everything retained is
    /// republished on reconnect).
    mutating func publish(to topic: String, _ payload: [UInt8], retain: Bool) {
        effects.append(.publish(topic: topic, payload: payload, retain: retain))
    }

    /// A QoS 1 publish whose acknowledgement comes back as `.delivered` with the returned token.
    mutating func publishTracked(to topic: String, _ payload: [UInt8], retain: Bool) -> PublishToken {
        lastToken += 1
        let token = PublishToken(rawValue: lastToken)
        effects.append(.publishTracked(topic: topic, payload: payload, retain: retain, token: token))
        return token
    }

    /// The effects decided since the last call, in order.
    mutating func take() -> [EngineEffect] {
        if let from = holdFrom {
            held.append(contentsOf: effects[from...])
            effects.removeSubrange(from...)
            holdFrom = nil
        }
        defer { effects = [] }
        return effects
    }
}

/// A value a command may change whose change is written before it counts (a saved workout,
/// the speaker, athletes' profiles): what it was before the input's first change, so a failed
/// write puts it back.
struct Staged<Value> {
    private(set) var value: Value
    private var before: Value?

    init(_ value: Value) { self.value = value }

    /// Whether the input being handled changed it (its document goes into the write).
    var isChanged: Bool { before != nil }

    /// Changes it, remembering what it was at the input's first change.
    mutating func change<R>(_ body: (inout Value) -> R) -> R {
        if before == nil { before = value }
        return body(&value)
    }

    /// Replaces it outside any command (a restore).
    mutating func load(_ value: Value) {
        self.value = value
        before = nil
    }

    /// The write is done: the change stands.
    mutating func settle() { before = nil }

    /// The write failed: back to what it was.
    mutating func undo() {
        if let before { value = before }
        before = nil
    }
}

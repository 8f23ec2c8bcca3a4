import Logging
import Mosquitto
import PacerCore
import PacerProtocol
import PacerSound
import PacerStore

/// What the shell does with the machine's words: the client's messages and events copied into
/// the machine's inputs (`machineInput`), and the machine's effects carried out on the
/// transport, the store and the speaker (`write`, `carryOut`). Owned by `NodeEngine` (and by the
/// in-process tests' driver of the machine), used on its thread only.
final class EffectPerformer {
    let transport: any EngineTransport
    let store: (any EngineStore)?
    let logger: Logger
    /// The speaker's cues (PacerSound); nil without `sound:`.
    let sound: SoundPlayer?
    /// Spoken cues (`sound.speech`): the clips rendered ahead; nil without speech.
    let speech: SpokenCues?
    /// The client's delivery tokens of the tracked publishes in flight, each with the
    /// machine's own token for it (`EngineEffect.publishTracked`). Kept across a reconnect,
    /// like the outbox's own: a resent publish's PUBACK still marks its event.
    private var tokens: [MQTTDeliveryToken: PublishToken] = [:]

    init(transport: any EngineTransport, store: (any EngineStore)?, logger: Logger, sound: SoundPlayer?, speech: SpokenCues?) {
        self.transport = transport
        self.store = store
        self.logger = logger
        self.sound = sound
        self.speech = speech
    }

    // MARK: - Inputs

    /// The machine's copy of an input; nil for an acknowledgement of a publish it did not track.
    func machineInput(_ input: NodeInput) -> EngineInput? {
        switch input {
        case .message(let message): .message(Self.inbound(message))
        case .connection(let event): .connection(linkEvent(event))
        case .plainLink(let event): .plainLink(linkEvent(event))
        case .deadline: .deadline
        case .speechReady(let text, let durationMs): .speechReady(text: text, durationMs: durationMs)
        case .delivered(let report):
            // The client's token to the machine's (an unknown one was never the machine's).
            tokens.removeValue(forKey: report.token).map { .delivered(PublishAck(token: $0, reasonCode: report.reasonCode)) }
        }
    }

    static func inbound(_ message: MQTTMessage) -> InboundMessage {
        InboundMessage(topic: message.topic, payload: message.payload, retain: message.retain,
                       responseTopic: message.properties.responseTopic, correlationData: message.properties.correlationData)
    }

    func linkEvent(_ event: MQTTConnectionEvent) -> LinkEvent {
        switch event {
        // The version is settled by the time a connection is accepted; `info` says it.
        case .connected(let sessionPresent): .connected(sessionPresent: sessionPresent, mqtt5: transport.speaksMQTT5)
        case .disconnected(let reason): .disconnected(reason: reason)
        case .refused(let error): .refused(error.description)
        case .loopExited(let error): .loopExited(error.description)
        }
    }

    /// The moment an input is handled at: `now` and the transport's backlog, read once.
    func moment(now: Millis, clockJumpMs: Millis? = nil) -> Moment {
        Moment(now: now, clockJumpMs: clockJumpMs, backlogged: transport.isBacklogged,
               plainBacklogged: transport.plainTopics?.isBacklogged ?? false)
    }

    // MARK: - Effects

    /// Takes a step's `.write` off the end of its effects (a write is always the last).
    static func takeWrite(_ effects: inout [EngineEffect]) -> (batch: StoreBatch, readOutbox: Bool)? {
        guard case .write(let batch, let readOutbox) = effects.last else { return nil }
        effects.removeLast()
        return (batch, readOutbox)
    }

    /// Carries out a step's effects to its end: each `.write` written and its result handed
    /// back to the machine, whose answer follows; then the step's later parts, if any (a
    /// connect's republish of many timers: `EngineMachine.hasMoreOutput`).
    /// - Parameters:
    ///   - links: the connections as the machine takes them now (`carryOut`).
    ///   - next: the machine's next effects (`EngineMachine.following`): its answer to the
    ///     write's result, or, given nil, the step's next part; nil when the step is done.
    nonisolated(nonsending) func perform(_ effects: [EngineEffect], now: Millis, clockNow: () -> Millis,
                                         links: () -> (up: Bool, plainUp: Bool), next: (EngineInput?) -> [EngineEffect]?) async {
        var effects = effects
        while true {
            let write = Self.takeWrite(&effects)
            let (up, plainUp) = links()
            await carryOut(effects, now: now, clockNow: clockNow, linkUp: up, plainLinkUp: plainUp)
            var written: EngineInput?
            if let write { written = await self.write(write.batch, readOutbox: write.readOutbox) }
            guard let following = next(written) else { return }
            effects = following
        }
    }

    /// The write a step asked for, as the machine's next input (store first: nothing is
    /// published or acknowledged before it is durable).
    nonisolated(nonsending) func write(_ batch: StoreBatch, readOutbox: Bool) async -> EngineInput {
        var result: WriteResult = nil
        if let store, !batch.isEmpty {
            do { result = .success(try await store.commit(batch)) } catch { result = .failure(error) }
        }
        var pending: [EventRecord] = []
        if readOutbox, let store {
            // The outbox check of a (re)connect: read after the acknowledged events were marked.
            do { pending = try store.unpublishedEvents() } catch {
                logger.error("could not read the event outbox", metadata: ["error": "\(error)"])
            }
        }
        return .written(result, unpublished: pending)
    }

    /// Carries out the effects other than a write, in order, handed to the network thread with
    /// one wake-up (`beginBatch`/`endBatch`, and at each `.flush`).
    /// - Parameters:
    ///   - now: the instant the input was handled at.
    ///   - clockNow: the clock now (the sound player places each cue on its due instant from it).
    ///   - linkUp, plainLinkUp: the connections as the machine took them (a failed publish is
    ///     said only when they were up).
    nonisolated(nonsending) func carryOut(_ effects: [EngineEffect], now: Millis, clockNow: () -> Millis, linkUp: Bool, plainLinkUp: Bool) async {
        guard !effects.isEmpty else { return }
        transport.beginBatch()
        defer { transport.endBatch() }
        for effect in effects {
            switch effect {
            case .write:
                continue  // `perform` takes it
            case .publish(let topic, let payload, let retain, let correlation):
                var properties = MQTTProperties.none
                if let correlation { properties.correlationData = correlation }
                do { try await transport.publish(to: topic, payload: payload, retain: retain, properties: properties) } catch {
                    publishFailed(topic, error, linkUp: linkUp)
                }
            case .publishSuperseding(let topic, let payload):
                do { try await transport.publishSuperseding(to: topic, payload: payload) } catch {
                    publishFailed(topic, error, linkUp: linkUp)
                }
            case .publishPlain(let topic, let payload, let confirmed):
                guard let lane = transport.plainTopics else { continue }
                do { try await lane.publish(to: topic, payload: payload, qos: confirmed ? .atLeastOnce : .atMostOnce) } catch {
                    publishFailed(topic, error, linkUp: plainLinkUp)
                }
            case .publishTracked(let topic, let payload, let retain, let token):
                do { tokens[try await transport.publishTracked(to: topic, payload: payload, retain: retain)] = token } catch {
                    publishFailed(topic, error, linkUp: linkUp)
                }
            case .flush:
                transport.endBatch()
                transport.beginBatch()
            case .subscribe(let filter):
                do { try await transport.subscribe(to: filter, qos: .atMostOnce) } catch {
                    logger.warning("could not read back the retained states; publishing the outbox as is", metadata: ["error": "\(error)"])
                }
            case .unsubscribe(let filter):
                do { try await transport.unsubscribe(from: filter) } catch {
                    logger.debug("unsubscribe failed", metadata: ["error": "\(error)"])
                }
            case .writeMarks(let seqs):
                if let store { await writeMarks(seqs, to: store) }
            case .history(let query, let reply):
                guard let store else { continue }
                let records: Result<[EventRecord], StoreError>
                do { records = .success(try store.history(query)) } catch { records = .failure(error) }
                var properties = MQTTProperties.none
                if let correlation = reply.correlationData { properties.correlationData = correlation }
                let payload = CommandGate.historyReply(records, id: reply.id)
                do { try await transport.publish(to: reply.topic, payload: payload, retain: false, properties: properties) } catch {
                    publishFailed(reply.topic, error, linkUp: linkUp)
                }
            case .sound(let events, let said):
                // Each cue is placed on its due_ms relative to this instant (the write before
                // it may have taken a while).
                if said.isEmpty {
                    sound?.submit(events, nowMs: clockNow())
                } else {
                    sound?.submit(events, nowMs: clockNow(), say: { said[EventKey($0)] })
                }
            case .prepareSpeech(let texts):
                speech?.cache.prepare(texts)
            case .expectCue(let dueMs, let cue):
                sound?.expect(dueMs: dueMs, kinds: [cue], nowMs: clockNow())
            case .speaker(let muted, let volume):
                sound?.setSpeaker(muted: muted, volume: Double(volume) / 100)
            case .prune(let policy):
                guard let store else { continue }
                do { _ = try await store.prune(policy, nowMs: now) } catch {
                    logger.warning("could not prune the history", metadata: ["error": "\(error)"])
                }
            case .trimHeap:
                HeapTrim.later()
            }
        }
    }

    /// Marks events published in a write of their own.
    nonisolated(nonsending) private func writeMarks(_ seqs: [Int64], to store: any EngineStore) async {
        guard !seqs.isEmpty else { return }
        var marks = StoreBatch()
        marks.markPublished = seqs
        do { _ = try await store.commit(marks) } catch {
            logger.error("could not mark events as published", metadata: ["error": "\(error)"])
        }
    }

    /// A failed publish: expected while the link is down (retained topics are republished on
    /// connect); otherwise a message was lost (e.g. the client's offline queue is full): said.
    func publishFailed(_ topic: String, _ error: MQTTError, linkUp: Bool) {
        logger.log(level: linkUp ? .warning : .debug, "publish failed", metadata: ["topic": "\(topic)", "error": "\(error)"])
    }
}

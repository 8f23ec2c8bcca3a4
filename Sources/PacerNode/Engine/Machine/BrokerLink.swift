import Logging
import PacerCore
import PacerProtocol
import PacerStore

/// The broker side of the machine: whether each connection is up, the event outbox that proves
/// what reached the broker (EventOutbox.swift), the plain topics' own connection
/// (PlainLink.swift), and the publishing of each timer's retained topics and events over them.
///
/// Everything the machine publishes follows `linkUp`, not the client's own flag: between a
/// CONNACK and the machine handling it, a state must not reach the broker before the outbox
/// check has started, or it would count as proof for events never sent. It cannot change in
/// the middle of an input, so an event and its state are published together or held back together.
struct BrokerLink {
    /// The link, the outbox check, delivery tokens and marks.
    private(set) var outbox = EventOutbox()
    /// The plain topics' own connection, as the machine took it.
    private(set) var plainLink = PlainLink()
    /// A connect's states on their way: the plain topics' republish waits for them.
    private var plainHold = PlainRepublishHold()
    /// A republish with parts still to come (`republishNext`).
    private var republishing: Republish?
    /// The broker's refusal last logged (logged once until the next accepted connection).
    private var loggedRefusal: String?
    /// The broker reads slower than the node publishes (per-second values are shed): as the
    /// shell saw it before the input.
    var backlogged = false
    var plainBacklogged = false
    /// Whether the plain topics have a connection of their own (`publish.plain_connection: separate`).
    let hasPlainConnection: Bool
    /// Whether a database backs the node (acknowledged events are marked in it).
    let hasStore: Bool
    /// The plain topics that flip every displayed second (`publish.per_second`).
    let perSecond: Set<PerSecondTopic>
    let topics: Topics
    let logger: Logger

    init(configuration: NodeConfiguration, topics: Topics, hasStore: Bool, hasPlainConnection: Bool, logger: Logger) {
        self.hasPlainConnection = hasPlainConnection
        self.hasStore = hasStore
        perSecond = configuration.perSecondTopics
        self.topics = topics
        self.logger = logger
    }

    /// Whether the machine has taken the main connection's `.connected` (and not yet its end).
    var linkUp: Bool { outbox.isLinkUp }
    /// Whether the plain topics go over their own connection now (false when they have none,
    /// or it was refused and they use the main one).
    var usesPlainLane: Bool { hasPlainConnection && !plainLink.usesMainConnection }
    /// Whether the plain topics can go out now, over the connection they use.
    var plainLinkUp: Bool { usesPlainLane ? plainLink.isUp : linkUp }

    // MARK: - The main connection

    /// Returns whether the connection came up (every retained topic is then republished).
    mutating func connectionChanged(_ event: LinkEvent, url: String, now: Millis, on board: inout Board) -> (up: Bool, actions: [EventOutbox.Action]) {
        switch event {
        case .connected(let sessionPresent, _):
            logger.info("connected to the broker", metadata: ["broker": "\(url)", "session_present": "\(sessionPresent)"])
            loggedRefusal = nil
            armPlainFallback(now: now, on: &board)
            return (true, [])
        case .disconnected(let reason):
            logger.warning("lost the broker connection; reconnecting", metadata: ["reason": "\(reason)"])
        case .refused(let error):
            // Once per refusal, not per retry: the client retries every 0.75 s at most.
            if loggedRefusal != error {
                loggedRefusal = error
                logger.error("the broker refused the connection; retrying quietly until it accepts", metadata: ["error": "\(error)"])
            } else {
                logger.debug("the broker refused the connection again", metadata: ["error": "\(error)"])
            }
        case .loopExited(let error):
            logger.critical("the MQTT network thread stopped", metadata: ["error": "\(error)"])
        }
        return (false, outbox.linkDown())
    }

    // MARK: - The event outbox

    /// Up to this many held timers, the check subscribes to each one's `state` topic; above,
    /// to the `timers/+/state` filter. A few held timers among 10,000 then bring back a few
    /// retained states, not 10,000 (each an input of the machine).
    static let maxStateTopics = 32

    /// The topic filters the outbox check reads the held timers' retained states from.
    func stateFilters(for held: [String]) -> [String] {
        held.count > Self.maxStateTopics ? ["\(topics.base)/timers/+/state"] : held.map { topics.timer($0).state }
    }

    /// Whether the timer's retained topics wait for the outbox check.
    func isHolding(_ id: String) -> Bool { outbox.isHolding(id) }

    /// A new connection: starts the check with the store's unpublished events (`pending`, read
    /// after the write that marked the acknowledged ones), subscribing before anything is
    /// republished, so the broker sends the retained states of the previous run before our
    /// new ones replace them.
    mutating func beginOutboxCheck(pending: [EventRecord], now: Millis, heart: HeartRatePart, on board: inout Board) {
        perform(outbox.connected(pending: pending, now: now), now: now, heart: heart, on: &board)
        // A connect republishes every retained topic (and Home Assistant's configs): a burst
        // of messages freed once sent. Their pages go back to the system afterwards.
        board.out.emit(.trimHeap)
    }

    /// The acknowledged events to mark published in the write about to be made; clears the
    /// `.marks` deadline.
    mutating func takeMarks(on board: inout Board) -> [Int64] {
        board.deadlines.set(.marks, at: nil)
        return outbox.takeMarks()
    }

    /// A failed write's marks wait for the next one.
    mutating func marksNotWritten(_ seqs: [Int64], now: Millis, heart: HeartRatePart, on board: inout Board) {
        perform(outbox.awaitMark(seqs, now: now), now: now, heart: heart, on: &board)
    }

    /// A message on one of our own `state` topics: during the outbox check, a retained state.
    /// Returns whether the check can now be decided.
    mutating func retainedState(_ message: InboundMessage, timer id: String) -> Bool {
        // Only a held timer's state settles anything: the others are not decoded.
        guard message.retain, outbox.isHolding(id) else { return false }
        // `.int` is nil for a number that is not a whole Int (a retained `1e19` trapped here).
        let revision = JSONCoding.decode(message.payload)?[.revision]?.int
        return outbox.retainedState(timer: id, revision: revision)
    }

    /// The broker acknowledged a tracked publish. A connect's last state ends the plain topics'
    /// hold. An event reached the broker, so it is marked published in the next write (or at
    /// the `.marks` deadline). Unmarked until then, a restart settles it by the outbox check,
    /// which is right either way.
    mutating func delivered(_ report: PublishAck, now: Millis, heart: HeartRatePart, on board: inout Board) {
        if plainHold.isHeld(by: report.token) {
            board.deadlines.set(.plainHold, at: nil)
            if plainHold.release() { republishPlainTopics(now: now, heart: heart, on: &board) }
            return
        }
        switch outbox.delivered(token: report.token, accepted: report.isAccepted, now: now) {
        case .unknown:
            return
        case .refused(let seq):
            // 135 (0x87) is "not authorized": the broker's ACL does not let the node's user
            // publish there, which only the broker's configuration can change.
            let fix = report.reasonCode == 0x87
                ? "the broker's ACL does not let the node's user publish its event topics: allow it `topic readwrite pacer/#` (deploy/mosquitto/acl.example)"
                : "see the reason code in the MQTT 5 specification (PUBACK reason codes)"
            logger.error("the broker refused an event; it stays in the outbox and is retried at the next connect",
                         metadata: ["seq": "\(seq)", "reason": "\(report.reasonCode)", "fix": "\(fix)"])
        case .accepted(let actions):
            perform(actions, now: now, heart: heart, on: &board)
        }
    }

    /// An event this input wrote to the outbox: published now, or kept (in the store while
    /// disconnected, or behind its timer's older pending events while the outbox check runs).
    mutating func written(_ record: EventRecord, now: Millis, heart: HeartRatePart, on board: inout Board) {
        if let publish = outbox.written(record) { perform([publish], now: now, heart: heart, on: &board) }
    }

    /// Restored events: published from memory at the first connect.
    mutating func keepUnwritten(_ events: [TimerEvent]) { outbox.keepUnwritten(events) }

    /// Carries out the outbox's actions, in order.
    mutating func perform(_ actions: [EventOutbox.Action], now: Millis, heart: HeartRatePart, on board: inout Board) {
        for action in actions {
            switch action {
            case .subscribeToStates(let held):
                for filter in stateFilters(for: held) { board.out.emit(.subscribe(filter: filter)) }
            case .publish(let record):
                guard let seq = record.seq else { continue }
                let token = board.out.publishTracked(to: topics.timer(record.timer).event, record.payload, retain: false)
                outbox.sent(seq: seq, token: token)
            case .mark(let seqs):
                if hasStore && !seqs.isEmpty { board.out.emit(.writeMarks(seqs)) }
            case .release(let timers):
                for id in timers { publishTimer(id, now: now, force: true, heart: heart, on: &board) }
            case .unsubscribeFromStates(let held):
                for filter in stateFilters(for: held) { board.out.emit(.unsubscribe(filter: filter)) }
            case .windowEnds(let at):
                board.deadlines.set(.outbox, at: at)
            case .marksDue(let at):
                board.deadlines.set(.marks, at: at)
            }
        }
    }

    /// Decides the outbox check: publishes the pending events that did not reach the broker,
    /// then the retained topics held back for them, and marks the proven ones.
    mutating func settleOutbox(now: Millis, heart: HeartRatePart, on board: inout Board) {
        let actions = outbox.settle()
        guard !actions.isEmpty else { return }
        perform(actions, now: now, heart: heart, on: &board)
        let published = actions.filter { if case .publish = $0 { true } else { false } }.count
        let proven = actions.reduce(0) { if case .mark(let seqs) = $1 { $0 + seqs.count } else { $0 } }
        logger.info("event outbox settled", metadata: ["published": "\(published)", "already_delivered": "\(proven)"])
    }

    /// The restored events kept in memory (their write failed), for a connect.
    mutating func takeUnwritten() -> [TimerEvent] { outbox.takeUnwritten() }

    // MARK: - The plain topics' own connection

    /// Returns whether every plain topic must go out again (over the connection they now use).
    mutating func plainLinkChanged(_ event: LinkEvent, now: Millis, on board: inout Board) -> Bool {
        let republish = performPlainLink(plainLink.event(event))
        if plainLink.isUp {
            board.deadlines.set(.plainFallback, at: nil)
        } else {
            armPlainFallback(now: now, on: &board)
        }
        return republish
    }

    /// While the main connection is up and the plain topics' own is not, they go over the main
    /// one after `PlainLink.fallbackDelayMs` (a `.plainFallback` deadline).
    private func armPlainFallback(now: Millis, on board: inout Board) {
        guard hasPlainConnection, plainLink.state == .down else { return }
        board.deadlines.set(.plainFallback, at: now.saturatingAdd(PlainLink.fallbackDelayMs))
    }

    /// The `.plainFallback` deadline; returns whether the plain topics go out again.
    mutating func plainLinkStayedDown() -> Bool {
        guard linkUp else { return false }  // armed again when the main connection is back
        return performPlainLink(plainLink.mainStayedAlone())
    }

    /// The `.plainHold` deadline: the connect's states took too long; returns whether the
    /// plain topics' republish that waited goes out now.
    mutating func plainHoldExpired() -> Bool { plainHold.release() }

    private func performPlainLink(_ actions: [PlainLink.Action]) -> Bool {
        var republish = false
        for action in actions {
            switch action {
            case .republish: republish = true
            case .log(let level, let message): logger.log(level: level, "\(message)")
            }
        }
        return republish
    }

    // MARK: - A timer's topics

    /// How many timers' topics a connect hands to the network thread at a time.
    static let republishChunk = 500

    /// The retained `state` JSON when it changed, and every plain topic whose value changed
    /// (all with `force`).
    ///
    /// `state` goes out on a change only (a transition, a command, heart rate, a clock jump,
    /// a reconnect): it carries `ends_at_ms`, so a per-second tick does not republish it.
    /// `remaining` and `display` flip on every displayed second when configured as per-second
    /// topics (`publish.per_second`), QoS 0; otherwise they follow `state`.
    ///
    /// Skipped while disconnected: every retained topic is republished on the next connect, so
    /// queueing a stale value per second would only fill the client's offline queue.
    /// - Parameter plainTopics: false: only `state` (a connect publishes every state first,
    ///   then every timer's plain topics with `publishPlainTopics`).
    /// - Parameter holdingPlainTopics: the last state of a connect, tracked: the plain topics'
    ///   own connection republishes once the broker has it (`PlainRepublishHold`).
    mutating func publishTimer(_ id: String, now: Millis, force: Bool, plainTopics: Bool = true, holdingPlainTopics: Bool = false,
                               heart: HeartRatePart, on board: inout Board) {
        // The plain topics may have a connection of their own, up while the main one is not.
        guard linkUp || (plainTopics && plainLinkUp),
              let (snap, revision) = board.timers.read(id, { (heart.snapshot(of: $0, now: now), $0.machine.revision) }) else { return }
        // A transition fell due that the machine has not taken yet (its wake-up is queued
        // behind this input). A state showing it must not reach the broker before the
        // transition's events are written and published: the outbox takes a retained state as
        // proof of its events. Take it at once; the state goes out with its events then.
        guard snap.revision == revision else {
            board.deadlines.set(.timer(id), at: now)
            return
        }
        let t = topics.timer(id)
        // Noted as published also while the main link is down: a connect republishes it anyway.
        let stateChanged = board.timers.stateNeedsPublish(id, snap, force: force)
        if stateChanged && linkUp {
            if holdingPlainTopics {
                // The plain topics' republish waits for this state's acknowledgement.
                plainHold.hold(board.out.publishTracked(to: t.state, snap.jsonBytes, retain: true))
                board.deadlines.set(.plainHold, at: now.saturatingAdd(PlainRepublishHold.limitMs))
            } else {
                board.out.publish(to: t.state, snap.jsonBytes, retain: true)
            }
        }
        guard plainTopics else { return }
        publishPlainTopics(id, snap, t, stateChanged: stateChanged, force: force, on: &board)
    }

    /// Every plain topic of a timer whose `state` went out on its own (a connect), forced.
    private mutating func publishPlainTopics(_ id: String, now: Millis, heart: HeartRatePart, on board: inout Board) {
        guard plainLinkUp, let (snap, revision) = board.timers.read(id, { (heart.snapshot(of: $0, now: now), $0.machine.revision) }) else { return }
        guard snap.revision == revision else { return }  // publishTimer set its deadline
        publishPlainTopics(id, snap, topics.timer(id), stateChanged: true, force: true, on: &board)
    }

    private mutating func publishPlainTopics(_ id: String, _ snap: TimerSnapshot, _ t: TimerTopics, stateChanged: Bool, force: Bool, on board: inout Board) {
        if stateChanged || perSecond.contains(.remaining) {
            publishPlain(id, .remaining, of: t, value: snap.plainValue(.remaining), force: force, superseding: !stateChanged, on: &board)
        }
        if stateChanged || perSecond.contains(.display) {
            publishPlain(id, .display, of: t, value: snap.plainValue(.display), force: force, superseding: !stateChanged, on: &board)
        }
        guard stateChanged else { return }
        for leaf in [PlainLeaf.phase, .round, .rounds, .hr] {
            publishPlain(id, leaf, of: t, value: snap.plainValue(leaf), force: force, superseding: false, on: &board)
        }
    }

    /// - Parameter superseding: a per-second value the next second replaces (QoS 0; shed
    ///   while the transport is backlogged).
    ///
    /// With the plain topics' own connection (`publish.plain_connection: separate`) every
    /// value goes over it at QoS 0: a value lost with a dropped connection is republished
    /// when it comes back (`republishPlainTopics`).
    ///
    /// The topic's name is made only when the value goes out (most ticks change nothing but
    /// `remaining` and `display`, and those only once a second).
    private mutating func publishPlain(_ id: String, _ leaf: PlainLeaf, of t: TimerTopics, value: String, force: Bool, superseding: Bool,
                                       on board: inout Board) {
        let lane = usesPlainLane
        // Under overload (the broker reads slower than we publish), a per-second value is
        // dropped, not queued: the next second supersedes it. Commands, replies, events and
        // states are never dropped.
        if superseding && (lane ? plainBacklogged : backlogged) { return }
        // A connect's states are on their way (PlainRepublishHold): the republish that follows
        // them carries this timer's value, current then.
        if superseding && lane && plainHold.isHolding { return }
        guard plainLinkUp, board.timers.plainNeedsPublish(id, leaf, value: value, force: force) else { return }
        let topic = t.plain(leaf)
        if lane {
            board.out.emit(.publishPlain(topic: topic, payload: Array(value.utf8), confirmed: false))
        } else if superseding {
            board.out.emit(.publishSuperseding(topic: topic, payload: Array(value.utf8)))
        } else {
            board.out.publish(to: topic, Array(value.utf8), retain: true)
        }
    }

    /// Every timer's plain topics again (forced), over the connection they now use: after a
    /// connect's states (`republishTimers`), when their own connection came up, or when they
    /// moved to the main one. In parts of `republishChunk` timers (`republishNext`). Timers
    /// held by the outbox check get theirs when they are released.
    mutating func republishPlainTopics(now: Millis, heart: HeartRatePart, on board: inout Board) {
        // A republish under way ends with every timer's plain topics anyway.
        guard republishing == nil else { return }
        if usesPlainLane, plainHold.deferRepublish() { return }  // after the connect's states
        start(Republish(phase: .plainTopics, ids: board.timers.ids.filter { !outbox.isHolding($0) }), now: now, heart: heart, on: &board)
    }

    /// A connect: every timer's `state` first (it carries everything a dashboard shows), then
    /// the plain topics: after a restart of 10,000 timers the states are back after 10,000
    /// messages, not 70,000. Timers with events in the outbox wait for the outbox check (see
    /// EventOutbox).
    ///
    /// In parts of `republishChunk` timers: the first goes out with the step, the shell takes
    /// the others (`EngineMachine.nextPart`) before its next input, and what the step decided
    /// after the republish follows the last part (`EffectSink.holdWhatFollows`). So the network
    /// thread writes while the rest is made, and the messages of 10,000 timers are never all
    /// held at once (as one list, they raised a restart's peak of memory by about 20 MB).
    mutating func republishTimers(now: Millis, heart: HeartRatePart, on board: inout Board) {
        // With their own connection the plain topics wait for the last state (PlainRepublishHold).
        start(Republish(phase: .states, ids: board.timers.ids.filter { !outbox.isHolding($0) }, holdPlain: usesPlainLane),
              now: now, heart: heart, on: &board)
    }

    /// A republish in parts (`republishTimers`, `republishPlainTopics`).
    private struct Republish {
        enum Phase { case states, plainTopics }
        var phase: Phase
        /// The timers, in the order published; `next` is the first not yet published.
        var ids: [String]
        var next = 0
        /// The last state is tracked: the plain topics' own connection waits for it.
        var holdPlain = false
    }

    /// Whether a republish has parts still to come (`republishNext`).
    var isRepublishing: Bool { republishing != nil }

    private mutating func start(_ work: Republish, now: Millis, heart: HeartRatePart, on board: inout Board) {
        republishing = work
        if republishNext(now: now, heart: heart, on: &board) { board.out.holdWhatFollows() }
    }

    /// Publishes the next part of the republish under way: one chunk of timers, or all of a
    /// small one (up to `republishChunk` timers: states, then plain topics, in one part).
    /// Returns whether parts are still to come; after the last, what the step that began it
    /// decided after it follows (`EffectSink.releaseHeld`).
    @discardableResult
    mutating func republishNext(now: Millis, heart: HeartRatePart, on board: inout Board) -> Bool {
        while var work = republishing {
            let end = min(work.next + Self.republishChunk, work.ids.count)
            for index in work.next..<end {
                switch work.phase {
                case .states:
                    publishTimer(work.ids[index], now: now, force: true, plainTopics: false,
                                 holdingPlainTopics: work.holdPlain && index == work.ids.count - 1, heart: heart, on: &board)
                case .plainTopics:
                    publishPlainTopics(work.ids[index], now: now, heart: heart, on: &board)
                }
            }
            board.out.emit(.flush)
            work.next = end
            if end < work.ids.count {
                republishing = work
                return true
            }
            republishing = nil
            // The states are out: the plain topics follow (with their own connection, once the
            // broker has the last state: PlainRepublishHold).
            guard work.phase == .states, !(usesPlainLane && plainHold.deferRepublish()) else { break }
            republishing = Republish(phase: .plainTopics, ids: board.timers.ids.filter { !outbox.isHolding($0) })
            if work.ids.count > Self.republishChunk { return true }  // a part of its own
        }
        board.out.releaseHeld()
        return false
    }

    /// A deleted timer's retained topics cleared (empty payloads): `state` on the main
    /// connection, the plain topics on theirs at QoS 1, which the client keeps while
    /// disconnected and sends after the reconnect, so a deletion during an outage leaves no
    /// ghost values.
    func clearRetainedTopics(of id: String, into out: inout EffectSink) {
        let t = topics.timer(id)
        out.publish(to: t.state, [], retain: true)
        out.publish(to: t.classSummary, [], retain: true)  // a class summary (HeartRatePart), if any
        for topic in t.plain {
            if usesPlainLane {
                out.emit(.publishPlain(topic: topic, payload: [], confirmed: true))
            } else {
                out.publish(to: topic, [], retain: true)
            }
        }
    }

    /// A timer event on its `event` topic (not retained).
    func publishEvent(_ event: TimerEvent, into out: inout EffectSink) {
        out.publish(to: topics.timer(event.timer).event, JSONCoding.encode(event.json), retain: false)
    }
}

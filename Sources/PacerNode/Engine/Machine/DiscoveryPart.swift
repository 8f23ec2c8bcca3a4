import Logging
import PacerCore
import PacerProtocol

/// Home Assistant discovery as the machine keeps it (the payloads are built in
/// HomeAssistant/HomeAssistantDiscovery.swift): Home Assistant's birth message, and the configs
/// that one input publishes. Nil publisher: `home_assistant.enabled` is false.
struct DiscoveryPart {
    private var publisher: HomeAssistantPublisher?
    /// Whether the node has a speaker (its node config offers the mute switch).
    let hasSound: Bool
    /// The configuration's presets' names (the Workout select offers them).
    let configuredPresets: [String]
    let logger: Logger

    init(configuration: NodeConfiguration, topics: Topics, version: String, hasSound: Bool, logger: Logger) {
        if configuration.homeAssistant.enabled {
            publisher = HomeAssistantPublisher(discovery: HomeAssistantDiscovery(
                settings: configuration.homeAssistant, nodeID: configuration.nodeID, topics: topics,
                version: version, hasHeartRate: !configuration.heartRate.sources.isEmpty))
        }
        self.hasSound = hasSound
        configuredPresets = Array(configuration.presets.keys)
        self.logger = logger
    }

    /// Home Assistant's birth topic (`<prefix>/status`), nil when discovery is off.
    var statusTopic: String? { publisher?.discovery.statusTopic }

    /// `<prefix>/status`: `online` (Home Assistant started, or its MQTT integration reloaded)
    /// asks for every config again. A retained `online` arrives on our own connect, when every
    /// config is published anyway.
    func status(_ message: InboundMessage) -> Bool {
        guard String(decoding: message.payload, as: UTF8.self) == "online", !message.retain else { return false }
        logger.info("Home Assistant is online; publishing the discovery configs again")
        return true
    }

    /// Called after the events, before the deleted timers' retained topics are cleared: removes
    /// the devices of deleted timers (an empty retained config; Home Assistant would otherwise
    /// first read the cleared topics as bad values), and publishes the configs of new, renamed or
    /// re-kinded timers — all of them on a (re)connect or when Home Assistant came online.
    ///
    /// All of them go out in chunks of `chunk`, one every `pauseMs` (a `.discovery` deadline),
    /// after the states: 10,000 configs of ~3 KB queued at once would hold 30 MB in
    /// libmosquitto's queue, which glibc then keeps. The first chunk goes with the connect itself.
    ///
    /// Configs are skipped while disconnected (every one is published on the next connect);
    /// removals are handed to the client like the deleted timers' retained topics.
    mutating func publish(_ output: EngineOutput, workouts: [String], workoutsChanged changedWorkouts: Bool, linkUp: Bool, backlogged: Bool, now: Millis, on board: inout Board) {
        // Taken out while it changes: a second reference would make every change copy its
        // 10,000 entries (copy on write), once per command or chunk.
        guard var publisher = publisher.take() else { return }
        var messages = output.changes.deleted.map { publisher.removal(of: $0) }
        // The Workout select offers the presets and the saved workouts: when they change, every
        // timer's config goes out again (in chunks, as on a connect).
        var workoutsChanged = false
        if output.follow.contains(.republishAll) || changedWorkouts {
            workoutsChanged = publisher.discovery.setWorkouts(Presets.builtInNames + configuredPresets + workouts)
        }
        if linkUp {
            if output.follow.contains(.republishAll) || output.follow.contains(.republishDiscovery) || workoutsChanged {
                // The states, events and retained topics queued so far go to the network
                // thread now, while the configs are made, not after them.
                board.out.emit(.flush)
                if hasSound { messages.append(.init(topic: publisher.discovery.nodeConfigTopic, payload: JSONCoding.encode(publisher.discovery.nodeConfig()))) }
                publisher.queueAll(board.timers.ids, at: now)
            } else if !output.follow.contains(.onlyTimePassed) {
                messages += publisher.configs(for: Self.subjects(output.changes.timers, board.timers), force: false)
            }
            // A wall-clock step back would otherwise leave the next chunk far in the future.
            if let at = publisher.nextChunkAtMs, at > now + Self.pauseMs { publisher.postpone(until: now) }
            if publisher.chunkIsDue(now: now) {
                if backlogged {
                    publisher.postpone(until: now + Self.pauseMs)  // the broker reads slower than we publish
                } else {
                    messages += publisher.configs(for: Self.subjects(publisher.takeChunk(Self.chunk, nextAt: now + Self.pauseMs), board.timers), force: true)
                }
            }
        } else {
            publisher.clearBacklog()  // the next connect publishes every config
        }
        board.deadlines.set(.discovery, at: publisher.nextChunkAtMs)
        self.publisher = publisher
        for message in messages { board.out.publish(to: message.topic, message.payload, retain: true) }
    }

    /// How many configs a connect publishes at a time (~1.5 MB), and the pause between chunks.
    static let chunk = 500
    static let pauseMs: Millis = 50

    private static func subjects(_ ids: [String], _ timers: TimerTable) -> [HomeAssistantDiscovery.Subject] {
        ids.compactMap { id in
            timers.read(id) { HomeAssistantDiscovery.Subject(id: id, name: $0.machine.name, kind: $0.machine.kind) }
        }
    }
}

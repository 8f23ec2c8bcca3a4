import Logging
import PacerCore

/// The engine's two hooks for Home Assistant discovery (the payloads are built in
/// HomeAssistant/HomeAssistantDiscovery.swift): Home Assistant's birth message, and the
/// configs that one commit publishes.
extension EngineMachine {
    /// `<prefix>/status`: `online` (Home Assistant started, or its MQTT integration reloaded)
    /// asks for every config again. A retained `online` arrives on our own connect, when every
    /// config is published anyway.
    func homeAssistantStatus(_ message: InboundMessage, into output: inout EngineOutput) {
        guard String(decoding: message.payload, as: UTF8.self) == "online", !message.retain else { return }
        logger.info("Home Assistant is online; publishing the discovery configs again")
        output.republishDiscovery = true
    }

    /// Called by `afterWrite` after the events, before the deleted timers' retained topics are
    /// cleared: removes the devices of deleted timers (an empty retained config; Home Assistant
    /// would otherwise first read the cleared topics as bad values), and publishes the configs
    /// of new, renamed or re-kinded timers — all of them on a (re)connect or when Home
    /// Assistant came online.
    ///
    /// All of them go out in chunks of `discoveryChunk`, one every `discoveryPauseMs` (a
    /// `.discovery` deadline), after the states: 10,000 configs of ~3 KB queued at once would
    /// hold 30 MB in libmosquitto's queue, which glibc then keeps. The first chunk
    /// goes with the connect itself.
    ///
    /// Configs are skipped while disconnected (every one is published on the next connect);
    /// removals are handed to the client like the deleted timers' retained topics.
    mutating func publishDiscovery(_ output: EngineOutput, now: Millis) {
        guard var publisher = homeAssistant else { return }
        // Taken out while it changes: a second reference would make every change copy its
        // 10,000 entries (copy on write), once per command or chunk.
        homeAssistant = nil
        var messages = output.deletedTimers.map { publisher.removal(of: $0) }
        // The Workout select offers the presets and the saved workouts: when they change, every
        // timer's config goes out again (in chunks, as on a connect).
        var workoutsChanged = false
        if output.republishAll || output.workoutsChanged {
            workoutsChanged = publisher.discovery.setWorkouts(Presets.builtInNames + configuration.presets.keys + workouts.ids)
        }
        if linkUp {
            if output.republishAll || output.republishDiscovery || workoutsChanged {
                // The states, events and retained topics queued so far go to the network
                // thread now, while the configs are made, not after them.
                emit(.flush)
                if hasSound { messages.append(.init(topic: publisher.discovery.nodeConfigTopic, payload: JSONCoding.encode(publisher.discovery.nodeConfig()))) }
                publisher.queueAll(timers.ids, at: now)
            } else if !output.onlyTimePassed {
                messages += publisher.configs(for: subjects(output.changedTimers), force: false)
            }
            // A wall-clock step back would otherwise leave the next chunk far in the future.
            if let at = publisher.nextChunkAtMs, at > now + Self.discoveryPauseMs { publisher.postpone(until: now) }
            if publisher.chunkIsDue(now: now) {
                if backlogged {
                    publisher.postpone(until: now + Self.discoveryPauseMs)  // the broker reads slower than we publish
                } else {
                    messages += publisher.configs(for: subjects(publisher.takeChunk(Self.discoveryChunk, nextAt: now + Self.discoveryPauseMs)), force: true)
                }
            }
        } else {
            publisher.clearBacklog()  // the next connect publishes every config
        }
        deadlines.set(.discovery, at: publisher.nextChunkAtMs)
        homeAssistant = publisher
        for message in messages { publish(to: message.topic, message.payload, retain: true) }
    }

    /// How many configs a connect publishes at a time (~1.5 MB), and the pause between chunks.
    static let discoveryChunk = 500
    static let discoveryPauseMs: Millis = 50

    private func subjects(_ ids: [String]) -> [HomeAssistantDiscovery.Subject] {
        ids.compactMap { id in
            timers.read(id) { HomeAssistantDiscovery.Subject(id: id, name: $0.machine.name, kind: $0.machine.kind) }
        }
    }
}

import Logging
import Mosquitto
import PacerCore

/// The engine's two hooks for Home Assistant discovery (the payloads are built in
/// HomeAssistant/HomeAssistantDiscovery.swift): Home Assistant's birth message, and the
/// configs that one commit publishes.
extension NodeEngine {
    /// `<prefix>/status`: `online` (Home Assistant started, or its MQTT integration reloaded)
    /// asks for every config again. A retained `online` arrives on our own connect, when every
    /// config is published anyway.
    func homeAssistantStatus(_ message: MQTTMessage, into output: inout EngineOutput) {
        guard String(decoding: message.payload, as: UTF8.self) == "online", !message.retain else { return }
        logger.info("Home Assistant is online; publishing the discovery configs again")
        output.republishDiscovery = true
    }

    /// Called by `commit` after the events, before the deleted timers' retained topics are
    /// cleared: removes the devices of deleted timers (an empty retained config; Home Assistant
    /// would otherwise first read the cleared topics as bad values), and publishes the configs
    /// of new, renamed or re-kinded timers — all of them on a (re)connect or when Home
    /// Assistant came online.
    ///
    /// Configs are skipped while disconnected (every one is published on the next connect);
    /// removals are handed to the client like the deleted timers' retained topics.
    func publishDiscovery(_ output: EngineOutput) async {
        guard var publisher = homeAssistant else { return }
        var messages = output.deletedTimers.map { publisher.removal(of: $0) }
        if linkUp {
            let all = output.republishAll || output.republishDiscovery
            if all {
                // Every config (a connect): the states, events and retained topics queued so far
                // go to the network thread now, while the configs are made, not after them.
                transport.endBatch()
                transport.beginBatch()
            }
            let subjects = (all ? timers.ids : output.changedTimers).compactMap { id in
                timers[id].map { HomeAssistantDiscovery.Subject(id: id, name: $0.machine.name, kind: $0.machine.kind) }
            }
            messages += publisher.configs(for: subjects, force: all)
        }
        homeAssistant = publisher  // before the awaits: the actor may run other work in between
        for message in messages { await publish(to: message.topic, message.payload, retain: true) }
    }
}

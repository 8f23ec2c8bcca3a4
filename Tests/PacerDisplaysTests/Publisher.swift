import Foundation
import Mosquitto
import PacerDisplays

/// The node's side in the live tests: publishes display messages as the engine would (QoS 0,
/// not retained); the test then waits for the emulator to show them.
struct Publisher {
    let client: MQTTClient

    init(port: Int) async throws {
        client = try MQTTClient(configuration: MQTTConfiguration(
            port: port, clientID: "node-\(UUID().uuidString.prefix(8).lowercased())", cleanStart: true))
        try await client.connect()
    }

    func send(_ messages: [DisplayMessage]) async throws {
        for message in messages {
            try await client.publish(to: message.topic, payload: message.payload, qos: .atMostOnce, retain: message.retain)
        }
    }

    func close() async { await client.disconnect() }
}

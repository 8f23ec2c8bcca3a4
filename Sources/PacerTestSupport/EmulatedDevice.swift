import Foundation
import Mosquitto
public import PacerCore
import Synchronization

/// A device emulator that an ``EmulatedDevice`` can put on a broker.
public protocol DeviceEmulator: Sendable {
    /// The topic filters the device's firmware subscribes to.
    var subscriptions: [String] { get }
    /// Takes one message at `now`.
    mutating func receive(topic: String, payload: [UInt8], now: Millis)
}

extension AwtrixEmulator: DeviceEmulator {}
extension WLEDEmulator: DeviceEmulator {}

/// An emulator on a real broker: an MQTT client (the `Mosquitto` module) that subscribes like
/// the device and hands every message to the emulator with the wall clock's instant.
///
/// Threading: the emulator is behind a `Mutex`; messages arrive on a task of their own.
public final class EmulatedDevice<Device: DeviceEmulator>: Sendable {
    /// The emulator, shared with the reading task.
    private final class Shared: Sendable {
        let device: Mutex<Device>
        init(_ device: Device) { self.device = Mutex(device) }
    }

    private let state: Shared
    private let client: MQTTClient
    private let reader: Mutex<Task<Void, Never>?>

    /// Connects to the broker at `host:port` and subscribes like the device.
    public init(_ device: Device, host: String = "127.0.0.1", port: Int) async throws {
        state = Shared(device)
        client = try MQTTClient(configuration: MQTTConfiguration(
            host: host, port: port, clientID: "emulator-\(UUID().uuidString.prefix(8).lowercased())",
            version: .v3_1_1, cleanStart: true, sessionExpiryInterval: 0,
            reconnect: MQTTReconnectPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(1))))
        reader = Mutex(nil)
        let messages = client.messages
        let task = Task { [state] in
            for await message in messages {
                let now = Millis(Date().timeIntervalSince1970 * 1000)
                state.device.withLock { $0.receive(topic: message.topic, payload: message.payload, now: now) }
            }
        }
        reader.withLock { $0 = task }
        try await client.connect()
        for filter in device.subscriptions { try await client.subscribe(to: filter, qos: .atMostOnce) }
    }

    /// The emulator as it is now.
    public var device: Device { state.device.withLock { $0 } }

    /// Changes the emulator (to let time pass, say).
    public func update<R>(_ body: (inout Device) -> R) -> R { state.device.withLock { body(&$0) } }

    /// Waits (at most `timeout`) until `condition` holds for the emulator; whether it did.
    public func wait(timeout: Duration = .seconds(10), until condition: (Device) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition(device) {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// Disconnects and stops reading.
    public func disconnect() async {
        await client.disconnect()
        reader.withLock { $0?.cancel() }
    }
}

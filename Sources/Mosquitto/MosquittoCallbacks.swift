import CMosquitto

/// `mosquitto_lib_init()`, run once per process before the first `mosquitto_new`.
///
/// Threading: a Swift `static let` is initialised exactly once, thread-safely (swift_once).
enum MosquittoLibrary {
    static let initResult: Int32 = mosquitto_lib_init()
}

/// The libmosquitto callbacks: static `@convention(c)` functions, so no Swift closure
/// (and no actor-isolated code) ever reaches C. Each one finds its client through the
/// userdata pointer, copies what libmosquitto lends it (that memory is freed when the
/// callback returns), updates a little lock-protected state and yields to a stream or
/// fulfils a waiter. None blocks, destroys or stops the loop; the only callback one sets is
/// the log callback, removed by on_connect once the broker accepted the connection.
///
/// Threading: all run on the thread serving the connection (the client's network thread, or its
/// loop host), inside a loop turn and libmosquitto's callback mutex.
enum MosquittoCallbacks {
    private static func core(_ userdata: UnsafeMutableRawPointer?) -> MQTTClientCore? {
        guard let userdata else { return nil }
        return Unmanaged<MQTTClientCore>.fromOpaque(userdata).takeUnretainedValue()
    }

    static let onConnect: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, Int32, OpaquePointer?) -> Void = {
        _, userdata, reasonCode, flags, _ in
        core(userdata)?.handleConnack(reasonCode: reasonCode, flags: flags)
    }

    static let onDisconnect: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, OpaquePointer?) -> Void = {
        _, userdata, reason, _ in
        core(userdata)?.handleDisconnect(reason: reason)
    }

    static let onMessage: @convention(c) (
        OpaquePointer?, UnsafeMutableRawPointer?, UnsafePointer<mosquitto_message>?, OpaquePointer?
    ) -> Void = { _, userdata, message, properties in
        guard let core = core(userdata), let message = message?.pointee, let topic = message.topic else { return }
        let payload: [UInt8]
        if let bytes = message.payload, message.payloadlen > 0 {
            payload = Array(UnsafeRawBufferPointer(start: bytes, count: Int(message.payloadlen)))
        } else {
            payload = []
        }
        let copied = MQTTMessage(
            topic: String(cString: topic),
            payload: payload,
            qos: MQTTQoS(rawValue: message.qos) ?? .atMostOnce,
            retain: message.retain,
            properties: core.speaksMQTT5.load(ordering: .acquiring) ? MQTTProperties(copying: properties) : .none)
        core.yield(copied)
    }

    static let onSubscribe: @convention(c) (
        OpaquePointer?, UnsafeMutableRawPointer?, Int32, Int32, UnsafePointer<Int32>?, OpaquePointer?
    ) -> Void = { _, userdata, messageID, count, granted, _ in
        guard let core = core(userdata) else { return }
        var result: Result<Void, MQTTError> = .success(())
        if let granted, count > 0, granted[0] >= 0x80 {
            let reason = granted[0]
            result = .failure(
                MQTTError(
                    reason == 0x87 || reason == 0x80 ? .notAuthorized : .other,
                    "the broker refused the subscription (\(MQTTError.reasonText(reason))); check the broker's ACL for this client"))
        }
        core.handleAcknowledgement(messageID: messageID, result: result)
    }

    static let onUnsubscribe: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, OpaquePointer?) -> Void = {
        _, userdata, messageID, _ in
        core(userdata)?.handleAcknowledgement(messageID: messageID, result: .success(()))
    }

    static let onPublish: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, Int32, OpaquePointer?) -> Void = {
        _, userdata, messageID, reasonCode, _ in
        core(userdata)?.handlePublished(messageID: messageID, reasonCode: reasonCode)
    }

    static let onLog: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?) -> Void = {
        _, userdata, level, text in
        guard let core = core(userdata) else { return }
        core.logLinesSeen.add(1, ordering: .relaxed)
        guard level & (MOSQ_LOG_ERR | MOSQ_LOG_WARNING) != 0, let text else { return }
        core.handleLog(level: level, text: String(cString: text))
    }
}

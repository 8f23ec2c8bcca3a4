import CMosquitto
import Foundation

extension MQTTClientCore {
    /// Everything libmosquitto needs before connecting, in the order its rules require:
    /// protocol version first (the will's properties are checked against it), then will,
    /// credentials, TLS, threading mode and callbacks. No thread exists yet.
    func configureHandle() throws(MQTTError) {
        let configuration = self.configuration
        func check(_ rc: Int32, _ what: String) throws(MQTTError) {
            if rc != MOSQ_ERR_SUCCESS.rawValue { throw MQTTError.mosquitto(rc, errno: errno, what) }
        }
        mosquitto_user_data_set(mosq, Unmanaged.passUnretained(self).toOpaque())
        // Small packets go out at once: without TCP_NODELAY, a reply written right after a
        // PUBACK waits for the broker's delayed ACK (Nagle), about 40 ms per hop on Linux.
        try check(mosquitto_int_option(mosq, MOSQ_OPT_TCP_NODELAY, 1), "setting TCP_NODELAY")
        try setVersion(configuration.version)
        if let username = configuration.username {
            try check(mosquitto_username_pw_set(mosq, username, configuration.password), "setting the username and password")
        }
        if let tls = configuration.tls {
            try configureTLS(tls)
        }
        // Our own thread runs the loop (see networkThreadMain): tell libmosquitto so that
        // publish() from other threads only queues packets and wakes the loop.
        try check(mosquitto_threaded_set(mosq, true), "setting threaded mode")

        mosquitto_connect_v5_callback_set(mosq, MosquittoCallbacks.onConnect)
        mosquitto_disconnect_v5_callback_set(mosq, MosquittoCallbacks.onDisconnect)
        mosquitto_message_v5_callback_set(mosq, MosquittoCallbacks.onMessage)
        mosquitto_subscribe_v5_callback_set(mosq, MosquittoCallbacks.onSubscribe)
        mosquitto_unsubscribe_v5_callback_set(mosq, MosquittoCallbacks.onUnsubscribe)
        mosquitto_publish_v5_callback_set(mosq, MosquittoCallbacks.onPublish)
        // The log callback is set per connection attempt, until the CONNACK (networkThreadMain).
    }

    /// Sets the protocol version of the next CONNECT, then the will (its properties are checked
    /// against the version, and sent only with MQTT 5). At set-up, and on the network thread
    /// before an attempt in another version (``VersionNegotiation``): never with a connection up.
    func setVersion(_ version: MQTTVersion) throws(MQTTError) {
        let protocolVersion = version == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311
        let rc = mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, protocolVersion)
        if rc != MOSQ_ERR_SUCCESS.rawValue { throw MQTTError.mosquitto(rc, errno: errno, "setting the protocol version") }
        speaksMQTT5.store(version == .v5, ordering: .releasing)
        guard let will = configuration.will else { return }
        guard !will.topic.isEmpty, !will.topic.utf8.contains(0) else {
            throw MQTTError(.invalidArgument, "the will topic must not be empty")
        }
        var properties: OpaquePointer?
        if version == .v5 { properties = try will.properties.makePropertyList() }
        let willRC = will.payload.withUnsafeBytes { payload in
            mosquitto_will_set_v5(
                mosq, will.topic, Int32(payload.count), payload.baseAddress, will.qos.rawValue, will.retain,
                properties)
        }
        if willRC != MOSQ_ERR_SUCCESS.rawValue {
            // On failure the list is still ours.
            mosquitto_property_free_all(&properties)
            throw MQTTError.mosquitto(willRC, "setting the will on \(will.topic)")
        }
        // On success libmosquitto owns the property list.
    }

    private func configureTLS(_ tls: MQTTTLSConfiguration) throws(MQTTError) {
        // Missing, unreadable, non-PEM or encrypted files fail here, not after a TCP connect.
        try tls.checkFiles()
        var caDirectory = tls.caDirectory
        if tls.caFile == nil && tls.caDirectory == nil {
            let rc = mosquitto_int_option(mosq, MOSQ_OPT_TLS_USE_OS_CERTS, 1)
            if rc != MOSQ_ERR_SUCCESS.rawValue { throw MQTTError.mosquitto(rc, "enabling the system CA store") }
            // mosquitto_tls_set needs a CA location when a client certificate is given.
            if tls.certificateFile != nil { caDirectory = "/etc/ssl/certs" } else { return setInsecure(tls) }
        }
        let rc = mosquitto_tls_set(mosq, tls.caFile, caDirectory, tls.certificateFile, tls.keyFile, nil)
        if rc != MOSQ_ERR_SUCCESS.rawValue {
            let error = MQTTError.mosquitto(rc, errno: errno, "setting up TLS (CA file \(tls.caFile ?? "-"), CA directory \(caDirectory ?? "-"))")
            throw MQTTError(.tls, error.message)
        }
        setInsecure(tls)
    }

    private func setInsecure(_ tls: MQTTTLSConfiguration) {
        _ = mosquitto_tls_insecure_set(mosq, !tls.verifyHostname)
    }
}

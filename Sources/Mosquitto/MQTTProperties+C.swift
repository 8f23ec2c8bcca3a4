import CMosquitto
import Foundation

/// The identifier of an MQTT 5 property as libmosquitto's `int identifier`.
@inline(__always)
func propertyID(_ property: mqtt5_property) -> Int32 {
    Int32(bitPattern: property.rawValue)
}

extension MQTTProperties {
    /// Builds a libmosquitto property list for a PUBLISH (or will).
    ///
    /// Returns `nil` when there is nothing to send. The caller owns the list and frees it
    /// with `mosquitto_property_free_all`, unless it hands it to a function documented to
    /// take ownership (`mosquitto_will_set_v5`).
    ///
    /// Threading: pure; touches only the list it builds.
    func makePropertyList() throws(MQTTError) -> OpaquePointer? {
        if isEmpty { return nil }
        var list: OpaquePointer?
        func check(_ rc: Int32, _ what: String) throws(MQTTError) {
            guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                mosquitto_property_free_all(&list)
                throw MQTTError.mosquitto(rc, "adding the MQTT 5 property \(what)")
            }
        }
        if let responseTopic {
            try check(Self.checkedString(responseTopic, "response topic"), "response topic")
            try check(mosquitto_property_add_string(&list, propertyID(MQTT_PROP_RESPONSE_TOPIC), responseTopic), "response topic")
        }
        if let correlationData {
            guard correlationData.count <= Int(UInt16.max) else {
                mosquitto_property_free_all(&list)
                throw MQTTError(.invalidArgument, "correlation data must be at most 65535 bytes, got \(correlationData.count)")
            }
            let rc = correlationData.withUnsafeBytes { bytes in
                mosquitto_property_add_binary(
                    &list, propertyID(MQTT_PROP_CORRELATION_DATA), bytes.baseAddress, UInt16(bytes.count))
            }
            try check(rc, "correlation data")
        }
        if let messageExpiryInterval {
            try check(
                mosquitto_property_add_int32(&list, propertyID(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL), messageExpiryInterval),
                "message expiry interval")
        }
        if let contentType {
            try check(Self.checkedString(contentType, "content type"), "content type")
            try check(mosquitto_property_add_string(&list, propertyID(MQTT_PROP_CONTENT_TYPE), contentType), "content type")
        }
        for property in userProperties {
            try check(Self.checkedString(property.name, "user property name"), "user property")
            try check(Self.checkedString(property.value, "user property value"), "user property")
            try check(
                mosquitto_property_add_string_pair(
                    &list, propertyID(MQTT_PROP_USER_PROPERTY), property.name, property.value),
                "user property \(property.name)")
        }
        return list
    }

    /// `MOSQ_ERR_INVAL` for strings C cannot carry intact (interior NUL, too long).
    private static func checkedString(_ value: String, _ what: String) -> Int32 {
        if value.utf8.contains(0) || value.utf8.count > Int(UInt16.max) {
            return MOSQ_ERR_INVAL.rawValue
        }
        return MOSQ_ERR_SUCCESS.rawValue
    }

    /// Copies the properties Pacer uses out of a libmosquitto property list.
    ///
    /// Threading: called on the network thread inside `on_message`; it reads `list`,
    /// which libmosquitto frees when the callback returns, and copies everything.
    init(copying list: OpaquePointer?) {
        self.init()
        var cursor = list
        while let property = cursor {
            let identifier = mosquitto_property_identifier(property)
            switch identifier {
            case propertyID(MQTT_PROP_RESPONSE_TOPIC):
                responseTopic = Self.readString(property, identifier)
            case propertyID(MQTT_PROP_CONTENT_TYPE):
                contentType = Self.readString(property, identifier)
            case propertyID(MQTT_PROP_CORRELATION_DATA):
                var value: UnsafeMutableRawPointer?
                var length: UInt16 = 0
                if mosquitto_property_read_binary(property, identifier, &value, &length, false) != nil {
                    if let value {
                        correlationData = Array(UnsafeRawBufferPointer(start: value, count: Int(length)))
                        free(value)
                    } else {
                        correlationData = []
                    }
                }
            case propertyID(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL):
                var value: UInt32 = 0
                if mosquitto_property_read_int32(property, identifier, &value, false) != nil {
                    messageExpiryInterval = value
                }
            case propertyID(MQTT_PROP_USER_PROPERTY):
                var name: UnsafeMutablePointer<CChar>?
                var value: UnsafeMutablePointer<CChar>?
                if mosquitto_property_read_string_pair(property, identifier, &name, &value, false) != nil {
                    userProperties.append(
                        MQTTUserProperty(
                            name: name.map { String(cString: $0) } ?? "",
                            value: value.map { String(cString: $0) } ?? ""))
                }
                free(name)
                free(value)
            default:
                break
            }
            cursor = mosquitto_property_next(property)
        }
    }

    private static func readString(_ property: OpaquePointer, _ identifier: Int32) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard mosquitto_property_read_string(property, identifier, &value, false) != nil else { return nil }
        defer { free(value) }
        return value.map { String(cString: $0) } ?? ""
    }
}

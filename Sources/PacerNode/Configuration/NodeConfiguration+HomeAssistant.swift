extension NodeConfiguration {
    /// Reads `home_assistant:` — a mapping `{enabled, prefix}`, or just `false` / `true`.
    mutating func readHomeAssistant(_ node: ConfigTree?, _ r: inout ConfigReader) {
        guard let node else { return }
        if case .scalar = node.value {
            if let enabled = r.bool(node, key: "home_assistant") { homeAssistant.enabled = enabled }
            return
        }
        let ha = r.mapping(node, key: "home_assistant", known: ["enabled", "prefix"])
        if let v = r.bool(ha["enabled"], key: "home_assistant.enabled") { homeAssistant.enabled = v }
        if let v = r.string(ha["prefix"], key: "home_assistant.prefix") {
            if let problem = Self.discoveryPrefixProblem(v) { r.fail("home_assistant.prefix", ha["prefix"], problem) } else {
                homeAssistant.prefix = v
            }
        }
    }

    /// A discovery prefix is one or more topic levels with no wildcard, like Home Assistant's own
    /// setting (`homeassistant`).
    static func discoveryPrefixProblem(_ prefix: String) -> String? {
        if prefix.isEmpty { return "the discovery prefix cannot be empty; Home Assistant's default is homeassistant" }
        if prefix.contains("#") || prefix.contains("+") { return "the discovery prefix cannot contain '+' or '#', got '\(prefix)'" }
        if prefix.hasPrefix("/") || prefix.hasSuffix("/") || prefix.contains("//") {
            return "the discovery prefix cannot start or end with '/' or have an empty level, got '\(prefix)'"
        }
        if prefix.hasPrefix("$") { return "topics starting with '$' are reserved by the broker, got '\(prefix)'" }
        return nil
    }
}

import Foundation
import PacerCore
import Yams

/// One problem found in the configuration: where it is and what is wrong.
public struct ConfigurationProblem: Sendable, Equatable, CustomStringConvertible {
    /// The file (or `environment` / `command line`) the value came from.
    public var source: String
    /// Line in the file, when known.
    public var line: Int?
    /// Dotted key path, e.g. `broker.url` or `timers[2].spec.work`.
    public var key: String
    public var reason: String

    public var description: String {
        let place = line.map { "\(source):\($0)" } ?? source
        return key.isEmpty ? "\(place): \(reason)" : "\(place): \(key): \(reason)"
    }
}

/// A configuration that cannot be used; lists every problem found, not only the first.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var problems: [ConfigurationProblem]
    public var description: String {
        problems.map(\.description).joined(separator: "\n")
    }
}

/// A YAML document as a tree that remembers line numbers, read with typed accessors that
/// record problems (with file, line and key) instead of stopping at the first one.
struct ConfigTree {
    enum Value {
        case scalar(String, type: ScalarType, quoted: Bool)
        case mapping([(key: String, value: ConfigTree)])
        case sequence([ConfigTree])
    }

    /// What a plain YAML scalar resolves to (YAML 1.1 core schema, as Yams resolves it).
    enum ScalarType { case null, bool, int, float, string }

    var value: Value
    var line: Int?

    static func parse(yaml: String, source: String) throws(ConfigurationError) -> ConfigTree? {
        let node: Node?
        do {
            node = try Yams.compose(yaml: yaml)
        } catch let error as YamlError {
            throw ConfigurationError(problems: [Self.problem(for: error, source: source)])
        } catch {
            throw ConfigurationError(problems: [.init(source: source, line: nil, key: "", reason: "\(error)")])
        }
        guard let node else { return nil }
        // YAML aliases share a node: ten levels of ten `*a` each ("billion laughs") are 10^10
        // values to read, which held `pacer check-config` for over a minute at 1.4 GB.
        var budget = maxValues
        guard Self.fits(node, budget: &budget) else {
            throw ConfigurationError(problems: [.init(source: source, line: nil, key: "",
                reason: "the file expands to more than \(maxValues) values (YAML aliases that repeat each other?); write the values out")])
        }
        return ConfigTree(node)
    }

    /// The most values (scalars, mappings, sequences) a configuration may hold once its
    /// aliases are expanded.
    static let maxValues = 100_000

    /// Whether `node` holds at most `budget` values; stops counting as soon as it does not.
    private static func fits(_ node: Node, budget: inout Int) -> Bool {
        budget -= 1
        guard budget >= 0 else { return false }
        switch node {
        case .scalar: return true
        case .mapping(let mapping):
            for (key, value) in mapping where !fits(key, budget: &budget) || !fits(value, budget: &budget) { return false }
            return true
        case .sequence(let sequence):
            for value in sequence where !fits(value, budget: &budget) { return false }
            return true
        case .alias: return true
        }
    }

    private static func problem(for error: YamlError, source: String) -> ConfigurationProblem {
        switch error {
        case let .scanner(_, problem, mark, _), let .parser(_, problem, mark, _), let .composer(_, problem, mark, _):
            return .init(source: source, line: mark.line, key: "", reason: "invalid YAML: \(problem)")
        case let .duplicatedKeysInMapping(duplicates, context):
            return .init(source: source, line: context.mark.line, key: duplicates.joined(separator: ", "),
                         reason: "key appears more than once")
        default:
            return .init(source: source, line: nil, key: "", reason: "invalid YAML: \(error)")
        }
    }

    init(_ node: Node) {
        line = node.mark?.line
        switch node {
        case .scalar(let scalar):
            // Integers are recognised by our own reading, not Yams' `node.int`: that one also
            // takes YAML 1.1's base-60 form (`1:30`) and traps on one too large for an Int
            // (`1111101111111011:-211011:-2:-2` crashed `pacer` at start; found by fuzzing).
            // A scalar that is not a plain decimal integer is then a float or text, and the
            // key's own check names it.
            let text = scalar.string
            let type: ScalarType = node.null != nil ? .null : node.bool != nil ? .bool
                : Int64(text) != nil ? .int : Self.isFloat(text) && node.float != nil ? .float : .string
            value = .scalar(scalar.string, type: type, quoted: scalar.style != .plain && scalar.style != .any)
        case .mapping(let mapping):
            value = .mapping(mapping.map { pair in (pair.key.string ?? "\(pair.key)", ConfigTree(pair.value)) })
        case .sequence(let sequence):
            value = .sequence(sequence.map(ConfigTree.init))
        case .alias(let alias):
            value = .scalar("*\(alias)", type: .string, quoted: false)
        }
    }

    /// A plain decimal number with a fraction or exponent (`1.5`, `-2e3`): the floats a
    /// configuration uses. YAML's other float forms (base 60, `.inf`) stay text.
    private static func isFloat(_ text: String) -> Bool {
        guard let first = text.first, first.isNumber || first == "-" || first == "+" || first == "." else { return false }
        return !text.contains(":") && Double(text)?.isFinite == true
    }

    init(value: Value, line: Int?) {
        self.value = value
        self.line = line
    }

    /// A JSON value read as the configuration would read it from YAML (a display saved by
    /// command is checked by the same rules as one in the file).
    init(json: JSONValue) {
        line = nil
        switch json {
        case .null: value = .scalar("null", type: .null, quoted: false)
        case .bool(let b): value = .scalar(b ? "true" : "false", type: .bool, quoted: false)
        case .number(let n):
            if let i = JSONValue.number(n).int64 {
                value = .scalar(String(i), type: .int, quoted: false)
            } else {
                value = .scalar(String(n), type: .float, quoted: false)
            }
        case .string(let s): value = .scalar(s, type: .string, quoted: true)
        case .array(let items): value = .sequence(items.map(ConfigTree.init(json:)))
        case .object(let members): value = .mapping(members.keys.sorted().map { ($0, ConfigTree(json: members[$0]!)) })
        }
    }

    /// The value as JSON (for timer specs and presets, which the core validates).
    var json: JSONValue {
        switch value {
        case .scalar(let text, let type, let quoted):
            if quoted { return .string(text) }
            switch type {
            case .null: return .null
            case .bool: return .bool(["true", "yes", "on"].contains(text.lowercased()))
            case .int:
                if let i = Int64(text) { return .number(Double(i)) }
                return .string(text)
            case .float:
                if let d = Double(text) { return .number(d) }
                return .string(text)
            case .string: return .string(text)
            }
        case .mapping(let pairs):
            var object: [String: JSONValue] = [:]
            for pair in pairs { object[pair.key] = pair.value.json }
            return .object(object)
        case .sequence(let items):
            return .array(items.map(\.json))
        }
    }
}

/// Reads a `ConfigTree`, collecting problems with their place.
struct ConfigReader {
    let source: String
    var problems: [ConfigurationProblem] = []

    /// A short description of a value for messages: `'lots'`, `a list`, `a mapping`.
    static func describe(_ node: ConfigTree) -> String {
        switch node.value {
        case .scalar(let text, _, _): "'\(printable(text))'"
        case .sequence: "a list"
        case .mapping: "a mapping"
        }
    }

    mutating func fail(_ key: String, _ node: ConfigTree?, _ reason: String) {
        problems.append(.init(source: source, line: node?.line, key: key, reason: reason))
    }

    /// The pairs of a mapping; reports keys not in `known`.
    mutating func mapping(_ node: ConfigTree?, key: String, known: Set<String>) -> [String: ConfigTree] {
        guard let node else { return [:] }
        guard case .mapping(let pairs) = node.value else {
            fail(key, node, "expected a mapping (key: value lines)")
            return [:]
        }
        var result: [String: ConfigTree] = [:]
        for pair in pairs {
            let path = key.isEmpty ? pair.key : "\(key).\(pair.key)"
            if !known.isEmpty, !known.contains(pair.key) {
                let suggestion = known.sorted().joined(separator: ", ")
                fail(path, pair.value, "unknown key; expected one of: \(suggestion)")
                continue
            }
            result[pair.key] = pair.value
        }
        return result
    }

    mutating func sequence(_ node: ConfigTree?, key: String) -> [ConfigTree] {
        guard let node else { return [] }
        guard case .sequence(let items) = node.value else {
            fail(key, node, "expected a list (lines starting with '- ')")
            return []
        }
        return items
    }

    mutating func string(_ node: ConfigTree?, key: String) -> String? {
        guard let node else { return nil }
        guard case .scalar(let text, let type, _) = node.value, type != .null else {
            fail(key, node, "expected a text value, got \(Self.describe(node))")
            return nil
        }
        return text
    }

    mutating func int(_ node: ConfigTree?, key: String, range: ClosedRange<Int>) -> Int? {
        guard let node else { return nil }
        guard case .scalar(let text, _, _) = node.value, let value = Int(text) else {
            fail(key, node, "expected a whole number, got \(Self.describe(node))")
            return nil
        }
        guard range.contains(value) else {
            fail(key, node, "must be between \(range.lowerBound) and \(range.upperBound), got \(value)")
            return nil
        }
        return value
    }

    mutating func bool(_ node: ConfigTree?, key: String) -> Bool? {
        guard let node else { return nil }
        guard case .scalar(let text, _, _) = node.value else {
            fail(key, node, "expected true or false, got \(Self.describe(node))")
            return nil
        }
        switch text.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default:
            fail(key, node, "expected true or false, got '\(text)'")
            return nil
        }
    }

    /// A duration: `10s`, `1m30s`, `0:30`, or a number of seconds.
    mutating func duration(_ node: ConfigTree?, key: String, range: ClosedRange<Millis>) -> Millis? {
        guard let node else { return nil }
        do {
            let ms = try Durations.parse(node.json, field: key)
            guard range.contains(ms) else {
                fail(key, node, "must be between \(Durations.describe(range.lowerBound)) and \(Durations.describe(range.upperBound)), got \(Durations.describe(ms))")
                return nil
            }
            return ms
        } catch {
            fail(key, node, error.message)
            return nil
        }
    }
}

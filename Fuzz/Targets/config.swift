// libFuzzer target: the configuration file as the node reads it (ConfigTree of PacerNode,
// compiled in from Sources/PacerNode/Configuration by scripts/fuzz, on Yams and its C part
// CYaml built with the sanitizers from the package's checkout): bytes -> YAML -> ConfigTree
// (or a ConfigurationError with its problems) -> the typed readers the loader uses and the
// JSON the core validates timer specs from.
import Foundation
import PacerCore

/// Found by this target and fixed: Yams 6 resolves a plain scalar like
/// `1111101111111011:-211011:-2:-2` as a base-60 integer with overflowing arithmetic, and
/// ConfigTree asked every scalar for `node.int`, so such a value stopped `pacer` with a trap
/// (ConfigTree now recognises integers itself; Fuzz/crashes/config/ keeps the input).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let text = String(decoding: bytes, as: UTF8.self)
    let tree: ConfigTree?
    do {
        tree = try ConfigTree.parse(yaml: text, source: "fuzz.yaml")
    } catch {
        precondition(!error.problems.isEmpty, "a configuration error without a problem")
        for problem in error.problems { _ = problem.description }
        return 0
    }
    guard let tree else { return 0 }
    var reader = ConfigReader(source: "fuzz.yaml")
    _ = ConfigReader.describe(tree)
    let top = reader.mapping(tree, key: "", known: ["node", "broker", "limits", "timers", "heart_rate"])
    for (key, node) in top {
        _ = reader.string(node, key: key)
        _ = reader.int(node, key: key, range: 1...1_000)
        _ = reader.bool(node, key: key)
        _ = reader.duration(node, key: key, range: 1_000...604_800_000)
        for item in reader.sequence(node, key: key) {
            if let spec = try? TimerSpec(json: item.json) { _ = spec }
        }
    }
    // The tree's JSON prints and reads back as itself (timer specs and presets go this way).
    let json = tree.json
    if let again = try? JSONDecoder().decode(JSONValue.self, from: Data(json.description.utf8)) {
        precondition(again.description == json.description, "ConfigTree JSON does not round-trip")
    }
    return 0
}

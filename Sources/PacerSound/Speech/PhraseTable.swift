import Foundation
import PacerCore

/// The words of one language: a JSON file `<language>.json` (share/phrases/en.json), so another
/// language is a file, not code (docs/sound.md, "Speech").
///
/// The file: `{"language": "en", "espeak_voice": "en", "separator": ". ", "phrases": {…}}`, each
/// phrase a template with `{label}`, `{phase}`, `{round}`, `{rounds}`, `{n}`, `{minutes}`,
/// `{seconds}` where it takes them. Every key of `PhraseTable.keys` must be there.
public struct PhraseTable: Sendable, Equatable {
    public let language: String
    /// espeak-ng's voice for this language when the configuration names none.
    public let espeakVoice: String
    /// Joins the parts of one utterance ("Rest" + "Next: swings" → "Rest. Next: swings").
    public let separator: String
    /// Where it was read from.
    public let path: String
    let phrases: [String: String]

    /// Every key a table must define, with the placeholders its template may use.
    public static let keys: [String: Set<String>] = {
        var keys: [String: Set<String>] = [:]
        for phase in ["prepare", "work", "rest", "set_rest", "cooldown", "countdown", "session"] { keys[phase] = [] }
        keys["labelled"] = ["phase", "label"]
        keys["next"] = ["label"]
        keys["round"] = ["round", "rounds"]
        keys["last_round"] = []
        keys["halfway"] = []
        for unit in ["second", "seconds", "minute", "minutes"] { keys[unit] = ["n"] }
        keys["minutes_seconds"] = ["minutes", "seconds"]
        for end in ["done", "expired", "overtime"] { keys[end] = [] }
        return keys
    }()

    /// The installed tables (install.sh and the Debian package put share/phrases there).
    public static let installedDirectory = "/usr/share/pacer/phrases"
    /// The tables of the source tree this binary was built from (a node run from a checkout).
    public static let sourceDirectory: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }  // Speech, PacerSound, Sources, the root
        return url.appendingPathComponent("share/phrases").path
    }()

    /// Where `<language>.json` is looked for, in order: the configured directory, the installed
    /// one, the source tree's.
    public static func searchPath(configured: String?) -> [String] {
        (configured.map { [$0] } ?? []) + [installedDirectory, sourceDirectory]
    }

    /// Whether `language` is a tag like `en`, `de`, `pt-BR` (it names a file).
    public static func isValidLanguage(_ language: String) -> Bool {
        let parts = language.split(separator: "-", omittingEmptySubsequences: false)
        guard let first = parts.first, (2...3).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLowercase }) else { return false }
        return parts.dropFirst().allSatisfy { (2...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
    }

    /// Loads the first `<language>.json` found in `directories`.
    /// - Throws: `SoundError` naming the directories searched, or the file and key at fault.
    public static func load(language: String, directories: [String]) throws(SoundError) -> PhraseTable {
        guard isValidLanguage(language) else { throw SoundError("'\(language)' is not a language tag like en, de or pt-BR") }
        for directory in directories {
            let path = (directory as NSString).appendingPathComponent("\(language).json")
            guard FileManager.default.fileExists(atPath: path) else { continue }
            guard let data = FileManager.default.contents(atPath: path) else { throw SoundError("cannot read the phrase table \(path)") }
            return try parse([UInt8](data), path: path)
        }
        throw SoundError("no phrase table \(language).json in \(directories.joined(separator: ", "))")
    }

    /// Parses a table's text; `path` names it in errors.
    public static func parse(_ bytes: [UInt8], path: String) throws(SoundError) -> PhraseTable {
        let json: JSONValue
        do { json = try JSONValue.parse(bytes) } catch { throw SoundError("the phrase table \(path) is not valid JSON: \(error)") }
        guard let language = json["language"]?.string else { throw SoundError("the phrase table \(path) has no \"language\"") }
        guard let members = json["phrases"]?.object else { throw SoundError("the phrase table \(path) has no \"phrases\" object") }
        var phrases: [String: String] = [:]
        for (key, placeholders) in keys.sorted(by: { $0.key < $1.key }) {
            guard let text = members[key]?.string, !text.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw SoundError("the phrase table \(path) has no text for \"\(key)\"")
            }
            for name in Self.placeholders(in: text) where !placeholders.contains(name) {
                let allowed = placeholders.isEmpty ? "none" : placeholders.sorted().map { "{\($0)}" }.joined(separator: ", ")
                throw SoundError("the phrase table \(path): \"\(key)\" uses {\(name)}; it may use \(allowed)")
            }
            phrases[key] = text
        }
        return PhraseTable(language: language, espeakVoice: json["espeak_voice"]?.string ?? language,
                           separator: json["separator"]?.string ?? ". ", path: path, phrases: phrases)
    }

    /// The phrase `key` with its placeholders filled in.
    public func text(_ key: String, _ values: [String: String] = [:]) -> String {
        // One pass: a label with braces in it is said as written, never filled in again.
        var out = ""
        var rest = Substring(phrases[key] ?? key)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            out += rest[..<open]
            let name = String(rest[rest.index(after: open)..<close])
            out += values[name] ?? ""
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }

    private static func placeholders(in text: String) -> [String] {
        var names: [String] = []
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            names.append(String(rest[rest.index(after: open)..<close]))
            rest = rest[rest.index(after: close)...]
        }
        return names
    }
}

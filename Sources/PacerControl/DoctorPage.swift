public import Foundation

/// The wall clock's page as `pacer doctor` sees it: which files it loads, whether each is
/// served with a type a browser runs, and where the page finds its broker. Pure: the fetching
/// is ``DoctorHTTP``.
public enum DoctorPage {
    /// The media types browsers run as scripts; ES modules and service workers are refused
    /// with any other (the HTML standard's "JavaScript MIME type essence match").
    static let javaScriptTypes: Set<String> = [
        "text/javascript", "application/javascript", "application/ecmascript", "application/x-ecmascript",
        "application/x-javascript", "text/ecmascript", "text/javascript1.0", "text/javascript1.1", "text/javascript1.2",
        "text/javascript1.3", "text/javascript1.4", "text/javascript1.5", "text/jscript", "text/livescript",
        "text/x-ecmascript", "text/x-javascript",
    ]

    /// The media type of a `Content-Type` header, lowercased, without its parameters.
    public static func mediaType(_ contentType: String?) -> String? {
        guard let contentType else { return nil }
        let type = contentType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingWhitespace().lowercased() } ?? ""
        return type.isEmpty ? nil : type
    }

    /// Whether a browser runs a module served with this `Content-Type`.
    public static func isJavaScript(_ contentType: String?) -> Bool {
        mediaType(contentType).map(javaScriptTypes.contains) ?? false
    }

    /// The scripts an HTML page loads: `<script src=…>` and `<link rel=modulepreload href=…>`.
    public static func scriptReferences(html: String) -> [String] {
        var found: [String] = []
        for tag in tags(in: html) {
            let name = tag.name.lowercased()
            if name == "script", let src = tag.attributes["src"] { found.append(src) }
            if name == "link", tag.attributes["rel"]?.lowercased() == "modulepreload", let href = tag.attributes["href"] { found.append(href) }
        }
        return unique(found)
    }

    /// The modules a script loads: `import … from "x"`, `import "x"`, `export … from "x"`,
    /// `import("x")` with a literal, and a service worker's `register("x")`.
    public static func moduleReferences(script: String) -> [String] {
        var found: [String] = []
        let chars = Array(script.unicodeScalars)
        var i = 0
        /// Whether the name `w` stands at `index` (after a `.` only when `member`).
        func word(_ w: String, at index: Int, member: Bool = false) -> Bool {
            let ws = Array(w.unicodeScalars)
            guard index + ws.count <= chars.count, Array(chars[index..<index + ws.count]) == ws else { return false }
            func isNamePart(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" || c == "$" }
            let before = index == 0 ? " " : Character(chars[index - 1])
            let after = index + ws.count < chars.count ? Character(chars[index + ws.count]) : " "
            return !isNamePart(before) && (before == ".") == member && !isNamePart(after)
        }
        /// The string literal starting at or after `index` (skipping spaces and `(`), if one comes next.
        func literal(after index: Int) -> String? {
            var j = index
            while j < chars.count, chars[j] == " " || chars[j] == "\t" || chars[j] == "\n" || chars[j] == "(" { j += 1 }
            guard j < chars.count, chars[j] == "\"" || chars[j] == "'" else { return nil }
            let quote = chars[j]
            var k = j + 1
            var text = ""
            while k < chars.count, chars[k] != quote, chars[k] != "\n" { text.unicodeScalars.append(chars[k]); k += 1 }
            return k < chars.count && chars[k] == quote ? text : nil
        }
        while i < chars.count {
            if word("import", at: i) {
                // `import "x"`, `import("x")`, or `import … from "x"` (up to the next `;` or a blank line).
                if let direct = literal(after: i + 6) {
                    found.append(direct)
                } else if let from = fromClause(chars, start: i + 6) {
                    found.append(from)
                }
            } else if word("export", at: i), let from = fromClause(chars, start: i + 6) {
                found.append(from)
            } else if word("register", at: i, member: true), let sw = literal(after: i + 8) {
                found.append(sw)
            }
            i += 1
        }
        return unique(found.filter { $0.hasSuffix(".js") || $0.hasSuffix(".mjs") })
    }

    /// The literal after `from` in the statement that starts at `start`, if it has one.
    private static func fromClause(_ chars: [Unicode.Scalar], start: Int) -> String? {
        var j = start
        let limit = min(chars.count, start + 2_000)
        while j + 4 <= limit {
            if chars[j] == ";" { return nil }
            if chars[j] == "f", chars[j + 1] == "r", chars[j + 2] == "o", chars[j + 3] == "m",
               j > 0, chars[j - 1] == " " || chars[j - 1] == "}" || chars[j - 1] == "\n" {
                var k = j + 4
                while k < limit, chars[k] == " " { k += 1 }
                guard k < limit, chars[k] == "\"" || chars[k] == "'" else { return nil }
                let quote = chars[k]
                var text = ""
                k += 1
                while k < limit, chars[k] != quote, chars[k] != "\n" { text.unicodeScalars.append(chars[k]); k += 1 }
                return k < limit ? text : nil
            }
            j += 1
        }
        return nil
    }

    /// A reference resolved against the file that made it, when it stays on the page's own
    /// server (a browser would fetch others elsewhere: not ours to check).
    public static func resolve(_ reference: String, against base: URL) -> URL? {
        guard let url = URL(string: reference, relativeTo: base)?.absoluteURL,
              url.scheme == base.scheme, url.host == base.host, url.port == base.port else { return nil }
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        components?.fragment = nil
        return components?.url
    }

    /// Where the page connects by default: its `?broker=` when given, else `mqtt` beside the
    /// page on its own server, `ws://` (`wss://` for an HTTPS page), as the page's `mqtt.js` does.
    public static func brokerURL(page: URL) -> URL? {
        let components = URLComponents(url: page, resolvingAgainstBaseURL: false)
        if let given = components?.queryItems?.first(where: { $0.name == "broker" })?.value, let url = URL(string: given) {
            return url
        }
        guard let beside = URL(string: "mqtt", relativeTo: page)?.absoluteURL,
              var ws = URLComponents(url: beside, resolvingAgainstBaseURL: false) else { return nil }
        ws.scheme = page.scheme == "https" ? "wss" : "ws"
        ws.query = nil
        ws.fragment = nil
        return ws.url
    }

    /// One file of the page as fetched: its address, the HTTP status (nil: no answer) and its `Content-Type`.
    public struct Fetched: Sendable, Equatable {
        public var url: String
        public var status: Int?
        public var contentType: String?
        /// Why there is no status (refused, timed out, not HTTP).
        public var failure: String?

        public init(url: String, status: Int?, contentType: String?, failure: String? = nil) {
            self.url = url
            self.status = status
            self.contentType = contentType
            self.failure = failure
        }
    }

    /// Judges the page from its files: `index` first, then its scripts and modules.
    ///
    /// - Parameters:
    ///   - source: where the address came from (`--page`, the running node's record, the installed page).
    public static func verdict(index: Fetched, scripts: [Fetched], source: String) -> DoctorCheck {
        let serveFix = "serve the page with lighttpd as deploy/lighttpd/pacer.conf does: sudo deploy/install.sh --broker-only (from the package: sudo /usr/share/pacer/install.sh --broker-only); then open http://<this machine>/ (docs/deployment.md, \"The page: lighttpd, HTTPS\")"
        guard let status = index.status else {
            if index.failure?.contains("certificate") == true {
                return .problem("page", "\(index.url) (\(source)): \(index.failure ?? "")",
                                fix: "this machine does not trust the page's certificate: trust the Pi's certificate authority (docs/dashboard.md, \"HTTPS on the gym's network\"), or check the page's http:// address with --page")
            }
            return .problem("page", "\(index.url) (\(source)): \(index.failure ?? "no answer")",
                            fix: "start the page's web server (installed: sudo systemctl start lighttpd, its log: journalctl -u lighttpd), or give the wall clock's address with --page URL")
        }
        guard status == 200 else {
            return .problem("page", "\(index.url) (\(source)) answers HTTP \(status), not the page",
                            fix: status == 404 ? "the page's folder is missing or elsewhere: installed, sudo deploy/install.sh puts it in /usr/share/pacer/dashboard; or give its address with --page URL"
                                               : "see the web server's log (installed: journalctl -u lighttpd)")
        }
        if scripts.isEmpty {
            return .warning("page", "\(index.url) (\(source)) loads no script: is it Pacer's wall clock?",
                            fix: "give the wall clock's address with --page URL")
        }
        if let missing = scripts.first(where: { $0.status != 200 }) {
            let what = missing.status.map { "HTTP \($0)" } ?? (missing.failure ?? "no answer")
            return .problem("page", "\(missing.url) (loaded by the page) answers \(what): the page cannot start",
                            fix: "copy the whole of examples/dashboard/ to the page's folder (installed: sudo deploy/install.sh)")
        }
        let wrong = scripts.filter { !isJavaScript($0.contentType) }
        if let first = wrong.first {
            let type = first.contentType.map { "as \($0)" } ?? "with no Content-Type"
            let names = wrong.prefix(4).map { URL(string: $0.url)?.lastPathComponent ?? $0.url }.joined(separator: ", ")
                + (wrong.count > 4 ? " and \(wrong.count - 4) more" : "")
            return .problem("page", "the page's scripts (\(names)) are served \(type), not as JavaScript: browsers will not run them and the wall clock stays blank (this is how mosquitto's http_dir serves them)",
                            fix: serveFix)
        }
        let types = Set(scripts.compactMap { mediaType($0.contentType) }).sorted().joined(separator: ", ")
        return .ok("page", "\(index.url) (\(source)): index.html and \(scripts.count) script\(scripts.count == 1 ? "" : "s") served as \(types)")
    }

    private static func unique(_ items: [String]) -> [String] {
        var seen = Set<String>()
        return items.filter { seen.insert($0).inserted }
    }

    /// The start tags of an HTML text with their attributes (names lowercased).
    static func tags(in html: String) -> [(name: String, attributes: [String: String])] {
        var result: [(String, [String: String])] = []
        let chars = Array(html.unicodeScalars)
        var i = 0
        while i < chars.count {
            guard chars[i] == "<", i + 1 < chars.count, chars[i + 1].properties.isAlphabetic else { i += 1; continue }
            var j = i + 1
            var name = ""
            while j < chars.count, chars[j].properties.isAlphabetic || ("0"..."9").contains(chars[j]) {
                name.unicodeScalars.append(chars[j]); j += 1
            }
            var attributes: [String: String] = [:]
            while j < chars.count, chars[j] != ">" {
                while j < chars.count, chars[j] == " " || chars[j] == "\n" || chars[j] == "\t" || chars[j] == "/" { j += 1 }
                var key = ""
                while j < chars.count, !" \n\t=>/".unicodeScalars.contains(chars[j]) { key.unicodeScalars.append(chars[j]); j += 1 }
                var value = ""
                if j < chars.count, chars[j] == "=" {
                    j += 1
                    if j < chars.count, chars[j] == "\"" || chars[j] == "'" {
                        let quote = chars[j]
                        j += 1
                        while j < chars.count, chars[j] != quote { value.unicodeScalars.append(chars[j]); j += 1 }
                        j += 1
                    } else {
                        while j < chars.count, !" \n\t>".unicodeScalars.contains(chars[j]) { value.unicodeScalars.append(chars[j]); j += 1 }
                    }
                }
                if !key.isEmpty { attributes[key.lowercased()] = value } else if j < chars.count, chars[j] != ">" { j += 1 }
            }
            result.append((name, attributes))
            i = j + 1
        }
        return result
    }
}

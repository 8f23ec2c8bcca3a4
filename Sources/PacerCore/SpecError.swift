/// A timer spec (or a setting) that cannot be used, with a message a person can act on.
///
/// The message names the field, the limit and the bad value:
/// `rest must be between 0 s and 7 days, got -5 s`.
public struct SpecError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The offending field, in the JSON spelling (`rest`, `segments[3].duration`).
    public var field: String
    /// The whole sentence, naming the field.
    public var message: String

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { message }

    /// `field must be between lower and upper, got value` for durations.
    static func durationRange(_ field: String, _ value: Millis, _ range: ClosedRange<Millis>) -> SpecError {
        SpecError(
            field: field,
            message: "\(field) must be between \(Durations.describe(range.lowerBound)) and \(Durations.describe(range.upperBound)), got \(Durations.describe(value))"
        )
    }

    /// `field must be between lower and upper, got value` for counts.
    static func countRange(_ field: String, _ value: Int, _ range: ClosedRange<Int>) -> SpecError {
        SpecError(
            field: field,
            message: "\(field) must be between \(grouped(range.lowerBound)) and \(grouped(range.upperBound)), got \(grouped(value))"
        )
    }
}

/// Checks on free text (names, labels).
enum TextRules {
    static let maxLength = 100

    /// Validates a label/name: at most 100 characters, no control characters or line breaks;
    /// empty is allowed only when `allowEmpty` (and then white space alone is not either).
    static func check(_ text: String, field: String, allowEmpty: Bool = true) throws(SpecError) {
        if !allowEmpty && text.trimmingWhitespace().isEmpty {
            throw SpecError(field: field, message: text.isEmpty ? "\(field) must not be empty" : "\(field) must not be only white space")
        }
        if text.count > maxLength {
            throw SpecError(field: field, message: "\(field) must be at most \(maxLength) characters, got \(text.count)")
        }
        // Line and paragraph separators (U+2028, U+2029) break lines like a newline does.
        if text.unicodeScalars.contains(where: { [.control, .lineSeparator, .paragraphSeparator].contains($0.properties.generalCategory) }) {
            throw SpecError(field: field, message: "\(field) must not contain control characters or line breaks (newlines, tabs, U+2028, ...)")
        }
    }
}

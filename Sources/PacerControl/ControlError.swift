/// Why a control command failed, with a message a person can act on and the exit code the
/// `pacer` tool ends with.
public struct ControlError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure it is; each kind has its own exit code.
    public enum Kind: Sendable, Equatable {
        /// Bad input on the command line (a duration, a count, flags that do not go
        /// together): nothing was sent. Exit code 64 (usage).
        case usage
        /// The node answered with an error reply (`ok: false`). Exit code 1.
        case refused(code: String)
        /// No reply within the time limit (no node, or a node that does not answer). Exit code 3.
        case timeout
        /// The broker could not be reached or refused us (credentials, TLS). Exit code 4.
        case connection
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    /// The exit code of the `pacer` tool for this error (docs/control.md lists them).
    public var exitCode: Int32 {
        switch kind {
        case .usage: 64
        case .refused: 1
        case .timeout: 3
        case .connection: 4
        }
    }
}

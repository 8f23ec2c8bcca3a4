/// MQTT 5 first, 3.1.1 when the broker will not speak it (``MQTTConfiguration/fallsBackToV3_1_1``).
///
/// Part of ``MQTTConnectionStateMachine`` (pure: no clock of its own, no libmosquitto). The
/// signs that a broker does not speak MQTT 5, each seen on a real broker (docs/deployment.md):
/// - it refuses the CONNECT with "unsupported protocol version" (MQTT 5's 0x84; libmosquitto
///   reports a 3.1.1-style refusal, code 1, as 0x84 too);
/// - it closes the connection without answering (RabbitMQ before 3.13), or answers with a
///   packet an MQTT 5 client cannot read (a protocol error);
/// - it never answers (amqtt): the CONNECT stays unanswered for ``unansweredWait``.
///
/// A refused login, a TLS failure or a broker that is not there is never such a sign. The
/// version is settled by the first CONNACK that accepts a connection and then kept for the
/// client's life; a 3.1.1 attempt that fails before that sends the next attempt back to 5
/// (the broker may only have been down).
struct VersionNegotiation: Equatable {
    /// The version the next (or the current) CONNECT uses.
    private(set) var version: MQTTVersion
    /// Whether the version may still change: fallback on, and no broker has accepted one yet.
    private(set) var isOpen: Bool
    /// Why the client speaks 3.1.1 although MQTT 5 was tried first; nil otherwise.
    private(set) var fallbackReason: String?
    /// The attempt now ending changed the version: the next one starts at once.
    private var retryAtOnce = false
    /// When the pending MQTT 5 CONNECT was sent, while the version may still change.
    private var sentAt: ContinuousClock.Instant?
    /// The broker answered this attempt's CONNECT with a refusal of another kind (a login, a
    /// ban, a busy server): it speaks the version, so the attempt's end is no sign.
    private var answered = false

    /// How long an MQTT 5 CONNECT may stay unanswered before 3.1.1 is tried. A broker on the
    /// same network answers in milliseconds; one that takes longer and speaks MQTT 5 still
    /// works, over 3.1.1.
    static let unansweredWait = Duration.seconds(2)

    init(version: MQTTVersion, fallsBack: Bool) {
        self.version = version
        isOpen = fallsBack && version == .v5
    }

    /// While still open: the next CONNECT speaks `version` (3.1.1: no MQTT 5 attempt first).
    mutating func start(at version: MQTTVersion, because reason: String?) {
        guard isOpen, version != self.version else { return }
        self.version = version
        fallbackReason = version == .v3_1_1 ? reason : nil
    }

    /// The CONNECT went out at `now`.
    mutating func connectSent(at now: ContinuousClock.Instant) {
        sentAt = isOpen && version == .v5 ? now : nil
    }

    /// Whether the pending MQTT 5 CONNECT has waited too long for an answer; if so the client
    /// falls back and the thread serving the connection ends it (without a DISCONNECT: the
    /// broker never read a CONNECT it could answer).
    mutating func abandonsUnanswered(now: ContinuousClock.Instant) -> Bool {
        guard let sentAt, now - sentAt >= Self.unansweredWait else { return false }
        fallBack(because: "the broker left the MQTT 5 CONNECT unanswered for \(Self.unansweredWait)")
        return true
    }

    /// A CONNACK accepted the connection: the version is settled.
    mutating func accepted() {
        isOpen = false
        sentAt = nil
        retryAtOnce = false
        answered = false
    }

    /// A CONNACK refused the connection with `reasonCode`. Returns whether that made the client
    /// fall back, in which case the refusal is not an error: the next attempt speaks 3.1.1.
    mutating func refused(reasonCode: Int32) -> Bool {
        sentAt = nil
        guard isOpen, version == .v5, reasonCode == 0x84 || reasonCode == 1 else {
            answered = true
            return false
        }
        fallBack(because: "the broker refused MQTT 5 (reason code 0x84, unsupported protocol version)")
        return true
    }

    /// An attempt ended before any CONNACK accepted it. `connectSent`: the CONNECT was on its
    /// way (the TCP connection, and TLS, were up); `error`: how it ended. Returns whether the
    /// next attempt goes at once, with the version just chosen, instead of after a backoff.
    mutating func attemptEnded(connectSent: Bool, error: MQTTError.Code) -> Bool {
        sentAt = nil
        let answered = self.answered
        self.answered = false
        if retryAtOnce {
            retryAtOnce = false
            return true
        }
        guard isOpen, !answered else { return false }
        switch version {
        case .v5:
            guard connectSent, ![.tls, .badCredentials, .notAuthorized, .cancelled, .shutdown].contains(error) else { return false }
            fallBack(because: "the broker closed the connection without accepting the MQTT 5 CONNECT")
            retryAtOnce = false
            return true
        case .v3_1_1:
            // 3.1.1 did not connect either: MQTT 5 again, and the signs are read afresh.
            version = .v5
            fallbackReason = nil
            return false
        }
    }

    private mutating func fallBack(because reason: String) {
        version = .v3_1_1
        fallbackReason = reason
        sentAt = nil
        retryAtOnce = true
    }
}

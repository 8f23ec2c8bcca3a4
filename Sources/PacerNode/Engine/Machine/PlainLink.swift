import Logging
import PacerCore

/// The plain topics' own connection as the engine takes it (`publish.plain_connection:
/// separate`, the default): down, up, or unavailable (refused by the broker, or not up a few
/// seconds after the main connection: then the plain topics go over the main one).
///
/// Why a second connection: mosquitto reads one packet per connection per turn of its loop.
/// Under a command storm the node's main connection carries five or six packets per command
/// (state, plain topics, event, reply), so a per-second flip waited behind up to 74 KB of
/// them in the broker's socket buffer, 200–730 ms (docs/RELIABILITY.md, the storm). On a
/// connection of their own the flips are the only packets, read on the broker's next turn.
struct PlainLink {
    enum State: Equatable {
        /// Not connected (yet, or lost): plain topics wait; all are republished when it is up.
        case down
        /// Connected: plain topics go over it.
        case up
        /// The broker refused it (a client-id rule, an ACL plugin), or it was still down
        /// `fallbackDelayMs` after the main connection came up (a broker that closes a
        /// connection over its limit without a CONNACK): plain topics go over the main
        /// connection while it is retried.
        case unavailable
    }

    /// How long the plain topics wait for their own connection while the main one is up,
    /// before they go over the main one.
    static let fallbackDelayMs: Millis = 3_000

    private(set) var state = State.down
    /// The problem last logged, so a refusal retried every few seconds is logged once.
    private var loggedProblem: String?

    /// What to do about a connection event.
    enum Action: Equatable {
        /// Publish every plain topic again, over the connection they now use (a new
        /// connection: the broker may hold stale values, or none after its own restart).
        case republish
        /// Log this, once.
        case log(Logger.Level, String)
    }

    var isUp: Bool { state == .up }
    /// Whether the plain topics go over the main connection for now.
    var usesMainConnection: Bool { state == .unavailable }

    mutating func event(_ event: LinkEvent) -> [Action] {
        switch event {
        case .connected:
            let hadProblem = loggedProblem != nil
            state = .up
            loggedProblem = nil
            return [.republish, .log(hadProblem ? .notice : .info, "the plain topics' connection is up")]
        case .disconnected(let reason):
            guard state == .up else { return [] }
            state = .down
            return once("lost the plain topics' connection (\(reason)); remaining, display, phase, round, rounds and hr pause until it is back", .warning)
        case .refused(let error):
            let wasUnavailable = state == .unavailable
            state = .unavailable
            let log = once("the broker refused the plain topics' connection (\(error)); they go over the main connection while it is retried quietly. If the broker allows the node's account one client id only, set publish.plain_connection: shared", .error)
            return wasUnavailable ? log : [.republish] + log
        case .loopExited(let error):
            state = .down
            return once("the plain topics' MQTT network thread stopped: \(error)", .critical)
        }
    }

    /// The main connection has been up for `fallbackDelayMs` and this one is still down: the
    /// plain topics go over the main one until this one connects.
    mutating func mainStayedAlone() -> [Action] {
        guard state == .down else { return [] }
        state = .unavailable
        return [.republish] + once("the plain topics' connection is not up \(Self.fallbackDelayMs / 1000) s after the main one (a broker connection limit? a node needs two); they go over the main connection until it is. publish.plain_connection: shared makes that permanent", .error)
    }

    private mutating func once(_ message: String, _ level: Logger.Level) -> [Action] {
        guard loggedProblem != message else { return [] }
        loggedProblem = message
        return [.log(level, message)]
    }
}

/// After a (re)connect the main connection republishes every `state`, and the plain topics'
/// own connection every plain topic. Sent side by side, the plain topics' 6 messages per timer
/// halve the rate at which the states get through, since mosquitto reads one packet per
/// connection per turn (a restore of 10,000 timers). So the plain republish waits
/// until the broker has acknowledged the connect's last state (a tracked QoS 1 publish; the
/// broker handles one connection's packets in order, so it has every earlier state too), or
/// for `limitMs` at most. The running timers' per-second flips wait too (10,000 timers flip
/// 20,000 values a second): the republish that ends the hold carries their current values.
/// The hold lasts as long as the broker takes to read the states: milliseconds for a few
/// timers, about half a second for 10,000 on this machine.
struct PlainRepublishHold {
    /// The most a plain republish waits for the states.
    static let limitMs: Millis = 3_000

    /// The token of the connect's last state, while the plain topics wait for it.
    private(set) var token: PublishToken?
    /// A plain republish was asked for during the hold.
    private var republishWaiting = false

    /// The connect's last state went out with `token`.
    mutating func hold(_ token: PublishToken) {
        self.token = token
    }

    /// A plain republish is asked for: true when it must wait for the hold's end.
    mutating func deferRepublish() -> Bool {
        guard token != nil else { return false }
        republishWaiting = true
        return true
    }

    var isHolding: Bool { token != nil }

    func isHeld(by token: PublishToken) -> Bool {
        self.token == token
    }

    /// Ends the hold (the state's PUBACK, or the time limit); true when a republish waited.
    mutating func release() -> Bool {
        defer { token = nil; republishWaiting = false }
        return republishWaiting
    }
}

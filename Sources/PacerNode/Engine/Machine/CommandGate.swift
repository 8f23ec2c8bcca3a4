import Logging
import PacerCore
import PacerProtocol
import PacerStore

/// The way in for every command: parsed, held to the optional rate limit, and answered from
/// the request ledger when its id was seen within the dedup window. Also the node's clock
/// requests (`<base>/time`) and the replies' rules (where a reply may go).
struct CommandGate {
    let parser: CommandParser
    /// Request ids answered in the dedup window, with their replies (PacerCore).
    private(set) var ledger: RequestLedger
    /// The optional command rate limit (`limits.command_rate`; nil: off). CommandRateLimiter.swift.
    private(set) var rateLimiter: CommandRateLimiter?
    let topics: Topics
    let logger: Logger

    init(configuration: NodeConfiguration, topics: Topics, logger: Logger) {
        parser = CommandParser(maxPayloadBytes: configuration.limits.maxPayloadBytes)
        ledger = RequestLedger(windowMs: configuration.limits.dedupWindowMs)
        rateLimiter = configuration.limits.commandRate.map(CommandRateLimiter.init)
        self.topics = topics
        self.logger = logger
    }

    /// What becomes of a command message.
    enum Admission {
        /// Answered here, nothing changed: not parsed, rate limited, or a repeat of a request id.
        case answered(EngineOutput.Reply)
        /// To be carried out; its reply goes to `replyTopic` with `correlation`.
        case admitted(NodeCommand, replyTopic: String, correlation: [UInt8]?)
    }

    /// Parses `message` (from a `cmd` topic) and decides whether it is carried out.
    mutating func admit(_ message: InboundMessage, now: Millis) -> Admission {
        // MQTT 5 request/response: reply on the request's response topic with its correlation data.
        let replyTopic = message.responseTopic.flatMap { Self.isValidPublishTopic($0) ? $0 : nil } ?? topics.reply
        func answer(_ body: JSONValue) -> Admission {
            .answered(.init(topic: replyTopic, body: body, correlationData: message.correlationData))
        }
        let parsed: NodeCommand
        switch parser.parse(message.payload, timerID: topics.timerID(ofCommandTopic: message.topic)) {
        case .success(let command):
            parsed = command
        case .failure(let error):
            logger.notice("rejected a command", metadata: ["topic": "\(printable(message.topic, limit: 200))", "code": "\(error.code.rawValue)", "reason": "\(error.message)"])
            return answer(error.reply(id: parser.requestID(in: message.payload).map(JSONValue.string) ?? .null))
        }
        let requestID: JSONValue = parsed.requestID.map(JSONValue.string) ?? .null
        // The optional rate limit: refused before anything else, nothing written or recorded
        // (a retry with the same id is a new command).
        if rateLimiter != nil, let wait = rateLimiter?.take(key: message.responseTopic ?? message.topic, now: now) {
            logger.debug("command rate limited", metadata: ["topic": "\(printable(message.topic, limit: 200))", "retry_in_ms": "\(wait)"])
            return answer(rateLimitError(retryInMs: wait).reply(id: requestID))
        }
        // A repeat of a request id within the window gets the first reply and changes nothing.
        if let id = parsed.requestID, let first = ledger.reply(for: id, now: now) {
            logger.debug("duplicate request answered from the ledger", metadata: ["id": "\(id)"])
            return answer(first)
        }
        return .admitted(parsed, replyTopic: replyTopic, correlation: message.correlationData)
    }

    /// Keeps a carried-out command's reply for its request id (when it is one that is kept);
    /// returns the record to write, nil when none is kept.
    mutating func record(_ command: NodeCommand, reply bytes: [UInt8], now: Millis) -> RequestRecord? {
        guard let id = command.requestID, Self.isRecordable(command.request) else { return nil }
        // Copied out of the writer's buffer: the ledger keeps it at its size, not its capacity.
        ledger.record(id: id, encodedReply: Array(bytes[...]), now: now)
        return RequestRecord(id: id, reply: bytes, atMs: now)
    }

    /// A rolled-back command's request id: a retry is a new command.
    mutating func forget(_ id: String) { ledger.forget(id: id) }

    /// A restart: the request ids answered within the window, as the store kept them.
    mutating func restore(_ requests: [RequestRecord]) {
        // Replies are kept as their JSON bytes and decoded only when a repeat asks for one.
        ledger.decoder = { JSONCoding.decode($0) }
        for request in requests { ledger.record(id: request.id, encodedReply: request.reply, now: request.atMs) }
    }

    /// A wall-clock step: a retried request id stays a duplicate.
    mutating func shiftTimes(by delta: Millis) { ledger.shiftTimes(by: delta) }

    /// Answers a clock request from the `time` topic (read-only displays may publish there):
    /// the `time` command's reply, nothing changed, nothing written, no dedup. The reply goes
    /// to the MQTT 5 response topic only when it lies under `<base>/reply`, so a client that
    /// may only read cannot make the node publish anywhere else.
    func timeRequest(_ message: InboundMessage, now: Millis) -> EngineOutput.Reply {
        var replyTopic = topics.reply
        var body: JSONValue
        switch parser.parseTimeRequest(message.payload, topic: topics.time) {
        case .success(let id):
            body = .object(Reply.timeMembers(now: now).merging(["id": .optional(id), "ok": .bool(true)]) { $1 })
        case .failure(let error):
            body = error.reply(id: parser.requestID(in: message.payload).map(JSONValue.string) ?? .null)
        }
        if let asked = message.responseTopic {
            if topics.isReplyTopic(asked) && Self.isValidPublishTopic(asked) {
                replyTopic = asked
            } else {
                body = ReplyError(.invalidArgument,
                    "a clock request's response topic must be \(topics.reply) or lie under it (e.g. \(topics.reply)/wall-1), got '\(asked.prefix(100))'")
                    .reply(id: body["id"] ?? .null)
            }
        }
        if case .object(let o) = body, o["ok"] == .bool(false) {
            logger.notice("rejected a clock request", metadata: ["reason": "\(body)"])
        }
        return .init(topic: replyTopic, body: body, correlationData: message.correlationData)
    }

    /// Read-only requests are not kept for dedup (answering them again is harmless and current).
    static func isRecordable(_ request: NodeCommand.Request) -> Bool {
        switch request {
        case .list, .time, .history, .listSchedules: false
        case .timer, .create, .delete, .saveWorkout, .deleteWorkout, .setAthlete, .clearAthlete, .sound, .saveDisplay, .deleteDisplay, .saveSchedule, .deleteSchedule, .skipNext: true
        }
    }

    /// A topic we may publish a reply to: no wildcards, not empty, not `$`-reserved.
    static func isValidPublishTopic(_ topic: String) -> Bool {
        !topic.isEmpty && !topic.contains("+") && !topic.contains("#") && !topic.hasPrefix("$") && topic.utf8.count < 65_536
    }

    /// The `rate_limited` reply's error: the limit and when to retry.
    func rateLimitError(retryInMs: Millis) -> ReplyError {
        let limit = rateLimiter?.limit
        return ReplyError(.rateLimited, "too many commands from this sender (limits.command_rate: \(limit?.perSecond ?? 0)/s, burst \(limit?.burst ?? 0)); nothing changed, retry in \(retryInMs) ms")
    }

    /// The reply to a `history` request, from the records the shell read (or its error).
    static func historyReply(_ records: Result<[EventRecord], StoreError>, id: JSONValue) -> [UInt8] {
        switch records {
        case .success(let records):
            return CommandResult(members: [WireField.events.rawValue: .array(records.map { JSONCoding.decode($0.payload) ?? .null })]).replyBytes(id: id)
        case .failure(let error):
            return JSONCoding.encode(ReplyError(.storageFailure, "could not read the history: \(error)").reply(id: id))
        }
    }
}

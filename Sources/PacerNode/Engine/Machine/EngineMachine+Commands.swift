import Foundation
import Logging
import PacerCore
import PacerStore
import PacerProtocol

extension EngineMachine {
    /// Handles one message from a `cmd` topic: parse, dedup, apply, reply (exactly one reply).
    mutating func command(_ message: InboundMessage, now: Millis, into output: inout EngineOutput) {
        let topicTimer = topics.timerID(ofCommandTopic: message.topic)
        // MQTT 5 request/response: reply on the request's response topic with its correlation data.
        let replyTopic = message.responseTopic.flatMap { Self.isValidPublishTopic($0) ? $0 : nil } ?? topics.reply
        func reply(_ body: JSONValue) {
            output.replies.append(.init(topic: replyTopic, body: body, correlationData: message.correlationData))
        }

        let parsed: NodeCommand
        switch parser.parse(message.payload, timerID: topicTimer) {
        case .success(let command):
            parsed = command
        case .failure(let error):
            logger.notice("rejected a command", metadata: ["topic": "\(printable(message.topic, limit: 200))", "code": "\(error.code.rawValue)", "reason": "\(error.message)"])
            let id = parser.requestID(in: message.payload).map(JSONValue.string) ?? .null
            reply(error.reply(id: id))
            return
        }
        let requestID: JSONValue = parsed.requestID.map(JSONValue.string) ?? .null

        // The optional rate limit: refused before anything else, nothing written or recorded
        // (a retry with the same id is a new command).
        if rateLimiter != nil, let wait = rateLimiter?.take(key: message.responseTopic ?? message.topic, now: now) {
            logger.debug("command rate limited", metadata: ["topic": "\(printable(message.topic, limit: 200))", "retry_in_ms": "\(wait)"])
            reply(rateLimitError(retryInMs: wait).reply(id: requestID))
            return
        }

        // A repeat of a request id within the window gets the first reply and changes nothing.
        if let id = parsed.requestID, let first = ledger.reply(for: id, now: now) {
            logger.debug("duplicate request answered from the ledger", metadata: ["id": "\(id)"])
            reply(first)
            return
        }

        // A history read is the shell's (the machine does no I/O): the reply is made from what
        // it reads (`historyReply`). Not recorded: answering it again is harmless and current.
        if hasStore, case .history(let timer, let since, let limit) = parsed.request {
            output.replies.append(.init(topic: replyTopic, id: requestID, payload: [], correlationData: message.correlationData,
                                        history: HistoryQuery(timer: timer, sinceMs: since, limit: limit)))
            return
        }
        output.rollback = (timers: parsed.timerID.map { [$0: timers[$0]] } ?? [:], requestID: nil)
        // Written once, here (before the store write, not between it and the publishes): the
        // ledger, the store and the reply itself share the bytes.
        let bytes: [UInt8]
        switch execute(parsed, now: now, into: &output) {
        case .success(let result):
            bytes = result.replyBytes(id: requestID)
        case .failure(let error):
            logger.notice("command refused", metadata: ["timer": "\(parsed.timerID ?? "-")", "code": "\(error.code.rawValue)", "reason": "\(error.message)"])
            bytes = JSONCoding.encode(error.reply(id: requestID))
        }
        if let id = parsed.requestID, Self.isRecordable(parsed.request) {
            // Copied out of the writer's buffer: the ledger keeps it at its size, not its capacity.
            ledger.record(id: id, encodedReply: Array(bytes[...]), now: now)
            output.rollback?.requestID = id
            output.requests.append(RequestRecord(id: id, reply: bytes, atMs: now))
        }
        output.replies.append(.init(topic: replyTopic, id: requestID, payload: bytes, correlationData: message.correlationData))
    }

    /// Answers a clock request from the `time` topic (read-only displays may publish there):
    /// the `time` command's reply, nothing changed, nothing written, no dedup. The reply goes
    /// to the MQTT 5 response topic only when it lies under `<base>/reply`, so a client that
    /// may only read cannot make the node publish anywhere else.
    mutating func timeRequest(_ message: InboundMessage, now: Millis, into output: inout EngineOutput) {
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
        output.replies.append(.init(topic: replyTopic, body: body, correlationData: message.correlationData))
    }


    /// Read-only requests are not kept for dedup (answering them again is harmless and current).
    static func isRecordable(_ request: NodeCommand.Request) -> Bool {
        switch request {
        case .list, .time, .history: false
        case .timer, .create, .delete, .saveWorkout, .deleteWorkout, .setAthlete, .clearAthlete, .sound: true
        }
    }

    private mutating func execute(_ command: NodeCommand, now: Millis, into output: inout EngineOutput) -> Result<CommandResult, ReplyError> {
        switch command.request {
        case .timer(let id, let operation, let specJSON, let name):
            return timerOperation(id: id, operation: operation, specJSON: specJSON, name: name, command: command, now: now, into: &output)
        case .create(let id, let name, let specJSON):
            if timers.contains(id) {
                return .failure(.init(.timerExists, "timer '\(id)' already exists; delete it first, or start it with a new spec"))
            }
            switch parseSpec(specJSON).flatMap({ makeMachine(id: id, name: name ?? id, spec: $0) }) {
            case .failure(let error): return .failure(error)
            case .success(let machine):
                timers.set(id, .init(machine: machine, restore: .resume))
                output.timerChanged(id, events: [])
                output.infoChanged = true
                schedule(id, now: now)
                return .success(timerReply(id, now: now))
            }
        case .delete(let id):
            guard timers.remove(id) else {
                return .failure(unknownTimer(id))
            }
            deadlines.set(.timer(id), at: nil)
            output.deletedTimers.append(id)
            output.infoChanged = true
            var members: [String: JSONValue] = [:]
            members[.timer] = .string(id)
            members[.deleted] = .bool(true)
            return .success(CommandResult(members: members))
        case .list:
            let list: [JSONValue] = timers.ids.map { id in snapshot(of: timers[id]!, now: now).listEntry }
            return .success(CommandResult(members: [WireField.timers.rawValue: .array(list)]))
        case .time:
            return .success(CommandResult(members: Reply.timeMembers(now: now)))
        case .saveWorkout(let id, let name, let spec):
            return saveWorkout(id, name: name, specJSON: spec, into: &output)
        case .deleteWorkout(let id):
            return deleteWorkout(id, into: &output)
        case .setAthlete(let id, let name, let colour, let maxHR):  // EngineMachine+Athletes.swift
            return setAthlete(AthleteProfile(id: id, name: name, colour: colour, maxHR: maxHR), into: &output)
        case .clearAthlete(let id):
            return clearAthlete(id, into: &output)
        case .sound(let muted, let volume):
            return setSpeaker(muted: muted, volume: volume, into: &output)
        case .history:
            // With a store, `command` hands the read to the shell (`EngineEffect.history`).
            return .success(CommandResult(members: [WireField.events.rawValue: .array([])]))
        }
    }

    private mutating func timerOperation(id: String, operation: TimerOperation, specJSON: JSONValue?, name: String?,
                                command: NodeCommand, now: Millis, into output: inout EngineOutput) -> Result<CommandResult, ReplyError> {
        var newSpec: TimerSpec?
        if let specJSON {
            switch parseSpec(specJSON) {
            case .success(let spec): newSpec = spec
            case .failure(let error): return .failure(error)
            }
        }
        var created = false
        if !timers.contains(id) {
            guard case .start = operation, let newSpec else {
                return .failure(unknownTimer(id))
            }
            switch makeMachine(id: id, name: name ?? id, spec: newSpec) {
            case .failure(let error): return .failure(error)
            case .success(let machine):
                timers.set(id, .init(machine: machine, restore: .resume))
                created = true
                output.infoChanged = true
            }
        }
        var entry = timers[id]!
        var operation = operation
        if case .start(_, let startAt, let restart) = operation, let newSpec, !created {
            operation = .start(spec: newSpec, startAt: startAt, restart: restart)
        }
        if let name, name != entry.machine.name {
            entry.machine.rename(name)
            output.infoChanged = true
        }
        let result = entry.machine.handle(TimerCommand(operation: operation, at: command.at, ifRevision: command.ifRevision), now: now)
        switch result {
        case .success(let events):
            timers.set(id, entry)
            output.timerChanged(id, events: events)
            schedule(id, now: now)
            return .success(timerReply(id, now: now))
        case .failure(let error):
            if created { timers.set(id, nil); output.infoChanged = false }
            return .failure(ReplyError(error))
        }
    }

    /// A new timer, within `limits.max_timers`.
    private func makeMachine(id: String, name: String, spec: TimerSpec) -> Result<TimerMachine, ReplyError> {
        guard timers.count < configuration.limits.maxTimers else {
            return .failure(.init(.tooManyTimers, "the node already has \(timers.count) timers (limits.max_timers); delete one first"))
        }
        do {
            return .success(try TimerMachine(id: id, name: name, spec: spec, settings: configuration.timerSettings))
        } catch {
            return .failure(.init(.invalidSpec, error.message))
        }
    }

    private func parseSpec(_ json: JSONValue) -> Result<TimerSpec, ReplyError> {
        do {
            let spec = try TimerSpec(json: json, presets: presets)
            _ = try spec.compile()
            if let source = spec.hrSource, !heartRate.isSource(source) {
                let known = configuration.heartRate.sources.map(\.name)
                return .failure(.init(.invalidSpec, "hr_source '\(source)' is not a configured heart-rate source" + (known.isEmpty ? " (none are configured)" : "; use one of \(known.joined(separator: ", "))")))
            }
            return .success(spec)
        } catch {
            return .failure(.init(.invalidSpec, error.message))
        }
    }

    /// The presets a spec may name: the configuration's, then the saved workouts.
    var presets: [String: JSONValue] {
        workouts.count == 0 ? configuration.presets : configuration.presets.merging(workouts.presets) { configured, _ in configured }
    }

    private mutating func saveWorkout(_ id: String, name: String?, specJSON: JSONValue, into output: inout EngineOutput) -> Result<CommandResult, ReplyError> {
        if Presets.builtIn[id] != nil || configuration.presets[id] != nil {
            return .failure(.init(.invalidArgument, "'\(id)' is a preset \(Presets.builtIn[id] != nil ? "built into Pacer" : "of the node's configuration"); save the workout under another id"))
        }
        if !workouts.contains(id) && workouts.count >= ProtocolLimits.maxWorkouts {
            return .failure(.init(.invalidArgument, "the node keeps at most \(ProtocolLimits.maxWorkouts) saved workouts; delete one first"))
        }
        let spec: TimerSpec
        switch parseSpec(specJSON) {
        case .success(let parsed): spec = parsed
        case .failure(let error): return .failure(error)
        }
        // Kept as the node read it, resolved: a workout made from a preset holds that preset's
        // values (a preset cannot name another one).
        guard case .object(var canonical) = spec.json else { return .failure(.init(.invalidSpec, "spec is not an object")) }
        canonical["preset"] = nil
        if output.workoutsBefore == nil { output.workoutsBefore = workouts }
        workouts.save(id, name: name ?? id, spec: .object(canonical))
        output.workoutsChanged = true
        var members: [String: JSONValue] = [:]
        members[.workout] = .string(id)
        members[.name] = .string(name ?? id)
        members[.saved] = .bool(true)
        members[.spec] = .object(canonical)
        return .success(CommandResult(members: members))
    }

    private mutating func deleteWorkout(_ id: String, into output: inout EngineOutput) -> Result<CommandResult, ReplyError> {
        let before = workouts
        guard workouts.remove(id) else {
            let known = workouts.ids
            return .failure(.init(.unknownWorkout, "there is no saved workout '\(id)'" + (known.isEmpty ? "" : "; saved: \(known.prefix(20).joined(separator: ", "))")))
        }
        if output.workoutsBefore == nil { output.workoutsBefore = before }
        output.workoutsChanged = true
        var members: [String: JSONValue] = [:]
        members[.workout] = .string(id)
        members[.deleted] = .bool(true)
        return .success(CommandResult(members: members))
    }

    /// `sound`: the node's speaker muted, unmuted or set to a volume (written, published on
    /// `<base>/sound`, handed to the sound player); neither given: what it is now.
    private mutating func setSpeaker(muted: Bool?, volume: Int?, into output: inout EngineOutput) -> Result<CommandResult, ReplyError> {
        if muted != nil || volume != nil {
            guard hasSound else {
                return .failure(.init(.invalidState, "this node has no speaker: add sound: {device: default} to its configuration (docs/sound.md); nothing changed"))
            }
            var next = speaker
            if let muted { next.muted = muted }
            if let volume { next.volume = volume }
            if next != speaker {
                if output.speakerBefore == nil { output.speakerBefore = speaker }
                speaker = next
                output.speakerChanged = true
            }
        }
        return .success(CommandResult(members: speaker.members(available: hasSound)))
    }

    private func timerReply(_ id: String, now: Millis) -> CommandResult {
        let snap = snapshot(of: timers[id]!, now: now)
        var members: [String: JSONValue] = [:]
        members[.timer] = .string(id)
        members[.revision] = .int(snap.revision)
        return CommandResult(members: members, state: snap.jsonBytes)
    }

    private func unknownTimer(_ id: String) -> ReplyError {
        .init(.unknownTimer, "there is no timer '\(id)'; create it first, or start it with a spec: {\"action\":\"start\",\"spec\":{\"kind\":\"countdown\",\"duration\":\"5m\"}}")
    }

    /// A topic we may publish a reply to: no wildcards, not empty, not `$`-reserved.
    static func isValidPublishTopic(_ topic: String) -> Bool {
        !topic.isEmpty && !topic.contains("+") && !topic.contains("#") && !topic.hasPrefix("$") && topic.utf8.count < 65_536
    }
}

extension EngineMachine {
    /// The reply to a `history` request, from the records the shell read (or its error).
    static func historyReply(_ records: Result<[EventRecord], StoreError>, id: JSONValue) -> [UInt8] {
        switch records {
        case .success(let records):
            return CommandResult(members: [WireField.events.rawValue: .array(records.map { JSONCoding.decode($0.payload) ?? .null })]).replyBytes(id: id)
        case .failure(let error):
            return JSONCoding.encode(ReplyError(.storageFailure, "could not read the history: \(error)").reply(id: id))
        }
    }

    /// The `rate_limited` reply's error: the limit and when to retry.
    func rateLimitError(retryInMs: Millis) -> ReplyError {
        let limit = configuration.limits.commandRate
        return ReplyError(.rateLimited, "too many commands from this sender (limits.command_rate: \(limit?.perSecond ?? 0)/s, burst \(limit?.burst ?? 0)); nothing changed, retry in \(retryInMs) ms")
    }
}

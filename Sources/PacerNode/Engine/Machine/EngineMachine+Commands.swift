import Foundation
import Logging
import PacerCore
import PacerStore
import PacerProtocol

extension EngineMachine {
    /// Handles one message from a `cmd` topic: admitted by the gate (parse, rate limit, dedup),
    /// carried out, answered (exactly one reply).
    mutating func command(_ message: InboundMessage, now: Millis, into output: inout EngineOutput) {
        let parsed: NodeCommand, replyTopic: String, correlation: [UInt8]?
        switch gate.admit(message, now: now) {
        case .answered(let reply):
            output.replies.append(reply)
            return
        case .admitted(let command, let topic, let data):
            (parsed, replyTopic, correlation) = (command, topic, data)
        }
        let requestID: JSONValue = parsed.requestID.map(JSONValue.string) ?? .null
        // A history read is the shell's (the machine does no I/O): the reply is made from what
        // it reads (`CommandGate.historyReply`). Not recorded: answering it again is harmless and current.
        if link.hasStore, case .history(let timer, let since, let limit) = parsed.request {
            output.replies.append(.init(topic: replyTopic, id: requestID, payload: [], correlationData: correlation,
                                        history: HistoryQuery(timer: timer, sinceMs: since, limit: limit)))
            return
        }
        output.rollback = .init(timers: parsed.timerID.map { [$0: board.timers[$0]] } ?? [:], requestID: nil)
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
        if let record = gate.record(parsed, reply: bytes, now: now) {
            output.rollback?.requestID = record.id
            output.requests.append(record)
        }
        output.replies.append(.init(topic: replyTopic, id: requestID, payload: bytes, correlationData: correlation))
    }

    private mutating func execute(_ command: NodeCommand, now: Millis, into output: inout EngineOutput) -> Result<CommandResult, ReplyError> {
        switch command.request {
        case .timer(let id, let operation, let specJSON, let name):
            return timerOperation(id: id, operation: operation, specJSON: specJSON, name: name, command: command, now: now, into: &output)
        case .create(let id, let name, let specJSON):
            if board.timers.contains(id) {
                return .failure(.init(.timerExists, "timer '\(id)' already exists; delete it first, or start it with a new spec"))
            }
            switch parseSpec(specJSON).flatMap({ makeMachine(id: id, name: name ?? id, spec: $0) }) {
            case .failure(let error): return .failure(error)
            case .success(let machine):
                board.timers.set(id, .init(machine: machine, restore: .resume))
                output.changes.timerChanged(id, events: [])
                output.follow.insert(.infoChanged)
                schedule(id, now: now)
                sound.prepare(machine.program, ack: machine.spec.ack, into: &board.out)
                return .success(timerReply(id, now: now))
            }
        case .delete(let id):
            guard board.timers.remove(id) else {
                return .failure(unknownTimer(id))
            }
            board.deadlines.set(.timer(id), at: nil)
            output.changes.deleted.append(id)
            output.follow.insert(.infoChanged)
            var members: [String: JSONValue] = [:]
            members[.timer] = .string(id)
            members[.deleted] = .bool(true)
            return .success(CommandResult(members: members))
        case .list:
            let list: [JSONValue] = board.timers.ids.map { id in heart.snapshot(of: board.timers[id]!, now: now).listEntry }
            return .success(CommandResult(members: [WireField.timers.rawValue: .array(list)]))
        case .time:
            return .success(CommandResult(members: Reply.timeMembers(now: now)))
        case .saveWorkout(let id, let name, let spec):
            let presets = library.presets, heart = heart, configuration = configuration
            var saved: TimerSpec?
            let result = library.save(id, name: name, specJSON: spec) { json in
                let parsed = Self.parseSpec(json, presets: presets, heart: heart, configuration: configuration)
                saved = try? parsed.get()
                return parsed
            }
            if case .success = result, let saved, let program = try? saved.compile() {
                sound.prepare(program, ack: saved.ack, into: &board.out)
            }
            return result
        case .deleteWorkout(let id):
            return library.delete(id)
        case .setAthlete(let id, let name, let colour, let maxHR, let leaderboard):
            return heart.setAthlete(AthleteProfile(id: id, name: name, colour: colour, maxHR: maxHR, leaderboard: leaderboard))
        case .clearAthlete(let id):
            return heart.clearAthlete(id)
        case .sound(let muted, let volume):
            return sound.set(muted: muted, volume: volume)
        case .saveDisplay(let id, let settings):
            return displays.save(id, settings: settings)
        case .deleteDisplay(let id):
            return displays.delete(id, into: &board.out)
        case .saveSchedule(let schedule):
            return schedules.save(schedule, presets: library.presets, now: now, on: &board)
        case .deleteSchedule(let id):
            return schedules.delete(id, now: now, on: &board)
        case .skipNext(let schedule?, _):
            return schedules.skipNext(schedule, now: now)
        case .skipNext(nil, let timer):
            return schedules.skipNext(onTimer: timer ?? "", now: now)
        case .listSchedules:
            return .success(schedules.list(now: now))
        case .history:
            // With a store, `command` hands the read to the shell (`EngineEffect.history`).
            return .success(CommandResult(members: [WireField.events.rawValue: .array([])]))
        }
    }

    /// The timetable's decisions due now: each class starts on its timer like a `start` command
    /// with the class's workout (undone with the rest if the write fails); skips are logged.
    mutating func startClasses(now: Millis, into output: inout EngineOutput) {
        for decision in schedules.plan(now: now, on: &board) {
            guard case .start = decision.action else { continue }
            var one = EngineOutput()
            one.rollback = .init(timers: [decision.timer: board.timers[decision.timer]], requestID: nil)
            let start = TimerOperation.start(spec: nil, startAt: nil, restart: false)
            let command = NodeCommand(request: .timer(id: decision.timer, operation: start, spec: decision.workout.startSpec, name: decision.name))
            switch timerOperation(id: decision.timer, operation: start, specJSON: decision.workout.startSpec,
                                  name: board.timers.contains(decision.timer) ? nil : decision.name, command: command, now: now, into: &one) {
            case .success:
                // What `current_class` shows of it: its run's start ties it to this run.
                let startedAt = board.timers.read(decision.timer) { $0.machine.snapshot(at: now).startedAtMs } ?? nil
                schedules.classStarted(decision, startedAtMs: startedAt ?? now)
            case .failure(let error):
                logger.error("a scheduled class could not start", metadata: ["schedule": "\(decision.occurrence.schedule)", "timer": "\(decision.timer)",
                                                                             "code": "\(error.code.rawValue)", "reason": "\(error.message)"])
            }
            output.absorb(one)
            output.follow.remove(.onlyTimePassed)  // a timer made or started: Home Assistant's configs are compared
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
        if !board.timers.contains(id) {
            guard case .start = operation, let newSpec else {
                return .failure(unknownTimer(id))
            }
            switch makeMachine(id: id, name: name ?? id, spec: newSpec) {
            case .failure(let error): return .failure(error)
            case .success(let machine):
                board.timers.set(id, .init(machine: machine, restore: .resume))
                created = true
                output.follow.insert(.infoChanged)
            }
        }
        var entry = board.timers[id]!
        var operation = operation
        if case .start(_, let startAt, let restart) = operation, let newSpec, !created {
            operation = .start(spec: newSpec, startAt: startAt, restart: restart)
        }
        if let name, name != entry.machine.name {
            entry.machine.rename(name)
            output.follow.insert(.infoChanged)
        }
        let result = entry.machine.handle(TimerCommand(operation: operation, at: command.at, ifRevision: command.ifRevision), now: now)
        switch result {
        case .success(let events):
            board.timers.set(id, entry)
            output.changes.timerChanged(id, events: events)
            schedule(id, now: now)
            switch operation {
            case .start, .extend(_, _?): sound.prepare(entry.machine.program, ack: entry.machine.spec.ack, into: &board.out)
            default: break
            }
            return .success(timerReply(id, now: now))
        case .failure(let error):
            if created { board.timers.set(id, nil); output.follow.remove(.infoChanged) }
            return .failure(ReplyError(error))
        }
    }

    /// A new timer, within `limits.max_timers`.
    private func makeMachine(id: String, name: String, spec: TimerSpec) -> Result<TimerMachine, ReplyError> {
        guard board.timers.count < configuration.limits.maxTimers else {
            return .failure(.init(.tooManyTimers, "the node already has \(board.timers.count) timers (limits.max_timers); delete one first"))
        }
        do {
            return .success(try TimerMachine(id: id, name: name, spec: spec, settings: configuration.timerSettings))
        } catch {
            return .failure(.init(.invalidSpec, error.message))
        }
    }

    private func parseSpec(_ json: JSONValue) -> Result<TimerSpec, ReplyError> {
        Self.parseSpec(json, presets: library.presets, heart: heart, configuration: configuration)
    }

    /// A spec as a command gives it: resolved against `presets`, compiled, its heart-rate source known.
    static func parseSpec(_ json: JSONValue, presets: [String: JSONValue], heart: HeartRatePart,
                          configuration: NodeConfiguration) -> Result<TimerSpec, ReplyError> {
        do {
            let spec = try TimerSpec(json: json, presets: presets)
            _ = try spec.compile()
            if let source = spec.hrSource, !heart.isSource(source) {
                let known = heart.sourceNames
                return .failure(.init(.invalidSpec, "hr_source '\(source)' is not a configured heart-rate source" + (known.isEmpty ? " (none are configured)" : "; use one of \(known.joined(separator: ", "))")))
            }
            return .success(spec)
        } catch {
            return .failure(.init(.invalidSpec, error.message))
        }
    }

    private func timerReply(_ id: String, now: Millis) -> CommandResult {
        let snap = heart.snapshot(of: board.timers[id]!, now: now)
        var members: [String: JSONValue] = [:]
        members[.timer] = .string(id)
        members[.revision] = .int(snap.revision)
        return CommandResult(members: members, state: snap.jsonBytes)
    }

    private func unknownTimer(_ id: String) -> ReplyError {
        .init(.unknownTimer, "there is no timer '\(id)'; create it first, or start it with a spec: {\"action\":\"start\",\"spec\":{\"kind\":\"countdown\",\"duration\":\"5m\"}}")
    }

}

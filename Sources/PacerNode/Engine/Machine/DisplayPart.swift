import Logging
import PacerCore
import PacerDisplays
import PacerProtocol

/// The AWTRIX 3 clocks and WLED lights the node drives (`displays:`, docs/displays.md): what
/// each shows is PacerDisplays' (`DisplayOutputs`); this part hands it the timers that changed
/// and those whose displays' own instant fell due, publishes what it answers, and keeps one
/// `.display` deadline per shown timer in the machine's one queue.
///
/// Displays come from the configuration (`displays:`) and from commands (`save_display`,
/// `delete_display`): those are kept on the node (one document in `meta`, written before the
/// reply) and listed, retained, on `<base>/displays`.
struct DisplayPart {
    private(set) var outputs: DisplayOutputs
    /// Shown timers whose displays' instant fell due in the input being handled.
    private var due: Set<String> = []
    /// The configuration's displays.
    let configured: [DisplayConfiguration]
    /// The displays saved by command: each one's settings as given (checked), by id.
    private(set) var saved = Staged([String: JSONValue]())
    let topic: String
    let logger: Logger

    /// The `meta` key of the saved displays' document.
    static let metaKey = "displays"

    /// How long an update left out while the broker is backlogged waits to be tried again:
    /// well within the shortest app lifetime's half, so the clock never goes blank meanwhile.
    static let backlogRetryMs: Millis = 250

    init(_ displays: [DisplayConfiguration], topic: String, logger: Logger) {
        configured = displays
        outputs = DisplayOutputs(displays)
        self.topic = topic
        self.logger = logger
    }

    // MARK: - Saved displays (save_display, delete_display)

    /// `save_display`: checked like the configuration's, then kept (replacing one of that id).
    mutating func save(_ id: String, settings: JSONValue) -> Result<CommandResult, ReplyError> {
        if saved.value[id] == nil && saved.value.count >= ProtocolLimits.maxSavedDisplays {
            return .failure(.init(.invalidArgument, "the node keeps at most \(ProtocolLimits.maxSavedDisplays) displays saved by command; delete one first"))
        }
        if case .failure(let error) = NodeConfiguration.display(fromCommand: settings, id: id) { return .failure(error) }
        saved.change { $0[id] = settings }
        rebuild()
        var members: [String: JSONValue] = [:]
        members[.display] = .string(id)
        members[.saved] = .bool(true)
        return .success(CommandResult(members: members))
    }

    /// `delete_display`: forgotten, and what it showed goes blank.
    mutating func delete(_ id: String, into out: inout EffectSink) -> Result<CommandResult, ReplyError> {
        guard let settings = saved.value[id] else {
            let known = saved.value.keys.sorted()
            return .failure(.init(.unknownDisplay, "there is no display '\(id)' saved by command" + (known.isEmpty ? "" : "; saved: \(known.prefix(20).joined(separator: ", "))")
                                  + " (the configuration's are changed in its file)"))
        }
        if case .success(let display) = NodeConfiguration.display(fromCommand: settings, id: id) {
            var gone = DisplayOutputs([display])
            for message in gone.shutdown() { out.publish(to: message.topic, message.payload, retain: message.retain) }
        }
        saved.change { $0[id] = nil }
        rebuild()
        var members: [String: JSONValue] = [:]
        members[.display] = .string(id)
        members[.deleted] = .bool(true)
        return .success(CommandResult(members: members))
    }

    /// The stored document at start (the `meta` row); a display that no longer reads is left
    /// out, said in the log.
    mutating func load(_ document: String?) {
        guard let document, let list = JSONCoding.decode(Array(document.utf8))?[.displays]?.array else { return }
        var kept: [String: JSONValue] = [:]
        for entry in list {
            guard case .object(var members) = entry, let id = members[.display]?.string else { continue }
            members[.display] = nil
            if case .failure(let error) = NodeConfiguration.display(fromCommand: .object(members), id: id) {
                logger.error("a saved display could not be read and is left out", metadata: ["display": "\(id)", "error": "\(error.message)"])
                continue
            }
            kept[id] = .object(members)
        }
        saved.load(kept)
        rebuild()
    }

    /// The saved displays' document (`meta`) and the retained `<base>/displays`:
    /// `{"displays":[{"display":"wall","type":"awtrix",...}],"configured":1}`.
    var document: [UInt8] {
        var o: [String: JSONValue] = [:]
        o[.displays] = .array(saved.value.keys.sorted().map { id in
            var members = saved.value[id]?.object ?? [:]
            members[.display] = .string(id)
            return .object(members)
        })
        o[.configured] = .int(configured.count)
        return JSONValue.object(o).jsonBytes
    }

    /// The write of an input that changed them: the document for `meta`.
    var changedDocument: String? { saved.isChanged ? String(decoding: document, as: UTF8.self) : nil }

    /// After the write: the change stands (every shown timer is sent again, its displays may
    /// have changed) and the list is published, or a failed write puts it back.
    mutating func written(ok: Bool, linkUp: Bool, on board: inout Board) {
        guard saved.isChanged else { return }
        guard ok else {
            saved.undo()
            rebuild()
            return
        }
        saved.settle()
        for id in board.timers.ids where outputs.shows(id) { due.insert(id) }
        if linkUp { publishList(into: &board.out) }
    }

    /// The retained `<base>/displays`.
    func publishList(into out: inout EffectSink) {
        out.publish(to: topic, document, retain: true)
    }

    /// The outputs again from the configuration's displays and the saved ones.
    private mutating func rebuild() {
        let extra = saved.value.keys.sorted().compactMap { id in
            saved.value[id].flatMap { try? NodeConfiguration.display(fromCommand: $0, id: id).get() }
        }
        outputs = DisplayOutputs(configured + extra)
    }

    /// Whether the node drives any display.
    var isEmpty: Bool { outputs.displays.isEmpty }

    /// The `.display` deadline of `id` fell.
    mutating func fell(_ id: String) { due.insert(id) }

    /// After an input's write: removes deleted timers from their displays, and brings the
    /// displays of the changed timers and of those whose instant fell up to date at `now`.
    /// While the broker reads slower than the node publishes, the updates time alone asks for
    /// (a second flip, a paused clock's refresh) are left out and tried again `backlogRetryMs`
    /// later, so a clock's app never lapses blank; a change is always sent. Nothing is queued
    /// while disconnected: a connect sends everything again (`reconnected`).
    mutating func publish(_ changes: TimerChanges, linkUp: Bool, backlogged: Bool, now: Millis, heart: HeartRatePart, on board: inout Board) {
        guard !isEmpty else { return }
        for id in changes.deleted where outputs.shows(id) {
            board.deadlines.set(.display(id), at: nil)
            send(outputs.removed(id), linkUp: linkUp, into: &board.out)
        }
        var ids = changes.timers.filter { outputs.shows($0) }
        let waiting = due.sorted().filter { !ids.contains($0) }
        if backlogged {
            for id in waiting { board.deadlines.set(.display(id), at: now + Self.backlogRetryMs) }
        } else {
            ids += waiting
        }
        due = []
        for id in ids { update(id, events: changes.events.filter { $0.timer == id }, linkUp: linkUp, now: now, heart: heart, on: &board) }
    }

    /// A (re)connect: every shown timer's displays get everything again (an app may have lapsed
    /// meanwhile, a strip rebooted).
    mutating func reconnected(now: Millis, heart: HeartRatePart, on board: inout Board) {
        guard !isEmpty else { return }
        outputs.reconnected()
        due = []
        for id in board.timers.ids where outputs.shows(id) { update(id, events: [], linkUp: true, now: now, heart: heart, on: &board) }
    }

    private mutating func update(_ id: String, events: [TimerEvent], linkUp: Bool, now: Millis, heart: HeartRatePart, on board: inout Board) {
        guard linkUp, let snapshot = board.timers.read(id, { heart.snapshot(of: $0, now: now) }) else {
            board.deadlines.set(.display(id), at: nil)
            return
        }
        send(outputs.update(snapshot, events: events, now: now), linkUp: linkUp, into: &board.out)
        board.deadlines.set(.display(id), at: outputs.nextInstant(for: id))
    }

    private func send(_ messages: [DisplayMessage], linkUp: Bool, into out: inout EffectSink) {
        guard linkUp else { return }
        for message in messages { out.publish(to: message.topic, message.payload, retain: message.retain) }
    }
}

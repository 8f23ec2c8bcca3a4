import PacerCore
import PacerDisplays

/// The AWTRIX 3 clocks and WLED lights the node drives (`displays:`, docs/displays.md): what
/// each shows is PacerDisplays' (`DisplayOutputs`); this part hands it the timers that changed
/// and those whose displays' own instant fell due, publishes what it answers, and keeps one
/// `.display` deadline per shown timer in the machine's one queue.
struct DisplayPart {
    private(set) var outputs: DisplayOutputs
    /// Shown timers whose displays' instant fell due in the input being handled.
    private var due: Set<String> = []

    init(_ displays: [DisplayConfiguration]) {
        outputs = DisplayOutputs(displays)
    }

    /// Whether the node drives any display.
    var isEmpty: Bool { outputs.displays.isEmpty }

    /// The `.display` deadline of `id` fell.
    mutating func fell(_ id: String) { due.insert(id) }

    /// After an input's write: removes deleted timers from their displays, and brings the
    /// displays of the changed timers and of those whose instant fell up to date at `now`.
    /// While the broker reads slower than the node publishes, the updates time alone asks for
    /// (a second flip) are left out; a change is always sent. Nothing is queued while
    /// disconnected: a connect sends everything again (`reconnected`).
    mutating func publish(_ changes: TimerChanges, linkUp: Bool, backlogged: Bool, now: Millis, heart: HeartRatePart, on board: inout Board) {
        guard !isEmpty else { return }
        for id in changes.deleted where outputs.shows(id) {
            board.deadlines.set(.display(id), at: nil)
            send(outputs.removed(id), linkUp: linkUp, into: &board.out)
        }
        var ids = changes.timers.filter { outputs.shows($0) }
        if !backlogged { ids += due.sorted().filter { !ids.contains($0) } }
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

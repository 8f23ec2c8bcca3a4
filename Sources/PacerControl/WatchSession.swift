import Dispatch
import Foundation
public import PacerCore
public import PacerProtocol
#if canImport(Glibc)
import Glibc
#endif

/// `pacer watch`: the full-screen terminal clock of one timer, or a grid of all of them.
///
/// It subscribes to the timers' retained `state`, measures the node's clock offset with
/// `time` commands (again every 5 minutes), and counts locally from `ends_at_ms`: it sleeps
/// until the exact instant the shown second changes, then draws. It redraws on every state,
/// on a resize (SIGWINCH) and on link changes (node `status`, our broker connection).
/// Keys: `space` toggles and `s` skips the shown timer; `1`–`9` show one timer of the grid
/// and `g` (or Esc) goes back to it; `q` quits. The terminal is restored on `q`, SIGINT,
/// SIGTERM and SIGHUP.
///
/// Threading: one loop owns all the state; keys (a Dispatch read source on stdin), signals
/// (Dispatch signal sources), MQTT updates, offset measurements and ticks all arrive as
/// ``Input`` values on one `AsyncStream`.
public final class WatchSession: Sendable {
    enum Input: Sendable {
        case key(UInt8)
        case resize
        case quit
        case update(ControlUpdate)
        case tick(Int)
        case offset(ClockOffset)
        case notice(String)
    }

    let client: ControlClient
    let timer: String?
    let terminal: Terminal
    let color: Bool
    let timeout: Duration
    let bell: Bool

    /// - Parameters:
    ///   - client: a client not yet connected.
    ///   - timer: the timer to show; nil: the only timer, or a grid of all of them.
    ///   - terminal: the terminal to draw on.
    ///   - color: whether to use ANSI colours (`NO_COLOR` turns them off).
    ///   - timeout: how long a command waits for its reply.
    ///   - bell: ring the terminal bell on the cues (3, 2, 1), phase changes, expiry and the
    ///     finish of the shown timers (their `event` topic).
    public init(client: ControlClient, timer: String?, terminal: Terminal, color: Bool, timeout: Duration, bell: Bool = false) {
        self.bell = bell
        self.client = client
        self.timer = timer
        self.terminal = terminal
        self.color = color
        self.timeout = timeout
    }

    /// Runs until `q` or a signal; restores the terminal in every case.
    ///
    /// - Throws: ``ControlError`` when the broker cannot be reached at start.
    public func run() async throws(ControlError) {
        if let timer { try ControlCommand.checkTimerID(timer) }
        try await client.connect()
        let timerLevel = timer ?? "+"
        let shown = client.topics.timer(timerLevel)
        try await client.subscribe([shown.state] + (bell ? [shown.event] : []))

        let (inputs, input) = AsyncStream.makeStream(of: Input.self)
        let sources = installSources(input)
        terminal.enterFullScreen()
        defer {
            terminal.restore()
            for source in sources { source.cancel() }
            for signal in [SIGINT, SIGTERM, SIGHUP, SIGWINCH] { Glibc.signal(signal, SIG_DFL) }
        }

        let forward = Task { [client] in
            for await update in client.updates { input.yield(.update(update)) }
        }
        let offsets = Task { [client, timeout] in
            while !Task.isCancelled {
                do {
                    input.yield(.offset(try await client.measureOffset(samples: 5, timeout: timeout)))
                    try await Task.sleep(for: .seconds(300))
                } catch let error as ControlError {
                    input.yield(.notice("clock offset: \(error.message)"))
                    try? await Task.sleep(for: .seconds(10))
                } catch {
                    return
                }
            }
        }
        defer {
            forward.cancel()
            offsets.cancel()
        }

        var model = WatchModel(focus: timer, pinned: timer != nil)
        var ticker: Task<Void, Never>?
        var generation = 0
        var noticeUntil: Millis = 0
        var notice: String?
        func draw() {
            let size = Terminal.size() ?? TerminalSize(columns: 80, rows: 24)
            let nowMs = model.offset.nodeTime(atLocal: LocalClock.nowMs())
            var lines = model.render(nowMs: nowMs, size: size, color: color)
            if let notice, LocalClock.nowMs() < noticeUntil, !lines.isEmpty {
                lines[lines.count - 1] = WatchScreen.paint(String(notice.prefix(size.columns)), "1;97;41", color: color)
            }
            terminal.draw(lines)
            // Next draw: when the shown second changes, at the latest in a second.
            generation += 1
            let localNow = LocalClock.nowMs()
            var wait: Millis = 1000
            if let flip = model.nextFlip(after: nowMs) { wait = min(wait, max(0, flip - nowMs)) }
            if notice != nil, noticeUntil > localNow { wait = min(wait, noticeUntil - localNow) }
            ticker?.cancel()
            let current = generation
            ticker = Task {
                try? await Task.sleep(until: .now + .milliseconds(wait), tolerance: .milliseconds(1), clock: .continuous)
                if !Task.isCancelled { input.yield(.tick(current)) }
            }
        }
        draw()
        loop: for await event in inputs {
            switch event {
            case .quit:
                break loop
            case .key(let key):
                switch model.key(key) {
                case .quit: break loop
                case .none: break
                case .redraw: break
                case .send(let action, let id):
                    let at = model.offsetKnown ? model.offset.nodeTime(atLocal: LocalClock.nowMs()) : nil
                    Task { [client, timeout] in
                        do {
                            _ = try await client.send(try ControlCommand.simple(.action(action), timer: id), at: at, timeout: timeout)
                        } catch {
                            input.yield(.notice("\(action) \(id): \(error)"))
                        }
                    }
                }
            case .resize:
                break
            case .update(let update):
                if bell, model.rings(update, base: client.baseTopic, nowMs: model.offset.nodeTime(atLocal: LocalClock.nowMs())) {
                    terminal.bell()
                }
                model.apply(update, base: client.baseTopic)
            case .tick(let g):
                if g != generation { continue }
            case .offset(let offset):
                model.offset = offset
                model.offsetKnown = true
            case .notice(let text):
                notice = text
                noticeUntil = LocalClock.nowMs() + 4000
            }
            draw()
        }
        ticker?.cancel()
        input.finish()
        await client.disconnect()
    }

    /// Keys from stdin and the signals, as inputs.
    private func installSources(_ input: AsyncStream<Input>.Continuation) -> [any DispatchSourceProtocol] {
        let queue = DispatchQueue(label: "pacer.watch.input")
        var sources: [any DispatchSourceProtocol] = []
        let keys = DispatchSource.makeReadSource(fileDescriptor: 0, queue: queue)
        keys.setEventHandler {
            var buffer = [UInt8](repeating: 0, count: 64)
            let count = buffer.withUnsafeMutableBytes { Glibc.read(0, $0.baseAddress, $0.count) }
            if count <= 0 {
                if count == 0 { input.yield(.quit) }  // stdin closed
                return
            }
            for byte in buffer.prefix(count) { input.yield(.key(byte)) }
        }
        keys.resume()
        sources.append(keys)
        for (signal, value) in [(SIGINT, Input.quit), (SIGTERM, .quit), (SIGHUP, .quit), (SIGWINCH, .resize)] {
            Glibc.signal(signal, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signal, queue: queue)
            source.setEventHandler { input.yield(value) }
            source.resume()
            sources.append(source)
        }
        return sources
    }
}

/// The state of the terminal clock: the timers heard, which one is shown, the link and the
/// clock offset; and what a key does. Pure, so it is unit-tested without a terminal.
public struct WatchModel: Sendable {
    /// The timers by id, from their retained `state`.
    public var timers: [String: TimerState] = [:]
    /// The timer shown full screen; nil: the grid (or the only timer).
    public var focus: String?
    /// Whether the focus was given on the command line (then there is no grid to go back to).
    public var pinned: Bool
    public var nodeStatus: String?
    public var brokerConnected = true
    public var offset = ClockOffset.zero
    public var offsetKnown = false

    public init(focus: String?, pinned: Bool) {
        self.focus = focus
        self.pinned = pinned
    }

    /// What a key asks for.
    public enum KeyAction: Sendable, Equatable {
        case none, redraw, quit
        /// Send `action` (`toggle`, `skip`) to timer `id`.
        case send(action: TimerAction, timer: String)
    }

    /// The timer shown full screen: the focused one, or the only one when nothing is focused.
    public var shown: String? {
        if let focus { return focus }
        return timers.count == 1 ? timers.keys.first : nil
    }

    /// The timers of the grid, in id order.
    public var ordered: [TimerState] { timers.keys.sorted().map { timers[$0]! } }

    public var link: WatchLink {
        if !brokerConnected { return .brokerLost }
        switch nodeStatus.flatMap(NodeStatus.init(rawValue:)) {
        case .online?: return .online
        case .offline?: return .nodeOffline
        case nil: return .connecting
        }
    }

    /// Applies an update: a state (an empty one removes a deleted timer), the node's status,
    /// a connection change.
    public mutating func apply(_ update: ControlUpdate, base: String) {
        switch update {
        case .message(let topic, let payload, _):
            let topics = Topics(base: base)
            if topic == topics.status {
                nodeStatus = String(decoding: payload, as: UTF8.self)
                return
            }
            guard let id = topics.timerID(ofStateTopic: topic), !id.isEmpty else { return }
            if payload.isEmpty {
                timers[id] = nil
                return
            }
            if let json = try? JSONValue.parse(payload), let timer = TimerState(state: json) {
                // A retained state that arrives late must not replace a newer one.
                if let known = timers[id], known.revision > timer.revision { return }
                timers[id] = timer
            }
        case .connection(let event):
            switch event {
            case .connected: brokerConnected = true
            case .disconnected, .refused, .loopExited: brokerConnected = false
            }
        }
    }

    /// Whether `update` is an event of a shown timer that rings the bell: a `countdown` cue,
    /// a `phase` change, `expired`, `alert` or `finished`, due within 2 s of `nowMs` (a late
    /// or replayed event stays silent). Any other event, including a type this version does not
    /// know, is silent.
    public func rings(_ update: ControlUpdate, base: String, nowMs: Millis) -> Bool {
        guard case .message(let topic, let payload, _) = update else { return false }
        guard let id = Topics(base: base).timerID(ofEventTopic: topic), !id.isEmpty else { return false }
        if let shown, shown != id { return false }
        guard let json = try? JSONValue.parse(payload), let event = TimerEvent(event: json) else { return false }
        switch event.type {
        case .countdown, .phase, .expired, .alert, .finished:
            return abs(nowMs - event.dueMs) <= 2000
        default:
            return false
        }
    }

    /// What `key` (a byte from the terminal) does.
    public mutating func key(_ key: UInt8) -> KeyAction {
        switch key {
        case UInt8(ascii: "q"), UInt8(ascii: "Q"), 3, 4:  // q, Ctrl-C, Ctrl-D
            return .quit
        case UInt8(ascii: " "):
            return shown.map { .send(action: .toggle, timer: $0) } ?? .none
        case UInt8(ascii: "s"), UInt8(ascii: "S"):
            return shown.map { .send(action: .skip, timer: $0) } ?? .none
        case UInt8(ascii: "1")...UInt8(ascii: "9"):
            guard !pinned, focus == nil else { return .none }
            let index = Int(key - UInt8(ascii: "1"))
            let ordered = self.ordered
            guard index < ordered.count else { return .none }
            focus = ordered[index].id
            return .redraw
        case UInt8(ascii: "g"), 27:
            guard !pinned, focus != nil else { return .none }
            focus = nil
            return .redraw
        default:
            return .none
        }
    }

    /// The screen at node time `nowMs`.
    public func render(nowMs: Millis, size: TerminalSize, color: Bool) -> [String] {
        if let shown {
            return WatchScreen.render(timer: timers[shown], waitingFor: shown, nowMs: nowMs, link: link, size: size, color: color,
                                      backToGrid: !pinned && focus != nil)
        }
        return WatchScreen.renderGrid(timers: ordered, nowMs: nowMs, link: link, size: size, color: color)
    }

    /// When the screen changes next by itself (node time), nil: not by itself.
    public func nextFlip(after nowMs: Millis) -> Millis? {
        let visible = shown.map { id in timers[id].map { [$0] } ?? [] } ?? Array(timers.values)
        var flips = visible.compactMap { $0.nextFlip(after: nowMs) }
        // An expired timer flashes every half second.
        if visible.contains(where: { $0.phase == .expired }) { flips.append((nowMs / 500 + 1) * 500) }
        return flips.min()
    }
}

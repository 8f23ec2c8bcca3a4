import PacerCore
import PacerProtocol
import PacerSound

/// Where a timer's cue announcements stand: the revision they were scheduled for and the
/// due instant of the last cue announced.
struct CueAheadMark: Equatable {
    var revision: Int
    var announcedThrough: Millis
}

/// The cue-ahead signal (`publish.cue_ahead`, docs/sound.md "Music"): each cue the timers will
/// sound is announced on `<base>/cue_ahead` that long before its due instant, so another player (a
/// Home Assistant media player, a jukebox) can lower its music before the beep rather than after
/// it. The instants come from the timing model: a copy of the timer's machine is advanced to its
/// next event (`TimerMachine.nextEventDue`, `eventsDue`), nothing else.
///
/// The node's own music ducking (`sound.music`, PacerSound's MusicDucker) is told of each cue
/// the same way (`EngineEffect.expectCue`), so it lowers the music its full `lead` ahead of every
/// cue, not only of those a countdown cue foretells.
///
/// A command that moves a timer (pause, adjust, skip) schedules its announcements again; a
/// cue announced before a pause does not sound then (a duck for nothing, documented).
extension EngineMachine {
    /// How long before each cue the machine looks at it: the longer of `publish.cue_ahead` and
    /// the music's lead with 100 ms to spare (the ducker takes it from there); nil: neither.
    var cueAheadLeadMs: Millis? {
        let music = configuration.sound?.music.map { Millis($0.leadMs) + 100 }
        switch (configuration.cueAheadMs, music) {
        case (nil, nil): return nil
        case (let a?, let b?): return max(a, b)
        case (let a?, nil): return a
        case (nil, let b?): return b
        }
    }

    /// How many event instants without a sound are skipped looking for the next cue (a
    /// halfway cue, say); beyond them the search goes on at the last one's deadline.
    static let cueAheadSearchSteps = 16

    /// Sets the timer's `.cueAhead` deadline `lead` before its next sounding event, when the
    /// timer changed since it was last set (not at every displayed second).
    /// - Parameter keepingAnnounced: the change was time's own (a transition): the cues
    ///   announced are still due where they were, and are not announced again. After a command
    ///   the search starts from now (what was announced may have moved).
    mutating func scheduleCueAhead(_ id: String, now: Millis, force: Bool = false, keepingAnnounced: Bool = false) {
        guard let lead = cueAheadLeadMs else { return }
        guard let revision = timers.read(id, { $0.machine.revision }) else {
            cueAhead[id] = nil
            deadlines.set(.cueAhead(id), at: nil)
            return
        }
        if !force, let mark = cueAhead[id], mark.revision == revision { return }
        let kept = force || keepingAnnounced ? cueAhead[id]?.announcedThrough : nil
        var mark = CueAheadMark(revision: revision, announcedThrough: kept ?? now)
        let next = nextSounding(id, after: max(now, mark.announcedThrough))
        mark.announcedThrough = max(mark.announcedThrough, now)
        cueAhead[id] = mark
        // A search that ran out of steps goes on at the last instant it reached (no lead).
        deadlines.set(.cueAhead(id), at: next.map { max(now, $0.cues.isEmpty ? $0.due : $0.due - lead) })
    }

    /// The `.cueAhead` deadline: announces the cues due up to `now + lead`, then sets the next.
    mutating func announceCues(_ id: String, now: Millis) {
        guard let lead = cueAheadLeadMs, var mark = cueAhead[id] else { return }
        var from = max(mark.announcedThrough, now - 1)
        while let next = nextSounding(id, after: from), next.due <= now + lead {
            for (event, cue) in next.cues {
                if configuration.sound?.music != nil { emit(.expectCue(dueMs: event.dueMs, cue: cue)) }
                guard configuration.cueAheadMs != nil, linkUp else { continue }
                var body: [String: JSONValue] = ["duration_ms": .int(cue.durationMs), "lead_ms": .int(event.dueMs - now)]
                body[.timer] = .string(id)
                body[.cue] = .string(cue.rawValue)
                body[.dueMs] = .int(event.dueMs)
                publish(to: topics.cueAhead, JSONValue.object(body).jsonBytes, retain: false)
            }
            from = next.due
        }
        mark.announcedThrough = max(from, mark.announcedThrough)
        cueAhead[id] = mark
        scheduleCueAhead(id, now: now, force: true)
    }

    /// The timer's next instant after `after` with events that sound (`SoundCue`), and those
    /// cues; after `cueAheadSearchSteps` instants without one, the last of them with no cues
    /// (the search goes on from there at that deadline).
    private func nextSounding(_ id: String, after: Millis) -> (due: Millis, cues: [(TimerEvent, SoundCue)])? {
        timers.read(id) { entry -> (due: Millis, cues: [(TimerEvent, SoundCue)])? in
            var at = after
            for _ in 0..<Self.cueAheadSearchSteps {
                guard let due = entry.machine.nextEventDue(after: at) else { return nil }
                let cues = entry.machine.eventsDue(at: due).compactMap { event in SoundCue.cue(for: event).map { (event, $0) } }
                if !cues.isEmpty { return (due, cues) }
                at = due
            }
            return at > after ? (at, []) : nil
        } ?? nil
    }
}

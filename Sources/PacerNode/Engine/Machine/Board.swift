import PacerCore

/// What every part of the machine reads and writes: the timers, the one deadline queue and
/// the effects decided so far. The parts (BrokerLink, HeartRatePart, SoundPart, ...) own their
/// own state and are handed the board for the input being handled.
struct Board {
    /// Every timer, with what the store and the broker last got of it (TimerTable.swift).
    var timers = TimerTable()
    /// One deadline per timer, heart-rate source, athlete, outbox window and marks
    /// (Scheduling/DeadlineQueue.swift): the machine's only notion of "later".
    var deadlines = DeadlineQueue()
    /// The effects decided so far, in order.
    var out = EffectSink()
}

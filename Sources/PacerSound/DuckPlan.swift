/// When the music is ducked: the pure part of the music ducker (MusicDucker.swift).
///
/// Each cue asks for the music to be down from `lead` before it sounds until `hold` after it
/// ends: a *window* on the monotonic clock (nanoseconds). Windows that overlap or touch are
/// merged into one, so a group of close cues is one duck, restored once after the last.
/// `next(nowNs:ducked:)` tells the shell what to do now; time is a parameter, so the plan is
/// tested without a clock or a server.
struct DuckPlan: Sendable {
    struct Window: Sendable, Equatable {
        var startNs: Int64
        var endNs: Int64
    }

    /// Merged windows, in order, none overlapping or touching.
    private(set) var windows: [Window] = []

    /// Asks for the music down over [`startNs`, `endNs`) (a cue's window, lead and hold included).
    mutating func add(startNs: Int64, endNs: Int64) {
        guard endNs > startNs else { return }
        var merged = Window(startNs: startNs, endNs: endNs)
        var kept: [Window] = []
        kept.reserveCapacity(windows.count + 1)
        for window in windows {
            if window.endNs < merged.startNs || window.startNs > merged.endNs {
                kept.append(window)
            } else {
                merged = Window(startNs: min(window.startNs, merged.startNs), endNs: max(window.endNs, merged.endNs))
            }
        }
        let index = kept.firstIndex { $0.startNs > merged.startNs } ?? kept.count
        kept.insert(merged, at: index)
        windows = kept
    }

    enum Next: Equatable {
        /// Nothing asked for: sleep until woken by a new window.
        case idle
        /// Sleep until `untilNs` (or a new window).
        case wait(untilNs: Int64)
        /// Lower the music now; it stays down until `untilNs` at least.
        case duck(untilNs: Int64)
        /// Keep it down until `untilNs` (the current window's end; it may still grow).
        case hold(untilNs: Int64)
        /// Bring the music back now.
        case restore
    }

    /// What to do at `nowNs`, given whether the music is down right now.
    mutating func next(nowNs: Int64, ducked: Bool) -> Next {
        if ducked {
            // The current window is the first one (it started at or before now).
            guard let first = windows.first, first.startNs <= nowNs else { return .restore }
            if first.endNs > nowNs { return .hold(untilNs: first.endNs) }
            windows.removeFirst()
            return .restore
        }
        // Windows that ended before the music could go down are missed: dropped.
        windows.removeAll { $0.endNs <= nowNs }
        guard let first = windows.first else { return .idle }
        if first.startNs <= nowNs { return .duck(untilNs: first.endNs) }
        return .wait(untilNs: first.startNs)
    }
}

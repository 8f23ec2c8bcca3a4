// Validation and compilation of specs into programs.

extension TimerSpec {
    /// At most this many segments in a program.
    public static let maxSegments = 10_000
    public static let maxRounds = 1000
    public static let maxSets = 100
    public static let maxExercises = 100

    /// Checks every limit without keeping the program.
    public func validate() throws(SpecError) {
        _ = try compile()
    }

    /// Validates this spec and compiles it into its program.
    ///
    /// Interval rules: optional `prepare` first; then for each set, each round runs every
    /// station (`exercises`, or one unnamed station) as work then rest; the rest after the
    /// last work of each set except the last is replaced by `set_rest` (when above 0 s);
    /// no rest after the very last work unless `skip_last_rest` is false; optional
    /// `cooldown` last. Segments of 0 s are dropped.
    /// - Throws: `SpecError` naming the field, the limit and the bad value.
    public func compile() throws(SpecError) -> Program {
        try validateCommon()
        switch kind {
        case .interval: return try compileInterval()
        case .rest:
            let segment: Segment
            if let rule = restUntilHR {
                if durationMs != nil { throw Self.bothError("duration") }
                try rule.validate(field: "duration.\(RecoveryRule.key)")
                segment = Segment(kind: .rest, durationMs: nil, label: exercise, untilHR: rule)
            } else {
                let duration = durationMs ?? 90_000
                try checkDuration("duration", duration, minimum: 1000)
                segment = Segment(kind: .rest, durationMs: duration, label: exercise)
            }
            try checkLabel("exercise", exercise)
            try checkLabel("next", next)
            return Program(segments: [segment], rounds: 1, sets: 1, finalNextLabel: next)
        case .countdown:
            guard let duration = durationMs else {
                throw SpecError(field: "duration", message: "duration is required for a countdown timer (like \"10m\" or \"00:10:00\")")
            }
            try checkDuration("duration", duration, minimum: 1000)
            try checkLabel("label", label)
            return Program(segments: [Segment(kind: .countdown, durationMs: duration, label: label)], rounds: 1, sets: 1)
        case .stopwatch:
            if let targetMs { try checkDuration("target", targetMs, minimum: 1000) }
            try checkLabel("label", label)
            if ack {
                throw SpecError(field: "ack", message: "ack does not apply to a stopwatch: it never expires")
            }
            return Program(segments: [Segment(kind: .session, durationMs: targetMs, label: label)], rounds: 1, sets: 1, countsUp: true)
        case .program:
            return try compileProgram()
        }
    }

    /// A duration given both as a time and as a recovery rule (only possible in code).
    private static func bothError(_ field: String) -> SpecError {
        SpecError(field: field, message: "\(field) takes a duration or {\"until_hr\": {...}}, not both")
    }

    private func validateCommon() throws(SpecError) {
        if restUntilHR != nil && kind != .interval && kind != .rest {
            throw SpecError(field: "until_hr", message: "until_hr applies to the rests of an interval or rest timer, and to rest segments of a program")
        }
        if let hrSource { try TextRules.check(hrSource, field: "hr_source", allowEmpty: false) }
        if let alertIntervalMs { try TimerSettings.validateAlertInterval(alertIntervalMs, field: "alert_interval") }
        if let autoDismissMs { try TimerSettings.validateAutoDismiss(autoDismissMs, field: "auto_dismiss") }
        if let cues { try TimerSettings.validateCues(cues, field: "cues") }
        if let preset { try TextRules.check(preset, field: "preset", allowEmpty: false) }
    }

    private func checkDuration(_ field: String, _ value: Millis, minimum: Millis) throws(SpecError) {
        if value < minimum || value > Durations.maxMs {
            throw .durationRange(field, value, minimum...Durations.maxMs)
        }
    }

    private func checkCount(_ field: String, _ value: Int, _ range: ClosedRange<Int>) throws(SpecError) {
        if !range.contains(value) { throw .countRange(field, value, range) }
    }

    private func checkLabel(_ field: String, _ value: String?) throws(SpecError) {
        if let value { try TextRules.check(value, field: field) }
    }

    private func compileInterval() throws(SpecError) -> Program {
        guard let work = workMs else {
            throw SpecError(field: "work", message: "work is required for an interval timer (like \"40s\")")
        }
        try checkDuration("work", work, minimum: 1000)
        let rest: Millis
        if let rule = restUntilHR {
            if restMs != nil { throw Self.bothError("rest") }
            try rule.validate(field: "rest.\(RecoveryRule.key)")
            rest = rule.maxMs
        } else {
            rest = restMs ?? 0
            try checkDuration("rest", rest, minimum: 0)
        }
        let prepare = prepareMs ?? 0
        try checkDuration("prepare", prepare, minimum: 0)
        let setRest = setRestMs ?? 0
        try checkDuration("set_rest", setRest, minimum: 0)
        let cooldown = cooldownMs ?? 0
        try checkDuration("cooldown", cooldown, minimum: 0)
        let rounds = self.rounds ?? 1
        try checkCount("rounds", rounds, 1...TimerSpec.maxRounds)
        let sets = self.sets ?? 1
        try checkCount("sets", sets, 1...TimerSpec.maxSets)
        let stations: [String?]
        if let exercises, !exercises.isEmpty {
            if exercises.count > TimerSpec.maxExercises {
                throw SpecError(field: "exercises", message: "exercises must have at most \(TimerSpec.maxExercises) entries, got \(exercises.count)")
            }
            for (index, name) in exercises.enumerated() {
                try TextRules.check(name, field: "exercises[\(index)]", allowEmpty: false)
            }
            stations = exercises
        } else {
            stations = [nil]
        }

        // Count first, so an absurd spec fails before allocating anything.
        let works = stations.count * rounds * sets
        let normalRestSlots = works - sets + (skipLastRest ? 0 : 1)
        let setBoundaries = sets - 1
        var count = works + (prepare > 0 ? 1 : 0) + (cooldown > 0 ? 1 : 0)
        if rest > 0 { count += normalRestSlots }
        if setRest > 0 || rest > 0 { count += setBoundaries }
        if count > TimerSpec.maxSegments {
            throw SpecError(
                field: "rounds",
                message: "the program would have \(grouped(count)) segments; at most \(grouped(TimerSpec.maxSegments)) are allowed (lower rounds, sets or exercises)"
            )
        }

        var segments: [Segment] = []
        segments.reserveCapacity(count)
        if prepare > 0 { segments.append(Segment(kind: .prepare, durationMs: prepare, round: 1, set: 1)) }
        for set in 1...sets {
            for round in 1...rounds {
                for (station, name) in stations.enumerated() {
                    segments.append(Segment(kind: .work, durationMs: work, label: name, round: round, set: set))
                    let lastOfSet = round == rounds && station == stations.count - 1
                    let lastOfAll = lastOfSet && set == sets
                    if lastOfAll {
                        if !skipLastRest && rest > 0 {
                            segments.append(Segment(kind: .rest, durationMs: rest, round: round, set: set, untilHR: restUntilHR))
                        }
                    } else if lastOfSet && setRest > 0 {
                        segments.append(Segment(kind: .setRest, durationMs: setRest, round: round, set: set))
                    } else if rest > 0 {
                        segments.append(Segment(kind: .rest, durationMs: rest, round: round, set: set, untilHR: restUntilHR))
                    }
                }
            }
        }
        if cooldown > 0 { segments.append(Segment(kind: .cooldown, durationMs: cooldown, round: rounds, set: sets)) }
        return Program(segments: segments, rounds: rounds, sets: sets)
    }

    private func compileProgram() throws(SpecError) -> Program {
        guard let segments, !segments.isEmpty else {
            throw SpecError(field: "segments", message: "segments is required for a program timer: a list like [{\"kind\":\"work\",\"duration\":\"40s\"}]")
        }
        if segments.count > TimerSpec.maxSegments {
            throw SpecError(field: "segments", message: "segments must have at most \(grouped(TimerSpec.maxSegments)) entries, got \(grouped(segments.count))")
        }
        var kept: [Segment] = []
        kept.reserveCapacity(segments.count)
        for (index, segment) in segments.enumerated() {
            let field = "segments[\(index)]"
            if let rule = segment.untilHR {
                let ruleField = "\(field).duration.\(RecoveryRule.key)"
                guard segment.kind == .rest else {
                    throw SpecError(field: ruleField, message: "\(ruleField): only a rest segment can end on recovery; give this \(segment.kind.rawValue) segment a duration like \"30s\"")
                }
                try rule.validate(field: ruleField)
                if segment.durationMs != rule.maxMs { throw Self.bothError("\(field).duration") }
            }
            if let duration = segment.durationMs {
                try checkDuration("\(field).duration", duration, minimum: segment.kind.minimumMs)
            }
            try checkCount("\(field).round", segment.round, 1...TimerSpec.maxRounds)
            try checkCount("\(field).set", segment.set, 1...TimerSpec.maxSets)
            try checkLabel("\(field).label", segment.label)
            if segment.durationMs != 0 { kept.append(segment) }
        }
        if kept.isEmpty {
            throw SpecError(field: "segments", message: "segments must contain at least one segment longer than 0 s")
        }
        return Program(segments: kept)
    }
}

// libFuzzer target: a heart-rate payload as the node receives it (HeartRateMonitor of
// PacerNode, compiled in from Sources/PacerNode/HeartRate by scripts/fuzz with the settings
// types it reads, extracted from Sources/PacerNode/Configuration): a plain-number source and
// JSON sources with one-level and dotted field paths. The first byte picks the source and the
// arrival instant; every accepted reading is checked against the monitor's own promises.
import Foundation
import PacerCore

/// Found by this target and fixed: a finite reading outside Int's range
/// (`444444444444444444444`, `1e20`) trapped in `HeartRateMonitor.receive`, which converted it
/// before checking its range (Fuzz/crashes/heartrate/ keeps those inputs).
nonisolated(unsafe) private var monitor = HeartRateMonitor(settings: HeartRateSettings(
    sources: [
        HeartRateSource(name: "plain", topic: "hr/plain", field: nil),
        HeartRateSource(name: "flat", topic: "hr/flat", field: ["bpm"]),
        HeartRateSource(name: "deep", topic: "hr/deep", field: ["heart_rate", "bpm"]),
    ],
    staleAfterMs: 10_000, maxHR: 190))
nonisolated(unsafe) private var now: Millis = 0

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHeartRate(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let topics = ["hr/plain", "hr/flat", "hr/deep", "hr/unknown"]
    let topic = topics[Int(data[0] & 3)]
    now += Millis(data[0] >> 2) * 500
    let payload = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch monitor.receive(topic: topic, payload: payload, now: now) {
    case .accepted(let source, let bpm, _):
        precondition(HeartRateMonitor.validRange.contains(bpm), "accepted \(bpm) bpm")
        precondition(monitor.current(source, now: now)?.bpm == bpm, "accepted reading not current")
        if let zone = monitor.zone(for: bpm) { precondition((1...5).contains(zone), "zone \(zone)") }
        precondition(monitor.staleAt(source) == now + 10_000, "stale instant")
    case .outOfRange(_, let bpm):
        precondition(!(bpm.rounded() >= 25 && bpm.rounded() <= 250), "in range but refused: \(bpm)")
    case .unreadable(_, let reason):
        precondition(!reason.isEmpty, "empty reason")
    case .notASource:
        precondition(topic == "hr/unknown", "a configured topic read as not a source")
    }
    _ = HeartRateMonitor.parse(payload, field: ["a", "b", "c"])
    return 0
}

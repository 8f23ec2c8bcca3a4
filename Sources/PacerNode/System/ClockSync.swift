import Foundation

/// Whether the system clock is synchronised, as systemd-timesyncd reports it.
enum ClockSync {
    /// nil when it cannot be told (no systemd-timesyncd, e.g. chrony or a container).
    static func isSynchronized() -> Bool? {
        let fm = FileManager.default
        if fm.fileExists(atPath: "/run/systemd/timesync/synchronized") { return true }
        if fm.fileExists(atPath: "/run/systemd/timesync") { return false }
        return nil
    }
}

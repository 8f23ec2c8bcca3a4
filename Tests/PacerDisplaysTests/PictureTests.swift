import Foundation
import PacerCore
import PacerDisplays
@testable import PacerTestSupport
import Testing

/// docs/images/awtrix-emulator.png is the emulated clock showing a Tabata's first work
/// segment 5.5 s in. `PACER_UPDATE_PICTURES=1 swift test --filter PictureTests` writes it
/// again; otherwise the test fails when the clock would now look different from the picture.
@Suite("The docs' picture of the AWTRIX emulator")
struct PictureTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let picture = root.appendingPathComponent("docs/images/awtrix-emulator.png")

    @Test("the picture in the docs is what the emulated clock shows")
    func picture() throws {
        var outputs = DisplayOutputs([.awtrix(AwtrixDisplay(prefix: "awtrix_gym", timers: ["main"]))])
        var timer = try TimerFixture.tabata()
        timer.start(at: t0)
        let now = t0 + 5_500
        var clock = AwtrixEmulator(prefix: "awtrix_gym")
        for message in outputs.update(timer.snapshot(now), now: now) {
            clock.receive(topic: message.topic, payload: message.payload, now: now)
        }
        let matrix = clock.matrix(at: now)
        #expect(matrix.text() == "0:15 1/8")
        let png = PNGWriter.png(matrix, scale: 12)
        #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        if ProcessInfo.processInfo.environment["PACER_UPDATE_PICTURES"] == "1" {
            try FileManager.default.createDirectory(at: Self.picture.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(png).write(to: Self.picture)
        }
        let committed = try Data(contentsOf: Self.picture)
        #expect(Array(committed) == png, "the clock now looks different: PACER_UPDATE_PICTURES=1 swift test --filter PictureTests")
    }

    @Test("the PNG writer's checksums are the standard ones")
    func checksums() {
        #expect(PNGWriter.crc32(Array("IEND".utf8)) == 0xAE42_6082)
        #expect(PNGWriter.adler32(Array("Wikipedia".utf8)) == 0x11E6_0398)
    }
}

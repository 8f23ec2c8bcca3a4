import PacerCore
@testable import PacerDisplays
import Testing

/// Drives `outputs` as the engine would: an update at `start` with `events`, then one at each
/// `nextInstant` until `end`, the timer advanced to each instant. Every message with its instant.
func drive(
    _ outputs: inout DisplayOutputs, _ timer: inout TimerFixture, from start: Millis, until end: Millis,
    events: [TimerEvent] = []
) -> [(at: Millis, message: DisplayMessage)] {
    var sent = outputs.update(timer.snapshot(start), events: events, now: start).map { (at: start, message: $0) }
    var now = start
    while let next = outputs.nextInstant(for: timer.machine.id), next < end {
        #expect(next > now, "the next instant lies ahead")
        now = next
        let due = timer.advance(to: now)
        sent += outputs.update(timer.snapshot(now), events: due, now: now).map { (at: now, message: $0) }
    }
    return sent
}

@Suite("Display outputs: what to send, and when next")
struct DisplayOutputsTests {
    let awtrix = AwtrixDisplay(prefix: "awtrix_gym", timers: ["main"])

    var wled: WLEDDisplay {
        var display = WLEDDisplay(topic: "wled/rig", timer: "main")
        display.brightness = 100
        return display
    }

    @Test("AWTRIX while running: one app per flip of the shown second, on the timer's own seconds, 60 a minute")
    func awtrixRate() throws {
        var outputs = DisplayOutputs([.awtrix(awtrix)])
        var timer = try TimerFixture.tabata()
        let start = t0 + 123
        let events = timer.start(at: start)
        let sent = drive(&outputs, &timer, from: start, until: start + 60_000, events: events)
        #expect(sent.count == 60)
        #expect(sent.allSatisfy { ($0.at - start) % 1_000 == 0 }, "aligned to the timer's seconds: \(sent.map { $0.at - start })")
        #expect(sent.allSatisfy { $0.message.topic == "awtrix_gym/custom/pacer" && !$0.message.retain })
        #expect(sent.allSatisfy { $0.message.json?["lifetime"] == 10 })
        // The digits of each message are those of its instant.
        #expect(sent[0].message.json?["text"]?[0]?["t"] == "0:20")
        #expect(sent[1].message.json?["text"]?[0]?["t"] == "0:19")
        #expect(sent[20].message.json?["text"]?[0]?["t"] == "0:10" && sent[20].message.json?["text"]?[0]?["c"] == "C4161C")
        // Asked again at the same instant (a command, a heart-rate reading): nothing new.
        let last = try #require(sent.last?.at)
        #expect(outputs.update(timer.snapshot(last), now: last).isEmpty)
    }

    @Test("AWTRIX paused or expired: the same app again every half lifetime, 12 a minute")
    func awtrixRefresh() throws {
        var outputs = DisplayOutputs([.awtrix(awtrix)])
        var timer = try TimerFixture.tabata()
        timer.start(at: t0)
        timer.run(.pause, at: t0 + 5_500)
        let sent = drive(&outputs, &timer, from: t0 + 5_500, until: t0 + 65_500)
        #expect(sent.map { $0.at - t0 - 5_500 } == Array(stride(from: 0, to: 60_000, by: 5_000)))
        #expect(Set(sent.map(\.message.payload)).count == 1, "the same frozen picture")

        var expiring = try TimerFixture(["kind": "countdown", "duration": "2s"], ack: true)
        expiring.start(at: t0)
        expiring.advance(to: t0 + 2_000)
        let alarms = drive(&outputs, &expiring, from: t0 + 2_000, until: t0 + 62_000)
        #expect(alarms.filter { $0.message.topic.hasSuffix("/custom/pacer") }.count == 12)
    }

    @Test("AWTRIX idle, finished, cancelled: the app is removed once; nothing more is due")
    func awtrixClear() throws {
        var outputs = DisplayOutputs([.awtrix(awtrix)])
        var timer = try TimerFixture.tabata()
        let first = outputs.update(timer.snapshot(t0), now: t0)
        #expect(first == [DisplayMessage(topic: "awtrix_gym/custom/pacer", payload: [])])
        #expect(outputs.update(timer.snapshot(t0 + 1_000), now: t0 + 1_000).isEmpty)
        #expect(outputs.nextInstant(for: "main") == nil)
        timer.start(at: t0 + 2_000)
        #expect(outputs.update(timer.snapshot(t0 + 2_000), now: t0 + 2_000).count == 1)
        timer.run(.cancel, at: t0 + 3_000)
        #expect(outputs.update(timer.snapshot(t0 + 3_000), now: t0 + 3_000) == first)
        #expect(outputs.nextInstant(for: "main") == nil)
    }

    @Test("AWTRIX: switch on start after the app; time's up once, with the melody; not for a late or acknowledged end")
    func awtrixEvents() throws {
        var display = awtrix
        display.switchTo = true
        display.sound = "alarm"
        var outputs = DisplayOutputs([.awtrix(display)])
        var timer = try TimerFixture(["kind": "countdown", "duration": "3s"], ack: true)
        let started = timer.start(at: t0)
        let first = outputs.update(timer.snapshot(t0), events: started, now: t0)
        #expect(first.map(\.topic) == ["awtrix_gym/custom/pacer", "awtrix_gym/switch"])
        #expect(first.last?.json == ["name": "pacer"])

        let expired = timer.advance(to: t0 + 3_000)
        #expect(expired.contains { $0.type == .expired })
        let atEnd = outputs.update(timer.snapshot(t0 + 3_000), events: expired, now: t0 + 3_000)
        let notes = atEnd.filter { $0.topic == "awtrix_gym/notify" }
        #expect(notes.count == 1 && notes.first?.json?["sound"] == "alarm")

        var late = expired
        for index in late.indices { late[index].lateMs = 600_000 }
        #expect(outputs.update(timer.snapshot(t0 + 3_000), events: late, now: t0 + 3_000).isEmpty)

        let acknowledged = timer.run(.ack, at: t0 + 4_000)
        #expect(acknowledged.contains { $0.type == .finished })
        let afterAck = outputs.update(timer.snapshot(t0 + 4_000), events: acknowledged, now: t0 + 4_000)
        #expect(afterAck == [DisplayMessage(topic: "awtrix_gym/custom/pacer", payload: [])], "removed, no second notification")

        var plain = try TimerFixture(["kind": "countdown", "duration": "3s"])
        var fresh = DisplayOutputs([.awtrix(display)])
        plain.start(at: t0)
        let completed = plain.advance(to: t0 + 3_000)
        #expect(completed.contains { $0.type == .finished && $0.reason == .completed })
        #expect(fresh.update(plain.snapshot(t0 + 3_000), events: completed, now: t0 + 3_000).map(\.topic)
            == ["awtrix_gym/custom/pacer", "awtrix_gym/notify"])
    }

    @Test("reconnected: everything again; removed and shutdown blank every display of the timer")
    func lifecycle() throws {
        var outputs = DisplayOutputs([.awtrix(awtrix), .wled(wled)])
        var timer = try TimerFixture.tabata()
        timer.start(at: t0)
        let first = outputs.update(timer.snapshot(t0), now: t0)
        #expect(outputs.update(timer.snapshot(t0), now: t0).isEmpty)
        outputs.reconnected()
        #expect(outputs.update(timer.snapshot(t0), now: t0) == first)
        let off = #"{"seg":[{"id":0,"on":false}]}"#
        #expect(outputs.removed("main").map(\.description) == ["awtrix_gym/custom/pacer ", "wled/rig/api \(off)"])
        #expect(outputs.nextInstant(for: "main") == nil)
        #expect(outputs.shutdown().count == 2)
        #expect(outputs.shows("main") && !outputs.shows("kitchen"))
    }

    @Test("WLED: the phase colour on each change, the last 3 s pulsing on the half seconds, brightness bounded")
    func wledPulse() throws {
        var outputs = DisplayOutputs([.wled(wled)])
        var timer = try TimerFixture.tabata()
        let events = timer.start(at: t0)
        let all = drive(&outputs, &timer, from: t0, until: t0 + 60_000, events: events)
        // The nightlight re-armed every 30 s while lit (a dead node's strip goes dark by itself).
        let keptAlive = all.filter { $0.message.text == WLEDRenderer.keepAlive }.map { $0.at - t0 }
        #expect(keptAlive == [0, 30_000], "\(keptAlive)")
        let sent = all.filter { $0.message.text != WLEDRenderer.keepAlive }
        let firstSegment = sent.filter { $0.at < t0 + 20_000 }.map { "\($0.at - t0) \($0.message.text)" }
        #expect(firstSegment == [
            #"0 {"bri":100,"on":true,"seg":[{"bri":255,"col":[[11,138,62],[0,0,0]],"fx":0,"id":0,"on":true}]}"#,
            #"17500 {"seg":[{"bri":64,"id":0}],"tt":4}"#,
            #"18000 {"seg":[{"bri":255,"id":0}],"tt":0}"#,
            #"18500 {"seg":[{"bri":64,"id":0}],"tt":4}"#,
            #"19000 {"seg":[{"bri":255,"id":0}],"tt":0}"#,
            #"19500 {"seg":[{"bri":64,"id":0}],"tt":4}"#,
        ])
        #expect(sent.first { $0.at == t0 + 20_000 }?.message.json?["seg"]?[0]?["col"]?[0] == DisplayPalette.rest.json)
        #expect(sent.count == 24, "4 segments a minute, each 1 look and 5 pulse steps")
        #expect(sent.allSatisfy { ($0.at - t0) % 500 == 0 })
        #expect(sent.allSatisfy { ($0.message.json?["bri"]?.int ?? 0) <= 100 }, "never above the configured brightness")
    }

    @Test("WLED looks: paused blue, expired blinking red, idle off or dim")
    func wledLooks() throws {
        var dim = wled
        dim.idle = .dim
        var outputs = DisplayOutputs([.wled(wled), .wled(dim)])
        var timer = try TimerFixture(["kind": "countdown", "duration": "5s"], ack: true)
        let idle = outputs.update(timer.snapshot(t0), now: t0).map(\.text)
        #expect(idle == [
            #"{"seg":[{"id":0,"on":false}]}"#,
            #"{"bri":100,"on":true,"seg":[{"bri":64,"col":[[42,47,54],[0,0,0]],"fx":0,"id":0,"on":true}]}"#,
            WLEDRenderer.keepAlive,  // the dim one is lit: its nightlight armed
        ])
        timer.start(at: t0)
        timer.run(.pause, at: t0 + 1_000)
        let paused = outputs.update(timer.snapshot(t0 + 1_000), now: t0 + 1_000)
        #expect(paused.first?.json?["seg"]?[0]?["col"]?[0] == DisplayPalette.paused.json)
        #expect(outputs.nextInstant(for: "main") == t0 + 30_000, "only the nightlight's re-arm, 30 s after the last")
        timer.run(.resume, at: t0 + 2_000)
        timer.advance(to: t0 + 6_000)
        let expired = outputs.update(timer.snapshot(t0 + 6_000), now: t0 + 6_000)
        #expect(expired.first?.json?["seg"]?[0]?["fx"] == 1)
        #expect(expired.first?.json?["seg"]?[0]?["col"]?[0] == DisplayPalette.expired.json)
    }

    @Test("WLED fill: one more LED on the flip it is due, never more than one message a second")
    func wledFill() throws {
        var display = wled
        display.progressLEDs = 4
        var outputs = DisplayOutputs([.wled(display)])
        var timer = try TimerFixture(["kind": "countdown", "duration": "10s"])
        let events = timer.start(at: t0)
        let sent = drive(&outputs, &timer, from: t0, until: t0 + 10_000, events: events)
        let fills = sent.filter { $0.message.json?["seg"]?[0]?["i"] != nil }
        // 4 LEDs over 10 s: 1 at 2.5 s, shown on the flip at 3 s; 2 at 5 s; 3 at 7.5 s, on the flip
        // at 8 s; the pulse's steps from 7.5 s on carry the fill again (WLED drops it on a change).
        #expect(fills.map { $0.at - t0 } == [0, 3_000, 5_000, 7_500, 8_000, 8_500, 9_000, 9_500])
        #expect(fills[4].message.json?["seg"]?[0]?["i"] == [0, 3, "0B8A3E", 3, 4, "010E06"])
        #expect(fills[1].message.json?["seg"]?[0]?["i"] == [0, 1, "0B8A3E", 1, 4, "010E06"])
        #expect(fills[0].message.json?["seg"]?[0]?["i"] == [0, 4, "010E06"])
        let perSecond = Dictionary(grouping: sent.filter { $0.message.text != WLEDRenderer.keepAlive }) { ($0.at - t0) / 1_000 }
        #expect(perSecond.values.allSatisfy { $0.count <= 2 })
    }
}

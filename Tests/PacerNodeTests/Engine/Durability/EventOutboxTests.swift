import Mosquitto
import PacerCore
@testable import PacerNode
import PacerStore
import PacerTestSupport
import Testing
import PacerProtocol

/// The outbox state machine alone: inputs in, actions out (no store, no broker, no clock).
@Suite struct EventOutboxTests {
    func record(_ seq: Int64, _ timer: String, revision: Int) -> EventRecord {
        EventRecord(seq: seq, timer: timer, type: "finished", revision: revision, dueMs: 0, atMs: 0, payload: [], published: false)
    }

    @Test func nothingPendingMeansNoCheck() {
        var outbox = EventOutbox()
        #expect(!outbox.isLinkUp)
        let r1 = outbox.connected(pending: [], now: 0)
        #expect(r1 == [])
        #expect(outbox.state == .linkUp)
        let r = record(1, "a", revision: 1)
        let r2 = outbox.written(r)
        #expect(r2 == .publish(r))
    }

    @Test func whileDownWrittenEventsStayInTheStore() {
        var outbox = EventOutbox()
        let r3 = outbox.written(record(1, "a", revision: 1))
        #expect(r3 == nil)
        let r4 = outbox.linkDown()
        #expect(r4 == [])
    }

    @Test func aCheckSettlesOnTheRetainedStates() {
        var outbox = EventOutbox()
        let a = record(1, "a", revision: 3), b = record(2, "b", revision: 5)
        let r5 = outbox.connected(pending: [a, b], now: 100)
        #expect(r5 == [.subscribeToStates(["a", "b"]), .windowEnds(at: 100 + EventOutbox.checkWindowMs)])
        #expect(outbox.isHolding("a") && outbox.isHolding("b") && !outbox.isHolding("c"))
        // A new transition of a held timer queues behind its pending one; another timer's goes out.
        let a2 = record(3, "a", revision: 4), c = record(4, "c", revision: 1)
        let r6 = outbox.written(a2)
        #expect(r6 == nil)
        let r7 = outbox.written(c)
        #expect(r7 == .publish(c))
        let r8 = outbox.retainedState(timer: "a", revision: 3)
        #expect(!r8)
        let r9 = outbox.retainedState(timer: "b", revision: 4)
        #expect(r9)
        // a's state (revision 3) proves a; a2 (4) and b (5) are not proven.
        let r10 = outbox.settle()
        #expect(r10 == [.publish(b), .publish(a2), .release(["a", "b"]), .mark([1]), .unsubscribeFromStates(["a", "b"]), .windowEnds(at: nil)])
        #expect(outbox.state == .linkUp)
        let r11 = outbox.settle()
        #expect(r11 == [], "settled once")
    }

    @Test func theWindowEndingWithoutStatesPublishesEverything() {
        var outbox = EventOutbox()
        let a = record(1, "a", revision: 3)
        _ = outbox.connected(pending: [a], now: 0)
        let r12 = outbox.settle()
        #expect(r12 == [.publish(a), .release(["a"]), .unsubscribeFromStates(["a"]), .windowEnds(at: nil)])
    }

    @Test func aLinkLostDuringTheCheckUnsubscribesAndForgetsIt() {
        var outbox = EventOutbox()
        _ = outbox.connected(pending: [record(1, "a", revision: 3)], now: 0)
        let r13 = outbox.linkDown()
        #expect(r13 == [.unsubscribeFromStates(["a"]), .windowEnds(at: nil)])
        #expect(outbox.state == .linkDown)
        let r14 = outbox.settle()
        #expect(r14 == [], "never decided on half the states")
        let r15 = outbox.retainedState(timer: "a", revision: 3)
        #expect(!r15)
    }

    @Test func aConnectOverAnUnseenLinkEndRestartsTheCheck() {
        var outbox = EventOutbox()
        let a = record(1, "a", revision: 3)
        _ = outbox.connected(pending: [a], now: 0)
        let r16 = outbox.connected(pending: [a], now: 10)
        #expect(r16 == [.unsubscribeFromStates(["a"]), .windowEnds(at: nil), .subscribeToStates(["a"]), .windowEnds(at: 10 + EventOutbox.checkWindowMs)])
    }

    @Test func deliveriesBecomeMarksOnTheNextWriteOrTheirDeadline() {
        var outbox = EventOutbox()
        outbox.sent(seq: 7, token: PublishToken(rawValue: 1))
        outbox.sent(seq: 8, token: PublishToken(rawValue: 2))
        outbox.sent(seq: 9, token: PublishToken(rawValue: 3))
        let r17 = outbox.delivered(token: PublishToken(rawValue: 1), accepted: true, now: 50)
        #expect(r17 == .accepted([.marksDue(at: 50 + EventOutbox.markDelayMs)]))
        let r18 = outbox.delivered(token: PublishToken(rawValue: 2), accepted: true, now: 60)
        #expect(r18 == .accepted([]), "one deadline for a burst")
        let r19 = outbox.delivered(token: PublishToken(rawValue: 3), accepted: false, now: 60)
        #expect(r19 == .refused(seq: 9))
        let r20 = outbox.delivered(token: PublishToken(rawValue: 1), accepted: true, now: 70)
        #expect(r20 == .unknown)
        let r21 = outbox.takeMarks()
        #expect(r21 == [7, 8])
        let r22 = outbox.takeMarks()
        #expect(r22 == [])
        // A write that failed gives its marks back for the next one.
        let r23 = outbox.awaitMark([7, 8], now: 80)
        #expect(r23 == [.marksDue(at: 80 + EventOutbox.markDelayMs)])
        #expect(outbox.unmarked == [7, 8])
    }
}

/// One action vocabulary: the word parser, the JSON parser and the help text all
/// come from `TimerAction.allCases`.
@Suite struct ActionVocabularyTests {
    @Test(arguments: TimerAction.allCases)
    func everyActionIsParsedAsItself(action: TimerAction) throws {
        let parser = CommandParser()
        var json: JSONValue = ["action": .string(action.rawValue)]
        if action == .adjust || action == .extend { json = json.adding("seconds", 30) }
        guard case .success(let command) = parser.parse(json.bytes, timerID: "t"),
              case .timer(_, let operation, _, _) = command.request else {
            Issue.record("\(action) is not parsed from JSON")
            return
        }
        #expect(operation.action == action)
        let word = action == .adjust ? "+30" : action == .extend ? "extend 30" : action.rawValue
        #expect(TimerOperation(word: word)?.action == action, "\(word)")
        #expect(TimerAction.words.contains(action == .adjust ? "+N" : action == .extend ? "extend N" : action.rawValue))
    }

    @Test func limitsAreTheCoresOwn() {
        let parser = CommandParser()
        let over = TimerOperation.maxAdjustSeconds + 1
        guard case .failure(let error) = parser.parse(Array("+\(over)".utf8), timerID: "t") else {
            Issue.record("+\(over) was accepted")
            return
        }
        #expect(error.code == .invalidArgument && error.message.contains("\(TimerOperation.maxAdjustSeconds)"))
        guard case .success = parser.parse(Array("snooze \(TimerOperation.maxSnoozeSeconds)".utf8), timerID: "t") else {
            Issue.record("the longest snooze was refused")
            return
        }
    }
}

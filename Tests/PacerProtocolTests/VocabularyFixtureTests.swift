import Foundation
import PacerCore
import PacerProtocol
import PacerTestSupport
import Testing

/// Tests/Fixtures/protocol/vocabulary.json: every word of the wire as PacerProtocol defines it
/// (topics, actions, plain words, error codes, event types, the values of a state, the member
/// names of each document). It is made here from the protocol module and must match the file,
/// so the file cannot fall behind the protocol; the page's Node test
/// (Tests/page/vocabulary.test.mjs) checks every topic, action, status, phase and event type
/// the page's modules name against it, so the page cannot drift either.
/// `PACER_UPDATE_FIXTURES=1 swift test --filter VocabularyFixtureTests` writes it again.
@Suite("The wire's vocabulary (Tests/Fixtures/protocol/vocabulary.json)")
struct VocabularyFixtureTests {
    static let url = ProtocolFixtureTests.directory.appendingPathComponent("vocabulary.json")

    /// The vocabulary as the protocol module defines it.
    static func make() -> JSONValue {
        func strings(_ values: [String]) -> JSONValue { .array(values.map { .string($0) }) }
        func fields(_ values: [WireField]) -> JSONValue { strings(values.map(\.rawValue)) }
        let topics = Topics(base: "<base>").catalogue(id: "<id>", client: "<client>")
        return [
            "about": .string("Every word of the wire, made from PacerProtocol by Tests/PacerProtocolTests/VocabularyFixtureTests.swift "
                + "(PACER_UPDATE_FIXTURES=1 swift test --filter VocabularyFixtureTests writes it again). <base> is the node's base "
                + "topic (default_base unless configured), <id> a timer's or an athlete's id, <client> a client's id. The page's "
                + "test (Tests/page/vocabulary.test.mjs) checks the topics and words its modules use against it."),
            "default_base": "pacer/<node>",
            "topics": .object(topics.mapValues { .string($0) }),
            "timer_actions": strings(TimerAction.allCases.map(\.rawValue)),
            "node_actions": strings(NodeAction.allCases.map(\.rawValue)),
            "plain_words": strings(CommandParser.plainWords),
            "error_codes": strings(ReplyErrorCode.allCases.map(\.rawValue)),
            "event_types": strings(EventType.allCases.map(\.rawValue) + [TimerEvent.classSummaryType]),
            "statuses": strings(TimerStatus.allCases.map(\.rawValue)),
            "phases": strings(Phase.allCases.map(\.rawValue)),
            "kinds": strings(TimerKind.allCases.map(\.rawValue)),
            "segment_kinds": strings(SegmentKind.allCases.map(\.rawValue)),
            "finish_reasons": strings(FinishReason.allCases.map(\.rawValue)),
            "node_statuses": strings(NodeStatus.allCases.map(\.rawValue)),
            "capabilities": strings(Capability.known.map(\.rawValue)),
            "fields": [
                "command": fields(WireField.ofCommand),
                "reply": fields(WireField.ofReply),
                "state": fields(WireField.ofState),
                "list_entry": fields(WireField.ofListEntry),
                "event": fields(WireField.ofEvent),
                "say": fields(WireField.ofSay),
                "cue_ahead": fields(WireField.ofCueAhead),
                "displays": fields(WireField.ofDisplays),
                "info": fields(WireField.ofInfo),
                "recovery": fields(WireField.ofRecovery),
            ],
        ]
    }

    @Test("vocabulary.json is what the protocol module defines (PACER_UPDATE_FIXTURES=1 writes it)")
    func fileMatchesTheProtocol() throws {
        let text = ProtocolFixtureTests.pretty(Self.make()) + "\n"
        if ProcessInfo.processInfo.environment["PACER_UPDATE_FIXTURES"] == "1" {
            try text.write(to: Self.url, atomically: true, encoding: .utf8)
        }
        let onDisk = try String(contentsOf: Self.url, encoding: .utf8)
        #expect(onDisk == text, """
            Tests/Fixtures/protocol/vocabulary.json differs from what PacerProtocol defines: review the change, then \
            PACER_UPDATE_FIXTURES=1 swift test --filter VocabularyFixtureTests (and run node --test Tests/page/)
            """)
    }

    @Test("every topic level and plain leaf is in a listed topic, and the timer topics read back to their timer")
    func topicsAreComplete() {
        let topics = Topics(base: "pacer/gym")
        let all = topics.catalogue(id: "t1", client: "c1")
        let levels = Set(all.values.flatMap { $0.split(separator: "/").map(String.init) })
        for level in TopicLevel.allCases { #expect(levels.contains(level.rawValue), "\(level) is in no listed topic") }
        for leaf in PlainLeaf.allCases { #expect(levels.contains(leaf.rawValue), "\(leaf) is in no listed topic") }
        #expect(topics.timerID(ofStateTopic: all["timer.state"]!) == "t1")
        #expect(topics.timerID(ofEventTopic: all["timer.event"]!) == "t1")
        #expect(topics.timerID(ofCommandTopic: all["timer.command"]!) == "t1")
        #expect(Set(topics.timer("t1").retained) == Set(all.filter { $0.key.hasPrefix("timer.") }.values)
            .subtracting([all["timer.event"]!, all["timer.command"]!, all["timer.classSummary"]!, all["timer.say"]!, all["timer.next"]!,
                          all["timer.recovery"]!, all["timer.currentClass"]!]))
    }

    @Test("every action and plain word of the list is read by the parser; the codes and fields are each spelled once")
    func wordsAreTheParsers() throws {
        let parser = CommandParser()
        for action in TimerAction.allCases {
            var json: [String: JSONValue] = [:]
            json[.action] = .string(action.rawValue)
            if action == .adjust || action == .extend { json[.seconds] = 30 }
            let command = try parser.parse(JSONValue.object(json).jsonBytes, timerID: "t1").get()
            #expect(command.action == action.rawValue)
        }
        for word in CommandParser.plainWords {
            let sample = word.replacingOccurrences(of: "N", with: "30")
            #expect((try? parser.parse(Array(sample.utf8), timerID: "t1").get()) != nil, "the plain word \(sample)")
        }
        let actions: [String] = TimerAction.allCases.map(\.rawValue) + NodeAction.allCases.map(\.rawValue)
        let words: [[String]] = [actions, ReplyErrorCode.allCases.map(\.rawValue), WireField.allCases.map(\.rawValue),
                                 TopicLevel.allCases.map(\.rawValue), Capability.known.map(\.rawValue)]
        for list in words {
            #expect(Set(list).count == list.count, "a word twice: \(list)")
        }
        let documents: [[WireField]] = [WireField.ofCommand, WireField.ofReply, WireField.ofState, WireField.ofListEntry,
                                        WireField.ofEvent, WireField.ofInfo, WireField.ofSay, WireField.ofCueAhead, WireField.ofDisplays,
                                        WireField.ofRecovery]
        for list in documents {
            #expect(Set(list).count == list.count, "a member twice: \(list)")
        }
        #expect(Set(documents.joined()) == Set(WireField.allCases), "a member of no document")
    }
}

// swift-tools-version: 6.2
import PackageDescription

/// One set of Swift settings for every target: Swift 6 language mode (strict
/// concurrency) plus the upcoming features we rely on.
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "pacer",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "pacer", targets: ["pacer"]),
        .library(name: "Mosquitto", targets: ["Mosquitto"]),
        .library(name: "PacerCore", targets: ["PacerCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
    ],
    targets: [
        // libmosquitto, the C MQTT client, from the system (apt: libmosquitto-dev).
        .systemLibrary(
            name: "CMosquitto",
            pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]
        ),
        // Our Swift MQTT client: the only importer of CMosquitto.
        .target(
            name: "Mosquitto",
            dependencies: ["CMosquitto"],
            swiftSettings: swiftSettings
        ),
        // ALSA, the Linux sound library, from the system (apt: libasound2-dev).
        .systemLibrary(
            name: "CALSA",
            pkgConfig: "alsa",
            providers: [.apt(["libasound2-dev"])]
        ),
        // glibc's <malloc.h> (mallopt, malloc_trim), which Swift's Glibc module leaves out; part of libc.
        .systemLibrary(name: "CMalloc"),
        // Linux's timerfd (timerfd_create, timerfd_settime), which Swift's Glibc module leaves
        // out; part of libc. The engine thread's alarm (PacerNode/Scheduling/EngineThread.swift).
        .systemLibrary(name: "CTimerFD"),
        // Sound cues on the node's speaker: tones made in code, played through ALSA (or
        // rendered to a WAV file) on a thread of their own. The only importer of CALSA.
        .target(
            name: "PacerSound",
            dependencies: ["CALSA", "PacerCore", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        // The timer core: specs, programs, the state machine. Pure: no I/O, no clock.
        .target(
            name: "PacerCore",
            swiftSettings: swiftSettings
        ),
        // The wire: topics, commands (parsing and encoding), replies, limits, and the state
        // and event decoders. One description that the node, the control commands and the
        // tests share (its examples: Tests/Fixtures/protocol/, read by the page's and the
        // Python display's tests too).
        .target(
            name: "PacerProtocol",
            dependencies: ["PacerCore"],
            swiftSettings: swiftSettings
        ),
        // The LED clocks people own, driven by the node: AWTRIX 3 custom apps and WLED phase
        // lights. Pure renderers and planners (what to send now, and when next); no I/O.
        .target(
            name: "PacerDisplays",
            dependencies: ["PacerCore"],
            swiftSettings: swiftSettings
        ),
        // The gym's timetable: schedules (weekly classes, dated additions and exceptions, loops)
        // in a time zone, and the planner that decides which class starts or is skipped, exactly
        // once across restarts. Pure: no I/O, no clock (Foundation only for the zone rules).
        .target(
            name: "PacerSchedule",
            dependencies: ["PacerCore"],
            swiftSettings: swiftSettings
        ),
        // SQLite persistence (GRDB).
        .target(
            name: "PacerStore",
            dependencies: [
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        // The daemon: configuration, services, scheduler, topic API, wiring.
        .target(
            name: "PacerNode",
            dependencies: [
                "Mosquitto", "PacerCore", "PacerProtocol", "PacerStore", "PacerSound", "PacerDisplays", "PacerSchedule", "CTimerFD", "CMalloc",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: swiftSettings
        ),
        // Controlling a node from a shell and the terminal clock: command building, the
        // request/reply client, clock offset, rendering (`pacer start`, `pacer watch`, ...).
        .target(
            name: "PacerControl",
            dependencies: ["Mosquitto", "PacerCore", "PacerProtocol"],
            swiftSettings: swiftSettings
        ),
        // The command-line tool: `pacer run`, `pacer check-config`, ...
        .executableTarget(
            name: "pacer",
            dependencies: [
                "PacerNode",
                "PacerControl",
                "PacerProtocol",
                "PacerCore",
                "PacerSound",
                "Mosquitto",
                "CMalloc",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        // Test helpers: start and stop real mosquitto brokers, free ports, temp dirs; the
        // AWTRIX and WLED emulators (subscribed through Mosquitto like the devices).
        .target(
            name: "PacerTestSupport",
            dependencies: ["PacerCore", "Mosquitto"],
            swiftSettings: swiftSettings
        ),
        // Tests come in two kinds, one target each per module: `…Tests` are pure and in-process
        // (no broker, no process, no sleeps; `scripts/test --fast` runs only these), and
        // `…LiveTests` run against real mosquitto brokers and real `pacer` processes.
        .testTarget(
            name: "MosquittoTests",
            dependencies: ["Mosquitto", "PacerTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PacerCoreTests",
            dependencies: [
                "PacerCore", "PacerTestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PacerProtocolTests",
            dependencies: ["PacerProtocol", "PacerCore", "PacerTestSupport",
                           .product(name: "PropertyBased", package: "swift-property-based")],
            swiftSettings: swiftSettings
        ),
        // The display renderers and planners alone, the emulators fed directly, and (in the
        // `…LiveTests` suites) the emulators behind a real mosquitto.
        .testTarget(
            name: "PacerDisplaysTests",
            dependencies: ["PacerDisplays", "PacerCore", "Mosquitto", "PacerTestSupport"],
            swiftSettings: swiftSettings
        ),
        // The timetable's planner over weeks and a simulated year, DST changes and restarts
        // included; the schedules' parsing and documents.
        .testTarget(
            name: "PacerScheduleTests",
            dependencies: ["PacerSchedule", "PacerCore"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PacerStoreTests",
            dependencies: ["PacerStore", "PacerTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PacerNodeTests",
            dependencies: ["PacerNode", "PacerControl", "PacerProtocol", "Mosquitto", "PacerCore", "PacerStore", "PacerSound", "PacerTestSupport",
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PacerNodeLiveTests",
            dependencies: ["PacerNode", "PacerControl", "PacerProtocol", "Mosquitto", "PacerCore", "PacerStore", "PacerSound", "PacerTestSupport",
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "MosquittoLiveTests",
            dependencies: ["Mosquitto", "PacerTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PacerSoundTests",
            dependencies: ["PacerSound", "PacerCore", "PacerTestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        // The music's ducking against a real `mpd` (Debian's package) on 127.0.0.1.
        .testTarget(
            name: "PacerSoundLiveTests",
            dependencies: ["PacerSound", "PacerCore", "PacerTestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PacerControlTests",
            dependencies: ["PacerControl", "PacerProtocol", "Mosquitto", "PacerCore", "PacerTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PacerControlLiveTests",
            dependencies: ["PacerControl", "PacerProtocol", "Mosquitto", "PacerCore", "PacerTestSupport"],
            swiftSettings: swiftSettings
        ),
    ]
)

// The engine's and the configuration loader's libFuzzer targets (Fuzz/Engine, Fuzz/Load), only
// when scripts/fuzz builds them with `--sanitize fuzzer`: libFuzzer supplies their `main`, so
// they cannot link in a normal build.
if Context.environment["PACER_FUZZ_ENGINE"] == "1" {
    package.targets.append(.executableTarget(
        name: "fuzz-engine",
        dependencies: ["PacerNode", "PacerCore", "PacerProtocol", "PacerStore", "Mosquitto", .product(name: "Logging", package: "swift-log")],
        path: "Fuzz/Engine",
        swiftSettings: swiftSettings + [.unsafeFlags(["-parse-as-library"])]
    ))
    package.targets.append(.executableTarget(
        name: "fuzz-load",
        dependencies: ["PacerNode", "PacerCore"],
        path: "Fuzz/Load",
        swiftSettings: swiftSettings + [.unsafeFlags(["-parse-as-library"])]
    ))
}

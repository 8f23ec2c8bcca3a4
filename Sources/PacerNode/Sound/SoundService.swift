import PacerSound
import ServiceLifecycle

/// The sound player's thread as a service: started first, stopped last (after the engine
/// handed over its last events). The cues themselves: PacerSound (docs/sound.md).
struct SoundService: Service {
    let player: SoundPlayer

    func run() async throws {
        player.start()
        // Until shutdown (or cancellation: the group is ending anyway).
        try? await gracefulShutdown()
        player.stop()
    }
}

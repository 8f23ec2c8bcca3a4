import Foundation

/// Runs the mosquitto command-line clients against a ``TestBroker``: an independent MQTT
/// implementation to cross-check the Swift client with.
extension TestBroker {
    /// Runs `mosquitto_pub -h 127.0.0.1 -p PORT <arguments>` to completion.
    ///
    /// - Throws: ``TestSupportError`` with its output when it fails or takes over 10 s.
    public func mosquittoPub(_ arguments: [String]) async throws {
        let tool = try Self.tool("mosquitto_pub")
        let output = directory.appendingPathComponent("mosquitto_pub-\(UUID().uuidString.prefix(8)).log")
        let process = try TestProcess.launch(tool, ["-h", host, "-p", String(port)] + arguments, outputFile: output)
        guard await process.waitForExit(timeout: .seconds(10)) else {
            await process.kill()
            throw TestSupportError("mosquitto_pub \(arguments) did not finish in 10 s: \(process.output)")
        }
        guard process.terminationStatus == 0 else {
            throw TestSupportError("mosquitto_pub \(arguments) failed (wait status \(process.terminationStatus ?? -1)): \(process.output)")
        }
    }

    /// Starts `mosquitto_sub -h 127.0.0.1 -p PORT <arguments>`; its output is the
    /// returned process's ``TestProcess/output``. Stop it with `kill()` or `terminate()`.
    public func startMosquittoSub(_ arguments: [String]) throws -> TestProcess {
        let tool = try Self.tool("mosquitto_sub")
        let output = directory.appendingPathComponent("mosquitto_sub-\(UUID().uuidString.prefix(8)).log")
        return try TestProcess.launch(tool, ["-h", host, "-p", String(port)] + arguments, outputFile: output)
    }

    private static func tool(_ name: String) throws -> String {
        guard let path = findInPath(name) else {
            throw TestSupportError("\(name) is not installed (apt: mosquitto-clients)")
        }
        return path
    }
}

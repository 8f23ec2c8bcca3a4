import Testing

@testable import Mosquitto

@Suite("MosquittoHandleLifetime (no broker)")
struct HandleLifetimeTests {
    @Test("closed with nothing inside and no thread: the closer destroys, once")
    func closeIdle() {
        var lifetime = MosquittoHandleLifetime()
        #expect(lifetime.close() == true)
        #expect(lifetime.state == .destroyed)
        #expect(lifetime.close() == false)
        #expect(lifetime.enterCall() == false)
        #expect(lifetime.threadStarting() == false)
    }

    @Test("the network thread, as the last one out, destroys the handle")
    func threadLast() {
        var lifetime = MosquittoHandleLifetime()
        #expect(lifetime.threadStarting() == true)
        #expect(lifetime.threadStarting() == false, "one thread at a time")
        #expect(lifetime.threadRunning)
        #expect(lifetime.close() == false)
        #expect(!lifetime.isOpen)
        #expect(lifetime.threadExited() == true)
        #expect(lifetime.state == .destroyed)
        #expect(lifetime.threadExited() == false)
    }

    @Test("an API call inside the handle delays the destroy until it leaves")
    func callLast() {
        var lifetime = MosquittoHandleLifetime()
        #expect(lifetime.threadStarting() == true)
        #expect(lifetime.enterCall() == true)
        #expect(lifetime.enterCall() == true)
        #expect(lifetime.close() == false)
        #expect(lifetime.threadExited() == false)
        #expect(lifetime.leaveCall() == false)
        #expect(lifetime.leaveCall() == true)
        #expect(lifetime.leaveCall() == false)
    }

    @Test("while open, a thread may stop and start again; calls never destroy")
    func reopen() {
        var lifetime = MosquittoHandleLifetime()
        #expect(lifetime.threadStarting() == true)
        #expect(lifetime.threadExited() == false)
        #expect(!lifetime.threadRunning)
        #expect(lifetime.threadStarting() == true)
        #expect(lifetime.enterCall() == true)
        #expect(lifetime.leaveCall() == false)
        #expect(lifetime.state == .open(thread: .running, callsInside: 0))
    }
}

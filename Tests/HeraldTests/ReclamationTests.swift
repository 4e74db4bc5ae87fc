import CHerald
import Dispatch
import Testing

@testable import Herald

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// When the hub lets go of a cancelled observer (and what its handler captured) while posts on
/// other threads scan the observer lists without a lock (see `Reclamation`).
@Suite("Releasing cancelled observers while posts run")
struct ReclamationTests {
    struct Ping: TypedNotification { let value: Int }
    struct Other: TypedNotification {}

    /// A post on another thread, held inside a posting-thread handler of `Notification` until
    /// `release()`.
    final class HeldPost<Notification: TypedNotification>: Sendable {
        let entered = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let token: ObservationToken

        init(on hub: NotificationHub, _ type: Notification.Type) {
            let entered = entered
            let proceed = proceed
            token = hub.observe(type) { _ in
                entered.signal()
                proceed.wait()
            }
        }

        /// Resumes the held post.
        func release() { proceed.signal() }
    }

    @Test("An observer cancelled while another thread's post scans its list is released when that post ends")
    func releasedWhenTheScanEnds() async {
        let hub = NotificationHub()
        let held = HeldPost(on: hub, Ping.self)
        let calls = Locked(0)
        var captured: Captured? = Captured()
        let probe = WeakProbe(captured!)
        var token: ObservationToken? = hub.observe(Ping.self) { [captured] _ in
            withExtendedLifetime(captured) { calls.withLock { $0 += 1 } }
        }
        captured = nil

        async let post: Void = onNewThread { hub.post(Ping(value: 1)) }
        await onNewThread { held.entered.wait() }
        token?.cancel()
        token = nil
        // The held post may still read the list that holds the cancelled observer.
        #expect(!probe.isReleased)
        held.release()
        await post
        #expect(probe.isReleased)
        #expect(calls.withLock { $0 } == 0)  // cancelled before the post reached it
        #expect(hub.observerCount(of: Ping.self) == 1)
        withExtendedLifetime(held) {}
    }

    @Test("A post of another type on another thread does not hold back a cancelled observer")
    func otherTypesDoNotHoldBack() async {
        let hub = NotificationHub()
        let held = HeldPost(on: hub, Other.self)
        var token: ObservationToken?
        let probe = Self.observeWithProbe(on: hub, into: &token)

        async let post: Void = onNewThread { hub.post(Other()) }
        await onNewThread { held.entered.wait() }
        token = nil  // cancels
        #expect(probe.isReleased)
        held.release()
        await post
        #expect(token == nil)
    }

    @Test("A handler that cancels an observer of its own type releases it when its own post ends")
    func cancelFromInsideThePost() {
        let hub = NotificationHub()
        var captured: Captured? = Captured()
        let probe = WeakProbe(captured!)
        let victim = Locked<ObservationToken?>(hub.observe(Ping.self) { [captured] _ in withExtendedLifetime(captured) {} })
        captured = nil
        let releasedDuringPost = Locked<Bool?>(nil)
        let killer = hub.observe(Ping.self) { _ in
            let token = victim.withLock { token in
                defer { token = nil }
                return token
            }
            token?.cancel()
            withExtendedLifetime(token) {}
            releasedDuringPost.withLock { $0 = probe.isReleased }
        }
        hub.post(Ping(value: 1))
        #expect(releasedDuringPost.withLock { $0 } == false)  // this very post still scans that list
        #expect(probe.isReleased)
        withExtendedLifetime(killer) {}
    }

    @Test("Threads that posted and exited do not hold back later cancellations")
    func exitedThreadsDoNotHoldBack() async {
        let hub = NotificationHub()
        let counter = Locked(0)
        let keep = hub.observe(Ping.self) { _ in counter.withLock { $0 += 1 } }
        await onThreads(32) { index in
            hub.post(Ping(value: index))
            hub.post(Other())
        }
        #expect(counter.withLock { $0 } == 32)
        var token: ObservationToken?
        let probe = Self.observeWithProbe(on: hub, into: &token)
        token = nil
        #expect(probe.isReleased)
        #expect(token == nil)
        withExtendedLifetime(keep) {}
    }

    @Test("A post nested in handlers of other types holds back only its own type, once it has returned")
    func nestedPostsOfOtherTypesDoNotHoldBack() async {
        struct A: TypedNotification {}
        struct B: TypedNotification {}
        struct C: TypedNotification {}
        struct D: TypedNotification {}
        let hub = NotificationHub()
        let entered = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        // A's handler posts B, whose handler posts C, whose handler posts D: four sections deep.
        let tokens = [
            hub.observe(A.self) { _ in
                hub.post(B())
                entered.signal()
                proceed.wait()  // still inside the post of A, the nested ones have returned
            },
            hub.observe(B.self) { _ in hub.post(C()) },
            hub.observe(C.self) { _ in hub.post(D()) },
            hub.observe(D.self) { _ in },
        ]
        var captured: Captured? = Captured()
        let probe = WeakProbe(captured!)
        var token: ObservationToken? = hub.observe(C.self) { [captured] _ in withExtendedLifetime(captured) {} }
        captured = nil

        async let post: Void = onNewThread { hub.post(A()) }
        await onNewThread { entered.wait() }
        token = nil  // an observer of C, whose post has returned
        #expect(probe.isReleased)
        proceed.signal()
        await post
        #expect(token == nil)
        withExtendedLifetime(tokens) {}
    }

    @Test("A thread that exits inside a read section leaves no section open behind it")
    func threadExitInsideASection() {
        let scope = UnsafeMutableRawPointer.allocate(byteCount: 8, alignment: 8)
        defer { scope.deallocate() }
        let ran = Self.onRawThread(scope) { scope in
            _ = heraldReadBegin(scope)
            pthread_exit(nil)  // as a handler that ends its thread would
        }
        #expect(ran)
        #expect(!Reclamation.isRead(UnsafeRawPointer(scope)))
    }

    #if canImport(Glibc)
    typealias RawThreadBody = @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?
    #else
    typealias RawThreadBody = @convention(c) (UnsafeMutableRawPointer) -> UnsafeMutableRawPointer?
    #endif

    /// Runs `body(argument)` on a new POSIX thread, which may end itself with `pthread_exit`;
    /// meanwhile runs `meanwhile`, then joins the thread. Returns whether the thread started.
    static func onRawThread(
        _ argument: UnsafeMutableRawPointer, _ body: RawThreadBody, meanwhile: () -> Void = {}
    ) -> Bool {
        #if canImport(Glibc)
        var thread = pthread_t()
        guard pthread_create(&thread, nil, body, argument) == 0 else { return false }
        #else
        var thread: pthread_t?
        guard pthread_create(&thread, nil, body, argument) == 0, let thread else { return false }
        #endif
        meanwhile()
        pthread_join(thread, nil)
        return true
    }

    /// Registers an observer of `Ping` whose handler alone holds an object, and returns a probe on
    /// that object.
    static func observeWithProbe(on hub: NotificationHub, into token: inout ObservationToken?) -> WeakProbe<Captured> {
        let captured = Captured()
        token = hub.observe(Ping.self) { [captured] _ in withExtendedLifetime(captured) {} }
        return WeakProbe(captured)
    }

    /// A notification whose observer posts it again, one level less, until level 0.
    struct Level: TypedNotification { let remaining: Int }

    @Test(
        "A post nested to any depth on another thread holds back no other type",
        arguments: [5, 70, 300]
    )
    func deeplyNestedPostsHoldBackNoOtherType(depth: Int) async {
        let hub = NotificationHub()
        let entered = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let deepest = Locked(0)
        let chain = hub.observe(Level.self) { level in
            if level.remaining > 0 {
                hub.post(Level(remaining: level.remaining - 1))
            } else {
                deepest.withLock { $0 += 1 }
                entered.signal()
                proceed.wait()  // `depth` + 1 sections open on this thread
            }
        }
        var token: ObservationToken?
        let probe = Self.observeWithProbe(on: hub, into: &token)

        async let post: Void = onNewThread { hub.post(Level(remaining: depth)) }
        await onNewThread { entered.wait() }
        token = nil  // cancels an observer of a type the nested posts do not read
        #expect(probe.isReleased)
        proceed.signal()
        await post
        #expect(deepest.withLock { $0 } == 1)
        #expect(token == nil)
        withExtendedLifetime(chain) {}
    }

    @Test(
        "An observer cancelled during a nested post of its type is released when that post returns, while the outer ones go on",
        arguments: [0, 3, 62, 63, 100]
    )
    func releasedWhenTheNestedPostReturns(levelsAbove: Int) async {
        let hub = NotificationHub()
        let entered = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let returned = DispatchSemaphore(value: 0)
        let finish = DispatchSemaphore(value: 0)
        let releasedAfterReturn = Locked<Bool?>(nil)
        // Level posts nest `levelsAbove` deep, then the innermost posts Ping (held in its handler);
        // once Ping's post has returned, the outermost Level handler waits before returning.
        let chain = hub.observe(Level.self) { level in
            if level.remaining > 0 {
                hub.post(Level(remaining: level.remaining - 1))
            } else {
                hub.post(Ping(value: 0))
            }
            if level.remaining == levelsAbove {
                returned.signal()
                finish.wait()
            }
        }
        let held = hub.observe(Ping.self) { _ in
            entered.signal()
            proceed.wait()
        }
        var token: ObservationToken?
        let probe = Self.observeWithProbe(on: hub, into: &token)

        async let post: Void = onNewThread { hub.post(Level(remaining: levelsAbove)) }
        await onNewThread { entered.wait() }
        token = nil  // cancels while the post of Ping may still read the list that holds it
        #expect(!probe.isReleased)
        proceed.signal()
        await onNewThread { returned.wait() }
        releasedAfterReturn.withLock { $0 = probe.isReleased }
        finish.signal()
        await post
        #expect(releasedAfterReturn.withLock { $0 } == true, "held back by the outer posts of another type")
        #expect(token == nil)
        withExtendedLifetime((chain, held)) {}
    }

    // MARK: The records themselves (CHerald), where a concurrent poll cannot mask a fault

    @Test(
        "A nested section a writer waits for asks its thread to poll when it ends, at any depth",
        arguments: [1, 3, 4, 62, 63, 64, 100]
    )
    func nestedEndAsksForAPoll(depth: Int) {
        // Addresses of our own, which no bucket shares: no other test's writer waits on them.
        let scopes = UnsafeMutableRawPointer.allocate(byteCount: depth + 1, alignment: 8)
        defer { scopes.deallocate() }
        _ = heraldReadEnd(heraldReadBegin(scopes))  // clears whatever an earlier owner left asked
        let readers = (0...depth).map { heraldReadBegin(scopes + $0) }
        let reader = readers[depth]
        var found: UInt = 0
        var id: UInt64 = 0
        #expect(heraldReaderHolds(reader, scopes + depth, &found, &id))
        #expect(found == UInt(depth))
        #expect(!heraldReaderSectionEnded(reader, found, id))
        heraldReaderWant(reader, found)
        #expect(heraldReadEnd(reader), "the awaited section ended without asking for a poll")
        #expect(heraldReaderSectionEnded(reader, found, id))
        // Depths from 63 on share one request, kept until the section at 63 ends; none is left after.
        for level in (0..<depth).reversed() {
            #expect(heraldReadEnd(readers[level]) == (depth > 63 && level >= 63), "depth \(level)")
        }
    }

    @Test("A later section at the same depth shows that the earlier one ended", arguments: [1, 5, 40])
    func laterSectionAtTheSameDepth(depth: Int) {
        let scopes = UnsafeMutableRawPointer.allocate(byteCount: depth + 2, alignment: 8)
        defer { scopes.deallocate() }
        let outer = (0..<depth).map { heraldReadBegin(scopes + $0) }
        let first = heraldReadBegin(scopes + depth)
        var found: UInt = 0
        var id: UInt64 = 0
        #expect(heraldReaderHolds(first, scopes + depth, &found, &id))
        _ = heraldReadEnd(first)  // not polled: a writer must tell from the record alone
        let second = heraldReadBegin(scopes + depth + 1)  // open again at that depth
        #expect(heraldReaderSectionEnded(second, found, id), "the same depth, another section")
        var secondID: UInt64 = 0
        #expect(heraldReaderHolds(second, scopes + depth + 1, &found, &secondID))
        #expect(secondID != id)
        #expect(!heraldReaderSectionEnded(second, found, secondID))
        _ = heraldReadEnd(second)
        for reader in outer.reversed() { _ = heraldReadEnd(reader) }
    }

    #if os(Linux)  // unnamed POSIX semaphores (sem_init) are Linux's
    @Test("What a thread held when it exited mid-section is freed by the next retire, which finds no section")
    func exitedMidSectionThenRetire() {
        struct Context {
            var entered = sem_t()
            var proceed = sem_t()
        }
        let context = UnsafeMutablePointer<Context>.allocate(capacity: 1)
        context.initialize(to: Context())
        sem_init(&context.pointee.entered, 0, 0)
        sem_init(&context.pointee.proceed, 0, 0)
        defer {
            sem_destroy(&context.pointee.entered)
            sem_destroy(&context.pointee.proceed)
            context.deallocate()
        }
        let scope = UnsafeMutableRawPointer(context)  // an address no bucket shares
        var probe: WeakProbe<ObserverList>?
        let ran = Self.onRawThread(scope, { argument in
            guard let context = UnsafeMutableRawPointer(argument)?.assumingMemoryBound(to: Context.self) else {
                return nil
            }
            _ = heraldReadBegin(argument)
            sem_post(&context.pointee.entered)
            sem_wait(&context.pointee.proceed)
            pthread_exit(nil)  // inside the section, which cannot poll
        }) {
            sem_wait(&context.pointee.entered)
            var list: ObserverList? = ObserverList(capacity: 1)
            probe = list.map(WeakProbe.init)
            Reclamation.retire(list.map { [$0] } ?? [], scope: UnsafeRawPointer(scope))
            list = nil
            #expect(probe?.isReleased == false, "the exiting thread's section is still open")
            sem_post(&context.pointee.proceed)
        }
        #expect(ran)
        let elsewhere = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
        defer { elsewhere.deallocate() }
        Reclamation.retire([ObserverList(capacity: 1)], scope: UnsafeRawPointer(elsewhere))
        #expect(probe?.isReleased == true)
    }
    #endif

    @Test("Nested posts of several types on many threads while observers come and go: every post reaches the live observers")
    func nestedChurn() async {
        let hub = NotificationHub()
        let outer = Locked(0)
        let inner = Locked(0)
        let a = hub.observe(Ping.self) { note in
            outer.withLock { $0 += 1 }
            hub.post(Other())
        }
        let b = hub.observe(Other.self) { _ in inner.withLock { $0 += 1 } }
        async let churn: Void = onNewThread {
            for _ in 0..<2_000 {
                let token = hub.observe(Other.self) { _ in }
                let pingToken = hub.observe(Ping.self) { _ in }
                token.cancel()
                pingToken.cancel()
            }
        }
        await onThreads(2) { index in
            for value in 0..<20_000 { hub.post(Ping(value: value)) }
        }
        await churn
        #expect(outer.withLock { $0 } == 40_000)
        #expect(inner.withLock { $0 } == 40_000)
        #expect(hub.observerCount(of: Ping.self) == 1)
        #expect(hub.observerCount(of: Other.self) == 1)
        withExtendedLifetime((a, b)) {}
    }
}

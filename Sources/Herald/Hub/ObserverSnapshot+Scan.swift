/// What a waiting post (`postAndWait`, or its async form) asks of the scan, and what it learns.
/// It lives on the waiting post's stack; the scan gets a pointer to it.
struct PostWait {
    /// Counts the deliveries the post waits for.
    let group: WaitGroup
    /// The caller's isolation, to tell whether it runs on an observer's target.
    let isolation: (any Actor)?
    /// Whether the caller blocks its thread; `false` when it suspends.
    let blocks: Bool
    /// The calling thread.
    let thread = currentThreadID()
    /// Whether the blocked caller has waiters up its chain (see ``Waiter/chainAbove(_:)``).
    let collectsHelp: Bool
    /// Observers whose target the blocked caller occupies: it drains them itself.
    var inline: [AnyObserver] = []
    /// Observers whose drain is offered to the waiters up the caller's chain, once the holds
    /// are released; collected only when the caller waits inside a handler that a waiter runs
    /// (`collectsHelp`), as there is nobody to offer them to otherwise.
    var help: [AnyObserver] = []
    /// The posting-thread observers' outcome (and the streams').
    var report = DeliveryReport()
    /// For an async waiting post on a hub whose main-queue executor runs its jobs only when
    /// someone runs them (``ManualMainQueueExecutor``): the executor, and the post, which the scan
    /// hands to it (``ManualMainQueueExecutor/hold(_:)``) before it enqueues the first delivery
    /// that the executor will run, so that the executor knows of the wait before its owner can see
    /// the job.
    var mainQueue: (executor: any ManualMainQueueExecutor, post: MainQueueWaitingPost)?
    /// Whether the scan handed the post of ``mainQueue`` to its executor.
    var isMainQueuePostHeld = false
}

/// The loop that runs the posting-thread observers of a fire-and-forget post, all of the post's
/// type: ``TypedDeliveryRecord/deliver(to:_:subject:)`` for that type, which ``NotificationHub/post(_:from:)``
/// passes from where it is inlined, so that the loop is compiled for the type there.
@usableFromInline
typealias PostingLoop = (UnsafeBufferPointer<Unmanaged<AnyObserver>>, UnsafeRawPointer, AnyObject?) -> Bool

extension ObserverSnapshot {
    // The scan behind every post hands the notification at `payload` to these observers:
    //
    // 1. It appends the notification to every mailbox and stream that accepts it. When there are
    //    several, each item is *held* (see `MailboxStateMachine`): no drain may take it yet.
    // 2. Once every mailbox and stream has it, it releases the holds; that is when drains are
    //    handed to their targets. So no handler can react to this post (and post an effect)
    //    before every mailbox has this post, and an effect always comes after its cause.
    // 3. Then the posting-thread observers run, in registration order.
    //
    // A waiting post drains or offers the observers it waits for only after the scan (see
    // `NotificationHub`'s waiting posts), so after the release. No lock is held while it appends,
    // releases or calls a handler; only the mailboxes' own locks for the length of an append or
    // release.

    /// The scan of a fire-and-forget post (see the steps above): `postingLoop` runs the
    /// posting-thread observers.
    ///
    /// - Returns: Whether the post reached at least one observer.
    @inline(never)  // keeps this scan out of generic callers, where it would run unspecialised
    func scan(_ payload: UnsafeRawPointer, subject: AnyObject?, postingLoop: PostingLoop) -> Bool {
        // The snapshot's buffers are read directly: `self` is alive for the length of the method.
        let reached = enqueue(to: queued, payload, subject: subject, wait: nil)
        let posting = self.posting
        guard !posting.isEmpty else { return reached }  // no call through the loop's closure
        return postingLoop(posting, payload, subject) || reached
    }

    /// The scan of a waiting post (see the steps above): it counts what the posting-thread
    /// observers did in `wait`, and what it must wait for or drain itself.
    ///
    /// - Returns: Whether the post reached at least one observer.
    @inline(never)
    func scan(_ payload: UnsafeRawPointer, subject: AnyObject?, wait: UnsafeMutablePointer<PostWait>) -> Bool {
        var reached = enqueue(to: queued, payload, subject: subject, wait: wait)
        let subjectID = subject.map(ObjectIdentifier.init)
        for observer in posting {
            observer._withUnsafeGuaranteedRef { observer in
                guard observer.accepts(subject), observer.admits(payload) else { return }
                let failure = observer.deliver(payload, subjectID: subjectID)
                // A tap sees the post, but the post neither waits for nor reports it.
                guard observer.flags & AnyObserver.Flags.isTap == 0 else { return }
                reached = true
                wait.pointee.report.deliveredCount += 1
                if let failure { wait.pointee.report.failures.append(failure) }
            }
        }
        return reached
    }

    /// Steps 1 and 2 of a scan: appends the notification to the mailboxes and streams of `queued`
    /// that accept it, held if there are several, then releases the holds.
    ///
    /// - Returns: Whether the post reached at least one of them.
    @inline(__always)
    private func enqueue(
        to queued: UnsafeBufferPointer<Unmanaged<AnyObserver>>, _ payload: UnsafeRawPointer, subject: AnyObject?,
        wait: UnsafeMutablePointer<PostWait>?
    ) -> Bool {
        let subjectID = subject.map(ObjectIdentifier.init)
        if queued.count == 1 {
            return enqueue(queued[0], payload, subject: subject, subjectID: subjectID, hold: 0, wait: wait)
        }
        var reached = false
        guard !queued.isEmpty else { return false }
        // The address of a byte on this stack frame names the post's holds: no other post running
        // at the same time has the same.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1) { token in
            let hold = UInt(bitPattern: token.baseAddress)
            for observer in queued
            where enqueue(observer, payload, subject: subject, subjectID: subjectID, hold: hold, wait: wait) {
                reached = true
            }
            for observer in queued {
                observer._withUnsafeGuaranteedRef { $0.release(hold: hold) }
            }
        }
        return reached
    }

    /// Appends the notification to one observer's mailbox or stream, if it accepts it.
    ///
    /// - Returns: Whether it was appended.
    @inline(__always)
    private func enqueue(
        _ unmanaged: Unmanaged<AnyObserver>, _ payload: UnsafeRawPointer, subject: AnyObject?,
        subjectID: ObjectIdentifier?, hold: UInt, wait: UnsafeMutablePointer<PostWait>?
    ) -> Bool {
        unmanaged._withUnsafeGuaranteedRef { observer in
            guard observer.accepts(subject) else { return false }
            let isTap = observer.flags & AnyObserver.Flags.isTap != 0
            guard let wait, !isTap else {
                // A tap sees the post, but the post is not observed for it, nor waits for it.
                return observer.enqueue(payload, subject: subject, group: nil, hold: hold) != .refused && !isTap
            }
            if observer.isStream {
                // A stream has its notification once it is buffered; nobody waits for the consumer.
                guard observer.enqueue(payload, subject: subject, group: nil, hold: hold) != .refused else {
                    return false
                }
                wait.pointee.report.deliveredCount += 1
                return true
            }
            let isCurrent = wait.pointee.blocks && observer.target.isCurrent(isolation: wait.pointee.isolation)
            if isCurrent
                && (observer.anyMailbox?.drainerThread == wait.pointee.thread
                    || observer.isAsync && observer.target.isolatesAsyncHandlers)
            {
                // A handler posting to its own mailbox, or an async handler isolated to the target
                // that this thread blocks: waiting would never end, so enqueue only.
                return observer.enqueue(payload, subject: subject, group: nil, hold: hold) != .refused
            }
            if !wait.pointee.blocks, case .main = observer.target.kind, let mainQueue = wait.pointee.mainQueue {
                mainQueue.post.add(observer)
                if !wait.pointee.isMainQueuePostHeld {
                    wait.pointee.isMainQueuePostHeld = true
                    mainQueue.executor.hold(mainQueue.post)
                }
            }
            wait.pointee.group.enter()
            switch observer.enqueue(payload, subject: subject, group: wait.pointee.group, hold: hold) {
            case .refused:
                wait.pointee.group.withdraw()
                return false
            case .dropped:
                // The mailbox policy dropped it and told the group: nothing to drain or wait for.
                return true
            case .queued:
                break
            }
            if isCurrent {
                wait.pointee.inline.append(observer)
            } else if wait.pointee.blocks {
                if wait.pointee.collectsHelp { wait.pointee.help.append(observer) }
            }
            return true
        }
    }
}

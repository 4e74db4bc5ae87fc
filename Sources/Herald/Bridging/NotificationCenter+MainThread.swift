import Foundation

/// Posting on the main thread, as the Cocoa `postNotificationOnMainThread:` category did.
extension NotificationCenter {
    /// Posts `notification` on the main queue, and by default waits until its observers have run.
    ///
    /// This is the Swift form of the old `-[NSNotificationCenter postNotificationOnMainThread:]`
    /// category, for code that still speaks `Notification`:
    ///
    /// ```swift
    /// // On a download thread:
    /// NotificationCenter.default.postOnMainThread(
    ///     Notification(name: .downloadFinished, object: nil, userInfo: ["bytes": 4096])
    /// )
    /// // The main-queue observers have run by now.
    /// ```
    ///
    /// ## Threading
    /// - Called off the main queue, it posts from the main queue, so observers registered with
    ///   `queue: nil` run there. With `waitUntilDone` (the default) it returns after they ran;
    ///   without, it returns at once, and posts made from one thread reach the main queue in order.
    /// - Called on the main queue (or the main thread), it posts inline, whatever `waitUntilDone`
    ///   says, exactly like the old category: the observers have run when it returns. "Main queue"
    ///   is recognised whichever thread drains it (`RunLoop.main`, `dispatchMain()`, an async `main`,
    ///   Swift Testing), never by `Thread.isMainThread` alone, and it never calls
    ///   `DispatchQueue.main.sync`, so it does not deadlock there.
    /// - Waiting uses Herald's waiting machinery: if the main queue is itself blocked in a Herald
    ///   wait for the caller (``DeliveryTarget/performAndWait(isolation:_:)``,
    ///   `postAndWait(_:from:)`, ``DeliveryThread/performAndWait(isolation:_:)``),
    ///   the blocked main queue runs the post, so the nested wait completes.
    /// - `Notification` is not `Sendable`: its `object` and `userInfo` may hold anything. The
    ///   parameter is `sending`, so the compiler checks that the caller hands the notification
    ///   over and does not use its contents again.
    /// - Observers registered with `queue: .main` (an `OperationQueue`) are Foundation's business:
    ///   on Linux, `post` waits for every operation of that queue, which deadlocks when it is called
    ///   on the main queue under `dispatchMain()`, an async `main` or Swift Testing. Register with
    ///   `queue: nil`: the post already happens on the main queue.
    ///
    /// ## When it can block forever
    /// With `waitUntilDone`, called off the main queue, it blocks until the main queue runs the
    /// post: forever if nothing drains the main queue, or if the main queue is blocked on something
    /// the caller holds outside Herald (a lock, a semaphore, `DispatchQueue.sync`).
    ///
    /// - Parameters:
    ///   - notification: The notification to post. It is handed over to the main queue.
    ///   - waitUntilDone: Whether to return only after the observers have run. Defaults to `true`.
    @available(*, noasync, message: "postOnMainThread may block; in async code, await its async form")
    public func postOnMainThread(_ notification: sending Notification, waitUntilDone: Bool = true) {
        if QueueIdentity.isMain {
            post(notification)
        } else if waitUntilDone {
            // The notification is handed over with the closure (`sending`): nothing shares it.
            DeliveryTarget.mainQueue.performAndWait(isolation: nil) { [self] in post(notification) }
        } else {
            postLater(HandOver(notification))
        }
    }

    /// Builds a notification and posts it on the main queue, by default waiting until its
    /// observers have run.
    ///
    /// The counterpart of the old `postNotificationOnMainThreadWithName:object:userInfo:waitUntilDone:`:
    ///
    /// ```swift
    /// NotificationCenter.default.postOnMainThread(
    ///     name: .downloadFinished, object: nil, userInfo: ["bytes": 4096], waitUntilDone: false
    /// )
    /// ```
    ///
    /// It behaves exactly like `postOnMainThread(_:waitUntilDone:)`:
    /// observers run on the main queue; on the main queue it posts inline; with `waitUntilDone` it
    /// returns after they ran.
    ///
    /// ## When it can block forever
    /// With `waitUntilDone`, called off the main queue, it blocks until the main queue runs the
    /// post: forever if nothing drains the main queue, or if the main queue is blocked on something
    /// the caller holds outside Herald.
    ///
    /// - Parameters:
    ///   - name: The notification's name.
    ///   - object: The object posting the notification, usually the sender. It is handed over.
    ///   - userInfo: Extra information for observers. It is handed over.
    ///   - waitUntilDone: Whether to return only after the observers have run. Defaults to `true`.
    @available(*, noasync, message: "postOnMainThread may block; in async code, await its async form")
    public func postOnMainThread(
        name: Notification.Name,
        object: sending Any? = nil,
        userInfo: sending [AnyHashable: Any]? = nil,
        waitUntilDone: Bool = true
    ) {
        postOnMainThread(Notification(name: name, object: object, userInfo: userInfo), waitUntilDone: waitUntilDone)
    }

    // MARK: - In async code

    /// Posts `notification` on the main queue from async code, and by default suspends until its
    /// observers have run. It never blocks a thread.
    ///
    /// Swift picks this form in async code:
    ///
    /// ```swift
    /// func finishDownload() async {
    ///     await NotificationCenter.default.postOnMainThread(
    ///         Notification(name: .downloadFinished, object: nil, userInfo: ["bytes": 4096])
    ///     )
    ///     // The main-queue observers have run by now.
    /// }
    /// ```
    ///
    /// - With `waitUntilDone` (the default) it suspends until the observers, which run on the main
    ///   queue, have run; called on the main actor, it posts inline.
    /// - Without, it returns once the post is enqueued on the main queue (called on the main actor,
    ///   once it has posted inline, like the synchronous form). Posts made from one task reach the
    ///   main queue in order.
    ///
    /// - Parameters:
    ///   - notification: The notification to post. It is handed over to the main queue.
    ///   - waitUntilDone: Whether to return only after the observers have run. Defaults to `true`.
    ///   - isolation: The caller's actor isolation; leave the default.
    public func postOnMainThread(
        _ notification: sending Notification, waitUntilDone: Bool = true,
        isolation: isolated (any Actor)? = #isolation
    ) async {
        if QueueIdentity.isMain {
            post(notification)
        } else if waitUntilDone {
            let handOver = HandOver(notification)
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                postLater(handOver) { done.resume() }
            }
        } else {
            postLater(HandOver(notification))
        }
    }

    /// Builds a notification and posts it on the main queue from async code, by default
    /// suspending until its observers have run (see ``postOnMainThread(_:waitUntilDone:isolation:)``).
    ///
    /// - Parameters:
    ///   - name: The notification's name.
    ///   - object: The object posting the notification, usually the sender. It is handed over.
    ///   - userInfo: Extra information for observers. It is handed over.
    ///   - waitUntilDone: Whether to return only after the observers have run. Defaults to `true`.
    ///   - isolation: The caller's actor isolation; leave the default.
    public func postOnMainThread(
        name: Notification.Name,
        object: sending Any? = nil,
        userInfo: sending [AnyHashable: Any]? = nil,
        waitUntilDone: Bool = true,
        isolation: isolated (any Actor)? = #isolation
    ) async {
        await postOnMainThread(
            Notification(name: name, object: object, userInfo: userInfo), waitUntilDone: waitUntilDone)
    }

    /// Posts the handed-over notification from the main queue, later, then calls `completion`.
    private func postLater(_ handOver: HandOver<Notification>, completion: @escaping @Sendable () -> Void = {}) {
        DispatchQueue.main.async { [self] in
            if let notification = handOver.take() { post(notification) }
            completion()
        }
    }
}

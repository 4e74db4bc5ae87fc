/// Retained ("sticky") notifications: the latest value of a type, kept for observers that come later.
///
/// A post made with ``NotificationHub/postAndRetain(_:from:)`` is delivered as usual and also kept as the latest value of its
/// type for its subject. An observer registered with `replayLatest: true` receives that value
/// first, on its own target, and then every later post, with no gap and no duplicate, even when
/// a post races with the registration.
///
/// ```swift
/// hub.postAndRetain(ConnectionState.online)                   // before anyone listens
///
/// let token = hub.observe(ConnectionState.self, on: .mainQueue, replayLatest: true) { state in
///     banner.show(state)                                       // .online first, then changes
/// }
/// ```
extension NotificationHub {
    // MARK: - Posting

    /// Posts a notification and keeps it as the latest value of its type for `subject`.
    ///
    /// The post is delivered exactly like ``post(_:from:)``. The value also replaces the one retained for the same subject (or for no subject), and observers
    /// registered later with `replayLatest: true` receive it first. Storing the value and choosing
    /// the observers happen atomically, so a registration that races with this post either
    /// replays this value or receives it live, never both and never neither.
    ///
    /// ```swift
    /// hub.postAndRetain(ConnectionState.online)
    /// hub.postAndRetain(DocumentState.saved, from: document)   // retained for `document`
    /// ```
    ///
    /// A retaining post that reaches no observer is not counted in ``unobservedPostCount``: it is
    /// kept, not lost. A plain ``post(_:from:)`` leaves the retained value as it is.
    ///
    /// The hub keeps the value until it is replaced, removed with
    /// ``removeRetainedValue(of:from:)``, ``removeRetainedValue(_:from:)`` or one of the
    /// `removeAllRetainedValues` methods, or the hub is deallocated. It does not retain
    /// `subject`: once the subject is deallocated its value can no longer be read or replayed, and
    /// it is discarded the next time the hub tidies up.
    ///
    /// ## Threading
    /// Same as ``post(_:from:)``: callable from any thread; posting-thread observers run before it
    /// returns, others are enqueued.
    ///
    /// - Parameters:
    ///   - notification: The notification.
    ///   - subject: The object the notification is about, or `nil`.
    /// - Complexity: O(*n*) in the observers of this type, plus amortised O(1) to retain.
    public func postAndRetain<N: TypedNotification>(_ notification: N, from subject: AnyObject? = nil) {
        // A fire-and-forget post to the observers that retaining the value chose. The value it
        // replaces is released after the post, so that what its `deinit` posts comes after it.
        let (snapshot, replaced) = core.registry.retain(notification, subject: subject)
        defer { withExtendedLifetime(replaced) {} }
        guard let snapshot else { return }
        withUnsafePointer(to: notification) { payload in
            _ = snapshot.scan(
                UnsafeRawPointer(payload), subject: subject, postingLoop: Observer<N>.deliver(to:_:subject:))
        }
    }

    // MARK: - Reading and removing

    /// The latest value of `type` retained for `subject`.
    ///
    /// ```swift
    /// if let state = hub.retainedValue(of: ConnectionState.self) { banner.show(state) }
    /// ```
    ///
    /// A value retained for a subject that has since been deallocated is never returned, even if
    /// a new object now lives at the same address.
    ///
    /// ## Threading
    /// Callable from any thread.
    ///
    /// - Parameters:
    ///   - type: The notification type.
    ///   - subject: The subject the value was retained for, or `nil` for posts without a subject.
    /// - Returns: The retained value, or `nil` if none is retained.
    /// - Complexity: O(1).
    public func retainedValue<N: TypedNotification>(of type: N.Type, from subject: AnyObject? = nil) -> N? {
        core.registry.retainedValue(of: type, subject: subject)
    }

    /// Removes the value of `type` retained for `subject`, so that later observers do not replay it.
    ///
    /// ```swift
    /// hub.removeRetainedValue(of: ConnectionState.self)
    /// ```
    ///
    /// ## Threading
    /// Callable from any thread. Deliveries already made or enqueued are not affected.
    ///
    /// - Parameters:
    ///   - type: The notification type.
    ///   - subject: The subject the value was retained for, or `nil` for posts without a subject.
    /// - Returns: The value that was removed, or `nil` if none was retained.
    /// - Complexity: O(1).
    @discardableResult
    public func removeRetainedValue<N: TypedNotification>(of type: N.Type, from subject: AnyObject? = nil) -> N? {
        core.registry.removeRetainedValue(of: type, subject: subject)
    }

    /// Removes the value retained for `subject` only if it is still equal to `value`.
    ///
    /// Use it to take back a value you retained without removing a newer one that someone else
    /// retained since, as greenrobot EventBus's `removeStickyEvent(event)` does:
    ///
    /// ```swift
    /// hub.postAndRetain(DocumentState.editing, from: document)
    /// // …
    /// hub.removeRetainedValue(DocumentState.editing, from: document)  // not if `.saved` replaced it
    /// ```
    ///
    /// Subjects match as in ``removeRetainedValue(of:from:)``: by identity, and a value retained
    /// for a subject that has since been deallocated never matches a new object at its address.
    ///
    /// `==` runs outside Herald's locks, so it may use the hub. If a retaining post for the same
    /// subject replaces the value while it is being compared, the newer value is compared in its
    /// turn: it is removed if it equals `value` too, and kept if it does not.
    ///
    /// ## Threading
    /// Callable from any thread. Deliveries already made or enqueued are not affected.
    ///
    /// - Parameters:
    ///   - value: The value to remove.
    ///   - subject: The subject the value was retained for, or `nil` for posts without a subject.
    /// - Returns: `true` if the value retained for `subject` was equal to `value` and is removed;
    ///   `false` if none was retained, or a different one, which is kept.
    /// - Complexity: O(1) and one `==`, unless concurrent retaining posts for `subject` replace
    ///   the value being compared.
    @discardableResult
    public func removeRetainedValue<N: TypedNotification & Equatable>(
        _ value: N,
        from subject: AnyObject? = nil
    ) -> Bool {
        core.registry.removeRetainedValue(of: N.self, subject: subject) { $0 == value }
    }

    /// Removes the value of `type` retained for `subject` only if `shouldRemove` says so.
    ///
    /// The predicate form of ``removeRetainedValue(_:from:)``, for a type that is not `Equatable`
    /// or whose `Equatable` conformance is isolated to the main actor (as conformances in an app
    /// module built with default main-actor isolation are):
    ///
    /// ```swift
    /// hub.removeRetainedValue(of: DocumentState.self, from: document) { $0 == .editing }
    /// ```
    ///
    /// `shouldRemove` runs on the calling thread, outside Herald's locks, with the value retained
    /// now; if a concurrent retaining post replaces that value before it is removed, it runs
    /// again with the newer one.
    ///
    /// - Parameters:
    ///   - type: The notification type.
    ///   - subject: The subject the value was retained for, or `nil` for posts without a subject.
    ///   - shouldRemove: Whether to remove the retained value it is given.
    /// - Returns: `true` if a value was removed.
    /// - Throws: What `shouldRemove` throws; nothing is removed then.
    @discardableResult
    public func removeRetainedValue<N: TypedNotification>(
        of type: N.Type,
        from subject: AnyObject? = nil,
        where shouldRemove: (N) throws -> Bool
    ) rethrows -> Bool {
        try core.registry.removeRetainedValue(of: type, subject: subject, where: shouldRemove)
    }

    /// Removes every value of `type` retained, for every subject and for no subject.
    ///
    /// ```swift
    /// hub.removeAllRetainedValues(of: DocumentState.self)
    /// ```
    ///
    /// ## Threading
    /// Callable from any thread.
    ///
    /// - Parameter type: The notification type.
    /// - Returns: The number of values removed (values of deallocated subjects are not counted).
    /// - Complexity: O(*k*) in the values retained for `type`.
    @discardableResult
    public func removeAllRetainedValues<N: TypedNotification>(of type: N.Type) -> Int {
        core.registry.removeAllRetainedValues(of: type)
    }

    /// Removes every retained value of every type, for every subject and for no subject.
    ///
    /// ```swift
    /// hub.removeAllRetainedValues()  // for example when the user signs out
    /// ```
    ///
    /// Observers stay registered; only what later observers would replay is gone.
    ///
    /// ## Threading
    /// Callable from any thread. The values are removed at once, in one step that no retaining
    /// post or replaying registration interleaves with. Deliveries already made or enqueued are
    /// not affected.
    ///
    /// - Returns: The number of values removed (values of deallocated subjects are not counted).
    /// - Complexity: O(*t* + *k*) in the notification types the hub has seen and the values
    ///   retained.
    @discardableResult
    public func removeAllRetainedValues() -> Int {
        core.registry.removeAllRetainedValues(of: nil)
    }
}

import Synchronization

/// Errors, diagnostics and introspection.
extension NotificationHub {
    // MARK: - Errors and diagnostics

    /// Receives every error thrown by a handler of this hub, with the observer's location.
    ///
    /// The default writes one line to standard error. Replace it to log or to fail a test. It is
    /// called on the thread where the handler threw, and never while Herald holds a lock.
    public var errorHandler: @Sendable (ObserverFailure) -> Void {
        get { core.environment.errorHandlerValue }
        set { core.environment.errorHandlerValue = newValue }
    }

    /// Called for every post that reached no observer, when set. `nil` by default.
    ///
    /// It is called on the posting thread.
    public var unobservedPostHandler: (@Sendable (UnobservedPost) -> Void)? {
        get { core.unobservedHandler.withLock { $0 }?.call }
        set {
            let old = core.unobservedHandler.exchange(newValue.map(StoredHandler.init(call:)))
            withExtendedLifetime(old) {}  // the old closure and its captures go here, after the lock
        }
    }

    /// The number of posts so far that reached no observer.
    public var unobservedPostCount: Int {
        core.unobservedCount.load(ordering: .relaxed)
    }

    // MARK: - Introspection

    /// The number of live observations of `type`.
    ///
    /// Observations whose owner or subject has been deallocated are ended before counting.
    ///
    /// - Parameter type: The notification type.
    /// - Returns: The number of observers a post of `type` could reach now.
    /// - Complexity: O(*n*) in the observers of this type.
    public func observerCount<N: TypedNotification>(of type: N.Type) -> Int {
        core.observers(of: type).count
    }

    /// Whether any live observation of `type` exists.
    ///
    /// - Parameter type: The notification type.
    /// - Returns: `true` if ``observerCount(of:)`` is greater than zero.
    public func hasObservers<N: TypedNotification>(of type: N.Type) -> Bool {
        observerCount(of: type) > 0
    }

    /// The live registrations for `type`: where each observer runs, where it was registered, its
    /// mailbox policy and what that policy has discarded.
    ///
    /// Use it in tests to check that a component registered on the target you expect. It is also
    /// the way to read the replaced and dropped counts of an observation made with an `owner:`,
    /// whose token the app usually discards:
    ///
    /// ```swift
    /// let dropped = hub.registrations(of: SensorReading.self).reduce(0) { $0 + $1.droppedCount }
    /// ```
    ///
    /// - Parameter type: The notification type.
    /// - Returns: One entry per live observation, posting-thread observers first, each group in
    ///   registration order.
    public func registrations<N: TypedNotification>(of type: N.Type) -> [Registration] {
        core.observers(of: type).map(Registration.init)
    }

    /// The number of live observations of the family `family` (see
    /// `observe(every:from:on:priority:bufferingPolicy:fileID:line:_:)`): those registered
    /// with this very family type, not with another protocol its types may also conform to.
    ///
    /// - Parameter family: The family, such as `(any AnalyticsEvent).self`.
    /// - Returns: The number of live observations of the family.
    public func observerCount<Family: Sendable>(every family: Family.Type) -> Int {
        core.familyObservers(key: ObjectIdentifier(family), taps: false).count
    }

    /// The live registrations of the family `family`, in registration order, like
    /// ``registrations(of:)``.
    ///
    /// - Parameter family: The family, such as `(any AnalyticsEvent).self`.
    /// - Returns: One entry per live observation registered with this very family type.
    public func registrations<Family: Sendable>(every family: Family.Type) -> [Registration] {
        core.familyObservers(key: ObjectIdentifier(family), taps: false).map(Registration.init)
    }

    /// The live taps (see `observeAll(from:on:priority:bufferingPolicy:fileID:line:_:)`),
    /// in registration order.
    ///
    /// - Returns: One entry per live tap.
    public func tapRegistrations() -> [Registration] {
        core.familyObservers(key: nil, taps: true).map(Registration.init)
    }
}

extension Registration {
    init(_ observer: AnyObserver) {
        let counts = observer.discardedCounts
        self.init(
            target: observer.target,
            fileID: observer.location.fileString,
            line: Int(observer.location.line),
            hasSubject: observer.filters?.hasSubject ?? false,
            hasOwner: observer.filters?.hasOwner ?? false,
            bufferingPolicy: observer.bufferingPolicy,
            replacedCount: counts.replaced,
            droppedCount: counts.dropped,
            priority: observer.priority
        )
    }
}

/// The handler of one observer, built once at registration.
///
/// Every way to observe with a closure (of a type, a family or every type; sync or async; on a
/// target, the main actor or an actor; with or without an owner) ends in one `Handler`: the
/// user's closure, wrapped by the adapters below (owner, main actor, actor, family cast or tap),
/// each of which exists once. A synchronous handler is called in one function,
/// ``HandlerCall/run(_:with:reportingTo:)``, which also reports what it throws; the posting-thread
/// loop, a posting-thread observer's own call, a family member's and the drain's all call it
/// (inlined). An `async` one is called in one function too, the mailbox's `call(_:with:group:for:)`.
enum Handler<Value: Sendable>: Sendable {
    case plain(@Sendable (Value) throws -> Void)
    /// An `async` handler: one call at a time, each started on a task of its own (see
    /// ``AsyncCallSlot``).
    case async(AsyncHandler<Value>)

    var isAsync: Bool {
        if case .async = self { return true }
        return false
    }

    /// The family cast and the tap: this handler, as the handler of values that `view` turns into
    /// this handler's values (a family observer's ``FamilyDelivery``, for example).
    @inline(__always)  // specialised where it is built: the view is then known to the closure
    func pullback<Source: Sendable>(_ view: @escaping @Sendable (Source) -> Value) -> Handler<Source> {
        switch self {
        case .plain(let body): .plain { try body(view($0)) }
        case .async(let handler):
            .async(AsyncHandler(body: { try await handler.body(view($0), $1) }, runsOnTarget: handler.runsOnTarget))
        }
    }
}

// MARK: - Synchronous adapters

/// The adapters that bring a user's synchronous closure to the form `(Value) throws -> Void` of a
/// ``Handler/plain(_:)`` handler. They compose: an owner's main-actor handler is
/// `Adapt.owned(by: owner, Adapt.onMainActor(handler))`.
enum Adapt {
    /// The main-actor adapter: the handler runs on the main actor, which its target (the main
    /// queue) guarantees.
    static func onMainActor<each Argument: Sendable>(
        _ handler: @escaping @MainActor @Sendable (repeat each Argument) throws -> Void
    ) -> @Sendable (repeat each Argument) throws -> Void {
        { (argument: repeat each Argument) in try MainActor.assumeIsolated { try handler(repeat each argument) } }
    }

    /// The actor adapter: the handler runs isolated to `actor`, whose executor its target is.
    static func on<A: Actor, Value: Sendable>(
        _ actor: A, _ handler: @escaping @Sendable (isolated A, Value) throws -> Void
    ) -> @Sendable (Value) throws -> Void {
        { value in try actor.assumeIsolated { actor in try handler(actor, value) } }
    }

    /// The owner adapter: the handler is given `owner`, held weakly; once it is gone, a call does
    /// nothing (and the observation ends, see ``Filters``).
    static func owned<Owner: AnyObject & Sendable, Value>(
        by owner: Owner, _ handler: @escaping @Sendable (Owner, Value) throws -> Void
    ) -> @Sendable (Value) throws -> Void {
        { [weak owner] value in
            guard let owner else { return }
            try handler(owner, value)
        }
    }
}

// MARK: - Async handlers

/// An observer's `async` handler: its body, and whether its task runs on the target's executor.
struct AsyncHandler<Value>: Sendable {
    /// The handler as the mailbox calls it: the notification, and a check that the observation is
    /// still live. The body runs the check on the handler's own isolation (the main actor, the
    /// actor, or the target's executor) right before it calls the user's handler, so a `cancel()`
    /// made there before the call starts always wins. It returns whether the user's handler was
    /// called.
    let body: @Sendable (_ value: Value, _ isLive: @escaping @Sendable () -> Bool) async throws -> Bool
    /// `false` for a handler isolated to the main actor or an actor: its task needs no executor
    /// preference, and one would make the call to the handler hop again after the check.
    let runsOnTarget: Bool
}

/// The adapters of `async` handlers: each isolation's ``AsyncHandler``, and the owner.
enum AsyncCall {
    /// A nonisolated handler: the check and the call run where the task runs, which is the
    /// target's executor (see ``TargetTaskExecutor``).
    static func nonisolated<Value>(
        _ handler: @escaping @Sendable (Value) async throws -> Void
    ) -> AsyncHandler<Value> {
        AsyncHandler(
            body: { value, isLive in
                guard isLive() else { return false }
                try await handler(value)
                return true
            }, runsOnTarget: true)
    }

    /// A main-actor handler: the check runs on the main actor, in the same job as the call.
    static func mainActor<Value: Sendable>(
        _ handler: @escaping @MainActor @Sendable (Value) async throws -> Void
    ) -> AsyncHandler<Value> {
        AsyncHandler(
            body: { @MainActor value, isLive in
                guard isLive() else { return false }
                try await handler(value)
                return true
            }, runsOnTarget: false)
    }

    /// A handler isolated to `actor`: the check runs on the actor, in the same job as the call.
    static func actor<A: Actor, Value: Sendable>(
        _ actor: A, _ handler: @escaping @Sendable (isolated A, Value) async throws -> Void
    ) -> AsyncHandler<Value> {
        AsyncHandler(body: { value, isLive in try await call(on: actor, handler, value, isLive) }, runsOnTarget: false)
    }

    private static func call<A: Actor, Value: Sendable>(
        on actor: isolated A, _ handler: @Sendable (isolated A, Value) async throws -> Void, _ value: Value,
        _ isLive: @Sendable () -> Bool
    ) async throws -> Bool {
        guard isLive() else { return false }
        try await handler(actor, value)
        return true
    }

    /// The owner adapter of a nonisolated `async` handler (see ``Adapt/owned(by:_:)``): `owner` is
    /// loaded where the call runs.
    static func owned<Owner: AnyObject & Sendable, Value>(
        by owner: Owner, _ handler: @escaping @Sendable (Owner, Value) async throws -> Void
    ) -> @Sendable (Value) async throws -> Void {
        { [weak owner] value in
            guard let owner else { return }
            try await handler(owner, value)
        }
    }

    /// The owner adapter of a main-actor `async` handler: `owner` is loaded on the main actor, so
    /// that the handler's reference, the last one perhaps, is dropped there too.
    static func owned<Owner: AnyObject & Sendable, Value: Sendable>(
        by owner: Owner, _ handler: @escaping @MainActor @Sendable (Owner, Value) async throws -> Void
    ) -> @MainActor @Sendable (Value) async throws -> Void {
        { @MainActor [weak owner] value in
            guard let owner else { return }
            try await handler(owner, value)
        }
    }
}

/// An observer's ``Handler`` behind a reference: the mailbox holds the handler of an observer whose
/// deliveries a drain runs (see ``Mailbox``).
final class HandlerBox<N: TypedNotification>: Sendable {
    let handler: Handler<N>
    /// The closure of a `.plain` handler, which a drain reads once and passes to each item's call
    /// (the mailbox's drain loop): an optional closure loads directly, where a switch
    /// over the generic `Handler` copies it through its value witnesses, and a read per item would
    /// retain and release it per item (about 15 ns per item in the async burst row).
    let plain: Plain?

    typealias Plain = @Sendable (N) throws -> Void

    init(_ handler: Handler<N>) {
        self.handler = handler
        if case .plain(let body) = handler { plain = body } else { plain = nil }
    }
}

// MARK: - The call

/// The one call of a synchronous handler.
@usableFromInline
enum HandlerCall {
    /// Calls `body` with `value` and reports what it throws through `record`
    /// (``DeliveryRecord/report(_:)``).
    ///
    /// Every call of a synchronous handler is made here: by the posting-thread loop (compiled for
    /// the notification type where `post` is inlined), a posting-thread observer's own call, a
    /// family member's, a replay, and a drain. Inlined into each, so that the hot loops pay for
    /// no call of their own.
    ///
    /// - Returns: The failure, if the handler threw; it has been reported.
    @inlinable @inline(__always)
    @discardableResult
    static func run<Value>(
        _ body: (Value) throws -> Void, with value: borrowing Value, reportingTo record: DeliveryRecord
    ) -> ObserverFailure? {
        do {
            try body(value)
            return nil
        } catch {
            return record.report(error)
        }
    }
}

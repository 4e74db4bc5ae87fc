/// What the observer of a family receives: a posted notification, as the family's type.
///
/// A family observer (see `observe(every:from:on:priority:bufferingPolicy:fileID:line:_:)`
/// and `NotificationHub.observeAll`) is an ordinary
/// observer of this type: one mailbox, one handler. What a post of a concrete type hands it is
/// converted into this value on the way in (see ``Member``).
struct FamilyDelivery<Value: Sendable>: TypedNotification {
    let value: Value
    /// The posted notification's own type.
    let type: any TypedNotification.Type
    /// The identity of the post's subject, if it had one.
    let subjectID: ObjectIdentifier?
}

/// The type-independent side of a family: which posted types belong to it, and the adapters that
/// bring their posts to a family observer.
///
/// Every family observer has one (see ``Observer/Extras/family``). The registry asks it, once per
/// concrete notification type, whether that type belongs to the family, and caches the answer in
/// the type's bucket (see ``Bucket/members``).
class AnyFamily: @unchecked Sendable {  // Immutable.
    /// The identity of the family's type (`(any AnalyticsEvent).self`, for example): the key of
    /// the cached answers.
    let key: ObjectIdentifier
    /// Whether this is a tap (see `NotificationHub.observeAll`):
    /// every type belongs to it, and its deliveries neither count as observed nor are waited for.
    let isTap: Bool
    /// For the family of one notification type, that type: its observer is an observer of the
    /// type that receives each post with its subject (see `NotificationHub.observeWithContext`),
    /// and it counts among the type's observers from its registration on.
    let onlyType: (any TypedNotification.Type)?

    init(key: ObjectIdentifier, isTap: Bool, onlyType: (any TypedNotification.Type)? = nil) {
        self.key = key
        self.isTap = isTap
        self.onlyType = onlyType
    }

    /// Whether this is the family of one notification type (``onlyType``).
    var isOneType: Bool { onlyType != nil }

    /// Whether notifications of type `N` belong to the family, decided from `sample`, one of them.
    ///
    /// Called under the registry lock: it runs the runtime's cast, never user code. (A copy of
    /// the value is made and dropped, but the poster still holds the original, so no `deinit`
    /// can run.)
    func contains<N: TypedNotification>(_ sample: UnsafeRawPointer, of type: N.Type) -> Bool { isTap }

    /// The family's name, for reports, such as `any AnalyticsEvent`.
    var name: String { "" }

    /// A new adapter that brings posts of `N` to `observer`, this family's observer, whose
    /// registration number is `sequence`.
    func member<N: TypedNotification>(of type: N.Type, for observer: AnyObserver, sequence: UInt64) -> AnyObserver {
        fatalError("AnyFamily is abstract")
    }

    /// The retained values of `buckets` that an observer of this family replays (its
    /// notifications `N` are the family's deliveries), oldest first; none for a tap.
    func replays<N: TypedNotification>(
        of type: N.Type, in buckets: ContiguousArray<Bucket>, matching filters: Filters?, after sequence: UInt64
    ) -> [RetainedValues.Replay<N>] { [] }
}

/// The family of the notifications that can be cast to `Value`: a protocol's existential (every
/// conforming type), a class (its subclasses), or `any TypedNotification` (every type, for taps).
final class FamilyOf<Value: Sendable>: AnyFamily, @unchecked Sendable {  // Immutable.
    /// The handler of a plain posting-thread family observer, which its members call straight
    /// with the cast value, rather than through a ``FamilyDelivery`` and the observer's own
    /// handler (generic code that does not know `Value`, several times slower).
    let direct: (@Sendable (Value) throws -> Void)?

    init(isTap: Bool = false, direct: (@Sendable (Value) throws -> Void)? = nil) {
        self.direct = direct
        super.init(key: ObjectIdentifier(Value.self), isTap: isTap)
    }

    /// The family of the notification type `Value` alone (see ``AnyFamily/onlyType``). Its key is
    /// not `Value`'s: the family of a class and its subclasses has that one.
    init(only type: Value.Type) where Value: TypedNotification {
        self.direct = nil
        super.init(key: ObjectIdentifier(FamilyDelivery<Value>.self), isTap: false, onlyType: type)
    }

    override func contains<N: TypedNotification>(_ sample: UnsafeRawPointer, of type: N.Type) -> Bool {
        if isOneType { return N.self == Value.self }
        return isTap || sample.assumingMemoryBound(to: N.self).pointee is Value
    }

    override var name: String {
        Value.self == (any TypedNotification).self ? "every notification" : String(describing: Value.self)
    }

    override func replays<N: TypedNotification>(
        of type: N.Type, in buckets: ContiguousArray<Bucket>, matching filters: Filters?, after sequence: UInt64
    ) -> [RetainedValues.Replay<N>] {
        guard !isTap else { return [] }
        let replays = buckets.filter { bucket in !isOneType || bucket.type == Value.self }.flatMap { bucket in
            bucket.retainedValues.replays(matching: filters, after: sequence) { value, subjectID in
                // `N` is `FamilyDelivery<Value>`.
                (value as? Value).flatMap { FamilyDelivery(value: $0, type: bucket.type, subjectID: subjectID) as? N }
            }
        }
        return replays.sorted { $0.sequence < $1.sequence }
    }

    override func member<N: TypedNotification>(
        of type: N.Type, for observer: AnyObserver, sequence: UInt64
    ) -> AnyObserver {
        Member<N, Value>(
            family: unsafeDowncast(observer, to: Observer<FamilyDelivery<Value>>.self), link: self, sequence: sequence)
    }
}

/// A family observer's member among the observers of one concrete type `N`: posts of `N` scan
/// it like any of their observers, and it converts each notification into a
/// ``FamilyDelivery`` for the family observer's mailbox or handler.
///
/// It holds nothing of its own: cancellation, filters, target, mailbox and priority are the family
/// observer's. The registry makes one per family observer and member type, and drops it when the
/// family observer's registration ends.
final class Member<N: TypedNotification, Value: Sendable>: AnyObserver, @unchecked Sendable {  // Immutable.
    /// The family observer it stands in for.
    let observer: Observer<FamilyDelivery<Value>>
    /// The family observer's registration number (see `SortKey` in Bucket.swift).
    let sequence: UInt64
    /// The family observer's family.
    let link: FamilyOf<Value>

    init(family: Observer<FamilyDelivery<Value>>, link: FamilyOf<Value>, sequence: UInt64) {
        self.observer = family
        self.link = link
        self.sequence = sequence
        // Always "filtered": `accepts` then asks the family observer whether it was cancelled
        // (see `filtersAreDead`), and the posting-thread loop never takes it for a plain observer.
        var flags = family.flags | Flags.hasFilters
        if link.isTap { flags |= Flags.isTap }
        super.init(registry: family.registry, site: family.siteAndFlags >> 8, flags: flags)
    }

    /// The notification at `payload`, as the family observer receives it; `nil` if it is not of
    /// the family after all (an instance of a subclass decided the type's membership).
    @inline(__always)
    private func delivery(_ payload: UnsafeRawPointer, subjectID: ObjectIdentifier?) -> FamilyDelivery<Value>? {
        guard let value = payload.assumingMemoryBound(to: N.self).pointee as? Value else { return nil }
        return FamilyDelivery(value: value, type: N.self, subjectID: subjectID)
    }

    override var priority: Int { observer.priority }
    override var memberSequence: UInt64 { sequence }
    override var familyObserver: AnyObserver? { observer }
    override var anyMailbox: AnyMailbox? { observer.anyMailbox }
    override var notificationTypeName: String { observer.notificationTypeName }
    override var isCancelled: Bool { observer.isCancelled }
    override var filtersAreDead: Bool { observer.isCancelled }
    override var filters: Filters? { observer.filters }
    override func cancel() { observer.cancel() }

    override func deliver(_ payload: UnsafeRawPointer, subjectID: ObjectIdentifier?) -> ObserverFailure? {
        guard let delivery = delivery(payload, subjectID: subjectID) else { return nil }
        return withUnsafePointer(to: delivery) { observer.deliver(UnsafeRawPointer($0), subjectID: subjectID) }
    }

    override func deliverIfAccepted(_ payload: UnsafeRawPointer, subject: AnyObject?) -> Bool {
        guard accepts(subject), let value = payload.assumingMemoryBound(to: N.self).pointee as? Value else {
            return false
        }
        if let direct = link.direct {
            // The posting-thread loop's form for a plain family observer: the cast value goes straight
            // to the handler, without a `FamilyDelivery` and the family cast (see ``FamilyOf/direct``).
            HandlerCall.run(direct, with: value, reportingTo: observer)
        } else {
            let subjectID = subject.map(ObjectIdentifier.init)
            let delivery = FamilyDelivery(value: value, type: N.self, subjectID: subjectID)
            _ = withUnsafePointer(to: delivery) { observer.deliver(UnsafeRawPointer($0), subjectID: subjectID) }
        }
        return flags & Flags.isTap == 0
    }

    override func admits(_ payload: UnsafeRawPointer) -> Bool {
        payload.assumingMemoryBound(to: N.self).pointee is Value
    }

    override func enqueue(
        _ payload: UnsafeRawPointer, subject: AnyObject?, group: WaitGroup?, hold: UInt
    ) -> EnqueueOutcome {
        guard let delivery = delivery(payload, subjectID: subject.map(ObjectIdentifier.init)) else { return .refused }
        return withUnsafePointer(to: delivery) {
            observer.enqueue(UnsafeRawPointer($0), subject: subject, group: group, hold: hold)
        }
    }

    override func release(hold: UInt) { observer.release(hold: hold) }
    override func drainInline() { observer.drainInline() }
}

extension PostedNotification {
    init(_ delivery: FamilyDelivery<any TypedNotification>) {
        notification = delivery.value
        type = delivery.type
        subjectID = delivery.subjectID
    }
}

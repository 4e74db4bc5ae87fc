/// The delivery record of a registration of `Notification`, typed: what the posting-thread loop
/// and the drains read of it besides the ``DeliveryRecord`` bits.
///
/// - Its synchronous posting-thread handler (``handler``), which the posting-thread loop
///   (``deliver(to:_:subject:)``) calls.
/// - Its mailbox, for a registration whose deliveries a drain runs: the mailbox keeps that
///   handler under its lock, so that cancelling releases it at once (see ``Mailbox``).
/// - What happens when its target refuses work for good: the observation ends.
///
/// The record is one object with its registration: the generic observer conforms, and stores the
/// handler next to the record's bits. A record of its own would make a registration two
/// allocations, and each post one dependent load per observer. So the loop and the mailbox's
/// methods are generic over the conforming class, and compiled for it: a drain job captures the
/// record alone, which is then its whole context, with no allocation per job, and neither names
/// the observer or the registry.
@usableFromInline
protocol TypedDeliveryRecord<Notification>: DeliveryRecord {
    associatedtype Notification: TypedNotification
    /// The handler of a synchronous posting-thread registration. Unused otherwise.
    var handler: @Sendable (Notification) throws -> Void { get }
    /// The mailbox of a registration whose deliveries a drain runs, which a drain job reads when
    /// it runs.
    var mailbox: Mailbox<Notification>? { get }
    /// The target refused a drain job and will never run work again: the observation ends.
    func targetRefused(_ error: any Error)
}

extension TypedDeliveryRecord {
    /// The posting-thread loop of a fire-and-forget post of `Notification` (a ``PostingLoop``):
    /// ``NotificationHub/post(_:from:)`` is inlined where it is called, and passes this loop, so
    /// that it is compiled there for the notification type. A plain posting-thread record's
    /// handler is called right here; any other is asked to deliver the post if its registration
    /// accepts it.
    ///
    /// The plain handlers get a copy of the notification, made once, at the first of them: the
    /// handlers then borrow that constant. Read from `payload` at each call, the notification would
    /// be copied before each (a handler may change any memory): for a notification that holds a
    /// reference, such as a `String`, a retain and a release per handler, about three quarters of
    /// the cost of a delivery. Records before the first plain one get only `payload`, so a post
    /// that no plain handler receives copies nothing.
    ///
    /// - Returns: Whether any of `records` accepted the post.
    @inlinable
    static func deliver<Record: DeliveryRecord>(
        to records: UnsafeBufferPointer<Unmanaged<Record>>, _ payload: UnsafeRawPointer, subject: AnyObject?
    ) -> Bool {
        var reached = false
        var index = 0
        let count = records.count
        // The records before the first plain one. (While loops: `for in` over a range costs witness
        // calls here.)
        while index < count, !records[index]._withUnsafeGuaranteedRef({ $0.isPlainPostingAndLive }) {
            if records[index]._withUnsafeGuaranteedRef({ $0.deliverIfAccepted(payload, subject: subject) }) {
                reached = true
            }
            index &+= 1
        }
        guard index < count else { return reached }
        // From the first plain record on, one loop for every kind: one short run of code, whose
        // cost measured the same wherever the linker placed it, where a loop of plain records
        // nested in a loop of the others moved by a fifth (see Benchmarks/Results).
        let value = payload.assumingMemoryBound(to: Notification.self).pointee
        repeat {
            records[index]._withUnsafeGuaranteedRef { record in
                if record.isPlainPostingAndLive {
                    HandlerCall.run(unsafeDowncast(record, to: Self.self).handler, with: value, reportingTo: record)
                } else {
                    _ = record.deliverIfAccepted(payload, subject: subject)
                }
            }
            index &+= 1
        } while index < count
        return true
    }
}

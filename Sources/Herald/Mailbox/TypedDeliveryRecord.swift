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
    /// - Returns: Whether any of `records` accepted the post.
    @inlinable
    static func deliver<Record: DeliveryRecord>(
        to records: UnsafeBufferPointer<Unmanaged<Record>>, _ payload: UnsafeRawPointer, subject: AnyObject?
    ) -> Bool {
        var reached = false
        var index = 0
        let count = records.count
        while index < count {  // a while loop: `for in` over a range costs witness calls here
            let accepted = records[index]._withUnsafeGuaranteedRef { record in
                guard record.isPlainPostingAndLive else {
                    return record.deliverIfAccepted(payload, subject: subject)
                }
                let typed = unsafeDowncast(record, to: Self.self)
                HandlerCall.run(
                    typed.handler, with: payload.assumingMemoryBound(to: Notification.self), reportingTo: typed)
                return true
            }
            if accepted { reached = true }
            index += 1
        }
        return reached
    }
}

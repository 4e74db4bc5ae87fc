/// What a ``NotificationSequence``'s observer and its consumers share: the ``Mailbox`` the observer
/// fills and the consumers take from, and the observation, which the sequence ends when it ends.
///
/// The mailbox is the one every observer has: a post appends to it *held* while the post still
/// reaches other mailboxes (see ``MailboxStateMachine``), so a consumer cannot react to a post
/// before every other observer has it, and the buffering policy means what it means for a
/// handler's mailbox. Its consumers take items where a handler's drains would.
final class StreamBuffer<N: TypedNotification>: Sendable {
    let mailbox: Mailbox<N>
    private let observation = Lock<(token: ObservationToken?, isFinished: Bool)>((nil, false), rank: .stream)

    init(policy: NotificationBufferingPolicy) {
        self.mailbox = Mailbox(streamPolicy: MailboxPolicy(policy))
    }

    /// The buffering policy given at registration.
    var policy: NotificationBufferingPolicy { mailbox.policy?.policy ?? .unbounded }

    /// Notifications the policy discarded: dropped, or replaced by newer ones.
    var droppedCount: Int {
        let counts = mailbox.discardedCounts
        return counts.replaced + counts.dropped
    }

    /// Keeps the observation that feeds this storage, or cancels it if the sequence already ended.
    func attach(_ token: ObservationToken) {
        let isFinished = observation.withLock { observation -> Bool in
            if !observation.isFinished { observation.token = token }
            return observation.isFinished
        }
        if isFinished { token.cancel() }
    }

    /// The next item, or `nil` once the sequence has ended. Cancelling the task ends the sequence:
    /// a task cancelled already ends it before looking (the handler runs first, at once).
    func next(isolation actor: isolated (any Actor)?) async -> N? {
        await withTaskCancellationHandler {
            await mailbox.next(isolation: actor)
        } onCancel: {
            finish()
        }
    }

    /// Ends the sequence: cancels the observation, discards what the mailbox holds, and tells
    /// every waiting consumer that the sequence has ended.
    func finish() {
        let token = observation.withLock { observation in
            observation.isFinished = true
            return observation.token.take()
        }
        mailbox.finishStream()
        token?.cancel()
    }
}

import Foundation

// Forwarding of Foundation's typed messages (`NotificationCenter.MainActorMessage` and
// `NotificationCenter.AsyncMessage`) between a hub and a center, both ways.

// MARK: - MainActorMessage

extension NotificationHub {
    /// Re-posts a `NotificationCenter`'s `MainActorMessage` posts of type `M` into this hub.
    ///
    /// Herald observes `M` on `center` with `addObserver(of:for:using:)` and posts each message
    /// here. The type must also be a ``TypedNotification``, which needs it to be `Sendable`:
    ///
    /// ```swift
    /// struct DocumentSaved: NotificationCenter.MainActorMessage, TypedNotification {
    ///     typealias Subject = Document
    ///     var pageCount: Int
    /// }
    ///
    /// let bridge = hub.forward(DocumentSaved.self, fromCenter: .default, subject: document)
    /// NotificationCenter.default.post(DocumentSaved(pageCount: 3), subject: document)
    /// // → observers of DocumentSaved in `hub` receive it, posted from `document`
    /// ```
    ///
    /// A `MainActorMessage` that is not `Sendable` cannot travel through a hub as itself, and this
    /// form does not compile for it: convert it to a notification with
    /// `forward(_:fromCenter:subject:as:fileID:line:converting:)`.
    ///
    /// ## Subjects
    /// Foundation gives a message observer the message, not the subject it was posted with. With a
    /// `subject`, Herald observes that subject's messages only and posts them with it as the hub
    /// post's subject, so that `observe(_:from:)` matches them: forward once for each subject that
    /// hub observers filter on. Without one, every message of `M` is forwarded, with no subject.
    ///
    /// ## Threading
    /// Foundation calls the observer on the main actor, synchronously inside its `post`. Herald
    /// posts into the hub there: posting-thread observers of the hub have run when the center's
    /// `post` returns, and the others are enqueued, as for any ``post(_:from:)``.
    ///
    /// ## Echoes
    /// Forwarding both ways for `M` between this hub and `center` (see
    /// `forward(_:toCenter:from:fileID:line:)`) delivers each post once on each
    /// side, as `forward(_:fromCenter:object:fileID:line:)` does for a `Notification`.
    ///
    /// - Parameters:
    ///   - type: The message type.
    ///   - center: The notification center to observe.
    ///   - subject: If not `nil`, only messages posted with this subject are forwarded, and they are
    ///     posted here with it as the subject. Held weakly.
    ///   - fileID: The file that sets up forwarding, for error reports; leave the default.
    ///   - line: The line that sets up forwarding, for error reports; leave the default.
    /// - Returns: The observation. Forwarding stops when you cancel it or let go of it.
    public func forward<M: NotificationCenter.MainActorMessage & TypedNotification>(
        _ type: M.Type,
        fromCenter center: NotificationCenter,
        subject: M.Subject? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> ObservationToken where M.Subject: AnyObject {
        forward(type, fromCenter: center, subject: subject, as: M.self, fileID: fileID, line: line) { $0 }
    }

    /// Re-posts a `NotificationCenter`'s `MainActorMessage` posts of type `M` into this hub as
    /// notifications of type `N`, converted on the main actor.
    ///
    /// Use this form for a message type that is not `Sendable` (a `MainActorMessage` need not be),
    /// or to give hub observers a type of your own:
    ///
    /// ```swift
    /// let bridge = hub.forward(SelectionChanged.self, fromCenter: .default, as: SelectionCount.self) {
    ///     message in SelectionCount(count: message.selection.count)  // on the main actor
    /// }
    /// ```
    ///
    /// A conversion that throws posts nothing. Its error goes to ``errorHandler``, as an
    /// ``ObserverFailure`` located at the `forward` call.
    ///
    /// Subjects, threading and echoes are as for
    /// `forward(_:fromCenter:subject:fileID:line:)`; the conversion runs on the
    /// main actor, inside the center's `post`. Forwarding back pairs with
    /// `forward(_:toCenter:from:as:fileID:line:converting:)` for the same two types.
    ///
    /// - Parameters:
    ///   - type: The message type.
    ///   - center: The notification center to observe.
    ///   - subject: If not `nil`, only messages posted with this subject are forwarded, and they are
    ///     posted here with it as the subject. Held weakly.
    ///   - notificationType: The notification type posted into the hub.
    ///   - fileID: The file that sets up forwarding, for error reports; leave the default.
    ///   - line: The line that sets up forwarding, for error reports; leave the default.
    ///   - convert: Makes the notification from a message, on the main actor.
    /// - Returns: The observation. Forwarding stops when you cancel it or let go of it.
    public func forward<M: NotificationCenter.MainActorMessage, N: TypedNotification>(
        _ type: M.Type,
        fromCenter center: NotificationCenter,
        subject: M.Subject? = nil,
        as notificationType: N.Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        converting convert: @escaping @MainActor (M) throws -> N
    ) -> ObservationToken where M.Subject: AnyObject {
        let link = ForwardingLink(hub: self, center: center, type: N.self, message: M.self)
        let isCancelled = CancellationFlag()
        let weakSubject = WeakSubject(subject)
        let token = center.addObserver(of: subject, for: M.self) { [weak self] message in
            guard let self, !isCancelled.isSet else { return }
            // Our own forwarding of a hub post to this center: already delivered in the hub.
            guard !ForwardingFrame.isActive(link, direction: .toCenter) else { return }
            let from = weakSubject.object
            // A new object at a dead subject's address: not the subject forwarding was set up for.
            if weakSubject.hadObject && from == nil { return }
            do {
                let value = try convert(message)
                ForwardingFrame.run(link, direction: .fromCenter) {
                    self.post(value, from: from)
                }
            } catch {
                self.reportForwardingFailure(error, of: M.self, fileID: fileID, line: line)
            }
        }
        return ObservationToken(onCancel: {
            isCancelled.set()
            center.removeObserver(token)
        })
    }

    /// Re-posts this hub's notifications of type `M` on a `NotificationCenter` as
    /// `MainActorMessage` posts, for observers registered with `addObserver(of:for:using:)`.
    ///
    /// ```swift
    /// let bridge = hub.forward(DocumentSaved.self, toCenter: .default)
    /// hub.post(DocumentSaved(pageCount: 3), from: document)  // from any thread
    /// // → NotificationCenter.default.addObserver(of: document, for: DocumentSaved.self) observers
    /// //   receive it on the main actor
    /// ```
    ///
    /// Each message is posted with its hub post's subject, which must then be an `M.Subject`; a
    /// post whose subject is another object is not forwarded, and a ``MessageSubjectMismatch`` goes
    /// to ``errorHandler``, located at the `forward` call. A post without a subject is posted
    /// without one.
    ///
    /// ## Threading
    /// Foundation posts a `MainActorMessage` on the main actor only. Herald observes `M` on the
    /// posting thread. A post made on the main queue is posted on `center` at once, so the center's
    /// observers have run when the hub's `post` returns. A post made elsewhere is posted on
    /// `center` from a main-queue block, after the posts that came before it; the subject is kept
    /// until then. Posts reach the center in the order they were made, wherever they were made;
    /// a `postAndWait(_:from:)` made off the main queue returns without waiting for the center.
    ///
    /// ## Echoes
    /// Forwarding both ways for `M` between this hub and `center` (see
    /// `forward(_:fromCenter:subject:fileID:line:)`) delivers each post once on
    /// each side.
    ///
    /// - Parameters:
    ///   - type: The message type; it must also be a ``TypedNotification``.
    ///   - center: The notification center to post on.
    ///   - subject: If not `nil`, only posts made with this subject are forwarded. Held weakly.
    ///   - fileID: The file that sets up forwarding, for error reports; leave the default.
    ///   - line: The line that sets up forwarding, for error reports; leave the default.
    /// - Returns: The observation. Forwarding stops when you cancel it or let go of it; once
    ///   ``ObservationToken/cancel()`` returns, nothing more is posted on `center`, including posts
    ///   still waiting for the main queue.
    public func forward<M: NotificationCenter.MainActorMessage & TypedNotification>(
        _ type: M.Type,
        toCenter center: NotificationCenter,
        from subject: M.Subject? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> ObservationToken where M.Subject: AnyObject {
        forward(type, toCenter: center, from: subject, as: M.self, fileID: fileID, line: line) { $0 }
    }

    /// Re-posts this hub's notifications of type `N` on a `NotificationCenter` as
    /// `MainActorMessage` posts of type `M`, converted on the main actor.
    ///
    /// Use this form for a message type that is not `Sendable`, which cannot be a
    /// ``TypedNotification``:
    ///
    /// ```swift
    /// let bridge = hub.forward(SelectionCount.self, toCenter: .default, as: SelectionChanged.self) {
    ///     note in SelectionChanged(selection: model.selection)  // on the main actor
    /// }
    /// ```
    ///
    /// A conversion that throws posts nothing; its error goes to ``errorHandler``, located at the
    /// `forward` call. Subjects, threading and echoes are as for
    /// `forward(_:toCenter:from:fileID:line:)`.
    ///
    /// - Parameters:
    ///   - type: The notification type observed in the hub.
    ///   - center: The notification center to post on.
    ///   - subject: If not `nil`, only posts made with this subject are forwarded. Held weakly.
    ///   - messageType: The message type posted on `center`.
    ///   - fileID: The file that sets up forwarding, for error reports; leave the default.
    ///   - line: The line that sets up forwarding, for error reports; leave the default.
    ///   - convert: Makes the message from a notification, on the main actor.
    /// - Returns: The observation. Forwarding stops when you cancel it or let go of it.
    public func forward<N: TypedNotification, M: NotificationCenter.MainActorMessage>(
        _ type: N.Type,
        toCenter center: NotificationCenter,
        from subject: AnyObject? = nil,
        as messageType: M.Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        converting convert: @escaping @MainActor (N) throws -> M
    ) -> ObservationToken where M.Subject: AnyObject {
        let link = ForwardingLink(hub: self, center: center, type: N.self, message: M.self)
        let isCancelled = CancellationFlag()
        let lane = MainQueueLane()
        let observation = observeWithContext(type, from: subject, on: .posting, fileID: fileID, line: line) {
            [weak self] value, subjectID in
            // A message that came from this center: its observers already have it.
            guard !ForwardingFrame.isActive(link, direction: .fromCenter) else { return }
            // Carried to the main queue only to be passed on as the message's subject: Herald never
            // calls into it.
            nonisolated(unsafe) let subject = PostingSubject.object(subjectID)
            lane.submit { [weak self] in
                guard !isCancelled.isSet else { return }
                do {
                    let message = try convert(value)
                    let typedSubject = try MessageSubjectMismatch.subject(subject, as: M.Subject.self, for: M.self)
                    ForwardingFrame.run(link, direction: .toCenter) {
                        if let typedSubject {
                            center.post(message, subject: typedSubject)
                        } else {
                            center.post(message)
                        }
                    }
                } catch {
                    self?.reportForwardingFailure(error, of: N.self, fileID: fileID, line: line)
                }
            }
        }
        return ObservationToken(onCancel: {
            isCancelled.set()
            observation.cancel()
        })
    }

    /// Refuses a `MainActorMessage` that is not a ``TypedNotification``.
    ///
    /// A hub carries `Sendable` values only, and a `MainActorMessage` need not be `Sendable`.
    @available(
        *, unavailable,
        message:
            "a hub carries Sendable values and a MainActorMessage need not be Sendable: conform the message to TypedNotification if it is Sendable, or forward it with 'as:' and a conversion to a TypedNotification"
    )
    public func forward<M: NotificationCenter.MainActorMessage>(
        _ type: M.Type,
        fromCenter center: NotificationCenter,
        subject: M.Subject? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> ObservationToken where M.Subject: AnyObject {
        fatalError("unavailable")
    }

    /// Refuses a `MainActorMessage` that is not a ``TypedNotification``.
    ///
    /// A hub carries `Sendable` values only, and a `MainActorMessage` need not be `Sendable`.
    @available(
        *, unavailable,
        message:
            "a hub carries Sendable values and a MainActorMessage need not be Sendable: conform the message to TypedNotification if it is Sendable, or forward a TypedNotification with 'as:' and a conversion to the message"
    )
    public func forward<M: NotificationCenter.MainActorMessage>(
        _ type: M.Type,
        toCenter center: NotificationCenter,
        from subject: M.Subject? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> ObservationToken where M.Subject: AnyObject {
        fatalError("unavailable")
    }
}

// MARK: - AsyncMessage

extension NotificationHub {
    /// Re-posts a `NotificationCenter`'s `AsyncMessage` posts of type `M` into this hub.
    ///
    /// Herald observes `M` on `center` with `addObserver(of:for:using:)` and posts each message
    /// here. An `AsyncMessage` is `Sendable`, so its conformance to ``TypedNotification`` is empty:
    ///
    /// ```swift
    /// struct SyncFinished: NotificationCenter.AsyncMessage, TypedNotification, Equatable {
    ///     typealias Subject = Account
    ///     var changes: Int
    /// }
    ///
    /// let bridge = hub.forward(SyncFinished.self, fromCenter: .default)
    /// NotificationCenter.default.post(SyncFinished(changes: 4), subject: account)  // from anywhere
    /// // → observers of SyncFinished in `hub` receive it
    /// ```
    ///
    /// Subjects are as for `MainActorMessage`
    /// (`forward(_:fromCenter:subject:fileID:line:)`): Foundation does not give
    /// the observer the subject, so pass `subject` to forward one subject's messages with it.
    ///
    /// ## Threading
    /// Foundation calls the observer later, on a task of its own, for each post, several at once
    /// and in no promised order. Herald posts into the hub from that task, once per message.
    ///
    /// ## Echoes
    /// Forwarding both ways for `M` between this hub and `center` (see
    /// `forward(_:toCenter:from:fileID:line:)`) delivers each post once on each
    /// side. Because Foundation delivers on its own task, this forward recognises the hub's own
    /// posts coming back by value: it skips one message equal to each one the hub forwarded. A
    /// message posted on the center that equals one the hub forwarded at the same moment may be
    /// the one skipped; the hub then receives the other, which is equal to it.
    ///
    /// - Parameters:
    ///   - type: The message type; it must also be a ``TypedNotification``.
    ///   - center: The notification center to observe.
    ///   - subject: If not `nil`, only messages posted with this subject are forwarded, and they are
    ///     posted here with it as the subject. Held weakly.
    ///   - fileID: The file that sets up forwarding, for error reports; leave the default.
    ///   - line: The line that sets up forwarding, for error reports; leave the default.
    /// - Returns: The observation. Forwarding stops when you cancel it or let go of it.
    public func forward<M: NotificationCenter.AsyncMessage & TypedNotification>(
        _ type: M.Type,
        fromCenter center: NotificationCenter,
        subject: M.Subject? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> ObservationToken where M.Subject: AnyObject {
        let link = ForwardingLink(hub: self, center: center, type: M.self, message: M.self)
        let isCancelled = CancellationFlag()
        let weakSubject = WeakSubject(subject)
        let echoes = EchoLedger<M>(subject: subject)
        let token = center.addObserver(of: subject, for: M.self) { [weak self] message in
            guard let self, !isCancelled.isSet else { return }
            // Our own forwarding of a hub post to this center: already delivered in the hub.
            guard !echoes.consume(message) else { return }
            let from = weakSubject.object
            if weakSubject.hadObject && from == nil { return }
            ForwardingFrame.run(link, direction: .fromCenter) {
                self.post(message, from: from)
            }
        }
        // After the center's registration: a hub post forwarded before it is not delivered back.
        EchoLedgers.enrol(echoes, for: link)
        return ObservationToken(onCancel: {
            isCancelled.set()
            EchoLedgers.remove(echoes, for: link)
            center.removeObserver(token)
        })
    }

    /// Re-posts this hub's notifications of type `M` on a `NotificationCenter` as `AsyncMessage`
    /// posts, for observers registered with `addObserver(of:for:using:)` and for `messages(of:for:)`.
    ///
    /// ```swift
    /// let bridge = hub.forward(SyncFinished.self, toCenter: .default)
    /// hub.post(SyncFinished(changes: 4), from: account)
    /// // → NotificationCenter.default.addObserver(of: account, for: SyncFinished.self) observers
    /// //   receive it
    /// ```
    ///
    /// Each message is posted with its hub post's subject, which must then be an `M.Subject`; a
    /// post whose subject is another object is not forwarded, and a ``MessageSubjectMismatch`` goes
    /// to ``errorHandler``, located at the `forward` call.
    ///
    /// The type must be `Equatable`: Foundation delivers an `AsyncMessage` on a task of its own, so
    /// a forward from the same center recognises the hub's own post coming back by value (see
    /// `forward(_:fromCenter:subject:fileID:line:)`).
    ///
    /// ## Threading
    /// Herald observes `M` on the posting thread and posts on `center` there, inside the hub's
    /// `post`. Foundation then calls its observers later, on tasks of its own.
    ///
    /// - Parameters:
    ///   - type: The message type; it must also be a ``TypedNotification`` and `Equatable`.
    ///   - center: The notification center to post on.
    ///   - subject: If not `nil`, only posts made with this subject are forwarded. Held weakly.
    ///   - fileID: The file that sets up forwarding, for error reports; leave the default.
    ///   - line: The line that sets up forwarding, for error reports; leave the default.
    /// - Returns: The observation. Forwarding stops when you cancel it or let go of it.
    public func forward<M: NotificationCenter.AsyncMessage & TypedNotification & Equatable>(
        _ type: M.Type,
        toCenter center: NotificationCenter,
        from subject: M.Subject? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> ObservationToken where M.Subject: AnyObject {
        let link = ForwardingLink(hub: self, center: center, type: M.self, message: M.self)
        return observeWithContext(type, from: subject, on: .posting, fileID: fileID, line: line) { message, subjectID in
            // A message that came from this center: its observers already have it.
            guard !ForwardingFrame.isActive(link, direction: .fromCenter) else { return }
            let object = PostingSubject.object(subjectID)
            let typedSubject = try MessageSubjectMismatch.subject(object, as: M.Subject.self, for: M.self)
            EchoLedgers.expect(message, for: link, subject: object)
            ForwardingFrame.run(link, direction: .toCenter) {
                if let typedSubject {
                    center.post(message, subject: typedSubject)
                } else {
                    center.post(message)
                }
            }
        }
    }

    /// Refuses an `AsyncMessage` that is not a ``TypedNotification``.
    @available(
        *, unavailable,
        message:
            "a hub carries TypedNotification values: conform the message to TypedNotification (an AsyncMessage is Sendable, so the conformance is empty)"
    )
    public func forward<M: NotificationCenter.AsyncMessage>(
        _ type: M.Type,
        fromCenter center: NotificationCenter,
        subject: M.Subject? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> ObservationToken where M.Subject: AnyObject {
        fatalError("unavailable")
    }

    /// Refuses an `AsyncMessage` that is not an `Equatable` ``TypedNotification``.
    @available(
        *, unavailable,
        message:
            "forwarding an AsyncMessage to a center needs TypedNotification and Equatable: Foundation delivers it on a task of its own, so a forward from that center recognises the hub's own post only by value"
    )
    public func forward<M: NotificationCenter.AsyncMessage>(
        _ type: M.Type,
        toCenter center: NotificationCenter,
        from subject: M.Subject? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> ObservationToken where M.Subject: AnyObject {
        fatalError("unavailable")
    }
}

/// The error reported when a hub post's subject cannot be the subject of the message it is
/// forwarded to a `NotificationCenter` as.
///
/// Foundation posts a message with a subject of the message type's `Subject` type, while a hub
/// post's subject can be any object. A forward to a center reports this error, as an
/// ``ObserverFailure`` located at the `forward` call, for a post it cannot forward:
///
/// ```swift
/// let bridge = hub.forward(DocumentSaved.self, toCenter: .default)  // Subject == Document
/// hub.post(DocumentSaved(pageCount: 3), from: window)
/// // errorHandler: DocumentSaved is posted about a Document, but the hub post's subject is a Window
/// ```
public struct MessageSubjectMismatch: Error, CustomStringConvertible, Sendable {
    /// The message type, for example `DocumentSaved`.
    public let messageType: String
    /// The message type's `Subject` type.
    public let expectedSubjectType: String
    /// The type of the hub post's subject.
    public let foundSubjectType: String

    /// For example "DocumentSaved is posted about a Document, but the hub post's subject is a Window".
    public var description: String {
        "\(messageType) is posted about a \(expectedSubjectType), but the hub post's subject is a \(foundSubjectType)"
    }
}

// MARK: - Internals

extension MessageSubjectMismatch {
    /// A hub post's subject as the `Subject` type `subject` of `message`; `nil` when there is none.
    static func subject<S, M>(_ object: AnyObject?, as subject: S.Type, for message: M.Type) throws(Self) -> S? {
        guard let object else { return nil }
        guard let typed = object as? S else {
            throw MessageSubjectMismatch(
                messageType: String(describing: message), expectedSubjectType: String(describing: subject),
                foundSubjectType: String(describing: type(of: object)))
        }
        return typed
    }
}

/// Runs work on the main actor in the order it was submitted: at once when submitted on the main
/// queue (after any work still waiting), otherwise from one main-queue block (``MainActor/perform(_:)``)
/// for all the work submitted until that block runs.
final class MainQueueLane: Sendable {
    /// The work not run yet. Whenever there is some, a drain is due: a main-queue block scheduled
    /// by the submission that found nothing waiting, or the main-queue submission that added it.
    private let waiting = Lock<[@MainActor @Sendable () -> Void]>([], rank: .mainQueueLane)

    func submit(_ work: @escaping @MainActor @Sendable () -> Void) {
        let isFirst = waiting.withLock { waiting in
            waiting.append(work)
            return waiting.count == 1
        }
        if QueueIdentity.isMain {
            // Work submitted earlier from other threads goes first: a post that happened before
            // this one reaches the center before it. A main-queue block already scheduled finds
            // nothing left, or only work submitted after this.
            MainActor.assumeIsolated { drain() }
        } else if isFirst {
            MainActor.perform { self.drain() }
        }
    }

    @MainActor
    private func drain() {
        for work in waiting.exchange([]) { work() }
    }
}

/// The hub posts that forwards to a center made of one `AsyncMessage` type, which one forward from
/// that center will receive back on Foundation's own task and must not post into the hub again.
final class EchoLedger<M: Sendable>: Sendable {
    /// One expected message; a reference, so that `consume(_:)` removes the entry it matched.
    private final class Entry: Sendable {
        let matches: @Sendable (M) -> Bool

        init(_ matches: @escaping @Sendable (M) -> Bool) {
            self.matches = matches
        }
    }

    private let entries = Lock<[Entry]>([], rank: .echoLedger)
    private let subject: WeakSubject

    init(subject: AnyObject?) {
        self.subject = WeakSubject(subject)
    }

    /// Whether a message posted with `postSubject` reaches this forward's center observer.
    func receives(_ postSubject: AnyObject?) -> Bool {
        guard subject.hadObject else { return true }
        return subject.object.map { $0 === postSubject } ?? false
    }

    /// Records that a message for which `matches` holds will come back once.
    func expect(_ matches: @escaping @Sendable (M) -> Bool) {
        entries.withLock { $0.append(Entry(matches)) }
    }

    /// Whether `message` is one that was expected back; if so, it is expected no more.
    ///
    /// The comparison is user code, so it runs on a copy of the entries, outside the lock.
    func consume(_ message: M) -> Bool {
        while true {
            let copy = entries.withLock { $0 }
            guard let match = copy.first(where: { $0.matches(message) }) else { return false }
            let removed = entries.withLock { entries in
                entries.firstIndex { $0 === match }.map { entries.remove(at: $0) }
            }
            // Another delivery took that entry in the meantime: look again.
            if removed != nil { return true }
        }
    }
}

/// The forwards from centers that expect echoes, by link.
enum EchoLedgers {
    private static let registry = Lock<[ForwardingLink: [any AnyObject & Sendable]]>([:], rank: .echoLedgers)

    static func enrol<M: Sendable>(_ ledger: EchoLedger<M>, for link: ForwardingLink) {
        registry.withLock { $0[link, default: []].append(ledger) }
    }

    /// The caller still holds `ledger`, so neither it nor the messages it holds are released under
    /// the lock.
    static func remove<M: Sendable>(_ ledger: EchoLedger<M>, for link: ForwardingLink) {
        registry.withLock { registry in
            registry[link]?.removeAll { $0 === ledger }
            if registry[link]?.isEmpty == true { registry[link] = nil }
        }
    }

    /// Tells each forward from the center on `link` that receives a post with `subject` to expect
    /// `message` back once.
    static func expect<M: Equatable & Sendable>(_ message: M, for link: ForwardingLink, subject: AnyObject?) {
        let ledgers = registry.withLock { registry in registry[link] ?? [] }
        for entry in ledgers {
            guard let ledger = entry as? EchoLedger<M>, ledger.receives(subject) else { continue }
            ledger.expect { $0 == message }
        }
    }
}

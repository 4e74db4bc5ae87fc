import Foundation

extension NotificationHub {
    /// Re-posts a `NotificationCenter`'s notifications of type `N` into this hub as typed values.
    ///
    /// Herald observes ``NotificationConvertible/notificationName`` on `center`, converts each
    /// notification with ``NotificationConvertible/init(notification:)``, and posts the value here.
    /// The notification's `object`, when it is a class instance, becomes the post's subject, so
    /// that observers registered with `from:` match it.
    ///
    /// ```swift
    /// let bridge = hub.forward(UserCreated.self, fromCenter: .default)
    /// // legacy code, unchanged:
    /// NotificationCenter.default.post(
    ///     name: UserCreated.notificationName, object: nil, userInfo: ["userID": 7, "status": 201])
    /// // → observers of UserCreated in `hub` receive UserCreated(userID: 7, status: 201)
    /// ```
    ///
    /// A notification that does not convert is not posted. Its ``UserInfoDecodingError`` goes to
    /// ``errorHandler``, as an ``ObserverFailure`` located at the `forward` call.
    ///
    /// ## Threading
    /// Conversion and the hub post run synchronously on the thread that posts to `center`, inside
    /// its `post`: posting-thread observers of the hub run before the center's `post` returns.
    /// The `Notification` never leaves that thread; only the `Sendable` value does.
    ///
    /// ## Echoes
    /// Forwarding both ways for the same type between this hub and `center` (see
    /// ``forward(_:toCenter:from:fileID:line:)-(N.Type,_,_,_,_)``) delivers each post exactly once on each side. While
    /// Herald is posting into the hub a notification that came from `center`, the hub's forwarding
    /// to that same center ignores posts of `N` made on that thread, and the other way round.
    /// Consequently, a post of the same type made synchronously by an observer *during* a forwarded
    /// delivery reaches its own side only and is not bridged.
    ///
    /// - Parameters:
    ///   - type: The notification type; it declares the name and the conversion.
    ///   - center: The notification center to observe.
    ///   - object: If not `nil`, only notifications posted with this object are forwarded, as with
    ///     `NotificationCenter.addObserver(forName:object:queue:using:)`.
    ///   - fileID: The file that sets up forwarding, for error reports; leave the default.
    ///   - line: The line that sets up forwarding, for error reports; leave the default.
    /// - Returns: The observation. Forwarding stops when you cancel it or let go of it; once
    ///   ``ObservationToken/cancel()`` returns, no further notification is forwarded. The center holds
    ///   the hub weakly.
    public func forward<N: NotificationConvertible>(
        _ type: N.Type,
        fromCenter center: NotificationCenter,
        object: AnyObject? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> ObservationToken {
        let link = ForwardingLink(hub: self, center: center, type: type)
        let isCancelled = CancellationFlag()
        // Only handed back to `removeObserver`, which is thread-safe. ``ObservationToken`` removes it
        // at most once, which matters on Linux, where a second `removeObserver` can remove a newer
        // observer that reused the token.
        nonisolated(unsafe) let token = center.addObserver(forName: N.notificationName, object: object, queue: nil) {
            [weak self] notification in
            guard let self, !isCancelled.isSet else { return }
            // Our own forwarding of a hub post to this center: already delivered in the hub.
            guard !ForwardingFrame.isActive(link, direction: .toCenter) else { return }
            do {
                let value = try N(notification: notification)
                // A class instance becomes the post's subject, matched by identity.
                let subject = notification.object.flatMap { Swift.type(of: $0) is AnyClass ? $0 as AnyObject : nil }
                ForwardingFrame.run(link, direction: .fromCenter) {
                    self.post(value, from: subject)
                }
            } catch {
                self.reportForwardingFailure(error, of: N.self, fileID: fileID, line: line)
            }
        }
        return ObservationToken {
            isCancelled.set()
            center.removeObserver(token)
        }
    }

    /// Re-posts this hub's notifications of type `N` on a `NotificationCenter`, for legacy observers.
    ///
    /// Herald observes `N` on the posting thread, converts each value with
    /// ``NotificationConvertible/makeNotification(object:)``, and posts the `Notification` on
    /// `center`. The post's subject becomes the notification's `object` (`nil` when the post had
    /// none), so legacy observers that filter on an object receive the posts about it:
    ///
    /// ```swift
    /// let bridge = hub.forward(UserCreated.self, toCenter: .default)
    /// hub.post(UserCreated(userID: 7, status: 201), from: session)
    /// // → legacy observers of UserCreated.notificationName with object nil or `session` receive
    /// //   userInfo ["userID": 7, "status": 201], with `session` as the object
    /// ```
    ///
    /// A value that does not convert is not posted; the error goes to ``errorHandler``, located at
    /// the `forward` call.
    ///
    /// ## Threading
    /// Conversion and the center's `post` run synchronously on the thread that posts to the hub,
    /// as a posting-thread observer: legacy observers registered with `queue: nil` have run when
    /// the hub's `post` returns.
    ///
    /// ## Echoes
    /// Forwarding both ways for the same type delivers each post once per side; see
    /// ``forward(_:fromCenter:object:fileID:line:)``.
    ///
    /// - Parameters:
    ///   - type: The notification type; it declares the name and the conversion.
    ///   - center: The notification center to post on.
    ///   - subject: If not `nil`, only posts made with this subject are forwarded. Held weakly, as
    ///     by `observe(_:from:)`. Either way, each notification's `object` is its post's subject,
    ///     which Herald does not keep after the center's `post` returns.
    ///   - fileID: The file that sets up forwarding, for error reports; leave the default.
    ///   - line: The line that sets up forwarding, for error reports; leave the default.
    /// - Returns: The observation. Forwarding stops when you cancel it or let go of it.
    public func forward<N: NotificationConvertible>(
        _ type: N.Type,
        toCenter center: NotificationCenter,
        from subject: AnyObject? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> ObservationToken {
        let link = ForwardingLink(hub: self, center: center, type: type)
        return observeWithContext(type, from: subject, on: .posting, fileID: fileID, line: line) { value, subjectID in
            // A notification that came from this center: its observers already have it.
            guard !ForwardingFrame.isActive(link, direction: .fromCenter) else { return }
            let notification = try value.makeNotification(object: PostingSubject.object(subjectID))
            ForwardingFrame.run(link, direction: .toCenter) {
                center.post(notification)
            }
        }
    }
}

// MARK: - Internals

extension NotificationHub {
    /// Reports `error`, which the forward of `type` set up at `fileID`:`line` ran into, to
    /// ``errorHandler``, as an ``ObserverFailure`` located at the `forward` call.
    func reportForwardingFailure(_ error: any Error, of type: any Any.Type, fileID: StaticString, line: UInt) {
        let failure = ObserverFailure(
            error: error, notificationType: String(describing: type), fileID: "\(fileID)", line: Int(line))
        core.environment.report(failure)
    }
}

/// Identifies one bridge between a hub and a center for one notification type, and for the
/// Foundation message type it is posted as on the center, if any.
struct ForwardingLink: Hashable, Sendable {
    let hub: ObjectIdentifier
    let center: ObjectIdentifier
    let type: ObjectIdentifier
    let message: ObjectIdentifier?

    init(hub: NotificationHub, center: NotificationCenter, type: any Any.Type, message: (any Any.Type)? = nil) {
        self.hub = ObjectIdentifier(hub)
        self.center = ObjectIdentifier(center)
        self.type = ObjectIdentifier(type)
        self.message = message.map(ObjectIdentifier.init)
    }
}

/// The forwarding deliveries running on the current thread, innermost first.
///
/// A thread-local stack rather than a marker in the user info, so that legacy observers see exactly
/// the user info that the type encodes. Both directions forward synchronously (a `queue: nil`
/// center observer, a `.posting` hub observer), so an echo always arrives on the thread, and
/// inside the call, that caused it.
final class ForwardingFrame: Sendable {
    enum Direction: Sendable {
        /// Posting into the hub a notification that came from the center.
        case fromCenter
        /// Posting on the center a notification that came from the hub.
        case toCenter
    }

    let link: ForwardingLink
    let direction: Direction
    let parent: ForwardingFrame?

    private init(link: ForwardingLink, direction: Direction, parent: ForwardingFrame?) {
        self.link = link
        self.direction = direction
        self.parent = parent
    }

    private static let current = ThreadLocalSlot<ForwardingFrame>()

    static func run(_ link: ForwardingLink, direction: Direction, _ body: () -> Void) {
        let frame = ForwardingFrame(link: link, direction: direction, parent: current.current)
        current.withValue(frame, body)
    }

    static func isActive(_ link: ForwardingLink, direction: Direction) -> Bool {
        guard let innermost = current.current else { return false }
        return sequence(first: innermost, next: \.parent).contains { $0.link == link && $0.direction == direction }
    }
}

/// A subject held weakly, remembering whether there was one.
final class WeakSubject: @unchecked Sendable {  // Written only in init; weak loads are atomic.
    private(set) weak var object: AnyObject?
    let hadObject: Bool

    init(_ object: AnyObject?) {
        self.object = object
        self.hadObject = object != nil
    }
}

/// The subject of the post that a posting-thread observer is handling, from its identity.
///
/// The hub passes an observer only the subject's `ObjectIdentifier`, because it never keeps a
/// subject. A ``DeliveryTarget/posting`` observer registered without replay runs inside `post`,
/// `postAndWait` or `deliver`, on the poster's stack, while the caller's argument keeps the subject
/// alive: only there does the identity still name a live object. Bridging calls this from such
/// observers only, to hand the subject on to a `NotificationCenter` in the same call.
enum PostingSubject {
    /// The live subject whose identity is `id`; `nil` when the post had no subject.
    ///
    /// - Precondition: Called from a posting-thread observer, during the post it is handling.
    static func object(_ id: ObjectIdentifier?) -> AnyObject? {
        guard let id, let address = UnsafeRawPointer(bitPattern: UInt(bitPattern: id)) else { return nil }
        return Unmanaged<AnyObject>.fromOpaque(address).takeUnretainedValue()
    }
}

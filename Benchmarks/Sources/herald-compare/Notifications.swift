import Foundation
import Herald

/// The payload of the synchronous scenarios.
struct Ping: TypedNotification {
    let value: Int
}

extension NotificationHub {
    /// Registers the posting-thread observer of `Ping` whose deliveries the synchronous scenarios
    /// time: it adds each value to `sink`, as the direct closure calls it is compared with do.
    ///
    /// Declared once, in a file with no closure like it. The optimiser merges identical functions
    /// of a source file: of this handler written out in three scenarios, it kept one body and made
    /// the other two thunks that call it (a call and a return, not a jump: a throwing function type
    /// cannot be tail-called), so two of those rows timed a call more per delivery than Herald
    /// makes, and than the direct calls beside them. Not inlined, so that the closure's forwarder
    /// too is compiled here alone.
    @inline(never)
    func observePings(into sink: Sink) -> ObservationToken {
        observe(Ping.self) { note in sink.add(note.value) }
    }
}

/// The payload of the asynchronous scenarios: a sequence number, to check order.
struct Tick: TypedNotification {
    let sequence: Int
}

extension Notification.Name {
    static let ping = Notification.Name("herald.compare.ping")
    static let tick = Notification.Name("herald.compare.tick")
}

/// The subject type of Foundation's typed messages; never instantiated as a subject here.
final class MessageSubject: Sendable {}

/// Foundation's typed main-actor message (SF-0011), the peer of a synchronous Herald post.
@available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *)
struct PingMessage: NotificationCenter.MainActorMessage {
    typealias Subject = MessageSubject
    let value: Int
}

/// Foundation's typed asynchronous message (SF-0011), the peer of an asynchronous Herald post.
@available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *)
struct TickMessage: NotificationCenter.AsyncMessage {
    typealias Subject = MessageSubject
    let sequence: Int
}

/// Tick delivered on the main actor by Foundation's typed main-actor message.
@available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *)
struct MainTickMessage: NotificationCenter.MainActorMessage {
    typealias Subject = MessageSubject
    let sequence: Int
}

/// Whether Foundation's typed messages (SF-0011) exist on this platform.
var typedMessagesAvailable: Bool {
    if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) { return true }
    return false
}

let typedMessagesMissing = "n/a on this toolchain"

// MARK: - Many distinct types

// "10,000 observers of other types" needs 10,000 distinct notification types. Each is a nesting of
// two generic wrappers that spells a number in binary, such as `One<Zero<One<Root>>>`, so the
// types exist only at run time and share no code with `Ping`.

struct OtherRoot: TypedNotification {}
struct Zero<T>: TypedNotification {}
struct One<T>: TypedNotification {}

@available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *)
struct MessageZero<T>: NotificationCenter.MainActorMessage {
    typealias Subject = MessageSubject
}

@available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *)
struct MessageOne<T>: NotificationCenter.MainActorMessage {
    typealias Subject = MessageSubject
}

/// `count` distinct notification types.
func distinctNotificationTypes(count: Int) -> [any TypedNotification.Type] {
    var bits = 0
    while 1 << bits < count { bits += 1 }
    var types: [any TypedNotification.Type] = []
    func walk<T: TypedNotification>(_ type: T.Type, depth: Int, number: Int) {
        if depth == bits {
            if number < count { types.append(type) }
            return
        }
        walk(Zero<T>.self, depth: depth + 1, number: number << 1)
        walk(One<T>.self, depth: depth + 1, number: (number << 1) | 1)
    }
    walk(OtherRoot.self, depth: 0, number: 0)
    return types
}

/// Registers one observer for each of `count` distinct main-actor message types.
@available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *)
@MainActor
func observeOtherMessageTypes(
    count: Int, on center: NotificationCenter, sink: Sink
) -> [NotificationCenter.ObservationToken] {
    var bits = 0
    while 1 << bits < count { bits += 1 }
    var tokens: [NotificationCenter.ObservationToken] = []
    func walk<T: NotificationCenter.MainActorMessage>(_ type: T.Type, depth: Int, number: Int)
    where T.Subject == MessageSubject {
        if depth == bits {
            if number < count { tokens.append(center.addObserver(for: type) { _ in sink.add(1) }) }
            return
        }
        walk(MessageZero<T>.self, depth: depth + 1, number: number << 1)
        walk(MessageOne<T>.self, depth: depth + 1, number: (number << 1) | 1)
    }
    walk(PingMessage.self, depth: 0, number: 0)
    return tokens
}

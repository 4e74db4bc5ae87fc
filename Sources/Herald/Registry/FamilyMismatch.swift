/// The error reported when `observe(every:)`, `observeAll`-style recorders or
/// `notifications(every:)` are given a type that no posted notification can ever be cast to.
///
/// A family is a protocol's existential (such as `(any AnalyticsEvent).self`) or a class (to
/// observe every notification, use `observeAll`). A struct, an enum, a tuple, a function or a metatype that does
/// not itself conform to ``TypedNotification`` has no subtypes, so no post can reach it: such a
/// registration is refused. Nothing is registered (``NotificationHub/observerCount(every:)``
/// stays 0), the returned observation is already cancelled, and this error goes to the hub's
/// ``NotificationHub/errorHandler`` in an ``ObserverFailure`` that names the registration site.
/// Under HeraldTesting, the test fails at the next check of the hub.
public struct FamilyMismatch: Error, Sendable, Hashable, CustomStringConvertible {
    /// The type given as the family, such as `String`.
    public let family: String
    /// What kind of type it is, such as "a struct".
    public let kind: String

    public var description: String {
        "observe(every: \(family).self) can never receive a notification: expected a protocol's existential "
            + "(such as (any AnalyticsEvent).self) or a class; found \(family), "
            + "\(kind) that does not conform to TypedNotification. Nothing was registered"
    }

    /// The mismatch of `type`, or `nil` if a posted notification can be cast to it.
    static func of<Family>(_ type: Family.Type) -> FamilyMismatch? {
        // The kind is one load; the conformance check, a runtime look-up, runs only for the kinds
        // that can be refused (a protocol's existential, the common family, never reaches it).
        guard let kind = kindWithoutSubtypes(type), !(type is any TypedNotification.Type) else { return nil }
        return FamilyMismatch(family: String(describing: type), kind: kind)
    }
}

/// What kind of type `type` is, such as "a struct", if it is a kind of type that has no
/// subtypes; `nil` for a protocol's existential or a class.
///
/// The first word of a type's metadata is its kind, a value fixed by the Swift ABI
/// (`swift/ABI/MetadataKind.def`): 0x200 and up for value types, 0x300 and up for the runtime's
/// own kinds; a class's first word is 0 or a pointer. Reading it is the one way to tell a struct
/// from a protocol's existential without an instance.
private func kindWithoutSubtypes(_ type: Any.Type) -> String? {
    // `Any.Type` is a pointer to the type's metadata, whose first word is always readable.
    switch unsafeBitCast(type, to: UnsafeRawPointer.self).load(as: Int.self) {
    case 0x200: "a struct"
    case 0x201: "an enum"
    case 0x301: "a tuple"
    case 0x302: "a function type"
    case 0x304, 0x306: "a metatype"  // a metatype, an existential metatype
    default: nil
    }
}

/// A registration refused for a ``FamilyMismatch``, kept for HeraldTesting's checks.
@_spi(Testing)
public struct RegistrationMisuse: Sendable, Equatable {
    public let mismatch: FamilyMismatch
    public let fileID: String
    public let line: Int

    /// The failure message a test reports.
    public var message: String { "\(mismatch) (registered at \(fileID):\(line))" }
}

extension ObservationToken {
    /// An observation that has already ended, for a refused registration.
    static func refused() -> ObservationToken {
        let token = ObservationToken(onCancel: {})
        token.cancel()
        return token
    }
}

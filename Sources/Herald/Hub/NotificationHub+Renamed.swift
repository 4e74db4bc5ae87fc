import Foundation

// Names that Herald used before 1.0. They are unavailable: each one exists only so that the
// compiler's error names the current spelling and offers it as a fix-it.

extension NotificationHub {
    /// Renamed: in `async` code, `await hub.postAndWait(_:from:)`.
    @available(*, unavailable, renamed: "postAndWait(_:from:)")
    public func deliver<N: TypedNotification>(
        _ notification: N, from subject: AnyObject? = nil
    ) async
        -> DeliveryReport
    {
        fatalError("unavailable")
    }

    /// Renamed: `postAndRetain(_:from:)` retains; `post(_:from:)` does not.
    @available(*, unavailable, message: "use postAndRetain(_:from:) to retain, or post(_:from:) not to")
    public func post<N: TypedNotification>(_ notification: N, from subject: AnyObject? = nil, retain: Bool) {
        fatalError("unavailable")
    }

    /// Renamed: `forward(_:fromCenter:object:)`.
    @available(*, unavailable, renamed: "forward(_:fromCenter:object:)")
    public func forward<N: NotificationConvertible>(
        _ type: N.Type,
        from center: NotificationCenter,
        object: AnyObject? = nil
    ) -> ObservationToken {
        fatalError("unavailable")
    }

    /// Renamed: `forward(_:toCenter:from:)`.
    @available(*, unavailable, renamed: "forward(_:toCenter:from:)")
    public func forward<N: NotificationConvertible>(
        _ type: N.Type,
        to center: NotificationCenter,
        from subject: AnyObject? = nil
    ) -> ObservationToken {
        fatalError("unavailable")
    }
}

extension DeliveryTarget {
    /// A ``DeliveryThread``: deliveries and work run on that thread, in order.
    ///
    /// ```swift
    /// let network = DeliveryThread(name: "network")
    /// hub.observe(Outgoing.self, on: .thread(network)) { note in socket.send(note.frame) }
    /// DeliveryTarget.thread(network).perform { socket.flush() }
    /// ```
    ///
    /// After the thread is shut down, a notification for an observer on it ends that observation:
    /// the ``DeliveryThreadError`` goes to the hub's ``NotificationHub/errorHandler``, and
    /// `postAndWait(_:from:)` returns with the failure in its report.
    /// ``perform(_:)`` calls are rejected and reported to the thread's `rejectionHandler`.
    /// ``performAndWait(isolation:_:)`` through the target cannot throw that error, so it waits
    /// forever; use ``DeliveryThread/performAndWait(isolation:_:)``, which throws.
    ///
    /// - Parameter thread: The thread to run on.
    /// - Returns: A target that runs work on `thread`. The target keeps the thread alive.
    public static func thread(_ thread: DeliveryThread) -> DeliveryTarget {
        DeliveryTarget(kind: .thread(thread))
    }
}

extension DeliveryThread: SerialThread {}

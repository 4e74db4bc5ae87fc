/// The error for work that a ``DeliveryThread`` rejected because it was shut down.
///
/// ```swift
/// do {
///     try network.performAndWait { socket.flush() }
/// } catch let error as DeliveryThreadError where error.code == .shutDown {
///     print(error)   // DeliveryThread 'network' rejected work: expected a running thread, found it shut down
/// }
/// ```
///
/// ``DeliveryThread/performAndWait(isolation:_:)`` throws it; every other rejection goes to the
/// thread's `rejectionHandler`.
public struct DeliveryThreadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong; compare it with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String

        /// Work was submitted after ``DeliveryThread/shutdown()``.
        public static let shutDown = Code(name: "shutDown")

        /// Work submitted with ``DeliveryThread/perform(after:_:)`` was still waiting for its delay
        /// when the thread was shut down.
        public static let shutDownBeforeDelayEnded = Code(name: "shutDownBeforeDelayEnded")

        /// The code's name, such as `shutDown`.
        public var description: String { name }
    }

    /// What went wrong.
    public let code: Code
    /// The name of the thread that rejected the work.
    public let threadName: String

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: What went wrong.
    ///   - threadName: The name of the thread that rejected the work.
    public init(code: Code, threadName: String) {
        self.code = code
        self.threadName = threadName
    }

    /// A message that names the thread, what was expected and what was found.
    public var description: String {
        switch code {
        case .shutDownBeforeDelayEnded:
            return "DeliveryThread '\(threadName)' rejected work scheduled with perform(after:): "
                + "expected the thread to be running when the delay ended, found it shut down first"
        default:
            return "DeliveryThread '\(threadName)' rejected work: expected a running thread, found it shut down"
        }
    }
}

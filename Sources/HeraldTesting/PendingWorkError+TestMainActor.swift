import Herald

/// The spellings that `PendingWorkError` had while Herald named its test kit's main actor: a wait
/// that only the test can end is one for a manual executor, of which ``TestMainActor`` is one.
extension PendingWorkError {
    /// The wait could only end once the test ran the jobs of its ``TestMainActor``.
    ///
    /// - Parameters:
    ///   - standIn: The ``TestMainActor``'s description.
    ///   - pending: The deliveries that wait for it.
    /// - Returns: The error.
    @available(*, deprecated, renamed: "waitsForManualExecutor(_:pending:)")
    public static func waitsForStandIn(_ standIn: String, pending: [PendingDelivery]) -> PendingWorkError {
        .waitsForManualExecutor(standIn, pending: pending)
    }

    /// Whether the wait ended at once because only the test could run what it waited for.
    @available(*, deprecated, renamed: "waitsForManualExecutor")
    public var waitsForStandIn: Bool {
        waitsForManualExecutor
    }
}

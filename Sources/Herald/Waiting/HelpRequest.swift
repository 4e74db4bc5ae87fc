/// Work that must run on a given target, offered to blocked waiters that may occupy it.
struct HelpRequest: Sendable {
    let target: DeliveryTarget
    let work: @Sendable () -> Void
}

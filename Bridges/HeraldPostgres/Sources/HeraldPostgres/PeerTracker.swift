import DequeModule
import Foundation

/// What a link knows of the senders it hears, and what it decides for each notification they send:
/// deliver it or refuse it, and what to report.
///
/// A sender is an origin and an *incarnation* (one run of a link: a random id and a start time).
/// Each incarnation numbers its notifications 1, 2, 3…, so:
///
/// - a process that restarts with the same fixed origin is a new incarnation: its numbers start
///   again without being taken for replays, and the change is reported with the last sequence heard
///   from the previous incarnation (``Event/restarted(previous:lastSequence:current:)``);
/// - two processes running with the same origin are two incarnations heard at once: neither is
///   refused, and the clash is reported once per pair (``Event/clash(_:_:)``), by them too, since
///   each hears the other under its own origin;
/// - the first notification heard from an incarnation that started after this link did, numbered
///   n > 1, is reported as a gap of 1…n−1 (they were sent while this link was not listening). Start
///   times are by the database server's clock (see ``Incarnation/started``), so hosts' clocks need
///   not agree.
///
/// Envelopes of earlier releases carry no incarnation; their origin is one sequence space.
///
/// With a signing key (or for envelopes without incarnation), a number at or below the last one
/// accepted is refused as a replay. Without a key the channel is trusted and anyone who can
/// `NOTIFY` could forge a number, so no number may silence a sender: a notification is refused only
/// as a copy of one recently delivered (the same number *and* the same message bytes), and a number
/// below the last one is delivered and reported (``Event/regression(lastAccepted:found:)``).
///
/// A pure state machine: ``LinkCore`` keeps one under its lock and reports its events.
struct PeerTracker {
    /// What the tracker found about one notification.
    enum Event: Equatable {
        case gap(expected: UInt64, found: UInt64)
        case duplicate(lastAccepted: UInt64, found: UInt64)
        case regression(lastAccepted: UInt64, found: UInt64)
        case restarted(previous: Incarnation, lastSequence: UInt64, current: Incarnation)
        case clash(Incarnation, Incarnation)
    }

    private struct Key: Hashable {
        let origin: UUID
        let incarnation: Incarnation?
    }

    /// The notifications recently delivered from one sender, by sequence and message digest.
    struct RecentDeliveries {
        struct Entry: Hashable {
            let sequence: UInt64
            let digest: Int
        }

        /// More than a `NOTIFY` holds, so that a message sent again after a reconnection is found.
        static let capacity = 1_024

        private var order = Deque<Entry>()
        private var entries = Set<Entry>()

        func contains(_ entry: Entry) -> Bool { entries.contains(entry) }

        mutating func insert(_ entry: Entry) {
            guard entries.insert(entry).inserted else { return }
            order.append(entry)
            if order.count > Self.capacity, let oldest = order.popFirst() { entries.remove(oldest) }
        }
    }

    /// One sender's sequence space.
    private struct Stream {
        var last: UInt64
        /// Without a key, for senders with an incarnation: what was delivered lately.
        var recent: RecentDeliveries?

        mutating func check(_ sequence: UInt64, digest: Int, events: inout [Event]) -> Bool {
            let entry = RecentDeliveries.Entry(sequence: sequence, digest: digest)
            if recent != nil {
                if recent?.contains(entry) == true {
                    events.append(.duplicate(lastAccepted: last, found: sequence))
                    return false
                }
                if sequence <= last { events.append(.regression(lastAccepted: last, found: sequence)) }
                recent?.insert(entry)
            } else if sequence <= last {
                events.append(.duplicate(lastAccepted: last, found: sequence))
                return false
            }
            if sequence > last, sequence - last > 1 { events.append(.gap(expected: last + 1, found: sequence)) }
            last = sequence
            return true
        }
    }

    /// How many incarnations of one origin are remembered; the oldest heard is forgotten first.
    static let incarnationsPerOrigin = 8

    let origin: UUID
    let incarnation: Incarnation
    /// Whether envelopes are signed: then every number at or below the last one is a replay.
    let isSigned: Bool

    private var streams: [Key: Stream] = [:]
    /// The latest-started incarnation heard from each origin.
    private var newest: [UUID: Incarnation] = [:]
    /// The incarnations heard from each origin, in the order first heard.
    private var incarnations: [UUID: [Incarnation]] = [:]
    /// The pairs of incarnations of one origin already reported as clashing.
    private var clashes: Set<Set<Incarnation>> = []

    /// A tracker for the link of `origin` and `incarnation`, which began listening when that
    /// incarnation started.
    init(origin: UUID, incarnation: Incarnation, isSigned: Bool) {
        self.origin = origin
        self.incarnation = incarnation
        self.isSigned = isSigned
    }

    /// Checks one notification: whether to deliver it, with what to report appended to `events`.
    ///
    /// - Parameters:
    ///   - digest: A hash of the bytes of the message that holds the notification; it tells a copy
    ///     of a message from another one with the same numbers.
    mutating func check(
        origin: UUID, incarnation: Incarnation?, sequence: UInt64, digest: Int, events: inout [Event]
    ) -> Bool {
        let key = Key(origin: origin, incarnation: incarnation)
        let isNew = streams[key] == nil
        if let incarnation { note(incarnation, of: origin, isNew: isNew, events: &events) }
        if !isNew, let verdict = streams[key]?.check(sequence, digest: digest, events: &events) {
            return verdict
        }
        if sequence > 1, let incarnation, incarnation.started > self.incarnation.started {
            events.append(.gap(expected: 1, found: sequence))
        }
        var stream = Stream(last: sequence, recent: isSigned || incarnation == nil ? nil : RecentDeliveries())
        stream.recent?.insert(RecentDeliveries.Entry(sequence: sequence, digest: digest))
        streams[key] = stream
        return true
    }

    /// Notes an incarnation heard from `origin`: a restart when it is a new, later one; a clash when
    /// two are heard in turn, or when it is another incarnation of this link's own origin.
    private mutating func note(_ heard: Incarnation, of origin: UUID, isNew: Bool, events: inout [Event]) {
        if origin == self.origin, heard != incarnation { noteClash(incarnation, heard, events: &events) }
        if isNew { remember(heard, of: origin) }
        guard let newest = newest[origin] else {
            newest[origin] = heard
            return
        }
        guard newest != heard else { return }
        if isNew, heard.started >= newest.started, origin != self.origin {
            let last = streams[Key(origin: origin, incarnation: newest)]?.last ?? 0
            events.append(.restarted(previous: newest, lastSequence: last, current: heard))
        } else {
            noteClash(newest, heard, events: &events)
        }
        if heard.started >= newest.started { self.newest[origin] = heard }
    }

    private mutating func noteClash(_ first: Incarnation, _ second: Incarnation, events: inout [Event]) {
        if clashFound(first, second) { events.append(.clash(first, second)) }
    }

    /// Records that two incarnations of one origin run at once, found otherwise (a
    /// ``Event/restarted(previous:lastSequence:current:)`` whose previous incarnation still runs);
    /// returns `false` if that pair was reported already.
    mutating func clashFound(_ first: Incarnation, _ second: Incarnation) -> Bool {
        if clashes.count >= 1_024 { clashes.removeAll() }
        return clashes.insert([first, second]).inserted
    }

    private mutating func remember(_ incarnation: Incarnation, of origin: UUID) {
        var heard = incarnations[origin, default: []]
        heard.append(incarnation)
        if heard.count > Self.incarnationsPerOrigin {
            let forgotten = heard.removeFirst()
            streams[Key(origin: origin, incarnation: forgotten)] = nil
        }
        incarnations[origin] = heard
    }
}

import Dispatch
import Foundation
import Herald
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A notification that says which thread posted it, and its number among that thread's posts.
protocol SequencedPost: TypedNotification {
    var poster: Int { get }
    var sequence: Int { get }
}

struct MemberPostA: SequencedPost {
    let poster: Int
    let sequence: Int
}

struct MemberPostB: SequencedPost {
    let poster: Int
    let sequence: Int
}

/// A notification type that can be made without arguments, so that many of them can be posted
/// through their metatypes.
protocol FillerNotification: TypedNotification {
    init()
}

// Many distinct types: each is a nesting of two generic wrappers that spells a number in binary,
// such as `FillerOne<FillerZero<FillerRoot>>`.
struct FillerRoot: FillerNotification {}
struct FillerZero<T>: FillerNotification {}
struct FillerOne<T>: FillerNotification {}

/// `count` distinct notification types, none of them a ``SequencedPost``.
func fillerTypes(count: Int) -> [any FillerNotification.Type] {
    var bits = 0
    while 1 << bits < count { bits += 1 }
    var types: [any FillerNotification.Type] = []
    func walk<T: FillerNotification>(_ type: T.Type, depth: Int, number: Int) {
        if depth == bits {
            if number < count { types.append(type) }
            return
        }
        walk(FillerZero<T>.self, depth: depth + 1, number: number << 1)
        walk(FillerOne<T>.self, depth: depth + 1, number: (number << 1) | 1)
    }
    walk(FillerRoot.self, depth: 0, number: 0)
    return types
}

@Suite("Family registration: visible to every member type at once")
struct FamilyRegistrationAtomicityTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case family, tap
        var testDescription: String { rawValue }
    }

    enum Place: String, CaseIterable, CustomTestStringConvertible {
        case postingThread, serialQueue
        var testDescription: String { rawValue }
    }

    static let posters = 3
    /// Posts each poster makes before the observer registers.
    static let postsBefore = 300
    /// Posts each poster makes after it saw that the registration returned.
    static let postsAfter = 1_000
    static let rounds = 5
    /// Types the hub has seen besides the two members: the registration has that many more entries
    /// to go through.
    static let fillers = fillerTypes(count: 1_000)

    @Test(
        "While a family observer or a tap registers, each posting thread's posts reach it from the first one it receives, with no hole across member types",
        .timeLimit(.minutes(5)),
        arguments: Kind.allCases, Place.allCases
    )
    func noHoleAcrossMemberTypes(kind: Kind, place: Place) async {
        for round in 0..<Self.rounds {
            await Self.round(round, kind: kind, place: place)
        }
    }

    /// One round: a fresh hub, posters that alternate the two member types, and an observer that
    /// registers while they post.
    static func round(_ round: Int, kind: Kind, place: Place) async {
        let hub = NotificationHub()
        for type in fillers { hub.post(type.init()) }
        let queue = DispatchQueue(label: "FamilyRegistrationAtomicityTests.observer")
        let target: DeliveryTarget = place == .postingThread ? .posting : .queue(queue)
        let received = (0..<posters).map { _ in Locked<[Int]>([]) }
        let record: @Sendable (any SequencedPost) -> Void = { post in
            received[post.poster].withLock { $0.append(post.sequence) }
        }
        let progress = Atomic<Int>(0)
        let registered = Atomic<Bool>(false)
        let token = Locked<ObservationToken?>(nil)
        let lastPosted = Locked<[Int]>(Array(repeating: -1, count: posters))

        await onThreads(posters + 1) { index in
            guard index < posters else {
                // The registering thread: waits until every poster is under way.
                while progress.load(ordering: .relaxed) < posters { sched_yield() }
                let observation: ObservationToken
                switch kind {
                case .family:
                    observation = hub.observe(every: (any SequencedPost).self, on: target) { post in record(post) }
                case .tap:
                    observation = hub.observeAll(on: target) { posted in
                        if let post = posted.notification as? any SequencedPost { record(post) }
                    }
                }
                token.withLock { $0 = observation }
                registered.store(true, ordering: .releasing)
                return
            }
            var sequence = 0
            var stopAt = Int.max
            while sequence < stopAt {
                if sequence % 2 == 0 {
                    hub.post(MemberPostA(poster: index, sequence: sequence))
                } else {
                    hub.post(MemberPostB(poster: index, sequence: sequence))
                }
                sequence += 1
                if sequence == postsBefore { progress.add(1, ordering: .relaxed) }
                if stopAt == .max && registered.load(ordering: .acquiring) { stopAt = sequence + postsAfter }
            }
            lastPosted.withLock { $0[index] = sequence - 1 }
        }
        if place == .serialQueue {
            do {
                try await hub.waitUntilIdle(timeout: asyncPatience)  // every delivery has run
            } catch {
                Issue.record("round \(round): deliveries still pending: \(error)")
            }
        }
        token.withLock { $0 }?.cancel()

        let last = lastPosted.withLock { $0 }
        for poster in 0..<posters {
            let sequences = received[poster].withLock { $0 }
            guard let first = sequences.first else {
                Issue.record("round \(round), poster \(poster): received none of its posts")
                continue
            }
            let expected = Array(first...last[poster])
            if sequences != expected {
                let missing = Set(expected).subtracting(sequences).sorted()
                Issue.record(
                    """
                    round \(round), poster \(poster): received \(sequences.count) of its posts \(first)…\(last[poster]); \
                    \(missing.count) missing, the first \(missing.first.map(String.init) ?? "none")
                    """)
            }
        }
    }
}

import Foundation
import Herald
import OpenCombine

/// Synchronous delivery: the observers run inside the post, on the posting thread.
///
/// Every handler adds the payload to the same `Sink`, so the work per delivery is the same for
/// every contender and cannot be optimised away.
@MainActor
struct SyncScenarios {
    let settings: Settings
    let sink = Sink()

    // MARK: One observer

    struct OneObserverResult {
        var section: Section
        var heraldMallocsPerPost: Double?
        var heraldNanoseconds: Double?
        var foundationNanoseconds: Double?
        var foundationUserInfoNanoseconds: Double?
        var directNanoseconds: Double?
    }

    func oneObserver() -> OneObserverResult {
        let sink = self.sink
        var keep: [AnyObject] = []

        // A direct call of a closure the optimiser cannot see into.
        let direct: @Sendable (Ping) -> Void = opaque({ @Sendable note in sink.add(note.value) })

        let hub = NotificationHub()
        keep.append(hub.observePings(into: sink))
        keep.append(hub)

        let center = NotificationCenter()
        keep.append(center.addObserver(forName: .ping, object: nil, queue: nil) { @Sendable _ in sink.add(1) })
        let infoCenter = NotificationCenter()
        keep.append(
            infoCenter.addObserver(forName: .ping, object: nil, queue: nil) { @Sendable note in
                sink.add(note.userInfo?["value"] as? Int ?? 0)
            })

        let subject = PassthroughSubject<Ping, Never>()
        keep.append(subject.sink { @Sendable note in sink.add(note.value) } as AnyCancellable)

        let heraldRun: (Int) -> Void = { n in for i in 0..<n { hub.post(Ping(value: i)) } }
        let foundationRun: (Int) -> Void = { n in for _ in 0..<n { center.post(name: .ping, object: nil) } }

        var contenders = [
            SyncContender("direct closure call") { n in for i in 0..<n { direct(Ping(value: i)) } },
            SyncContender("Herald post", run: heraldRun),
            SyncContender("NotificationCenter.post, userInfo nil", run: foundationRun),
            SyncContender("NotificationCenter.post, 1-entry userInfo") { n in
                for i in 0..<n { infoCenter.post(name: .ping, object: nil, userInfo: ["value": i]) }
            },
        ]
        contenders.append(mainActorMessageContender(observers: 1, keep: &keep))
        contenders.append(
            SyncContender("OpenCombine PassthroughSubject.send") { n in
                for i in 0..<n { subject.send(Ping(value: i)) }
            })

        let medians = measureInterleaved(contenders, settings: settings)
        var rows: [Row] = []
        var heraldMallocs: Double?
        for (index, contender) in contenders.enumerated() {
            var row = Row(contender: contender.name, value: medians[index], unavailable: contender.unavailable)
            row.isHerald = contender.name == "Herald post"
            if contender.unavailable == nil, let mallocs = mallocsPerOperation(10_000, contender.run) {
                row.notes.append("\(formatNumber(mallocs)) mallocs/post")
                if row.isHerald { heraldMallocs = mallocs }
            }
            rows.append(row)
        }
        withExtendedLifetime(keep) {}
        return OneObserverResult(
            section: Section(title: "Synchronous post, 1 observer", metric: "ns/post", rows: rows),
            heraldMallocsPerPost: heraldMallocs,
            heraldNanoseconds: medians[1],
            foundationNanoseconds: medians[2],
            foundationUserInfoNanoseconds: medians[3],
            directNanoseconds: medians[0]
        )
    }

    /// A `MainActorMessage` post to `observers` observers, or "n/a" where the API does not exist.
    private func mainActorMessageContender(observers: Int, keep: inout [AnyObject]) -> SyncContender {
        let name = "NotificationCenter MainActorMessage post"
        guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else {
            return SyncContender(name, unavailable: typedMessagesMissing)
        }
        let sink = self.sink
        let center = NotificationCenter()
        keep.append(center)
        var tokens: [NotificationCenter.ObservationToken] = []
        for _ in 0..<observers {
            tokens.append(center.addObserver(for: PingMessage.self) { message in sink.add(message.value) })
        }
        let box = TokenBox(tokens)
        keep.append(box)
        return SyncContender(name) { n in
            for i in 0..<n { center.post(PingMessage(value: i)) }
        }
    }

    // MARK: Many observers

    struct ManyObserversResult {
        var section: Section
        /// ns per post (not per delivery) for Herald, Foundation and direct calls.
        var heraldPost: Double?
        var foundationPost: Double?
        var directPost: Double?
        var directPerCall: Double?
    }

    func manyObservers(_ count: Int) -> ManyObserversResult {
        let sink = self.sink
        var keep: [AnyObject] = []

        let directs = DirectHandlers(count: count, sink: sink)

        let hub = NotificationHub()
        keep.append(hub)
        for _ in 0..<count { keep.append(hub.observePings(into: sink)) }

        let center = NotificationCenter()
        keep.append(center)
        for _ in 0..<count {
            keep.append(center.addObserver(forName: .ping, object: nil, queue: nil) { @Sendable _ in sink.add(1) })
        }

        let subject = PassthroughSubject<Ping, Never>()
        for _ in 0..<count { keep.append(subject.sink { @Sendable note in sink.add(note.value) } as AnyCancellable) }

        var contenders = [
            SyncContender("direct closure calls (contiguous, no ARC)") { n in
                for i in 0..<n { directs.callAll(Ping(value: i)) }
            },
            SyncContender("Herald post") { n in for i in 0..<n { hub.post(Ping(value: i)) } },
            SyncContender("NotificationCenter.post, userInfo nil") { n in
                for _ in 0..<n { center.post(name: .ping, object: nil) }
            },
        ]
        contenders.append(mainActorMessageContender(observers: count, keep: &keep))
        contenders.append(
            SyncContender("OpenCombine PassthroughSubject.send") { n in
                for i in 0..<n { subject.send(Ping(value: i)) }
            })

        let medians = measureInterleaved(contenders, settings: settings)
        let rows = contenders.enumerated().map { index, contender in
            var row = Row(
                contender: contender.name, value: medians[index].map { $0 / Double(count) },
                unavailable: contender.unavailable)
            row.isHerald = index == 1
            if let post = medians[index] { row.notes.append("\(formatNumber(post)) ns/post") }
            return row
        }
        withExtendedLifetime((keep, directs)) {}
        return ManyObserversResult(
            section: Section(
                title: "Synchronous post, \(count.formatted) observers", metric: "ns/delivery", rows: rows),
            heraldPost: medians[1], foundationPost: medians[2], directPost: medians[0],
            directPerCall: medians[0].map { $0 / Double(count) }
        )
    }

    // MARK: Observers of other types

    struct OtherTypesResult {
        var section: Section
        var heraldBaseline: Double?
        var heraldCrowded: Double?
    }

    func otherTypes(_ others: Int) -> OtherTypesResult {
        let sink = self.sink
        var keep: [AnyObject] = []

        func heraldHub(others: Int) -> NotificationHub {
            let hub = NotificationHub()
            keep.append(hub)
            keep.append(hub.observePings(into: sink))
            for type in distinctNotificationTypes(count: others) {
                keep.append(observeAny(hub, type, sink: sink))
            }
            return hub
        }

        func foundationCenter(others: Int) -> NotificationCenter {
            let center = NotificationCenter()
            keep.append(center)
            keep.append(center.addObserver(forName: .ping, object: nil, queue: nil) { @Sendable _ in sink.add(1) })
            for index in 0..<others {
                keep.append(
                    center.addObserver(
                        forName: Notification.Name("herald.compare.other.\(index)"), object: nil, queue: nil
                    ) {
                        @Sendable _ in sink.add(1)
                    })
            }
            return center
        }

        // Herald is measured on 4 hubs of each kind, and each figure is the mean of their medians:
        // at about 8 ns a post, where one hub's objects happen to lie in memory moves the figure
        // by up to ±10%, which is the very margin this scenario checks.
        let hubsPerKind = 4
        let quietHubs = (0..<hubsPerKind).map { _ in heraldHub(others: 0) }
        let crowdedHubs = (0..<hubsPerKind).map { _ in heraldHub(others: others) }
        let quietCenter = foundationCenter(others: 0)
        let crowdedCenter = foundationCenter(others: others)

        var heraldContenders: [SyncContender] = []
        for hub in quietHubs {
            heraldContenders.append(
                SyncContender("Herald post, 1 observer") { n in
                    for i in 0..<n { hub.post(Ping(value: i)) }
                })
        }
        for hub in crowdedHubs {
            heraldContenders.append(
                SyncContender("Herald post, + \(others.formatted) of other types") { n in
                    for i in 0..<n { hub.post(Ping(value: i)) }
                })
        }
        var contenders = [
            SyncContender("NotificationCenter.post, 1 observer") { n in
                for _ in 0..<n { quietCenter.post(name: .ping, object: nil) }
            },
            SyncContender("NotificationCenter.post, + \(others.formatted) of other names") { n in
                for _ in 0..<n { crowdedCenter.post(name: .ping, object: nil) }
            },
        ]
        contenders += mainActorMessageCrowdContenders(others: others, keep: &keep)

        let measured = measureInterleaved(heraldContenders + contenders, settings: settings)
        func mean(_ values: ArraySlice<Double?>) -> Double? {
            let known = values.compactMap { $0 }
            return known.count == values.count ? known.reduce(0, +) / Double(known.count) : nil
        }
        let medians =
            [mean(measured[0..<hubsPerKind]), mean(measured[hubsPerKind..<2 * hubsPerKind])]
            + measured[(2 * hubsPerKind)...]
        contenders =
            [
                heraldContenders[0],
                heraldContenders[hubsPerKind],
            ] + contenders
        var rows: [Row] = []
        for (index, contender) in contenders.enumerated() {
            var row = Row(contender: contender.name, value: medians[index], unavailable: contender.unavailable)
            row.isHerald = index == 1
            if index < 2 { row.notes.append("mean of \(hubsPerKind) hubs") }
            if index % 2 == 1, let crowded = medians[index], let quiet = medians[index - 1] {
                row.notes.append(String(format: "%+.1f%% vs 1 observer", (crowded / quiet - 1) * 100))
            }
            rows.append(row)
        }
        withExtendedLifetime(keep) {}
        return OtherTypesResult(
            section: Section(
                title: "1 observer + \(others.formatted) observers of other types or names", metric: "ns/post",
                rows: rows),
            heraldBaseline: medians[0], heraldCrowded: medians[1]
        )
    }

    private func mainActorMessageCrowdContenders(others: Int, keep: inout [AnyObject]) -> [SyncContender] {
        let quietName = "MainActorMessage post, 1 observer"
        let crowdedName = "MainActorMessage post, + \(others.formatted) of other types"
        guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else {
            return [
                SyncContender(quietName, unavailable: typedMessagesMissing),
                SyncContender(crowdedName, unavailable: typedMessagesMissing),
            ]
        }
        let sink = self.sink
        var tokens: [NotificationCenter.ObservationToken] = []
        func makeCenter(others: Int) -> NotificationCenter {
            let center = NotificationCenter()
            tokens.append(center.addObserver(for: PingMessage.self) { message in sink.add(message.value) })
            tokens += observeOtherMessageTypes(count: others, on: center, sink: sink)
            return center
        }
        let quiet = makeCenter(others: 0)
        let crowded = makeCenter(others: others)
        keep += [quiet, crowded, TokenBox(tokens)]
        return [
            SyncContender(quietName) { n in for i in 0..<n { quiet.post(PingMessage(value: i)) } },
            SyncContender(crowdedName) { n in for i in 0..<n { crowded.post(PingMessage(value: i)) } },
        ]
    }
}

/// Registers a posting-thread observer for a type known only at run time.
private func observeAny<N: TypedNotification>(_ hub: NotificationHub, _ type: N.Type, sink: Sink) -> ObservationToken {
    hub.observe(type) { _ in sink.add(1) }
}

/// The physical limit of "call every handler": a contiguous array of handlers, each a specialised
/// `(Ping) -> Void` closure held in a `let` of a final class, called through an unretained
/// reference, so that a call costs the indirect call and nothing else (no reference counting),
/// as in a hub's scan.
///
/// A plain `[(Ping) -> Void]` loop is no such limit: an array stores its closures at the most
/// general abstraction, so each call goes through a reabstraction thunk, and the loop retains and
/// releases each closure's context around its call: 3 to 8 times the cost of this loop, and
/// slower than a hub's delivery.
final class DirectHandlers {
    final class Handler {
        let call: @Sendable (Ping) -> Void
        init(_ call: @escaping @Sendable (Ping) -> Void) { self.call = call }
    }

    private let handlers: ContiguousArray<Unmanaged<Handler>>

    init(count: Int, sink: Sink) {
        handlers = ContiguousArray((0..<count).map { _ in Unmanaged.passRetained(Handler(makeHandler(sink))) })
    }

    deinit {
        for handler in handlers { handler.release() }
    }

    @inline(__always)
    func callAll(_ note: Ping) {
        handlers.withUnsafeBufferPointer { handlers in
            for handler in handlers { handler._withUnsafeGuaranteedRef { $0.call(note) } }
        }
    }
}

/// A handler the optimizer cannot see into from the timing loop; not generic, so the closure
/// keeps its natural (specialised) calling convention.
@inline(never)
private func makeHandler(_ sink: Sink) -> @Sendable (Ping) -> Void {
    { note in sink.add(note.value) }
}

/// Keeps Foundation's observation tokens (structs) alive as an object.
final class TokenBox<T> {
    let tokens: [T]
    init(_ tokens: [T]) { self.tokens = tokens }
}

extension Int {
    /// 10000 as "10,000".
    var formatted: String { String(self).groupedThousands }
}

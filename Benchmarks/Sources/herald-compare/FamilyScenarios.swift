import Foundation
import Herald

/// Protocols that the posted `Ping` does not conform to: their observers must cost its posts
/// nothing.
protocol UnrelatedFamily0: TypedNotification {}
protocol UnrelatedFamily1: TypedNotification {}
protocol UnrelatedFamily2: TypedNotification {}
protocol UnrelatedFamily3: TypedNotification {}
protocol UnrelatedFamily4: TypedNotification {}
protocol UnrelatedFamily5: TypedNotification {}
protocol UnrelatedFamily6: TypedNotification {}
protocol UnrelatedFamily7: TypedNotification {}
protocol UnrelatedFamily8: TypedNotification {}
protocol UnrelatedFamily9: TypedNotification {}

/// The protocol of the family-delivery row; `Pong` conforms.
protocol ValueCarrying: TypedNotification {
    var value: Int { get }
}

/// `Ping`'s twin, posted to a protocol observer.
struct Pong: ValueCarrying {
    let value: Int
}

/// Observers of protocols (`observe(every:)`), side by side with observers of one type.
@MainActor
struct FamilyScenarios {
    let settings: Settings
    let sink = Sink()

    struct UnrelatedResult {
        var section: Section
        var baseline: Double?
        var withFamilies: Double?
    }

    /// A post to 1 concrete observer on hubs with no protocol observers and with 10 of unrelated
    /// protocols, each the mean of 4 hubs (see `SyncScenarios.otherTypes`).
    func unrelatedFamilies() -> UnrelatedResult {
        let sink = self.sink
        var keep: [AnyObject] = []
        func hub(withFamilies: Bool) -> NotificationHub {
            let hub = NotificationHub()
            keep.append(hub)
            keep.append(hub.observePings(into: sink))
            if withFamilies {
                keep += [
                    hub.observe(every: (any UnrelatedFamily0).self) { _ in sink.add(1) },
                    hub.observe(every: (any UnrelatedFamily1).self) { _ in sink.add(1) },
                    hub.observe(every: (any UnrelatedFamily2).self) { _ in sink.add(1) },
                    hub.observe(every: (any UnrelatedFamily3).self) { _ in sink.add(1) },
                    hub.observe(every: (any UnrelatedFamily4).self) { _ in sink.add(1) },
                    hub.observe(every: (any UnrelatedFamily5).self) { _ in sink.add(1) },
                    hub.observe(every: (any UnrelatedFamily6).self) { _ in sink.add(1) },
                    hub.observe(every: (any UnrelatedFamily7).self) { _ in sink.add(1) },
                    hub.observe(every: (any UnrelatedFamily8).self) { _ in sink.add(1) },
                    hub.observe(every: (any UnrelatedFamily9).self) { _ in sink.add(1) },
                ]
            }
            return hub
        }
        let hubsPerKind = 4
        let plain = (0..<hubsPerKind).map { _ in hub(withFamilies: false) }
        let crowded = (0..<hubsPerKind).map { _ in hub(withFamilies: true) }
        let contenders =
            plain.map { hub in
                SyncContender("Herald post, 1 observer") { n in for i in 0..<n { hub.post(Ping(value: i)) } }
            }
            + crowded.map { hub in
                SyncContender("Herald post, 1 observer + 10 of unrelated protocols") { n in
                    for i in 0..<n { hub.post(Ping(value: i)) }
                }
            }
        let measured = measureInterleaved(contenders, settings: settings)
        func mean(_ values: ArraySlice<Double?>) -> Double? {
            let known = values.compactMap { $0 }
            return known.count == values.count ? known.reduce(0, +) / Double(known.count) : nil
        }
        let baseline = mean(measured[0..<hubsPerKind])
        let withFamilies = mean(measured[hubsPerKind...])
        var first = Row(contender: contenders[0].name, value: baseline)
        first.isHerald = true
        first.notes.append("mean of \(hubsPerKind) hubs")
        var second = Row(contender: contenders[hubsPerKind].name, value: withFamilies)
        second.isHerald = true
        second.notes.append("mean of \(hubsPerKind) hubs")
        if let baseline, let withFamilies {
            second.notes.append(String(format: "%+.1f%% vs no protocol observers", (withFamilies / baseline - 1) * 100))
        }
        withExtendedLifetime(keep) {}
        return UnrelatedResult(
            section: Section(
                title: "1 observer, with 0 and with 10 observers of unrelated protocols", metric: "ns/post",
                rows: [first, second]),
            baseline: baseline, withFamilies: withFamilies)
    }

    struct DeliveryResult {
        var section: Section
        var concrete: Double?
        var family: Double?
    }

    /// One post reaching one observer: of its type, of a protocol it conforms to, and a tap; with
    /// NotificationCenter for scale.
    func familyDelivery() -> DeliveryResult {
        let sink = self.sink
        var keep: [AnyObject] = []
        let concreteHub = NotificationHub()
        keep.append(concreteHub.observe(Pong.self) { note in sink.add(note.value) })
        let familyHub = NotificationHub()
        keep.append(familyHub.observe(every: (any ValueCarrying).self) { note in sink.add(note.value) })
        let tapHub = NotificationHub()
        keep.append(tapHub.observeAll { posted in sink.add((posted.notification as? Pong)?.value ?? 0) })
        let center = NotificationCenter()
        keep.append(center.addObserver(forName: .ping, object: nil, queue: nil) { @Sendable _ in sink.add(1) })
        keep += [concreteHub, familyHub, tapHub, center]
        let contenders = [
            SyncContender("Herald post, 1 observer of the type") { n in
                for i in 0..<n { concreteHub.post(Pong(value: i)) }
            },
            SyncContender("Herald post, 1 observer of a protocol") { n in
                for i in 0..<n { familyHub.post(Pong(value: i)) }
            },
            SyncContender("Herald post, 1 tap (observeAll)") { n in
                for i in 0..<n { tapHub.post(Pong(value: i)) }
            },
            SyncContender("NotificationCenter.post, userInfo nil") { n in
                for _ in 0..<n { center.post(name: .ping, object: nil) }
            },
        ]
        let medians = measureInterleaved(contenders, settings: settings)
        var rows: [Row] = []
        for (index, contender) in contenders.enumerated() {
            var row = Row(contender: contender.name, value: medians[index])
            row.isHerald = index == 0
            if index > 0, index < 3, let value = medians[index], let concrete = medians[0] {
                row.notes.append(String(format: "%.2f× the observer of the type", value / concrete))
            }
            rows.append(row)
        }
        withExtendedLifetime(keep) {}
        return DeliveryResult(
            section: Section(
                title: "Delivery through a protocol observer or a tap, posting thread", metric: "ns/post", rows: rows),
            concrete: medians[0], family: medians[1])
    }
}

/// A notification type that can be made without arguments, so that a hub can be shown many types
/// through their metatypes (see `distinctNotificationTypes(count:)`).
protocol EmptyNotification: TypedNotification {
    init()
}

extension OtherRoot: EmptyNotification {}
extension Zero: EmptyNotification {}
extension One: EmptyNotification {}

extension FamilyScenarios {
    struct RegistrationResult {
        var section: Section
        var seenTypes: Int
        /// ns per observe + cancel of an observer of one type.
        var plain: Double?
        /// ns per `observe(every:)` + cancel.
        var family: Double?
        /// ns per `observeAll` + cancel.
        var tap: Double?
    }

    /// Registering and cancelling a family observer or a tap, against an observer of one type, on
    /// a hub that has seen `seenTypes` types (each posted once; one posting-thread observer of
    /// `Pong` stays registered).
    func registration(seenTypes: Int) -> RegistrationResult {
        let sink = self.sink
        let hub = NotificationHub()
        let permanent = hub.observe(Pong.self) { note in sink.add(note.value) }
        for type in distinctNotificationTypes(count: seenTypes) {
            if let type = type as? any EmptyNotification.Type { hub.post(type.init()) }
        }
        let contenders = [
            SyncContender("Herald observe + cancel") { n in
                for _ in 0..<n { hub.observe(Ping.self) { note in sink.add(note.value) }.cancel() }
            },
            SyncContender("Herald observe(every:) + cancel") { n in
                for _ in 0..<n {
                    hub.observe(every: (any ValueCarrying).self) { note in sink.add(note.value) }.cancel()
                }
            },
            SyncContender("Herald observeAll + cancel") { n in
                for _ in 0..<n { hub.observeAll { _ in sink.add(1) }.cancel() }
            },
        ]
        let medians = measureInterleaved(contenders, settings: settings)
        var rows = contenders.enumerated().map { index, contender in
            Row(contender: contender.name, value: medians[index])
        }
        rows[0].isHerald = true
        for index in 1..<rows.count {
            if let value = medians[index], let plain = medians[0] {
                rows[index].notes.append(String(format: "%.2f× observe + cancel", value / plain))
            }
        }
        withExtendedLifetime((hub, permanent)) {}
        return RegistrationResult(
            section: Section(
                title: "Register + cancel on a hub that has seen \(seenTypes.formatted) types", metric: "ns/pair",
                rows: rows),
            seenTypes: seenTypes, plain: medians[0], family: medians[1], tap: medians[2])
    }
}

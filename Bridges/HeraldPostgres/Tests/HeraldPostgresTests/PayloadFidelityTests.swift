import Foundation
import Herald
import HeraldPostgres
import Testing

/// A temperature with a hand-written `Codable` conformance: a bare number on the wire.
struct Celsius: Codable, Equatable, Sendable {
    var degrees: Double

    init(degrees: Double) { self.degrees = degrees }

    init(from decoder: any Decoder) throws {
        degrees = try decoder.singleValueContainer().decode(Double.self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(degrees)
    }
}

/// A value that a lenient notification carries, with a sample to send.
protocol ProbeValue: Codable, Equatable, Sendable {
    static var sample: Self { get }
}

extension Date: ProbeValue {
    static var sample: Date { Date(timeIntervalSinceReferenceDate: 786_000_000.125) }
}

extension Float: ProbeValue {
    static var sample: Float { 0.1 }
}

extension Decimal: ProbeValue {
    static var sample: Decimal { Decimal(string: "12345.678901") ?? 1 }
}

extension URL: ProbeValue {
    static var sample: URL { URL(string: "https://example.com/orders/7?q=a%20b") ?? URL(filePath: "/") }
}

extension Data: ProbeValue {
    static var sample: Data { Data([0, 1, 2, 0xFE, 0xFF]) }
}

extension Celsius: ProbeValue {
    static var sample: Celsius { Celsius(degrees: -0.5) }
}

/// A notification that decodes leniently, as many real ones do.
protocol LenientProbe: WireNotification, Equatable {
    init(id: Int)
    var id: Int { get }
    /// Whether its value survived the trip (a lenient decoder turns a value it failed on into `nil`).
    var hasValue: Bool { get }
}

private enum ProbeKeys: String, CodingKey {
    case id, value
}

/// Reads its value with `try?`: a value that fails to decode becomes `nil`, silently.
struct TryLenient<Value: ProbeValue>: LenientProbe {
    static var wireName: String { "TryLenient.\(Value.self)" }
    var id: Int
    var value: Value?
    var hasValue: Bool { value != nil }

    init(id: Int) {
        self.id = id
        value = Value.sample
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: ProbeKeys.self)
        id = try container.decode(Int.self, forKey: .id)
        value = try? container.decode(Value.self, forKey: .value)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: ProbeKeys.self)
        try container.encode(id, forKey: .id)
        try container.encodeIfPresent(value, forKey: .value)
    }
}

/// Reads its value with `decodeIfPresent`.
struct IfPresent<Value: ProbeValue>: LenientProbe {
    static var wireName: String { "IfPresent.\(Value.self)" }
    var id: Int
    var value: Value?
    var hasValue: Bool { value != nil }

    init(id: Int) {
        self.id = id
        value = Value.sample
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: ProbeKeys.self)
        id = try container.decode(Int.self, forKey: .id)
        value = try container.decodeIfPresent(Value.self, forKey: .value)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: ProbeKeys.self)
        try container.encode(id, forKey: .id)
        try container.encodeIfPresent(value, forKey: .value)
    }
}

/// Received payloads decode exactly as `JSONDecoder` (default strategies) decodes what
/// `JSONEncoder` (default strategies) wrote, whatever the type's `init(from:)` does, alone and in a
/// batch.
@Suite("PostgresLink payload fidelity", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct PayloadFidelityTests {
    static let probes: [any LenientProbe.Type] = [
        TryLenient<Date>.self, TryLenient<Float>.self, TryLenient<Decimal>.self, TryLenient<URL>.self,
        TryLenient<Data>.self, TryLenient<Celsius>.self, IfPresent<Date>.self, IfPresent<Float>.self,
        IfPresent<Decimal>.self, IfPresent<URL>.self, IfPresent<Data>.self, IfPresent<Celsius>.self,
    ]

    /// One delivery: the type, the id, and whether it is what `JSONDecoder` makes of what was sent.
    struct Arrival: Sendable {
        let type: String
        let id: Int
        let isExact: Bool
    }

    private static func observe<P: LenientProbe>(
        _ type: P.Type, on hub: NotificationHub, into arrivals: Recorder<Arrival>
    )
        -> ObservationToken
    {
        hub.observe(type) { value in
            let expected = try? JSONDecoder().decode(P.self, from: JSONEncoder().encode(P(id: value.id)))
            arrivals.append(Arrival(type: P.wireName, id: value.id, isExact: value == expected && value.hasValue))
        }
    }

    private static func post<P: LenientProbe>(_ type: P.Type, id: Int, on hub: NotificationHub) {
        hub.post(P(id: id))
    }

    @Test(arguments: [false, true])
    func lenientlyDecodedValuesArriveIntactAloneAndInABatch(signed: Bool) async throws {
        let channel = TestServer.makeChannel()
        let options = signed ? PostgresLink.Options(signingKey: BatchingTests.key) : PostgresLink.Options()
        let sharing: [any WireNotification.Type] = Self.probes + [Barrier.self]
        let a = try await Node(channel: channel, sharing: sharing, options: options)
        let b = try await Node(channel: channel, sharing: sharing, options: options)
        let arrivals = Recorder<Arrival>()
        let tokens = Self.probes.map { Self.observe($0, on: b.hub, into: arrivals) }

        // Alone: each post finds the sending connection idle (every `NOTIFY` before it completed).
        for (index, type) in Self.probes.enumerated() {
            try await waitUntil("A's sends completed") { a.link.statistics.sent == 2 * index }
            Self.post(type, id: index, on: a.hub)
            try await a.barrier(to: b, id: 1_000 + index)
        }
        #expect(a.link.statistics.batchesSent == 0)
        // In batches: a burst outpaces the connection.
        for round in 1...20 {
            for type in Self.probes { Self.post(type, id: round, on: a.hub) }
        }
        try await a.barrier(to: b, id: 2_000)
        #expect(a.link.statistics.batchesSent > 0)

        let values = arrivals.values
        #expect(values.count == Self.probes.count * 21)
        let altered = values.filter { !$0.isExact }.map { "\($0.type) #\($0.id)" }
        #expect(altered.isEmpty, "altered: \(altered)")
        #expect(b.errors.values.isEmpty && a.errors.values.isEmpty)
        for token in tokens { token.cancel() }
        await a.link.close()
        await b.link.close()
    }
}

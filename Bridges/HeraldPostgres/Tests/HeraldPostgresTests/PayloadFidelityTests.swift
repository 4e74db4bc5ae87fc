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

/// A notification that decodes leniently, as many real ones do: each optional field is read with
/// `try?` (a field that fails to decode becomes `nil`, silently), or with `decodeIfPresent`.
struct Lenient: WireNotification, Equatable {
    static let wireName = "Lenient"

    var id: Int
    var date: Date?
    var float: Float?
    var decimal: Decimal?
    var url: URL?
    var data: Data?
    var temperature: Celsius?
    var note: String?

    enum CodingKeys: String, CodingKey {
        case id, date, float, decimal, url, data, temperature, note
    }

    init(id: Int) {
        self.id = id
        date = Date(timeIntervalSinceReferenceDate: 786_000_000.125)
        float = 0.1
        decimal = Decimal(string: "12345.678901")
        url = URL(string: "https://example.com/orders/\(id)?q=a%20b")
        data = Data([0, 1, 2, 0xFE, 0xFF, UInt8(id % 256)])
        temperature = Celsius(degrees: -0.5)
        note = "note \(id)"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int.self, forKey: .id)
        date = try? container.decode(Date.self, forKey: .date)
        float = try? container.decode(Float.self, forKey: .float)
        decimal = try? container.decode(Decimal.self, forKey: .decimal)
        url = try? container.decode(URL.self, forKey: .url)
        data = try? container.decode(Data.self, forKey: .data)
        temperature = try? container.decode(Celsius.self, forKey: .temperature)
        note = try container.decodeIfPresent(String.self, forKey: .note)
    }
}

/// Received payloads decode exactly as `JSONDecoder` (default strategies) decodes what
/// `JSONEncoder` (default strategies) wrote, whatever the type's `init(from:)` does.
@Suite("PostgresLink payload fidelity", .enabled(if: TestServer.shouldRun, Comment(rawValue: TestServer.missing)))
struct PayloadFidelityTests {
    /// What `JSONDecoder` makes of the value that `JSONEncoder` wrote: what a receiver must post.
    private func roundTripped(_ value: Lenient) throws -> Lenient {
        try JSONDecoder().decode(Lenient.self, from: JSONEncoder().encode(value))
    }

    @Test(arguments: [false, true])
    func lenientlyDecodedFieldsArriveIntactAloneAndInABatch(signed: Bool) async throws {
        let channel = TestServer.makeChannel()
        let options = signed ? PostgresLink.Options(signingKey: BatchingTests.key) : PostgresLink.Options()
        let sharing: [any WireNotification.Type] = [Lenient.self, Barrier.self]
        let a = try await Node(channel: channel, sharing: sharing, options: options)
        let b = try await Node(channel: channel, sharing: sharing, options: options)
        let received = Recorder<Lenient>()
        let token = b.hub.observe(Lenient.self) { received.append($0) }

        // Alone: the first post finds the sending connection idle, and the barrier waits for it.
        a.hub.post(Lenient(id: 0))
        try await a.barrier(to: b)
        #expect(a.link.statistics.batchesSent == 0)
        // In batches: a burst outpaces the connection.
        let burst = 1...200
        for id in burst { a.hub.post(Lenient(id: id)) }
        try await a.barrier(to: b, id: 2)
        #expect(a.link.statistics.batchesSent > 0)

        let values = received.values
        #expect(values.map(\.id) == Array(0...200))
        for value in values {
            let expected = try roundTripped(Lenient(id: value.id))
            #expect(value == expected, "value \(value.id)")
            #expect(
                value.date != nil && value.float != nil && value.decimal != nil && value.url != nil
                    && value.data != nil && value.temperature != nil && value.note != nil,
                "value \(value.id) lost a field")
        }
        #expect(b.errors.values.isEmpty && a.errors.values.isEmpty)
        token.cancel()
        await a.link.close()
        await b.link.close()
    }
}

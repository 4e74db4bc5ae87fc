import Foundation
import Testing

@testable import HeraldPostgres

/// The housekeeping schedule that a durable reader and a write-only link share, without a server:
/// instants are given.
@Suite("DurableMaintenance")
struct DurableMaintenanceTests {
    private func durability(
        retention: PostgresLink.Retention? = nil, consumerExpiry: Duration? = nil
    ) throws -> PostgresLink.Durability {
        try PostgresLink.Durability(
            log: try DurableLog(), consumer: "c", retention: retention, consumerExpiry: consumerExpiry)
    }

    @Test func theHeartbeatIsAMinuteOrAQuarterOfTheConsumerExpiry() throws {
        #expect(try durability(consumerExpiry: nil).heartbeat == .seconds(60))
        #expect(try durability(consumerExpiry: .seconds(7 * 24 * 3_600)).heartbeat == .seconds(60))
        #expect(try durability(consumerExpiry: .seconds(100)).heartbeat == .seconds(25))
    }

    @Test func withNeitherARetentionNorAnExpiryItIsNeverDue() throws {
        var maintenance = DurableMaintenance()
        let isDue = maintenance.take(at: ContinuousClock().now, for: try durability())
        #expect(!isDue && maintenance.maintainedAt == nil)
    }

    @Test func itIsDueAtOnceThenEveryRetentionInterval() throws {
        let durability = try durability(retention: PostgresLink.Retention(maximumRows: 10, interval: .seconds(5)))
        let start = ContinuousClock().now
        var maintenance = DurableMaintenance()
        let due = [0, 4, 5, 9, 10].map { maintenance.take(at: start + .seconds($0), for: durability) }
        #expect(due == [true, false, true, false, true])
        #expect(maintenance.maintainedAt == start + .seconds(10))
    }

    @Test func withAnExpiryAloneItIsDueEveryMinute() throws {
        let durability = try durability(consumerExpiry: .seconds(20))
        let start = ContinuousClock().now
        var maintenance = DurableMaintenance()
        let due = [0, 59, 60].map { maintenance.take(at: start + .seconds($0), for: durability) }
        #expect(due == [true, false, true])
    }
}

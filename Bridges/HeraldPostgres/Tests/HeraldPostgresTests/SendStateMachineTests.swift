import DequeModule
import Testing

@testable import HeraldPostgres

/// The sending side's decisions, without a server: connections are numbers, waiters names.
@Suite("SendStateMachine")
struct SendStateMachineTests {
    typealias Machine = SendStateMachine<Int, String>

    private func item(_ sequence: UInt64) -> Envelope.Item {
        Envelope.Item(typeName: "T", typeJSON: #""T""#, payloadJSON: "{}", sequence: sequence)
    }

    /// A machine that batches up to `batch` posts per `NOTIFY`.
    private func machine(batch: Int = 100) -> Machine {
        Machine { pending in min(batch, pending.count) }
    }

    private func transmitted(_ action: Machine.Action) -> (sequences: [UInt64], connection: Int)? {
        guard case .transmit(let items, let connection) = action else { return nil }
        return (items.map(\.sequence), connection)
    }

    @Test func postsWaitForTheFirstConnectionThenGoInOneNotify() {
        var machine = machine()
        for sequence: UInt64 in 1...3 {
            guard case .none = machine.enqueue(item(sequence), limit: 10).action else {
                Issue.record("sent before connecting")
                return
            }
        }
        let first = transmitted(machine.connected(7))
        #expect(first?.sequences == [1, 2, 3] && first?.connection == 7)
        #expect(machine.queued == 3)
    }

    @Test func oneNotifyIsInFlightAtATimeAndTheNextTakesWhatWaits() {
        var machine = machine(batch: 2)
        _ = machine.connected(1)
        #expect(transmitted(machine.enqueue(item(1), limit: 10).action)?.sequences == [1])
        for sequence: UInt64 in 2...4 {
            guard case .none = machine.enqueue(item(sequence), limit: 10).action else {
                Issue.record("a second NOTIFY in flight")
                return
            }
        }
        #expect(transmitted(machine.completed())?.sequences == [2, 3])
        #expect(transmitted(machine.completed())?.sequences == [4])
        guard case .none = machine.completed() else {
            Issue.record("expected nothing to do")
            return
        }
        #expect(machine.queued == 0)
    }

    @Test func aFullQueueRefusesThePost() {
        var machine = machine()
        for sequence: UInt64 in 1...2 { _ = machine.enqueue(item(sequence), limit: 2) }
        #expect(!machine.enqueue(item(3), limit: 2).isQueued)
        #expect(machine.queued == 2)
    }

    @Test func theNotifyInFlightWhenTheConnectionIsLostGoesAgainFirst() {
        var machine = machine()
        _ = machine.connected(1)
        _ = machine.enqueue(item(1), limit: 10)
        machine.connectionLost()
        guard case .none = machine.enqueue(item(2), limit: 10).action else {
            Issue.record("sent while reconnecting")
            return
        }
        let again = transmitted(machine.connected(2))
        #expect(again?.sequences == [1] && again?.connection == 2)
        #expect(transmitted(machine.completed())?.sequences == [2])
    }

    @Test func closingSendsWhatWaitsThenFinishesWithTheConnectionAndTheWaiters() {
        var machine = machine()
        _ = machine.connected(5)
        _ = machine.enqueue(item(1), limit: 10)
        guard case .some(.none) = machine.close(waiter: "close") else {
            Issue.record("finished with a NOTIFY in flight")
            return
        }
        guard case .finish(let connection, let waiters) = machine.completed() else {
            Issue.record("expected to finish")
            return
        }
        #expect(connection == 5 && waiters == ["close"] && machine.isStopped)
        #expect(machine.close(waiter: "again") == nil)  // stopped already: resume at once
    }

    @Test func givingUpReportsWhatWasQueuedAndWakesTheWaiters() {
        var machine = machine()
        _ = machine.connected(1)
        _ = machine.enqueue(item(1), limit: 10)
        _ = machine.enqueue(item(2), limit: 10)
        machine.connectionLost()
        _ = machine.close(waiter: "close")
        let (lost, waiters) = machine.giveUp()
        #expect(lost.map(\.sequence) == [1, 2] && waiters == ["close"] && machine.isStopped)
        guard case .none = machine.completed() else {
            Issue.record("a stopped sender acted")
            return
        }
    }

    @Test func stoppingNowHandsBackTheConnection() {
        var machine = machine()
        _ = machine.connected(9)
        _ = machine.enqueue(item(1), limit: 10)
        let (lost, connection, waiters) = machine.stopNow()
        #expect(lost.map(\.sequence) == [1] && connection == 9 && waiters.isEmpty)
    }
}

import Foundation
import Testing

@testable import HeraldPostgres

/// The run's life cycle, without a server: each input, and what the machine decides.
@Suite("ConnectionStateMachine")
struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine<Int, Int>

    static let reconnection = PostgresLink.Reconnection(
        initialDelay: .milliseconds(100), maximumDelay: .milliseconds(500), multiplier: 2)

    struct Failure: Error, Equatable {}

    /// A machine driven through `steps` from idle: each step an input and the phase after it.
    enum Step: Sendable {
        case run, listen, stopGraceful, stopImmediate, waitForStop, stopping, stoppedOK, stoppedFailing
    }

    static let paths: [([Step], Machine.Phase)] = [
        ([], .idle),
        ([.run], .connecting),
        ([.run, .listen], .running),
        ([.run, .listen, .stopGraceful], .running),  // the run wakes, then stops
        ([.run, .listen, .stopGraceful, .stopping], .stopping),
        ([.run, .listen, .waitForStop, .stopImmediate, .stopping], .stopping),
        ([.run, .listen, .stopGraceful, .stopping, .stoppedOK], .stopped),
        ([.run, .stoppedFailing], .stopped),
        ([.stopGraceful], .stopped),  // never ran
        ([.stopImmediate], .stopped),
    ]

    @Test(arguments: paths)
    func phases(_ steps: [Step], _ expected: Machine.Phase) {
        var machine = Machine(reconnection: Self.reconnection)
        for step in steps {
            switch step {
            case .run: _ = machine.run()
            case .listen: _ = machine.listening(at: Date())
            case .stopGraceful: _ = machine.requestStop(.graceful)
            case .stopImmediate: _ = machine.requestStop(.immediate)
            case .waitForStop: _ = machine.waitForStopRequest(7)
            case .stopping: _ = machine.stopping()
            case .stoppedOK: _ = machine.stopped(failure: nil)
            case .stoppedFailing: _ = machine.stopped(failure: Failure())
            }
        }
        #expect(machine.phase == expected)
    }

    @Test func aLinkRunsOnce() {
        var machine = Machine(reconnection: Self.reconnection)
        #expect(machine.run() == .connect)
        #expect(machine.run() == .refuse)
        _ = machine.stopped(failure: nil)
        #expect(machine.run() == .refuse)
    }

    @Test func listeningWaitersAreResumedWhenTheFirstListenIsInEffect() {
        var machine = Machine(reconnection: Self.reconnection)
        guard case .wait = machine.waitForListening(1) else {
            Issue.record("expected to wait")
            return
        }
        _ = machine.run()
        guard case .wait = machine.waitForListening(2) else {
            Issue.record("expected to wait")
            return
        }
        guard case .started(let waiters) = machine.listening(at: Date()) else {
            Issue.record("expected the first LISTEN")
            return
        }
        #expect(waiters == [1, 2])
        guard case .succeed = machine.waitForListening(3) else {
            Issue.record("expected success")
            return
        }
    }

    @Test func aRunThatFailsFailsItsListeningWaitersWithItsError() {
        var machine = Machine(reconnection: Self.reconnection)
        _ = machine.run()
        _ = machine.waitForListening(1)
        _ = machine.waitUntilStopped(5)
        let (listening, stopped) = machine.stopped(failure: Failure())
        #expect(listening == [1] && stopped == [5])
        guard case .fail(let error) = machine.waitForListening(2) else {
            Issue.record("expected failure")
            return
        }
        #expect(error as? Failure == Failure())
        let isStopped = machine.waitUntilStopped(6)
        #expect(isStopped)
    }

    @Test func closingALinkThatNeverRanStopsIt() {
        var machine = Machine(reconnection: Self.reconnection)
        guard case .closeUnstarted = machine.requestStop(.graceful) else {
            Issue.record("expected to close the unstarted link")
            return
        }
        #expect(machine.run() == .refuse)
        guard case .fail(let error) = machine.waitForListening(1) else {
            Issue.record("expected failure")
            return
        }
        #expect(error == nil)  // CancellationError for the caller
    }

    @Test func aStopRequestWakesTheWaitingRunAndCancellationOverridesAGracefulStop() {
        var machine = Machine(reconnection: Self.reconnection)
        _ = machine.run()
        _ = machine.listening(at: Date())
        #expect(machine.waitForStopRequest(9) == nil)
        guard case .wakeRun(let waiter) = machine.requestStop(.graceful) else {
            Issue.record("expected to wake the run")
            return
        }
        #expect(waiter == 9)
        guard case .wakeRun(nil) = machine.requestStop(.immediate) else {
            Issue.record("expected nothing more to wake")
            return
        }
        #expect(machine.stopping() == .immediate)
        // A graceful request after an immediate one does not weaken it.
        guard case .none = machine.requestStop(.graceful) else {
            Issue.record("expected nothing to do")
            return
        }
        #expect(machine.stopRequest == .immediate)
    }

    @Test func aStopRequestedWhileConnectingIsFoundWhenTheRunWaits() {
        var machine = Machine(reconnection: Self.reconnection)
        _ = machine.run()
        guard case .wakeRun(nil) = machine.requestStop(.graceful) else {
            Issue.record("expected no run waiting yet")
            return
        }
        _ = machine.listening(at: Date())
        #expect(machine.waitForStopRequest(1) == .graceful)
        #expect(machine.phase == .stopping)
    }

    /// Outages of the listening connection: one report of the loss per outage, delays doubling to
    /// the maximum, reset once listening again, and the outage window reported from its start.
    @Test func reconnectingBacksOffAndReportsEachOutageOnce() {
        var machine = Machine(reconnection: Self.reconnection)
        _ = machine.run()
        _ = machine.listening(at: Date())
        let lost = Date(timeIntervalSince1970: 1_000)
        #expect(machine.listenerLost(at: lost) == .reconnect(after: .milliseconds(100), reportLoss: true))
        let delays = (0..<4).map { _ in machine.reconnectFailed() }
        #expect(delays == [.milliseconds(200), .milliseconds(400), .milliseconds(500), .milliseconds(500)])
        // Reconnected, then lost again before LISTEN: the same outage, the backoff goes on.
        #expect(
            machine.listenerLost(at: lost.addingTimeInterval(5))
                == .reconnect(after: .milliseconds(500), reportLoss: false))
        guard case .recovered(let since) = machine.listening(at: lost.addingTimeInterval(9)) else {
            Issue.record("expected the end of an outage")
            return
        }
        #expect(since == lost)
        #expect(machine.outageStart == nil)
        #expect(machine.listenerLost(at: lost) == .reconnect(after: .milliseconds(100), reportLoss: true))
    }

    @Test func aStoppingLinkDoesNotReconnect() {
        var machine = Machine(reconnection: Self.reconnection)
        _ = machine.run()
        _ = machine.listening(at: Date())
        _ = machine.listenerLost(at: Date())
        _ = machine.requestStop(.graceful)
        #expect(machine.reconnectFailed() == nil)
        #expect(machine.listenerLost(at: Date()) == .stop)
        #expect(machine.isEnding)
    }

    @Test(arguments: [
        (PostgresLink.Reconnection(), [100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000]),
        (PostgresLink.Reconnection(initialDelay: .seconds(1), maximumDelay: .seconds(1)), [1_000, 1_000, 1_000]),
        (PostgresLink.Reconnection(initialDelay: .milliseconds(10), multiplier: 3), [10, 30, 90, 270]),
    ])
    func backoff(_ reconnection: PostgresLink.Reconnection, _ milliseconds: [Int]) {
        var backoff = Backoff(reconnection)
        #expect(milliseconds.map { _ in backoff.take() } == milliseconds.map { .milliseconds($0) })
    }
}

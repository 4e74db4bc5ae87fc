import Synchronization

extension NotificationSequence {
    /// The buffer shared by the hub's observer and the consumers.
    ///
    /// A post appends to the buffer *held* while it still reaches other mailboxes and streams (see
    /// ``MailboxStateMachine``): a consumer takes only the elements before the first held one, so it
    /// cannot react to a post before every other observer has it. Whatever the buffer lets go of
    /// (a value pushed out by the policy, the rest of the buffer when the sequence ends) is
    /// released after its lock.
    final class Storage: Sendable {
        private struct Hold: Sendable {
            let token: UInt
            let sequence: Int
        }

        private struct State: Sendable {
            var buffer = FIFOBuffer<N>()
            /// Elements appended to the buffer so far.
            var appendedCount = 0
            /// Elements taken out of the buffer so far, by consumers or by the policy.
            var removedCount = 0
            /// Elements still held, oldest first.
            var holds: [Hold] = []
            /// Consumers waiting for a notification, in the order they asked.
            var waiters: [CheckedContinuation<N?, Never>] = []
            var droppedCount = 0
            var isFinished = false
            var observation: ObservationToken?

            /// Elements a consumer may take now.
            var readyCount: Int { (holds.first?.sequence ?? appendedCount) - removedCount }

            mutating func popFirst() -> N? {
                guard readyCount > 0, let element = buffer.popFirst() else { return nil }
                removedCount += 1
                return element
            }

            /// Drops the oldest element, held or not.
            mutating func dropFirst() -> N? {
                guard let element = buffer.popFirst() else { return nil }
                if holds.first?.sequence == removedCount { holds.removeFirst() }
                removedCount += 1
                droppedCount += 1
                return element
            }

            /// Pairs waiting consumers with ready elements.
            mutating func matchWaiters() -> [(CheckedContinuation<N?, Never>, N)] {
                var matched: [(CheckedContinuation<N?, Never>, N)] = []
                while !waiters.isEmpty, let element = popFirst() {
                    matched.append((waiters.removeFirst(), element))
                }
                return matched
            }
        }

        let policy: NotificationBufferingPolicy
        private let state = Lock(State())

        init(policy: NotificationBufferingPolicy) {
            self.policy = policy
        }

        var droppedCount: Int {
            state.withLock { $0.droppedCount }
        }

        /// Keeps the observation that feeds this storage, or cancels it if the sequence already ended.
        func attach(_ observation: ObservationToken) {
            let isFinished = state.withLock { state -> Bool in
                if !state.isFinished { state.observation = observation }
                return state.isFinished
            }
            if isFinished { observation.cancel() }
        }

        /// Called by the post, on the posting thread, for every notification.
        ///
        /// - Parameter hold: The post's hold token, or 0 if a consumer may take it at once.
        /// - Returns: `false` if the sequence has ended.
        func push(_ notification: N, hold: UInt) -> Bool {
            let (accepted, dropped, matched) = state.withLock {
                state -> (Bool, N?, [(CheckedContinuation<N?, Never>, N)]) in
                if state.isFinished { return (false, nil, []) }
                let dropped = append(notification, hold: hold, to: &state)
                return (true, dropped, state.matchWaiters())
            }
            withExtendedLifetime(dropped) {}  // released here, after the lock
            for (waiter, element) in matched {
                waiter.resume(returning: element)
            }
            return accepted
        }

        /// Puts replayed values into the buffer of a sequence nobody consumes yet.
        ///
        /// - Returns: The values the policy dropped, to release after the registry lock.
        func preload(_ notifications: [N]) -> [N] {
            state.withLock { state in
                notifications.compactMap { append($0, hold: 0, to: &state) }
            }
        }

        /// Appends `notification` under the buffering policy. Call under the lock.
        ///
        /// - Returns: The element the policy pushed out, to release after the lock.
        private func append(_ notification: N, hold: UInt, to state: inout State) -> N? {
            // A waiting consumer takes an element as soon as it is released: room for it too.
            let limit: Int
            var keepsNewest = true
            switch policy {
            case .unbounded: limit = .max
            case .bufferingNewest(let value):
                limit = Swift.max(value, 0) + state.waiters.count
            case .bufferingOldest(let value):
                limit = Swift.max(value, 0) + state.waiters.count
                keepsNewest = false
            case .latest:
                limit = 1 + state.waiters.count
            }
            var dropped: N?
            if state.buffer.count >= limit {
                guard keepsNewest, limit > 0 else {
                    state.droppedCount += 1  // the new one is dropped
                    return nil
                }
                dropped = state.dropFirst()
            }
            if hold != 0 {
                state.holds.append(Hold(token: hold, sequence: state.appendedCount))
            }
            state.appendedCount += 1
            state.buffer.append(notification)
            return dropped
        }

        /// The post that appended under `hold` has reached every mailbox and stream.
        func release(hold: UInt) {
            let matched = state.withLock { state -> [(CheckedContinuation<N?, Never>, N)] in
                guard let index = state.holds.firstIndex(where: { $0.token == hold }) else { return [] }
                state.holds.remove(at: index)
                return state.matchWaiters()
            }
            for (waiter, element) in matched {
                waiter.resume(returning: element)
            }
        }

        func next(isolation actor: isolated (any Actor)?) async -> N? {
            if Task.isCancelled {
                finish()
                return nil
            }
            let immediate = state.withLock { state -> N?? in
                if let element = state.popFirst() { return .some(element) }
                if state.isFinished { return .some(nil) }
                return nil
            }
            if let immediate { return immediate }
            return await withTaskCancellationHandler {
                await withCheckedContinuation(isolation: actor) { (continuation: CheckedContinuation<N?, Never>) in
                    let resumeNow = state.withLock { state -> N?? in
                        if let element = state.popFirst() { return .some(element) }
                        if state.isFinished { return .some(nil) }
                        state.waiters.append(continuation)
                        return nil
                    }
                    if let resumeNow { continuation.resume(returning: resumeNow) }
                }
            } onCancel: {
                finish()
            }
        }

        /// Ends the sequence: cancels the observation, discards the buffer, wakes every waiter.
        func finish() {
            let (waiters, observation, buffer) = state.withLock {
                state -> ([CheckedContinuation<N?, Never>], ObservationToken?, FIFOBuffer<N>) in
                if state.isFinished { return ([], nil, FIFOBuffer()) }
                state.isFinished = true
                defer {
                    state.buffer = FIFOBuffer()
                    state.holds = []
                    state.waiters = []
                    state.observation = nil
                }
                return (state.waiters, state.observation, state.buffer)
            }
            observation?.cancel()
            withExtendedLifetime(buffer) {}  // the discarded elements go here, after the lock
            for waiter in waiters {
                waiter.resume(returning: nil)
            }
        }
    }
}

extension Mailbox {
    /// Consumes one item of an async mailbox and prepares the handler's call for it.
    ///
    /// - Returns: What starts the call's task, to be called once the mailbox is suspended; `nil`
    ///   when the observation has ended.
    func prepareCall<Record: TypedDeliveryRecord<N>>(
        _ item: UnsafeMutableRawPointer, _ handler: HandlerBox<N>?, for observer: Record
    ) -> (() -> Void)? {
        let payload = layout.payload(item, as: N.self)
        let (_, group) = layout.takeHeader(item)
        let notification = payload.move()
        guard observer.isLive, case .async(let asyncHandler)? = handler?.handler, let calls = asyncCalls else {
            group?.leave(.skipped)
            return nil
        }
        let call: @Sendable () async -> Void = { [self, observer] in
            await calls.armed()
            await self.call(asyncHandler, with: notification, group: group, for: observer)
        }
        let target = self.target
        // Each call's task is detached: it starts from a clean context, with no task-local values
        // and no priority of whichever post, drain or earlier call happened to start it.
        return {
            calls.launch {
                switch target.kind {
                case .main:
                    if let executor = observer.environment.mainQueueExecutor {
                        return executor.startTask(call)  // it tells when the task has ended
                    }
                    guard asyncHandler.runsOnTarget else { return Task.detached(operation: call) }  // on the main actor
                    return Task.detached(executorPreference: TargetTaskExecutor(target), operation: call)
                case .posting, .actor:
                    return Task.detached(operation: call)  // unconfined, or isolated by the handler itself
                case .queue, .operationQueue, .thread, .executor:
                    return Task.detached(executorPreference: TargetTaskExecutor(target), operation: call)
                }
            }
        }
    }

    /// Calls the async handler, unless the observation ended before the call started (checked on
    /// the handler's own isolation), then lets the mailbox go on. Every call of an observer's
    /// `async` handler is made here.
    private func call<Record: TypedDeliveryRecord<N>>(
        _ asyncHandler: AsyncHandler<N>, with notification: N, group: WaitGroup?, for observer: Record
    ) async {
        do {
            let called = try await asyncHandler.body(notification) { observer.isLive }
            group?.leave(called ? .delivered : .skipped)
        } catch {
            group?.leave(.failed(observer.report(error)))
        }
        asyncCalls?.finished()
        observer.environment.idleWatch.noteBatchEnding()
        if resume() {
            scheduleDrain(for: observer)
        }
        observer.environment.idleWatch.noteProgress()
    }
}

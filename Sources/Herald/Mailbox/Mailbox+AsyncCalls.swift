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
        guard observer.isLive, case .async(let asyncHandler)? = handler?.handler, let calls = asyncCalls,
            calls.prepare((asyncHandler, notification))
        else {
            group?.leave(.skipped)
            return nil
        }
        let runsOnTarget = asyncHandler.runsOnTarget
        let call: @Sendable () async -> Void = { [self, observer] in
            await calls.armed()
            await self.call(group: group, for: observer)
        }
        let target = self.target
        // Each call's task is detached: it starts from a clean context, with no task-local values
        // and no priority of whichever post, drain or earlier call happened to start it.
        return {
            calls.launch {
                if case .main = target.kind, let executor = observer.environment.mainQueueExecutor {
                    // The executor starts the task: it counts as idle only once the task has ended.
                    return executor.startTask(runsOnExecutor: runsOnTarget, call)
                }
                switch target.kind {
                case .main where !runsOnTarget, .posting, .actor:
                    // On the main actor (the handler is isolated to it), unconfined, or isolated by
                    // the handler itself.
                    return Task.detached(operation: call)
                case .main, .queue, .operationQueue, .thread, .executor:
                    return Task.detached(executorPreference: TargetTaskExecutor(target), operation: call)
                }
            }
        }
    }

    /// Makes the call prepared for the task that runs this, then lets the mailbox go on.
    private func call<Record: TypedDeliveryRecord<N>>(group: WaitGroup?, for observer: Record) async {
        // What the call takes is released when it returns, before the mailbox may become idle:
        // a `deinit` it sets off may post, and the hub is not idle until it has.
        let outcome = await Self.call(asyncCalls?.takeArguments(), for: observer)
        group?.leave(outcome)
        asyncCalls?.finished()
        observer.environment.idleWatch.noteBatchEnding()
        if resume() {
            scheduleDrain(for: observer)
        }
        observer.environment.idleWatch.noteProgress()
    }

    /// Calls the async handler with the notification `arguments` hold, unless the observation
    /// ended before the call started: `cancel()` released them then, or the check on the
    /// handler's own isolation fails. Every call of an observer's `async` handler is made here.
    private static func call<Record: TypedDeliveryRecord<N>>(
        _ arguments: AsyncCallArguments?, for observer: Record
    ) async -> DeliveryOutcome {
        guard let (handler, notification) = arguments else { return .skipped }
        do {
            return try await handler.body(notification) { observer.isLive } ? .delivered : .skipped
        } catch {
            return .failed(observer.report(error))
        }
    }

    /// The handler and notification of one `async` call, from the drain that prepares it to the
    /// call's task, through the mailbox's ``AsyncCallSlot``.
    typealias AsyncCallArguments = (handler: AsyncHandler<N>, notification: N)
}

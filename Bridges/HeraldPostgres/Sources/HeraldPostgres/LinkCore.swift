import CoreMetrics
import DequeModule
import Foundation
import Herald
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The marker of a link's own re-post: set (task-locally) around the `post` with which a link
/// delivers a received value into its hub. The link's posting-thread observer runs inside that
/// `post`, sees the marker, and does not send the value back out.
///
/// The marker matches one link and one type, and is consumed by the first matching observer call,
/// so that other posts made inside that `post` (a local observer reacting with another value) still
/// travel. One case remains ambiguous and is documented: a posting-thread observer registered
/// before `share(_:)` that synchronously posts another value of the *same* type.
final class RepostMarker: Sendable {
    @TaskLocal static var current: RepostMarker?

    private let link: ObjectIdentifier
    private let type: ObjectIdentifier
    private let isPending = Atomic<Bool>(true)

    init(link: LinkCore, type: Any.Type) {
        self.link = ObjectIdentifier(link)
        self.type = ObjectIdentifier(type)
    }

    /// Whether this post is `link`'s own re-post of a value of `type`; true at most once.
    func consume(link: LinkCore, type: Any.Type) -> Bool {
        self.link == ObjectIdentifier(link) && self.type == ObjectIdentifier(type)
            && isPending.exchange(false, ordering: .acquiringAndReleasing)
    }
}

/// The link's sending connection, guarded against a query that never completes: postgres-nio
/// 1.33 leaves a query written after the server closed the connection waiting forever. The guard
/// fails the query in flight when the connection closes, and refuses new ones after.
final class SendingConnection: Sendable {
    struct Closed: Error, CustomStringConvertible {
        var description: String { "the sending connection closed" }
    }

    private struct State {
        var isClosed = false
        var inFlight: EventLoopPromise<Void>?
    }

    let connection: PostgresConnection
    private let state = Mutex(State())

    init(_ connection: PostgresConnection) {
        self.connection = connection
        connection.closeFuture.whenComplete { [weak self] _ in self?.closed() }
    }

    private func closed() {
        let inFlight = state.withLock { state in
            state.isClosed = true
            return state.inFlight.take()
        }
        inFlight?.fail(Closed())
    }

    /// `SELECT pg_notify($1, $2)`, bound parameters only. Callable from any thread; the result
    /// completes on the connection's event loop.
    func notify(channel: String, payload: String, logger: Logger) -> EventLoopFuture<Void> {
        let promise = connection.closeFuture.eventLoop.makePromise(of: Void.self)
        let isClosed = state.withLock { state in
            if !state.isClosed { state.inFlight = promise }
            return state.isClosed
        }
        guard !isClosed else {
            promise.fail(Closed())
            return promise.futureResult
        }
        let query: EventLoopFuture<PostgresQueryResult> = connection.query(
            "SELECT pg_notify(\(channel), \(payload))", logger: logger)
        query.map { _ in }.cascade(to: promise)
        return promise.futureResult.always { [weak self] _ in
            self?.state.withLock { state in
                if state.inFlight?.futureResult === promise.futureResult { state.inFlight = nil }
            }
        }
    }
}

/// Runs a task's jobs on an event loop. The listening task runs on the event loop of its connection,
/// so that each notification is handled where postgres-nio delivers it, without a thread hop.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// The state and the work behind a ``PostgresLink``.
///
/// Sending needs no task of its own: a post that finds the sending connection idle writes its
/// `NOTIFY` at once, from the posting thread; each `NOTIFY`'s completion, on the connection's event
/// loop, writes the next one with whatever was posted meanwhile, batched. One `NOTIFY` is in flight
/// at a time, so the order on the wire is the order of the sequence numbers.
final class LinkCore: Sendable {
    /// The sending side: a queue drained one `NOTIFY` at a time on one connection.
    typealias Sender = SendStateMachine<SendingConnection, CheckedContinuation<Void, Never>>

    /// What the sender does next, decided under the lock and done outside it.
    typealias SendStep = Sender.Action

    struct State {
        var nextSequence: UInt64 = 1
        var isClosed = false
        var tokens: [ObjectIdentifier: ObservationToken] = [:]
        var decoders: [String: Envelope.PayloadDecoder] = [:]
        var peers: PeerTracker
        var statistics = PostgresLink.Statistics()
        var errorHandler: (@Sendable (PostgresLinkError) -> Void)?
        var listenerTask: Task<Void, Never>?
        var sender: Sender
        var run = RunState()

        init(peers: PeerTracker, sender: Sender) {
            self.peers = peers
            self.sender = sender
        }
    }

    let hub: NotificationHub
    let channel: String
    let origin: UUID
    /// This run of the link: a random id and when it was created, before it began listening.
    let incarnation: Incarnation
    let logger: Logger
    /// The logger handed to postgres-nio: ``logger`` at `.debug` or above. At `.trace`, postgres-nio
    /// logs every message that its connections send and receive in full, `NOTIFY` payloads
    /// included; at `.debug` and above it logs connection events and redacted errors only.
    let connectionLogger: Logger
    let configuration: PostgresConnection.Configuration
    let options: PostgresLink.Options
    let signer: Signer?
    /// The event loop of the link's connections, which also runs its listening task.
    let eventLoop: any EventLoop
    /// Writes the link's envelopes.
    let writer: Envelope.Writer
    /// The link's counters, through swift-metrics.
    let metrics: LinkMetrics
    private let state: Mutex<State>

    init(
        hub: NotificationHub, channel: String, origin: UUID, configuration: PostgresConnection.Configuration,
        options: PostgresLink.Options, logger: Logger
    ) {
        self.hub = hub
        self.channel = channel
        self.origin = origin
        let incarnation = Incarnation.make(startedAt: options.now())
        self.incarnation = incarnation
        self.writer = Envelope.Writer(
            origin: origin.uuidString, incarnation: incarnation, writesLegacyEnvelopes: options.legacyEnvelopes)
        let signer = Signer(keys: options.keys, channel: channel, isLegacy: options.legacyEnvelopes)
        self.signer = signer
        self.metrics = LinkMetrics(channel: channel, factory: options.metricsFactory ?? MetricsSystem.factory)
        let writer = self.writer
        let extra = signer?.overhead ?? 0
        let batchesBursts = options.batchesBursts
        let sender = Sender { pending in
            batchesBursts ? writer.count(pending, limit: PostgresLink.maximumPayloadBytes, extra: extra) : 1
        }
        self.state = Mutex(
            State(
                peers: PeerTracker(origin: origin, incarnation: incarnation, isSigned: signer != nil), sender: sender))
        self.configuration = configuration
        self.options = options
        self.eventLoop = PostgresConnection.defaultEventLoopGroup.any()
        self.logger = logger
        var connectionLogger = logger
        if connectionLogger.logLevel < .debug { connectionLogger.logLevel = .debug }
        self.connectionLogger = connectionLogger
    }

    var statistics: PostgresLink.Statistics { state.withLock { $0.statistics } }

    var errorHandler: (@Sendable (PostgresLinkError) -> Void)? {
        get { state.withLock { $0.errorHandler } }
        set {
            let old = state.withLock { state in
                let old = state.errorHandler
                state.errorHandler = newValue
                return old
            }
            _ = old  // released here, after unlocking
        }
    }

    private var isClosed: Bool { state.withLock { $0.isClosed } }

    // MARK: - Life cycle

    /// Opens a connection on the link's event loop.
    func makeConnection() async throws -> PostgresConnection {
        try await PostgresConnection.connect(
            on: eventLoop, configuration: configuration, id: nextConnectionID(), logger: connectionLogger)
    }

    /// Takes the sending connection, and starts the listening task; returns once `LISTEN` is in
    /// effect.
    func start(sender: PostgresConnection, listener: PostgresConnection) async throws {
        // Posts made before (shared types are observed from `share` on) go out now.
        let step = state.withLock { $0.sender.connected(SendingConnection(sender)) }
        perform(step)
        do {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ready = Ready(continuation)
                // On the connections' event loop: a notification is read, decoded and posted on the
                // thread that received it, with no hop to the global executor and back.
                let listenerTask = Task(executorPreference: EventLoopTaskExecutor(eventLoop)) {
                    await self.runListener(on: listener, ready: ready)
                }
                state.withLock { $0.listenerTask = listenerTask }
            }
        } catch {
            let (lost, waiters) = state.withLock { state in
                state.isClosed = true
                return state.sender.giveUp()
            }
            for item in lost { report(.notSent(type: item.typeName, reason: "the link could not listen")) }
            for waiter in waiters { waiter.resume() }
            throw error
        }
    }

    func close() async {
        let (tokens, listenerTask) = state.withLock { state in
            state.isClosed = true
            let tokens = state.tokens
            state.tokens = [:]
            return (tokens, state.listenerTask)
        }
        for token in tokens.values { token.cancel() }
        // Flushes what was queued before `isClosed`, then closes the sending connection.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let step = state.withLock { $0.sender.close(waiter: continuation) }
            guard let step else { return continuation.resume() }
            perform(step)
        }
        listenerTask?.cancel()
        await listenerTask?.value
    }

    /// Stops without waiting, when the link is released without `close()`: cancels the run that
    /// `connect` started, if any.
    func abandon() {
        if let task = state.withLock({ $0.run.task }) {
            task.cancel()
            return
        }
        let (tokens, listenerTask, step) = state.withLock { state in
            state.isClosed = true
            let tokens = state.tokens
            state.tokens = [:]
            return (tokens, state.listenerTask, state.sender.close(waiter: nil) ?? .none)
        }
        for token in tokens.values { token.cancel() }
        perform(step)
        listenerTask?.cancel()
    }

    // MARK: - Reconnecting

    /// Opens a new connection after a loss, waiting between attempts with exponential backoff
    /// (``PostgresLink/Reconnection``). Returns `nil` once the link is closed or its task cancelled.
    private func reconnect() async -> PostgresConnection? {
        let clock = ContinuousClock()
        var delay = options.reconnection.initialDelay
        while true {
            // Sleeps in short slices, so that `close()` during an outage returns promptly.
            let wakeUp = clock.now + delay
            while clock.now < wakeUp {
                guard !isClosed, !Task.isCancelled else { return nil }
                try? await Task.sleep(for: min(.milliseconds(20), wakeUp - clock.now))
            }
            guard !isClosed, !Task.isCancelled else { return nil }
            state.withLock { $0.statistics.reconnectAttempts += 1 }
            do {
                let connection = try await makeConnection()
                state.withLock { $0.statistics.reconnections += 1 }
                return connection
            } catch {
                logger.debug("HeraldPostgres: reconnecting failed", metadata: ["channel": "\(channel)"])
                delay = min(delay * options.reconnection.multiplier, options.reconnection.maximumDelay)
            }
        }
    }

    /// Whether a failed `pg_notify` means that the connection is gone (retry on a new one), rather
    /// than that the statement itself failed (give up on this message).
    private static func isConnectionFailure(_ error: any Error, on connection: PostgresConnection) -> Bool {
        guard let error = error as? PSQLError, error.code == .server else { return true }
        if connection.isClosed { return true }
        // Class 08: connection exception; class 57: operator intervention (shutdown, terminated).
        let state = error.serverInfo?[.sqlState] ?? ""
        return state.hasPrefix("08") || state.hasPrefix("57")
    }

    // MARK: - Sharing

    func share<N: WireNotification>(_ type: N.Type) {
        let key = ObjectIdentifier(type)
        let encoder = JSONEncoder()
        let typeJSON: String
        do {
            typeJSON = String(decoding: try encoder.encode(N.wireName), as: UTF8.self)
        } catch {
            report(.encodingFailed(type: N.wireName, error: error))
            return
        }
        let decoder = Envelope.PayloadDecoder(
            fromContainer: { [weak self] container in
                let value = try container.decode(N.self, forKey: .payload)
                let core = self  // held by the delivery until it runs
                return { core?.post(value) }
            },
            fromBytes: { [weak self] decoder, bytes in
                let value = try decoder.decode(N.self, from: Data(bytes))
                let core = self
                return { core?.post(value) }
            })
        let isNew = state.withLock { state in
            guard !state.isClosed, state.tokens[key] == nil else { return false }
            state.decoders[N.wireName] = decoder
            return true
        }
        guard isNew else { return }
        // Registered outside the lock: the hub may run user code (replay) while observing.
        let token = hub.observe(type) { [weak self] note in
            self?.send(note, typeJSON: typeJSON, encoder: encoder)
        }
        let stale: ObservationToken? = state.withLock { state in
            guard !state.isClosed, state.tokens[key] == nil else { return token }
            state.tokens[key] = token
            return nil
        }
        stale?.cancel()
    }

    // MARK: - Sending

    private enum Enqueued {
        case queued(depth: Int)
        case closed
        case oversize(Int)
        case queueFull
    }

    /// The link's observer: encodes a local post, queues it, and sends it at once if the sending
    /// connection is idle.
    private func send<N: WireNotification>(_ note: N, typeJSON: String, encoder: JSONEncoder) {
        if let marker = RepostMarker.current, marker.consume(link: self, type: N.self) {
            state.withLock { $0.statistics.repostsNotResent += 1 }
            return
        }
        let payloadJSON: String
        do {
            payloadJSON = String(decoding: try encoder.encode(note), as: UTF8.self)
        } catch {
            state.withLock { $0.statistics.sendFailures += 1 }
            report(.encodingFailed(type: N.wireName, error: error))
            return
        }
        let overhead = signer?.overhead ?? 0
        let limit = options.sendQueueLimit
        // The sequence number and the queue position are taken together, so that they agree.
        let (enqueued, step): (Enqueued, SendStep) = state.withLock { state in
            guard !state.isClosed else { return (.closed, .none) }
            let item = Envelope.Item(
                typeName: N.wireName, typeJSON: typeJSON, payloadJSON: payloadJSON, sequence: state.nextSequence)
            let size = writer.size(alone: item) + overhead
            guard size <= PostgresLink.maximumPayloadBytes else {
                state.statistics.oversize += 1
                return (.oversize(size), .none)
            }
            let (isQueued, step) = state.sender.enqueue(item, limit: limit)
            guard isQueued else {
                state.statistics.sendFailures += 1
                return (.queueFull, .none)
            }
            state.nextSequence += 1
            return (.queued(depth: state.sender.queued), step)
        }
        if case .queued(let depth) = enqueued { metrics.queueDepth(depth) }
        perform(step)
        switch enqueued {
        case .closed:
            report(.notSent(type: N.wireName, reason: "the link was shutting down"))
        case .oversize(let size):
            report(.payloadTooLarge(type: N.wireName, size: size, limit: PostgresLink.maximumPayloadBytes))
        case .queueFull:
            report(.sendQueueFull(type: N.wireName, limit: limit))
        case .queued:
            break
        }
    }

    private func perform(_ step: SendStep) {
        switch step {
        case .none:
            break
        case .transmit(let items, let connection):
            let text = writer.text(items)
            let payload = signer?.sign(text, issued: Self.milliseconds(options.now())) ?? text
            connection.notify(channel: channel, payload: payload, logger: connectionLogger)
                .whenComplete { result in
                    self.transmitted(items, on: connection, result: result)
                }
        case .finish(let connection, let waiters):
            guard let connection else {
                for waiter in waiters { waiter.resume() }
                return
            }
            // The connection must outlive its closing: postgres-nio asserts that it is closed
            // before it is released.
            connection.connection.close().whenComplete { _ in
                withExtendedLifetime(connection) {}
                for waiter in waiters { waiter.resume() }
            }
        }
    }

    /// A `NOTIFY` completed, on the connection's event loop: send the next one, or, if the
    /// connection is gone, reconnect and send the same one again.
    private func transmitted(
        _ items: [Envelope.Item], on connection: SendingConnection, result: Result<Void, any Error>
    ) {
        switch result {
        case .success:
            let (step, depth) = state.withLock { state in
                state.statistics.sent += items.count
                if items.count > 1 { state.statistics.batchesSent += 1 }
                return (state.sender.completed(), state.sender.queued)
            }
            metrics.didSend(items.count)
            metrics.queueDepth(depth)
            perform(step)
        case .failure(let error) where Self.isConnectionFailure(error, on: connection.connection):
            let isClosed = state.withLock { state in
                state.sender.connectionLost()
                return state.isClosed
            }
            connection.connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
            if !isClosed { report(.connectionLost(.sending, error: error)) }
            Task { await self.reconnectSender() }
        case .failure(let error):
            let step = state.withLock { state in
                state.statistics.sendFailures += items.count
                return state.sender.completed()
            }
            for item in items { report(.sendFailed(type: item.typeName, sequence: item.sequence, error: error)) }
            perform(step)
        }
    }

    /// Opens a new sending connection with backoff, and sends the `NOTIFY` that failed again, then
    /// the rest. (A `NOTIFY` that reached the server before the connection died arrives twice;
    /// receivers drop the second copy by its sequence numbers.) If the link is closed meanwhile,
    /// what is still queued is reported as not sent.
    private func reconnectSender() async {
        if let connection = await reconnect().map(SendingConnection.init) {
            let step = state.withLock { $0.sender.connected(connection) }
            perform(step)
            return
        }
        let (lost, waiters) = state.withLock { state in
            let (lost, waiters) = state.sender.giveUp()
            state.statistics.sendFailures += lost.count
            return (lost, waiters)
        }
        for item in lost { report(.notSent(type: item.typeName, sequence: item.sequence)) }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: - Running

    /// Where the link's `run()` is.
    struct RunState {
        enum Phase { case idle, connecting, listening, stopped }

        var phase = Phase.idle
        /// Why `run()` failed, if it did.
        var failure: (any Error)?
        /// `listening()` calls waiting for `LISTEN` to be in effect.
        var listeningWaiters: [CheckedContinuation<Void, any Error>] = []
        /// Whether `close()`, a graceful shutdown or a cancellation asked the run to end.
        var isStopRequested = false
        var stopRequestWaiter: CheckedContinuation<Void, Never>?
        /// `close()` calls waiting for the run to end.
        var stoppedWaiters: [CheckedContinuation<Void, Never>] = []
        /// The task that runs the link for `connect`.
        var task: Task<Void, Never>?
    }

    /// Connects, listens, and sends and receives (reconnecting as needed) until `close()`, a graceful
    /// shutdown or a cancellation; see ``PostgresLink/run()``.
    func run() async throws {
        let isFirst = state.withLock { state in
            guard state.run.phase == .idle else { return false }
            state.run.phase = .connecting
            return true
        }
        guard isFirst else { throw PostgresLinkError.alreadyRunning() }
        do {
            let sender = try await makeConnection()
            let listener: PostgresConnection
            do {
                listener = try await makeConnection()
            } catch {
                try? await sender.close()
                throw error
            }
            do {
                try await start(sender: sender, listener: listener)
            } catch {
                try? await sender.close()
                try? await listener.close()
                throw error
            }
        } catch {
            finishRun(failure: error)
            throw error
        }
        let waiters = state.withLock { state in
            state.run.phase = .listening
            return state.run.listeningWaiters.take()
        }
        for waiter in waiters { waiter.resume() }
        await waitForStopRequest()
        if Task.isCancelled { await stopNow() } else { await close() }
        finishRun(failure: nil)
    }

    /// Starts ``run()`` in a task of its own, for `connect`.
    func startRunning() {
        // Its error, if any, reaches the caller through `listening()`.
        let task = Task { _ = try? await self.run() }
        state.withLock { $0.run.task = task }
    }

    /// Returns once `LISTEN` is in effect; throws the error that ended the run before.
    func listening() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let result: Result<Void, any Error>? = state.withLock { state in
                switch state.run.phase {
                case .listening: return .success(())
                case .stopped: return .failure(state.run.failure ?? CancellationError())
                case .idle, .connecting:
                    state.run.listeningWaiters.append(continuation)
                    return nil
                }
            }
            if let result { continuation.resume(with: result) }
        }
    }

    /// Asks the run to end gracefully and waits until it has; see ``PostgresLink/close()``.
    func stop() async {
        let (wasIdle, tokens, lost): (Bool, [ObjectIdentifier: ObservationToken], [Envelope.Item]) = state.withLock {
            state in
            guard state.run.phase == .idle else { return (false, [:], [Envelope.Item]()) }
            state.run.phase = .stopped
            state.isClosed = true
            let tokens = state.tokens
            state.tokens = [:]
            return (true, tokens, state.sender.giveUp().lost)
        }
        if wasIdle {
            // Never ran: nothing was sent.
            for token in tokens.values { token.cancel() }
            for item in lost { report(.notSent(type: item.typeName, reason: "the link closed before it ran")) }
            return
        }
        requestStop()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isStopped = state.withLock { state in
                guard state.run.phase != .stopped else { return true }
                state.run.stoppedWaiters.append(continuation)
                return false
            }
            if isStopped { continuation.resume() }
        }
    }

    private func requestStop() {
        let waiter = state.withLock { state in
            state.run.isStopRequested = true
            return state.run.stopRequestWaiter.take()
        }
        waiter?.resume()
    }

    /// Waits for `close()`, a graceful shutdown of the service group, or the task's cancellation.
    private func waitForStopRequest() async {
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let isRequested = state.withLock { state in
                        if state.run.isStopRequested { return true }
                        state.run.stopRequestWaiter = continuation
                        return false
                    }
                    if isRequested { continuation.resume() }
                }
            } onCancel: {
                self.requestStop()
            }
        } onGracefulShutdown: {
            self.requestStop()
        }
    }

    /// Stops at once, on cancellation: what was not sent yet is reported as not sent.
    private func stopNow() async {
        let (tokens, listenerTask, lost, connection, waiters) = state.withLock { state in
            state.isClosed = true
            let tokens = state.tokens
            state.tokens = [:]
            let (lost, connection, waiters) = state.sender.stopNow()
            return (tokens, state.listenerTask, lost, connection, waiters)
        }
        for token in tokens.values { token.cancel() }
        for item in lost {
            report(.notSent(type: item.typeName, reason: "the link's run was cancelled (sequence \(item.sequence))"))
        }
        if let connection {
            connection.connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
        }
        for waiter in waiters { waiter.resume() }
        listenerTask?.cancel()
        await listenerTask?.value
    }

    /// Marks the run ended, and wakes whoever waits for it.
    private func finishRun(failure: (any Error)?) {
        let (listeningWaiters, stoppedWaiters, tokens, lost, senderWaiters) = state.withLock { state in
            state.run.phase = .stopped
            state.run.failure = failure
            var tokens: [ObjectIdentifier: ObservationToken] = [:]
            var lost: [Envelope.Item] = []
            var senderWaiters: [CheckedContinuation<Void, Never>] = []
            if failure != nil {
                state.isClosed = true
                tokens = state.tokens
                state.tokens = [:]
                (lost, senderWaiters) = state.sender.giveUp()
            }
            return (
                state.run.listeningWaiters.take(), state.run.stoppedWaiters.take(), tokens, lost, senderWaiters
            )
        }
        for token in tokens.values { token.cancel() }
        for item in lost { report(.notSent(type: item.typeName, reason: "the link could not connect")) }
        for waiter in senderWaiters { waiter.resume() }
        for waiter in listeningWaiters { waiter.resume(throwing: failure ?? CancellationError()) }
        for waiter in stoppedWaiters { waiter.resume() }
    }

    // MARK: - Receiving

    /// Resumes the `connect` call once, with success when listening, or with the first error.
    final class Ready: Sendable {
        private let continuation: Mutex<CheckedContinuation<Void, any Error>?>

        init(_ continuation: CheckedContinuation<Void, any Error>) {
            self.continuation = Mutex(continuation)
        }

        /// Resumes the waiter; returns `false` if it was resumed before.
        @discardableResult
        func resume(with result: Result<Void, any Error>) -> Bool {
            guard let continuation = self.continuation.withLock({ $0.take() }) else { return false }
            continuation.resume(with: result)
            return true
        }
    }

    /// Listens until the link closes. When the connection is lost, it reports
    /// ``PostgresLinkError/Code/connectionLost``, reconnects with backoff, listens again, and
    /// reports the window in which notifications may have been lost
    /// (``PostgresLinkError/Code/outage``).
    private func runListener(on first: PostgresConnection, ready: Ready) async {
        var connection: PostgresConnection? = first
        var outageStart: Date?
        var reader = makeReader()
        while let current = connection {
            var failure: (any Error)?
            do {
                try await current.listen(on: channel) { notifications in
                    if let start = outageStart {
                        outageStart = nil
                        state.withLock { $0.statistics.outages += 1 }
                        report(.outage(from: start, to: Date()))
                    }
                    ready.resume(with: .success(()))
                    for try await notification in notifications {
                        receive(notification.payload, reader: &reader)
                    }
                }
            } catch {
                failure = error
            }
            try? await current.close()
            if ready.resume(with: .failure(failure ?? CancellationError())) { return }  // `connect` fails
            guard !isClosed, !Task.isCancelled else { return }
            if outageStart == nil {
                outageStart = Date()
                report(.connectionLost(.listening, error: failure))
            }
            connection = await reconnect()
        }
    }

    /// What the listening task keeps between messages, which it reads one at a time.
    struct Reader {
        let decoder: JSONDecoder
        /// This link's origin and incarnation id as written in envelopes.
        let own: [UInt8]
        let ownIncarnation: [UInt8]
        /// The origins seen, as written and parsed (a UUID parses slowly); bounded.
        var origins: [String: UUID] = [:]

        mutating func origin(_ bytes: ArraySlice<UInt8>) -> UUID? {
            let text = String(decoding: bytes, as: UTF8.self)
            if let origin = origins[text] { return origin }
            guard let origin = UUID(uuidString: text) else { return nil }
            if origins.count >= 1_024 { origins.removeAll(keepingCapacity: true) }
            origins[text] = origin
            return origin
        }
    }

    private func makeReader() -> Reader {
        let decoder = JSONDecoder()
        decoder.userInfo[Envelope.Context.key] = Envelope.Context(origin: origin, incarnation: incarnation) {
            [weak self] wireName in
            self?.state.withLock { $0.decoders[wireName] }
        }
        return Reader(
            decoder: decoder, own: Array(origin.uuidString.utf8), ownIncarnation: Array(incarnation.idText.utf8))
    }

    /// Checks, parses and delivers one message of the channel: a single notification or a batch,
    /// whose notifications go through the same checks one by one, in order.
    ///
    /// Messages in the layout this build writes are read by a scan of their bytes, which decodes
    /// only the payload, and leaves the link's own messages undecoded; any other message, and any
    /// payload that does not decode, goes through the full parse, which names what is wrong.
    private func receive(_ text: String, reader: inout Reader) {
        let bytes: [UInt8]
        if let signer {
            switch signer.verify(text) {
            case .valid(let envelope, let issued):
                if let stale = staleness(issued: issued, isLegacy: signer.isLegacy) {
                    state.withLock { $0.statistics.stale += 1 }
                    reject(.staleEnvelope(size: text.utf8.count, found: stale))
                    return
                }
                bytes = envelope
            case .unsigned:
                reject(.unsignedEnvelope(size: text.utf8.count))
                return
            case .forged:
                reject(.invalidSignature(size: text.utf8.count))
                return
            case .unknownKey(let id):
                reject(.unknownSigningKey(size: text.utf8.count, id: id))
                return
            }
        } else {
            bytes = Array(text.utf8)
        }
        // Tells a copy of a message from another message with the same sequence numbers.
        var hasher = Hasher()
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        let digest = hasher.finalize()
        let look = Envelope.quickLook(bytes, own: reader.own, ownIncarnation: reader.ownIncarnation)
        let single:
            (type: String, origin: Range<Int>, incarnation: Incarnation?, sequence: UInt64, payload: Range<Int>)?
        switch look {
        case .echo(let count):
            state.withLock { $0.statistics.echoesIgnored += count }
            return
        case .single(let type, let origin, let sequence, let payload):
            single = (type, origin, nil, sequence, payload)
        case .current(let type, let origin, let incarnation, let sequence, let payload):
            single = (type, origin, incarnation, sequence, payload)
        case .other:
            single = nil
        }
        if let single, let origin = reader.origin(bytes[single.origin]) {
            let source = Source(origin: origin, incarnation: single.incarnation, digest: digest)
            guard let decoder = state.withLock({ $0.decoders[single.type] }) else {
                accept(source, sequence: single.sequence, items: [.init(typeName: single.type, content: .unknownType)])
                return
            }
            if let delivery = try? decoder.fromBytes(reader.decoder, bytes[single.payload]) {
                accept(
                    source, sequence: single.sequence, items: [.init(typeName: single.type, content: .value(delivery))])
                return
            }
        }
        let data = Data(bytes)
        let incoming: Envelope.Incoming
        do {
            incoming = try reader.decoder.decode(Envelope.Incoming.self, from: data)
        } catch let error as Envelope.UnsupportedVersion {
            if error.found > Envelope.current {
                reject(.unsupportedVersion(found: error.found, supported: Envelope.current))
            } else {
                reject(
                    .malformedEnvelope(
                        expected: "envelope version 1 to \(Envelope.current)", found: "version \(error.found)"))
            }
            return
        } catch {
            let (expected, found) = Envelope.describe(error, input: String(decoding: data, as: UTF8.self))
            reject(.malformedEnvelope(expected: expected, found: found))
            return
        }
        if incoming.isEcho {
            state.withLock { $0.statistics.echoesIgnored += incoming.count }
            return
        }
        accept(
            Source(origin: incoming.origin, incarnation: incoming.incarnation, digest: digest),
            sequence: incoming.sequence, items: incoming.items)
    }

    /// Why a signed envelope issued at `issued` is refused as stale (``PostgresLink/Freshness``), or
    /// `nil` if it is fresh.
    private func staleness(issued: UInt64?, isLegacy: Bool) -> String? {
        guard let issued else { return isLegacy ? nil : "without issue time (an envelope of an earlier release)" }
        let now = Self.milliseconds(options.now())
        let skew = Self.milliseconds(options.freshness.clockSkew)
        let maximumAge = Self.milliseconds(options.freshness.maximumAge)
        if issued > now, issued - now > skew { return "issued \(issued - now) ms in the future" }
        if now > issued, now - issued > maximumAge + skew {
            return "issued \(now - issued) ms ago, over the \(maximumAge) ms allowed"
        }
        if issued < incarnation.started, incarnation.started - issued > skew {
            return "issued \(incarnation.started - issued) ms before this link began listening"
        }
        return nil
    }

    static func milliseconds(_ date: Date) -> UInt64 {
        let milliseconds = (date.timeIntervalSince1970 * 1_000).rounded(.down)
        return milliseconds > 0 && milliseconds < 1e18 ? UInt64(milliseconds) : 0
    }

    static func milliseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        return UInt64(min(seconds, 1_000_000_000_000)) * 1_000 + UInt64(max(attoseconds, 0) / 1_000_000_000_000_000)
    }

    /// Who sent a message, and the digest of its bytes.
    private struct Source {
        let origin: UUID
        let incarnation: Incarnation?
        let digest: Int
    }

    /// Checks the sequence numbers of a message's notifications (`sequence`, the next, …) with the
    /// ``PeerTracker``, reports what it found and what does not decode, and posts the others into
    /// the hub, in order.
    private func accept(_ source: Source, sequence first: UInt64, items: [Envelope.Incoming.Item]) {
        let origin = source.origin
        var errors: [PostgresLinkError] = []
        var deliveries: [Envelope.Delivery] = []
        deliveries.reserveCapacity(items.count)
        var events: [PeerTracker.Event] = []
        state.withLock { state in
            for (offset, item) in items.enumerated() {
                let sequence = first + UInt64(offset)  // no overflow: checked when parsed
                // Sequence numbers run across all types of an origin, so unknown types advance it too.
                let isAccepted = state.peers.check(
                    origin: origin, incarnation: source.incarnation, sequence: sequence, digest: source.digest,
                    events: &events)
                for event in events {
                    switch event {
                    case .gap(let expected, let found):
                        state.statistics.gaps += 1
                        errors.append(.sequenceGap(origin: origin, expected: expected, found: found))
                    case .duplicate(let last, let found):
                        state.statistics.duplicates += 1
                        errors.append(.duplicateSequence(origin: origin, lastAccepted: last, found: found))
                    case .regression(let last, let found):
                        state.statistics.regressions += 1
                        errors.append(.sequenceRegression(origin: origin, lastAccepted: last, found: found))
                    case .restarted(let previous, let last, let current):
                        state.statistics.restarts += 1
                        errors.append(
                            .originRestarted(origin: origin, previous: previous, lastSequence: last, current: current))
                    case .clash(let first, let second):
                        state.statistics.clashes += 1
                        errors.append(.originClash(origin: origin, first, second, isOwn: origin == self.origin))
                    }
                }
                events.removeAll(keepingCapacity: true)
                guard isAccepted else { continue }
                switch item.content {
                case .value(let delivery):
                    deliveries.append(delivery)
                case .unknownType:
                    state.statistics.rejected += 1
                    errors.append(.unknownType(item.typeName, origin: origin, shared: Array(state.decoders.keys)))
                case .undecodable(let expected, let found):
                    state.statistics.rejected += 1
                    errors.append(
                        .payloadDecodingFailed(type: item.typeName, origin: origin, expected: expected, found: found))
                }
            }
            state.statistics.received += deliveries.count
        }
        metrics.didReceive(deliveries.count)
        for error in errors {
            switch error.code {
            case .sequenceGap: metrics.didFindGap()
            case .duplicateSequence, .unknownType, .payloadDecodingFailed: metrics.didRefuse(error.code)
            default: break
            }
            report(error)
        }
        for delivery in deliveries { delivery() }
    }

    /// Posts a received value into the hub, marked as this link's re-post.
    private func post<N: WireNotification>(_ value: N) {
        RepostMarker.$current.withValue(RepostMarker(link: self, type: N.self)) {
            hub.post(value)
        }
    }

    // MARK: - Errors

    private func reject(_ error: PostgresLinkError) {
        state.withLock { $0.statistics.rejected += 1 }
        metrics.didRefuse(error.code)
        report(error)
    }

    private func report(_ error: PostgresLinkError) {
        if let handler = errorHandler {
            handler(error)
        } else {
            hub.errorHandler(
                ObserverFailure(
                    error: error, notificationType: error.typeName ?? "PostgresLink",
                    fileID: "HeraldPostgres/PostgresLink.swift", line: 0))
        }
    }
}

extension Array {
    /// Returns the elements and leaves the array empty.
    fileprivate mutating func take() -> Self {
        defer { self = [] }
        return self
    }
}

private let connectionIDs = Atomic<Int>(0)

private func nextConnectionID() -> Int {
    connectionIDs.wrappingAdd(1, ordering: .relaxed).newValue
}

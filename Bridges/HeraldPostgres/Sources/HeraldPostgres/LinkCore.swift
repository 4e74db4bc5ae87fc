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
        run("SELECT pg_notify(\(channel), \(payload))", logger: logger)
    }

    /// Runs `query`, guarded as ``notify(channel:payload:logger:)`` is.
    func run(_ query: PostgresQuery, logger: Logger) -> EventLoopFuture<Void> {
        let promise = connection.closeFuture.eventLoop.makePromise(of: Void.self)
        let isClosed = state.withLock { state in
            if !state.isClosed { state.inFlight = promise }
            return state.isClosed
        }
        guard !isClosed else {
            promise.fail(Closed())
            return promise.futureResult
        }
        let result: EventLoopFuture<PostgresQueryResult> = connection.query(query, logger: logger)
        result.map { _ in }.cascade(to: promise)
        return promise.futureResult.always { [weak self] _ in
            self?.state.withLock { state in
                if state.inFlight?.futureResult === promise.futureResult { state.inFlight = nil }
            }
        }
    }
}

/// A link's clock (``PostgresLink/Options/now``) corrected by the offset to the database server's
/// clock, taken when the link connects.
final class ServerClock: Sendable {
    let now: @Sendable () -> Date
    /// The database server's clock less the link's, in milliseconds; 0 before the link connects.
    let offset = Atomic<Int64>(0)

    init(now: @escaping @Sendable () -> Date) { self.now = now }

    /// The time since `issued` (milliseconds since 1970 by the server's clock), in nanoseconds;
    /// negative if it lies ahead.
    func nanoseconds(since issued: UInt64) -> Int64 {
        let local = now().timeIntervalSince1970 * 1e9 + Double(offset.load(ordering: .relaxed)) * 1e6
        let elapsed = local - Double(issued) * 1e6
        return elapsed.isFinite ? Int64(max(min(elapsed, 9e18), -9e18)) : 0
    }

    /// Now by the server's clock, in milliseconds since 1970.
    func milliseconds() -> UInt64 {
        let local = Int64(clamping: LinkCore.milliseconds(now()))
        let corrected = local &+ offset.load(ordering: .relaxed)
        return corrected > 0 ? UInt64(corrected) : 0
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

/// The state and the work behind a ``PostgresLink``: it holds the lock over the link's state
/// machines and does what they decide, after unlocking.
///
/// - ``SendStateMachine``: the queue of posts, drained one `NOTIFY` at a time;
/// - ``PeerTracker``: what is known of each sender, and which notifications to deliver;
/// - ``ConnectionStateMachine``: the run's life cycle, the listening connection's outages and
///   backoff, and who waits for what.
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

    /// The run's life cycle.
    typealias Lifecycle = ConnectionStateMachine<CheckedContinuation<Void, any Error>, CheckedContinuation<Void, Never>>

    struct State {
        var nextSequence: UInt64 = 1
        /// The link's shutdown has begun: posts stay local (``PostgresLinkError/Code/postAfterShutdown``).
        var isClosed = false
        var tokens: [ObjectIdentifier: ObservationToken] = [:]
        var decoders: [String: Envelope.PayloadDecoder] = [:]
        /// Durable mode: how to decode and deliver a row of each shared type.
        var durableDecoders: [String: DurableDecoder] = [:]
        /// How each shared type is encoded: its plain posts and its transactional ones alike.
        var encodings: [ObjectIdentifier: Encoding] = [:]
        var peers: PeerTracker
        var statistics = PostgresLink.Statistics()
        var errorHandler: (@Sendable (PostgresLinkError) -> Void)?
        var listenerTask: Task<Void, Never>?
        var sender: Sender
        var lifecycle: Lifecycle
        /// The task that runs the link for `connect`.
        var runTask: Task<Void, Never>?
        /// Durable mode with plain copies: the lanes of the transactional posts' copies.
        var lanes = TransactionalLanes()

        init(peers: PeerTracker, sender: Sender, lifecycle: Lifecycle) {
            self.peers = peers
            self.sender = sender
            self.lifecycle = lifecycle
        }
    }

    let hub: NotificationHub
    let channel: String
    let origin: UUID
    /// This run of the link: a random id and when it was created, before it began listening (by
    /// the link's clock until it connects, by the database server's after).
    var incarnation: Incarnation { writer.incarnation }
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
    /// The link's clock, corrected by the offset to the database server's clock.
    let serverClock: ServerClock
    /// When the link began listening, by the server's clock, in milliseconds since 1970.
    let listeningSince: Atomic<UInt64>
    /// Durable mode with plain copies: the `xmin` of the latest snapshot taken, below which every
    /// transaction has ended (``noteHorizon(_:)``); each plain copy carries it.
    let horizon = Atomic<UInt64>(0)
    let state: Mutex<State>

    init(
        hub: NotificationHub, channel: String, origin: UUID, configuration: PostgresConnection.Configuration,
        options: PostgresLink.Options, logger: Logger
    ) {
        self.hub = hub
        self.channel = channel
        self.origin = origin
        let incarnation = Incarnation.make(startedAt: options.now())
        self.listeningSince = Atomic(incarnation.started)
        // Durable rows are always version 3 envelopes: the log is new, no earlier release reads it.
        let isLegacy = options.legacyEnvelopes && options.durability == nil
        self.writer = Envelope.Writer(
            origin: origin.uuidString, incarnation: incarnation, writesLegacyEnvelopes: isLegacy)
        let signer = Signer(keys: options.keys, channel: channel, isLegacy: isLegacy)
        self.signer = signer
        self.metrics = LinkMetrics(channel: channel, factory: options.metricsFactory ?? MetricsSystem.factory)
        let writer = self.writer
        let serverClock = ServerClock(now: options.now)
        self.serverClock = serverClock
        let batchesBursts = options.batchesBursts
        let isDurable = options.durability != nil
        let sendsPlainCopies = options.durability?.phase.sendsPlainCopies ?? false
        let sender = Sender { pending in
            // One INSERT appends a batch of rows, of any size; its plain copy must fit a `NOTIFY`.
            if isDurable, !sendsPlainCopies { return min(pending.count, 256) }
            guard batchesBursts else { return 1 }
            // The issue time is written as the `NOTIFY` goes out, right after this count.
            var extra = signer?.overhead(issued: serverClock.milliseconds()) ?? 0
            if sendsPlainCopies { extra += Envelope.horizonBound }
            let count = writer.count(pending, limit: PostgresLink.maximumPayloadBytes, extra: extra)
            return isDurable ? min(count, 256) : count
        }
        self.state = Mutex(
            State(
                peers: PeerTracker(origin: origin, incarnation: incarnation, isSigned: signer != nil), sender: sender,
                lifecycle: Lifecycle(reconnection: options.reconnection)))
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

    var isClosed: Bool { state.withLock { $0.isClosed } }

    // MARK: - Clocks

    /// Now by the database server's clock: the link's clock plus the offset taken at connect, in
    /// milliseconds since 1970.
    func serverNow() -> UInt64 { serverClock.milliseconds() }

    /// Takes the offset between the server's clock and the link's: reads `clock_timestamp()` and
    /// takes it as the server's time at the midpoint of the round trip, so that the error is at
    /// most half the round trip.
    func measureServerClock(on connection: PostgresConnection) async throws {
        let before = Int64(clamping: Self.milliseconds(options.now()))
        let rows = try await connection.query(
            "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::int8", logger: connectionLogger)
        var server: Int64?
        for try await value in rows.decode(Int64.self) { server = value }
        let after = Int64(clamping: Self.milliseconds(options.now()))
        guard let server else { return }
        serverClock.offset.store(server - (before + (after - before) / 2), ordering: .relaxed)
    }

    /// Moves the incarnation's start time to the server's clock, now that the offset is known: every
    /// link's start time is then by one clock, whatever its host's says, so that a receiver can tell
    /// a sender that started after it from one that started before. Runs before the first envelope
    /// is written and the first message read.
    private func beginIncarnation() {
        let local = writer.incarnation.started
        let offset = serverClock.offset.load(ordering: .relaxed)
        let started = offset >= 0 ? local &+ UInt64(offset) : local &- min(local, offset.magnitude)
        writer.rebase(startedOnServer: started)
        state.withLock { state in
            state.peers = PeerTracker(origin: origin, incarnation: writer.incarnation, isSigned: signer != nil)
        }
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

    // MARK: - Running

    /// Opens a connection on the link's event loop.
    func makeConnection() async throws -> PostgresConnection {
        try await PostgresConnection.connect(
            on: eventLoop, configuration: configuration, id: nextConnectionID(), logger: connectionLogger)
    }

    /// Connects, listens, and sends and receives (reconnecting as needed) until `close()`, a graceful
    /// shutdown or a cancellation; see ``PostgresLink/run()``.
    func run() async throws {
        guard state.withLock({ $0.lifecycle.run() }) == .connect else { throw PostgresLinkError.alreadyRunning() }
        do {
            let sender = try await makeConnection()
            let listener: PostgresConnection
            do {
                try await measureServerClock(on: sender)
                beginIncarnation()
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
        switch await waitForStopRequest() {
        case .graceful: await closeGracefully()
        case .immediate: await stopNow()
        }
        finishRun(failure: nil)
    }

    /// Takes the sending connection, and starts the listening task; returns once `LISTEN` is in
    /// effect.
    private func start(sender: PostgresConnection, listener: PostgresConnection) async throws {
        // Posts made before (shared types are observed from `share` on) go out now.
        let step = state.withLock { $0.sender.connected(SendingConnection(sender)) }
        perform(step)
        // Anything issued before, less the skew allowance, can only be a replay.
        listeningSince.store(serverNow(), ordering: .relaxed)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let ready = Ready(continuation)
            // On the connections' event loop: a notification is read, decoded and posted on the
            // thread that received it, with no hop to the global executor and back.
            let listenerTask = Task(executorPreference: EventLoopTaskExecutor(eventLoop)) {
                if let durability = self.options.durability, durability.phase.readsLog {
                    await self.runDurableReader(on: listener, ready: ready, durability: durability)
                } else {
                    await self.runListener(on: listener, ready: ready)
                }
            }
            state.withLock { $0.listenerTask = listenerTask }
        }
    }

    /// Starts ``run()`` in a task of its own, for `connect`.
    func startRunning() {
        // Its error, if any, reaches the caller through `listening()`.
        let task = Task { _ = try? await self.run() }
        state.withLock { $0.runTask = task }
    }

    /// Returns once `LISTEN` is in effect; throws the error that ended the run before.
    func listening() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            switch state.withLock({ $0.lifecycle.waitForListening(continuation) }) {
            case .wait: break
            case .succeed: continuation.resume()
            case .fail(let failure): continuation.resume(throwing: failure ?? CancellationError())
            }
        }
    }

    /// Asks the run to end gracefully and waits until it has; see ``PostgresLink/close()``.
    func stop() async {
        guard requestStop(.graceful) else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            if state.withLock({ $0.lifecycle.waitUntilStopped(continuation) }) { continuation.resume() }
        }
    }

    /// Begins the shutdown: from now on posts stay local. Returns `false` if the link never ran (it
    /// is stopped now, and what it queued is reported as not sent).
    @discardableResult
    private func requestStop(_ stop: Lifecycle.Stop) -> Bool {
        let (action, lost) = state.withLock { state in
            state.isClosed = true
            let action = state.lifecycle.requestStop(stop)
            guard case .closeUnstarted = action else { return (action, [Envelope.Item]()) }
            return (action, state.sender.giveUp().lost)
        }
        switch action {
        case .none:
            return true
        case .wakeRun(let waiter):
            waiter?.resume()
            return true
        case .closeUnstarted:
            for item in lost { report(.notSent(type: item.typeName, sequence: item.sequence, .closedBeforeRunning)) }
            return false
        }
    }

    /// Waits for `close()`, a graceful shutdown of the service group, or the task's cancellation.
    private func waitForStopRequest() async -> Lifecycle.Stop {
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    if state.withLock({ $0.lifecycle.waitForStopRequest(continuation) }) != nil {
                        continuation.resume()
                    }
                }
            } onCancel: {
                self.requestStop(.immediate)
            }
        } onGracefulShutdown: {
            self.requestStop(.graceful)
        }
        return state.withLock { $0.lifecycle.stopping() }
    }

    /// Stops gracefully: flushes what was accepted, closes the sending connection, then stops
    /// listening.
    private func closeGracefully() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            guard let step = state.withLock({ $0.sender.close(waiter: continuation) }) else {
                return continuation.resume()
            }
            perform(step)
        }
        let listenerTask = state.withLock { $0.listenerTask }
        listenerTask?.cancel()
        await listenerTask?.value
    }

    /// Stops at once, on cancellation: what was not sent yet is reported as not sent.
    private func stopNow() async {
        let (listenerTask, lost, connection, waiters) = state.withLock { state in
            let (lost, connection, waiters) = state.sender.stopNow()
            state.statistics.sendFailures += lost.count
            return (state.listenerTask, lost, connection, waiters)
        }
        for item in lost { report(.notSent(type: item.typeName, sequence: item.sequence, .cancelled)) }
        if let connection {
            connection.connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
        }
        for waiter in waiters { waiter.resume() }
        listenerTask?.cancel()
        await listenerTask?.value
    }

    /// Marks the run ended, and wakes whoever waits for it.
    private func finishRun(failure: (any Error)?) {
        let (waiters, lost, senderWaiters) = state.withLock { state in
            let waiters = state.lifecycle.stopped(failure: failure)
            guard failure != nil else { return (waiters, [Envelope.Item](), [CheckedContinuation<Void, Never>]()) }
            state.isClosed = true
            let (lost, senderWaiters) = state.sender.giveUp()
            state.statistics.sendFailures += lost.count
            return (waiters, lost, senderWaiters)
        }
        for item in lost { report(.notSent(type: item.typeName, sequence: item.sequence, .couldNotRun)) }
        for waiter in senderWaiters { waiter.resume() }
        for waiter in waiters.listening { waiter.resume(throwing: failure ?? CancellationError()) }
        for waiter in waiters.stopped { waiter.resume() }
    }

    /// Stops without waiting, when the link is released: stops observing the hub, and cancels the
    /// run that `connect` started, if any.
    func abandon() {
        let (tokens, task, listenerTask, step) = state.withLock { state in
            state.isClosed = true
            let tokens = state.tokens
            state.tokens = [:]
            // A run of `connect`'s own ends by its cancellation; otherwise nothing runs.
            let step = state.runTask == nil ? state.sender.close(waiter: nil) ?? .none : .none
            return (tokens, state.runTask, state.runTask == nil ? state.listenerTask : nil, step)
        }
        for token in tokens.values { token.cancel() }
        task?.cancel()
        perform(step)
        listenerTask?.cancel()
    }

    // MARK: - Reconnecting

    /// Opens a new connection after a loss: waits `delay`, tries, and on failure waits as long as
    /// `retry` says before the next attempt. Returns `nil` once `isEnding` holds or `retry` gives
    /// up.
    func reconnect(
        after delay: Duration, retry: () -> Duration?, isEnding: () -> Bool
    ) async -> PostgresConnection? {
        let clock = ContinuousClock()
        var delay = delay
        while true {
            // Sleeps in short slices, so that `close()` during an outage returns promptly.
            let wakeUp = clock.now + delay
            while clock.now < wakeUp {
                guard !isEnding(), !Task.isCancelled else { return nil }
                try? await Task.sleep(for: min(.milliseconds(20), wakeUp - clock.now))
            }
            guard !isEnding(), !Task.isCancelled else { return nil }
            state.withLock { $0.statistics.reconnectAttempts += 1 }
            do {
                let connection = try await makeConnection()
                state.withLock { $0.statistics.reconnections += 1 }
                return connection
            } catch {
                logger.debug("HeraldPostgres: reconnecting failed", metadata: ["channel": "\(channel)"])
                guard let next = retry() else { return nil }
                delay = next
            }
        }
    }

    /// Whether a failed `pg_notify` means that the connection is gone (retry on a new one), rather
    /// than that the statement itself failed (give up on this message).
    static func isConnectionFailure(_ error: any Error, on connection: PostgresConnection) -> Bool {
        guard let error = error as? PSQLError, error.code == .server else { return true }
        if connection.isClosed { return true }
        // Class 08: connection exception; class 57: operator intervention (shutdown, terminated).
        let state = error.serverInfo?[.sqlState] ?? ""
        return state.hasPrefix("08") || state.hasPrefix("57")
    }

    // MARK: - Sharing

    /// How a type's values are encoded: its wire name as JSON, worked out once, and the encoder of
    /// its payloads.
    struct Encoding: Sendable {
        let typeJSON: String
        let encoder: JSONEncoder

        /// - Throws: The encoder's error, if the wire name does not encode.
        init<N: WireNotification>(of type: N.Type) throws {
            encoder = JSONEncoder()
            typeJSON = String(decoding: try encoder.encode(N.wireName), as: UTF8.self)
        }
    }

    /// The encoding of `type`: the one kept when it was shared, or a new one.
    ///
    /// - Throws: The encoder's error, if the wire name does not encode.
    func encoding<N: WireNotification>(of type: N.Type) throws -> Encoding {
        if let encoding = state.withLock({ $0.encodings[ObjectIdentifier(type)] }) { return encoding }
        return try Encoding(of: type)
    }

    func share<N: WireNotification>(_ type: N.Type) {
        let key = ObjectIdentifier(type)
        let encoding: Encoding
        do {
            encoding = try Encoding(of: type)
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
        let durableDecoder = DurableDecoder { [weak self] decoder, bytes, row in
            let value = try decoder.decode(N.self, from: Data(bytes))
            let core = self
            return { await core?.deliver(value, row: row) }
        }
        // Shared after the shutdown began too: its posts are then reported as made after it.
        let isNew = state.withLock { state in
            guard state.tokens[key] == nil else { return false }
            state.decoders[N.wireName] = decoder
            state.durableDecoders[N.wireName] = durableDecoder
            state.encodings[key] = encoding
            return true
        }
        guard isNew else { return }
        // Registered outside the lock: the hub may run user code (replay) while observing.
        let token = hub.observe(type) { [weak self] note in
            self?.send(note, typeJSON: encoding.typeJSON, encoder: encoding.encoder)
        }
        let stale: ObservationToken? = state.withLock { state in
            guard state.tokens[key] == nil else { return token }
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
        var overhead = signer?.overhead(issued: serverNow()) ?? 0
        let limit = options.sendQueueLimit
        // A durable row has no size bound; its plain copy has a `NOTIFY`'s.
        let isBounded = options.durability?.phase.sendsPlainCopies ?? true
        var horizon: UInt64 = 0
        if options.durability != nil, isBounded {
            overhead += Envelope.horizonBound
            horizon = self.horizon.load(ordering: .relaxed)
        }
        // The sequence number and the queue position are taken together, so that they agree.
        let (enqueued, step): (Enqueued, SendStep) = state.withLock { state in
            guard !state.isClosed else { return (.closed, .none) }
            let item = Envelope.Item(
                typeName: N.wireName, typeJSON: typeJSON, payloadJSON: payloadJSON, sequence: state.nextSequence,
                horizon: horizon)
            let size = writer.size(alone: item) + overhead
            guard !isBounded || size <= PostgresLink.maximumPayloadBytes else {
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
            report(.postAfterShutdown(type: N.wireName))
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
            let sent: EventLoopFuture<Void>
            if let durability = options.durability {
                var copy: String?
                if durability.phase.sendsPlainCopies {
                    let text = writer.text(items, horizon: items.map(\.horizon).max() ?? 0)
                    copy = signer?.sign(text, issued: serverNow()) ?? text
                }
                sent = connection.run(
                    appendQuery(items, log: durability.log, plainCopy: copy), logger: connectionLogger)
            } else {
                let text = writer.text(items)
                let payload = signer?.sign(text, issued: serverNow()) ?? text
                sent = connection.notify(channel: channel, payload: payload, logger: connectionLogger)
            }
            sent.whenComplete { result in
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
            let (step, depth, isCounted) = state.withLock { state in
                // A cancelled run gave these up, and reported them as not sent, while in flight.
                let isCounted = !state.sender.isStopped
                if isCounted {
                    state.statistics.sent += items.count
                    if items.count > 1 { state.statistics.batchesSent += 1 }
                }
                return (state.sender.completed(), state.sender.queued, isCounted)
            }
            if isCounted { metrics.didSend(items.count) }
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
        var backoff = Backoff(options.reconnection)
        let connection = await reconnect(
            after: backoff.take(), retry: { backoff.take() }, isEnding: { self.isClosed })
        if let connection = connection.map(SendingConnection.init) {
            let step = state.withLock { $0.sender.connected(connection) }
            perform(step)
            return
        }
        let (lost, waiters) = state.withLock { state in
            let (lost, waiters) = state.sender.giveUp()
            state.statistics.sendFailures += lost.count
            return (lost, waiters)
        }
        for item in lost { report(.notSent(type: item.typeName, sequence: item.sequence, .closedWhileReconnecting)) }
        for waiter in waiters { waiter.resume() }
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

    /// Listens until the link stops. When the connection is lost, it reports
    /// ``PostgresLinkError/Code/connectionLost``, reconnects with backoff, listens again, and
    /// reports the window in which notifications may have been lost
    /// (``PostgresLinkError/Code/outage``).
    ///
    /// A write-only durable link (``PostgresLink/Durability/Phase/writeOnly``) also holds its
    /// consumer's lock on the listening connection, and keeps the consumer's position as far as it
    /// has received (``WriteOnlyConsumer``).
    private func runListener(on first: PostgresConnection, ready: Ready) async {
        var connection: PostgresConnection? = first
        let consumer = options.durability.flatMap { durability in
            durability.phase.readsLog ? nil : WriteOnlyConsumer(core: self, durability: durability)
        }
        while let current = connection {
            var failure: (any Error)?
            do {
                try await holdLivenessLock(on: current)
                try await consumer?.open(current)
                try await current.listen(on: channel) { notifications in
                    switch state.withLock({ $0.lifecycle.listening(at: Date()) }) {
                    case .started(let waiters):
                        for waiter in waiters { waiter.resume() }
                    case .recovered(let since):
                        state.withLock { $0.statistics.outages += 1 }
                        report(.outage(from: since, to: Date()))
                    }
                    ready.resume(with: .success(()))
                    guard let consumer else {
                        return try await receiveAll(notifications, on: current, consumer: nil)
                    }
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask { try await self.receiveAll(notifications, on: current, consumer: consumer) }
                        group.addTask { try await consumer.maintain(on: current) }
                        defer { group.cancelAll() }
                        _ = try await group.next()
                    }
                }
            } catch {
                failure = error
            }
            if Task.isCancelled, !current.isClosed {
                await consumer?.finish(on: current)
                await releaseLivenessLock(on: current)
            }
            try? await current.close()
            if ready.resume(with: .failure(failure ?? CancellationError())) { return }  // `run()` fails
            guard !Task.isCancelled,
                case .reconnect(let delay, let reportsLoss) = state.withLock({ $0.lifecycle.listenerLost(at: Date()) })
            else { return }
            if let error = failure as? PostgresLinkError {
                report(error)
            } else if reportsLoss {
                report(.connectionLost(.listening, error: failure))
            }
            connection = await reconnect(
                after: delay, retry: { state.withLock { $0.lifecycle.reconnectFailed() } },
                isEnding: { state.withLock { $0.lifecycle.isEnding } })
        }
    }

    /// Receives the messages of one listening connection, one at a time, until the stream ends.
    private func receiveAll(
        _ notifications: PostgresNotificationSequence, on connection: PostgresConnection,
        consumer: WriteOnlyConsumer?
    ) async throws {
        var reader = makeReader(consumer: consumer)
        for try await notification in notifications {
            for successor in receive(notification.payload, reader: &reader) {
                await resolve(successor, on: connection)
            }
        }
    }

    /// What the listening task keeps between messages, which it reads one at a time.
    struct Reader {
        let decoder: JSONDecoder
        /// This link's origin and incarnation id as written in envelopes.
        let own: [UInt8]
        let ownIncarnation: [UInt8]
        /// What this link's own signed envelopes start with (``Signer/echoMarker(origin:incarnation:)``).
        let echoMarker: [UInt8]
        /// A write-only durable link's consumer, which learns the horizon of each plain copy
        /// processed, the link's own included (so their signatures are checked too).
        let consumer: WriteOnlyConsumer?
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

    private func makeReader(consumer: WriteOnlyConsumer?) -> Reader {
        let decoder = JSONDecoder()
        decoder.userInfo[Envelope.Context.key] = Envelope.Context(origin: origin, incarnation: incarnation) {
            [weak self] wireName in
            self?.state.withLock { $0.decoders[wireName] }
        }
        return Reader(
            decoder: decoder, own: Array(origin.uuidString.utf8), ownIncarnation: Array(incarnation.idText.utf8),
            echoMarker: Signer.echoMarker(origin: origin, incarnation: incarnation), consumer: consumer)
    }

    /// Checks, parses and delivers one message of the channel: a single notification or a batch,
    /// whose notifications go through the same checks one by one, in order.
    ///
    /// Messages in the layout this build writes are read by a scan of their bytes, which decodes
    /// only the payload, and leaves the link's own messages undecoded; any other message, and any
    /// payload that does not decode, goes through the full parse, which names what is wrong.
    private func receive(_ text: String, reader: inout Reader) -> [Successor] {
        guard !text.isEmpty else {
            reject(
                .malformedEnvelope(
                    expected: "a Herald envelope",
                    found: "an empty payload: a durable link's wake-up (a link reading the log without plain copies "
                        + "shares this channel)"))
            return []
        }
        var bytes: [UInt8]
        // When a signed envelope was issued, by the server's clock.
        var issuedAt: UInt64?
        if let signer {
            switch signer.verify(text, echoMarker: reader.consumer == nil ? reader.echoMarker : nil) {
            case .echo(let envelope):
                let look = Envelope.quickLook(envelope, own: reader.own, ownIncarnation: reader.ownIncarnation)
                let count = if case .echo(let count) = look { count } else { 1 }
                state.withLock { $0.statistics.echoesIgnored += count }
                return []
            case .valid(let envelope, let issued):
                if let stale = staleness(issued: issued, isLegacy: signer.isLegacy) {
                    if reader.consumer != nil, envelope.dropFirst().starts(with: reader.echoMarker) {
                        state.withLock { $0.statistics.echoesIgnored += 1 }
                        return []
                    }
                    state.withLock { $0.statistics.stale += 1 }
                    reject(.staleEnvelope(size: text.utf8.count, found: stale))
                    return []
                }
                bytes = envelope
                issuedAt = issued
            case .unsigned:
                reject(.unsignedEnvelope(size: text.utf8.count))
                return []
            case .forged:
                reject(.invalidSignature(size: text.utf8.count))
                return []
            case .unknownKey(let id):
                reject(.unknownSigningKey(size: text.utf8.count, id: id))
                return []
            }
        } else {
            bytes = Array(text.utf8)
        }
        // A durable link's plain copy: its horizon (for a write-only link's consumer), and the
        // envelope without it, as its sender numbered it, whatever the horizon.
        if let (horizon, envelope) = Envelope.horizon(in: bytes) {
            reader.consumer?.heard(horizon)
            bytes = envelope
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
            return []
        case .single(let type, let origin, let sequence, let payload):
            single = (type, origin, nil, sequence, payload)
        case .current(let type, let origin, let incarnation, let sequence, let payload):
            single = (type, origin, incarnation, sequence, payload)
        case .other:
            single = nil
        }
        if let single, let origin = reader.origin(bytes[single.origin]) {
            let source = Source(origin: origin, incarnation: single.incarnation, digest: digest, issued: issuedAt)
            guard let decoder = state.withLock({ $0.decoders[single.type] }) else {
                return accept(
                    source, sequence: single.sequence, items: [.init(typeName: single.type, content: .unknownType)])
            }
            if let delivery = try? decoder.fromBytes(reader.decoder, bytes[single.payload]) {
                return accept(
                    source, sequence: single.sequence, items: [.init(typeName: single.type, content: .value(delivery))])
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
            return []
        } catch {
            let (expected, found) = Envelope.describe(error, input: String(decoding: data, as: UTF8.self))
            reject(.malformedEnvelope(expected: expected, found: found))
            return []
        }
        if incoming.isEcho {
            state.withLock { $0.statistics.echoesIgnored += incoming.count }
            return []
        }
        return accept(
            Source(origin: incoming.origin, incarnation: incoming.incarnation, digest: digest, issued: issuedAt),
            sequence: incoming.sequence, items: incoming.items)
    }

    /// Why a signed envelope issued at `issued` is refused as stale (``PostgresLink/Freshness``), or
    /// `nil` if it is fresh.
    private func staleness(issued: UInt64?, isLegacy: Bool) -> String? {
        guard let issued else { return isLegacy ? nil : "without issue time (an envelope of an earlier release)" }
        let now = serverNow()
        let listeningSince = self.listeningSince.load(ordering: .relaxed)
        let skew = Self.milliseconds(options.freshness.clockSkew)
        let maximumAge = Self.milliseconds(options.freshness.maximumAge)
        if issued > now, issued - now > skew { return "issued \(issued - now) ms in the future" }
        if now > issued, now - issued > maximumAge + skew {
            return "issued \(now - issued) ms ago, over the \(maximumAge) ms allowed"
        }
        if issued < listeningSince, listeningSince - issued > skew {
            return "issued \(listeningSince - issued) ms before this link began listening"
        }
        return nil
    }

    /// Who sent a message, the digest of its bytes, and when it was issued (signed envelopes only).
    private struct Source {
        let origin: UUID
        let incarnation: Incarnation?
        let digest: Int
        let issued: UInt64?
    }

    /// Checks the sequence numbers of a message's notifications (`sequence`, the next, …) with the
    /// ``PeerTracker``, reports what it found and what does not decode, and posts the others into
    /// the hub, in order.
    private func accept(_ source: Source, sequence first: UInt64, items: [Envelope.Incoming.Item]) -> [Successor] {
        let origin = source.origin
        var successors: [Successor] = []
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
                        // A restart, or a replica: told apart by whether the previous one still runs.
                        successors.append(
                            Successor(origin: origin, previous: previous, lastSequence: last, current: current))
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
        for delivery in deliveries {
            delivery()
            if let issued = source.issued {
                metrics.didDeliver(issuedNanosecondsAgo: serverClock.nanoseconds(since: issued))
            }
        }
        return successors
    }

    // MARK: - Restarts and replicas

    /// A new, later-started incarnation of an origin already heard: the previous one restarted, or
    /// it still runs beside the new one (a replica with the same origin), which only the database
    /// knows (``liveness(of:on:)``).
    struct Successor {
        let origin: UUID
        let previous: Incarnation
        let lastSequence: UInt64
        let current: Incarnation
    }

    /// The advisory lock (one `bigint` key) that the listening connection of `incarnation` holds
    /// while it runs: its id. In `pg_locks`, the high half of the key is `classid`, the low half
    /// `objid`, and `objsubid` is 1.
    static func livenessKey(of incarnation: Incarnation) -> Int64 { Int64(bitPattern: incarnation.id) }

    /// Takes this incarnation's liveness lock on a new listening connection; released when the
    /// connection ends. Never waits: a key held already (by another application's lock) is left.
    private func holdLivenessLock(on connection: PostgresConnection) async throws {
        let key = Self.livenessKey(of: incarnation)
        _ = try await boundedQuery("SELECT pg_try_advisory_lock(\(key))", on: connection)
    }

    /// Releases the liveness lock of a connection that stays open while the link stops, so that a
    /// successor heard from now on is a restart, however long the server takes to end the session.
    private func releaseLivenessLock(on connection: PostgresConnection) async {
        _ = try? await boundedQuery("SELECT pg_advisory_unlock_all()", on: connection)
    }

    /// Runs `query` on `connection`, and fails after `timeout` if it has not completed: postgres-nio
    /// 1.33 leaves a query written after the server closed the connection waiting forever, and the
    /// listening task must go on to reconnect.
    ///
    /// In a cancelled task, it also fails as soon as the connection is closed. A reader whose
    /// server ended the connection is cancelled when its notification stream fails; a read it had
    /// begun at that moment would otherwise hold up the reconnection for the read's whole timeout
    /// (two minutes). A cancelled task's query on a connection that stays open (the last position
    /// stored as a link closes) still runs to its end.
    func boundedQuery(
        _ query: PostgresQuery, on connection: PostgresConnection, timeout: TimeAmount = .seconds(5)
    ) async throws -> PostgresQueryResult {
        let loop = connection.closeFuture.eventLoop
        let promise = loop.makePromise(of: PostgresQueryResult.self)
        let result: EventLoopFuture<PostgresQueryResult> = connection.query(query, logger: connectionLogger)
        result.cascade(to: promise)
        // A promise completed twice keeps its first result.
        let timer = loop.scheduleTask(in: timeout) { promise.fail(QueryTimedOut(timeout: timeout)) }
        promise.futureResult.whenComplete { _ in timer.cancel() }
        return try await withTaskCancellationHandler {
            try await promise.futureResult.get()
        } onCancel: {
            connection.closeFuture.whenComplete { _ in promise.fail(ConnectionClosed()) }
        }
    }

    struct ConnectionClosed: Error, CustomStringConvertible {
        var description: String { "the connection closed before the query was answered" }
    }

    struct QueryTimedOut: Error, CustomStringConvertible {
        let timeout: TimeAmount
        var description: String { "no answer within \(timeout.nanoseconds / 1_000_000) ms" }
    }

    /// Whether the listening connection of `incarnation` still holds its liveness lock: its link
    /// runs (or its connection has not ended yet).
    private func liveness(of incarnation: Incarnation, on connection: PostgresConnection) async throws -> Bool {
        let key = UInt64(bitPattern: Self.livenessKey(of: incarnation))
        let high = Int64(key >> 32)
        let low = Int64(key & 0xFFFF_FFFF)
        let result = try await boundedQuery(
            """
            SELECT count(*)::int8 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 \
            AND classid::int8 = \(high) AND objid::int8 = \(low) \
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            """, on: connection)
        let count = try result.rows.first?.decode(Int64.self) ?? 0
        return count > 0
    }

    /// Reports a new incarnation of an origin as what it is: ``PostgresLinkError/Code/originClash``
    /// if the previous one still runs, ``PostgresLinkError/Code/originRestarted`` if not (or if the
    /// database cannot say).
    private func resolve(_ successor: Successor, on connection: PostgresConnection) async {
        let isRunning = (try? await liveness(of: successor.previous, on: connection)) ?? false
        let error: PostgresLinkError? = state.withLock { state in
            if isRunning {
                guard state.peers.clashFound(successor.previous, successor.current) else { return nil }
                state.statistics.clashes += 1
                return .originClash(origin: successor.origin, successor.previous, successor.current, isOwn: false)
            }
            state.statistics.restarts += 1
            return .originRestarted(
                origin: successor.origin, previous: successor.previous, lastSequence: successor.lastSequence,
                current: successor.current)
        }
        if let error { report(error) }
    }

    /// Posts a received value into the hub, marked as this link's re-post.
    private func post<N: WireNotification>(_ value: N) {
        RepostMarker.$current.withValue(RepostMarker(link: self, type: N.self)) {
            hub.post(value)
        }
    }

    // MARK: - Errors

    func reject(_ error: PostgresLinkError) {
        state.withLock { $0.statistics.rejected += 1 }
        metrics.didRefuse(error.code)
        report(error)
    }

    func report(_ error: PostgresLinkError) {
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

private let connectionIDs = Atomic<Int>(0)

private func nextConnectionID() -> Int {
    connectionIDs.wrappingAdd(1, ordering: .relaxed).newValue
}

import Foundation
import Herald
import Logging
import PostgresNIO
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

/// One envelope waiting for the sending connection.
struct Outgoing: Sendable {
    let typeName: String
    let sequence: UInt64
    /// The canonical envelope; signed by the sending task when the link has a key.
    let text: String
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

    /// `SELECT pg_notify($1, $2)`, bound parameters only.
    func notify(channel: String, payload: String, logger: Logger) async throws {
        let promise = connection.closeFuture.eventLoop.makePromise(of: Void.self)
        let isClosed = state.withLock { state in
            if !state.isClosed { state.inFlight = promise }
            return state.isClosed
        }
        guard !isClosed else {
            promise.fail(Closed())
            throw Closed()
        }
        let query: EventLoopFuture<PostgresQueryResult> = connection.query(
            "SELECT pg_notify(\(channel), \(payload))", logger: logger)
        query.map { _ in }.cascade(to: promise)
        defer { state.withLock { $0.inFlight = nil } }
        try await promise.futureResult.get()
    }
}

/// The state and the two tasks behind a ``PostgresLink``.
final class LinkCore: Sendable {
    /// Decodes a received payload of one shared type and posts it into the hub.
    typealias Receiver = @Sendable (_ envelope: Data, _ origin: UUID) -> Void

    struct State {
        var nextSequence: UInt64 = 1
        var isClosed = false
        /// Envelopes queued for the sending connection and not yet sent or given up.
        var queued = 0
        var tokens: [ObjectIdentifier: ObservationToken] = [:]
        var receivers: [String: Receiver] = [:]
        var lastAccepted: [UUID: UInt64] = [:]
        var statistics = PostgresLink.Statistics()
        var errorHandler: (@Sendable (PostgresLinkError) -> Void)?
        var senderTask: Task<Void, Never>?
        var listenerTask: Task<Void, Never>?
    }

    let hub: NotificationHub
    let channel: String
    let origin: UUID
    let logger: Logger
    let configuration: PostgresConnection.Configuration
    let options: PostgresLink.Options
    let signer: Signer?
    private let state = Mutex(State())
    private let outgoing: AsyncStream<Outgoing>
    private let outgoingContinuation: AsyncStream<Outgoing>.Continuation

    init(
        hub: NotificationHub, channel: String, origin: UUID, configuration: PostgresConnection.Configuration,
        options: PostgresLink.Options, logger: Logger
    ) {
        self.hub = hub
        self.channel = channel
        self.origin = origin
        self.configuration = configuration
        self.options = options
        self.signer = options.signingKey.map { Signer(key: $0, channel: channel) }
        self.logger = logger
        (outgoing, outgoingContinuation) = AsyncStream.makeStream(of: Outgoing.self, bufferingPolicy: .unbounded)
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

    func makeConnection() async throws -> PostgresConnection {
        try await PostgresConnection.connect(configuration: configuration, id: nextConnectionID(), logger: logger)
    }

    /// Starts the sending task, and the listening task; returns once `LISTEN` is in effect.
    func start(sender: PostgresConnection, listener: PostgresConnection) async throws {
        let senderTask = Task { await self.runSender(on: sender) }
        do {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ready = Ready(continuation)
                let listenerTask = Task { await self.runListener(on: listener, ready: ready) }
                state.withLock {
                    $0.senderTask = senderTask
                    $0.listenerTask = listenerTask
                }
            }
        } catch {
            state.withLock { $0.isClosed = true }
            outgoingContinuation.finish()
            await senderTask.value
            throw error
        }
    }

    func close() async {
        let (tokens, senderTask, listenerTask) = state.withLock { state in
            state.isClosed = true
            let tokens = state.tokens
            state.tokens = [:]
            return (tokens, state.senderTask, state.listenerTask)
        }
        for token in tokens.values { token.cancel() }
        outgoingContinuation.finish()
        await senderTask?.value  // flushes what was queued before `isClosed`
        listenerTask?.cancel()
        await listenerTask?.value
    }

    /// Stops without waiting, when the link is released without `close()`.
    func abandon() {
        let (tokens, listenerTask) = state.withLock { state in
            state.isClosed = true
            let tokens = state.tokens
            state.tokens = [:]
            return (tokens, state.listenerTask)
        }
        for token in tokens.values { token.cancel() }
        outgoingContinuation.finish()
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
        let typeJSON: String
        do {
            typeJSON = String(decoding: try JSONEncoder().encode(N.wireName), as: UTF8.self)
        } catch {
            report(.encodingFailed(type: N.wireName, error: error))
            return
        }
        let receiver: Receiver = { [weak self] envelope, origin in
            self?.deliver(N.self, envelope: envelope, origin: origin)
        }
        let isNew = state.withLock { state in
            guard !state.isClosed, state.tokens[key] == nil else { return false }
            state.receivers[N.wireName] = receiver
            return true
        }
        guard isNew else { return }
        // Registered outside the lock: the hub may run user code (replay) while observing.
        let token = hub.observe(type) { [weak self] note in
            self?.send(note, typeJSON: typeJSON)
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
        case queued, closed
        case oversize(Int)
        case queueFull
    }

    /// The link's observer: encodes a local post and queues it for the sending connection.
    private func send<N: WireNotification>(_ note: N, typeJSON: String) {
        if let marker = RepostMarker.current, marker.consume(link: self, type: N.self) {
            state.withLock { $0.statistics.repostsNotResent += 1 }
            return
        }
        let payloadJSON: String
        do {
            payloadJSON = String(decoding: try JSONEncoder().encode(note), as: UTF8.self)
        } catch {
            state.withLock { $0.statistics.sendFailures += 1 }
            report(.encodingFailed(type: N.wireName, error: error))
            return
        }
        let prefix = Envelope.prefix(typeJSON: typeJSON, origin: origin, payloadJSON: payloadJSON)
        let overhead = signer == nil ? 0 : Signer.overhead
        let limit = options.sendQueueLimit
        // The sequence number and the queue position are taken together, so that they agree.
        let enqueued: Enqueued = state.withLock { state in
            guard !state.isClosed else { return .closed }
            let text = Envelope.complete(prefix: prefix, sequence: state.nextSequence)
            let size = text.utf8.count + overhead
            guard size <= PostgresLink.maximumPayloadBytes else {
                state.statistics.oversize += 1
                return .oversize(size)
            }
            guard state.queued < limit else {
                state.statistics.sendFailures += 1
                return .queueFull
            }
            outgoingContinuation.yield(Outgoing(typeName: N.wireName, sequence: state.nextSequence, text: text))
            state.nextSequence += 1
            state.queued += 1
            return .queued
        }
        switch enqueued {
        case .oversize(let size):
            report(.payloadTooLarge(type: N.wireName, size: size, limit: PostgresLink.maximumPayloadBytes))
        case .queueFull:
            report(.sendQueueFull(type: N.wireName, limit: limit))
        case .queued, .closed:
            break
        }
    }

    /// Sends the queue in order on one connection. When the connection is lost, it reconnects with
    /// backoff and sends the same message again, then the rest; posts made meanwhile wait in the
    /// queue (up to ``PostgresLink/Options/sendQueueLimit``). If the link is closed during an
    /// outage, what is still queued is reported as not sent.
    private func runSender(on first: PostgresConnection) async {
        var connection: SendingConnection? = SendingConnection(first)
        for await item in outgoing {
            let text = signer?.sign(item.text) ?? item.text
            while true {
                if connection == nil { connection = await reconnect().map(SendingConnection.init) }
                guard let current = connection else {
                    state.withLock {
                        $0.statistics.sendFailures += 1
                        $0.queued -= 1
                    }
                    report(.notSent(type: item.typeName, sequence: item.sequence))
                    break
                }
                do {
                    try await current.notify(channel: channel, payload: text, logger: logger)
                    state.withLock {
                        $0.statistics.sent += 1
                        $0.queued -= 1
                    }
                    break
                } catch  where Self.isConnectionFailure(error, on: current.connection) {
                    connection = nil
                    try? await current.connection.close()
                    if !isClosed { report(.connectionLost(.sending, error: error)) }
                } catch {
                    state.withLock {
                        $0.statistics.sendFailures += 1
                        $0.queued -= 1
                    }
                    report(.sendFailed(type: item.typeName, sequence: item.sequence, error: error))
                    break
                }
            }
        }
        try? await connection?.connection.close()
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
                        receive(notification.payload)
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

    private func receive(_ text: String) {
        let data: Data
        if let signer {
            switch signer.verify(text) {
            case .valid(let canonical):
                data = canonical
            case .unsigned:
                reject(.unsignedEnvelope(size: text.utf8.count))
                return
            case .forged:
                reject(.invalidSignature(size: text.utf8.count))
                return
            }
        } else {
            data = Data(text.utf8)
        }
        let decoder = JSONDecoder()
        // One parse on the usual path; the slower path below names what is wrong.
        guard let header = try? decoder.decode(Envelope.Header.self, from: data),
            (1...Envelope.current).contains(header.version)
        else {
            rejectMalformed(data, decoder: decoder)
            return
        }
        if header.origin == origin {
            state.withLock { $0.statistics.echoesIgnored += 1 }
            return
        }
        var errors: [PostgresLinkError] = []
        let receiver: Receiver? = state.withLock { state in
            let last = state.lastAccepted[header.origin]
            if let last, header.sequence <= last {
                state.statistics.duplicates += 1
                errors.append(.duplicateSequence(origin: header.origin, lastAccepted: last, found: header.sequence))
                return nil
            }
            if let last, header.sequence > last + 1 {
                state.statistics.gaps += 1
                errors.append(.sequenceGap(origin: header.origin, expected: last + 1, found: header.sequence))
            }
            // Sequence numbers run across all types of an origin, so unknown types advance it too.
            state.lastAccepted[header.origin] = header.sequence
            guard let receiver = state.receivers[header.type] else {
                state.statistics.rejected += 1
                errors.append(
                    .unknownType(header.type, origin: header.origin, shared: Array(state.receivers.keys)))
                return nil
            }
            return receiver
        }
        for error in errors { report(error) }
        receiver?(data, header.origin)
    }

    /// Reports why `data` is not an envelope that this build reads.
    private func rejectMalformed(_ data: Data, decoder: JSONDecoder) {
        let input = String(decoding: data, as: UTF8.self)
        let version: Int
        do {
            version = try decoder.decode(Envelope.Version.self, from: data).version
        } catch {
            let (expected, found) = Envelope.describe(error, input: input)
            reject(.malformedEnvelope(expected: expected, found: found))
            return
        }
        guard version <= Envelope.current else {
            reject(.unsupportedVersion(found: version, supported: Envelope.current))
            return
        }
        guard version >= 1 else {
            reject(
                .malformedEnvelope(expected: "envelope version 1 to \(Envelope.current)", found: "version \(version)"))
            return
        }
        do {
            _ = try decoder.decode(Envelope.Header.self, from: data)
            reject(.malformedEnvelope(expected: "a Herald envelope", found: "\(data.count) bytes"))
        } catch {
            let (expected, found) = Envelope.describe(error, input: input)
            reject(.malformedEnvelope(expected: expected, found: found))
        }
    }

    private func deliver<N: WireNotification>(_ type: N.Type, envelope: Data, origin: UUID) {
        let value: N
        do {
            value = try JSONDecoder().decode(Envelope.Payload<N>.self, from: envelope).payload
        } catch {
            let (expected, found) = Envelope.describe(error, input: "")
            reject(.payloadDecodingFailed(type: N.wireName, origin: origin, expected: expected, found: found))
            return
        }
        state.withLock { $0.statistics.received += 1 }
        RepostMarker.$current.withValue(RepostMarker(link: self, type: N.self)) {
            hub.post(value)
        }
    }

    // MARK: - Errors

    private func reject(_ error: PostgresLinkError) {
        state.withLock { $0.statistics.rejected += 1 }
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

private let connectionIDs = Atomic<Int>(0)

private func nextConnectionID() -> Int {
    connectionIDs.wrappingAdd(1, ordering: .relaxed).newValue
}

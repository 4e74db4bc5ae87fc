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
    let text: String
}

/// The state and the two tasks behind a ``PostgresLink``.
final class LinkCore: Sendable {
    /// Decodes a received payload of one shared type and posts it into the hub.
    typealias Receiver = @Sendable (_ envelope: Data, _ origin: UUID) -> Void

    struct State {
        var nextSequence: UInt64 = 1
        var isClosed = false
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
    private let state = Mutex(State())
    private let outgoing: AsyncStream<Outgoing>
    private let outgoingContinuation: AsyncStream<Outgoing>.Continuation

    init(hub: NotificationHub, channel: String, origin: UUID, logger: Logger) {
        self.hub = hub
        self.channel = channel
        self.origin = origin
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

    // MARK: - Life cycle

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
        // The sequence number and the queue position are taken together, so that they agree.
        let enqueued: Enqueued = state.withLock { state in
            guard !state.isClosed else { return .closed }
            let text = Envelope.complete(prefix: prefix, sequence: state.nextSequence)
            let size = text.utf8.count
            guard size <= PostgresLink.maximumPayloadBytes else {
                state.statistics.oversize += 1
                return .oversize(size)
            }
            outgoingContinuation.yield(Outgoing(typeName: N.wireName, sequence: state.nextSequence, text: text))
            state.nextSequence += 1
            return .queued
        }
        if case .oversize(let size) = enqueued {
            report(.payloadTooLarge(type: N.wireName, size: size, limit: PostgresLink.maximumPayloadBytes))
        }
    }

    private func runSender(on connection: PostgresConnection) async {
        for await item in outgoing {
            do {
                try await connection.query("SELECT pg_notify(\(channel), \(item.text))", logger: logger)
                state.withLock { $0.statistics.sent += 1 }
            } catch {
                state.withLock { $0.statistics.sendFailures += 1 }
                report(.sendFailed(type: item.typeName, sequence: item.sequence, error: error))
            }
        }
        try? await connection.close()
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

    private func runListener(on connection: PostgresConnection, ready: Ready) async {
        var failure: (any Error)?
        do {
            try await connection.listen(on: channel) { notifications in
                ready.resume(with: .success(()))
                for try await notification in notifications {
                    receive(notification.payload)
                }
            }
        } catch {
            failure = error
        }
        if !ready.resume(with: .failure(failure ?? CancellationError())) {
            let isClosed = state.withLock { $0.isClosed }
            if !isClosed && !Task.isCancelled {
                report(.connectionLost(error: failure))
            }
        }
        try? await connection.close()
    }

    private func receive(_ text: String) {
        let data = Data(text.utf8)
        let decoder = JSONDecoder()
        let version: Int
        do {
            version = try decoder.decode(Envelope.Version.self, from: data).version
        } catch {
            let (expected, found) = Envelope.describe(error, input: text)
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
        let header: Envelope.Header
        do {
            header = try decoder.decode(Envelope.Header.self, from: data)
        } catch {
            let (expected, found) = Envelope.describe(error, input: text)
            reject(.malformedEnvelope(expected: expected, found: found))
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

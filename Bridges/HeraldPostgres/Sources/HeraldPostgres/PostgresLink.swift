import CoreMetrics
import Crypto
import Foundation
import Herald
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Connects a `NotificationHub` to a PostgreSQL channel, so that the notification types it shares
/// reach the observers of every hub linked to that channel, in this process and in others.
///
/// ```swift
/// let link = try await PostgresLink.connect(
///     hub: hub, channel: "orders", configuration: configuration, sharing: [UserCreated.self])
/// hub.post(UserCreated(userID: 7))     // local observers, then every other linked hub
/// …
/// await link.close()                   // flushes what was posted before, then disconnects
/// ```
///
/// ## How it works
///
/// For each shared type the link observes the hub on the posting thread. Each post is encoded as a
/// versioned JSON envelope (type name, origin, incarnation, sequence number, payload; see the
/// README) and sent with `SELECT pg_notify($1, $2)`, bound parameters only, on the link's own
/// sending connection, one `NOTIFY` at a time, in the order the posts were made. A post that finds the connection idle goes
/// out at once, from the posting thread; posts made while a `NOTIFY` is in flight go out together in
/// the next one, as a batch (``Options/batchesBursts``). A second connection of its own `LISTEN`s on
/// the channel; each message is decoded and its notifications posted into the hub, in order.
///
/// ## Guarantees
///
/// - **Exactly once while connected.** Each hub linked to the channel receives every shared post
///   once. The posting hub's observers run once, locally, inside `post`; never a second time.
/// - **No echo, by construction.** The link drops its own messages by their origin and incarnation
///   (counted in ``Statistics/echoesIgnored``). And while it posts a received value into its hub it marks that
///   post as its own *re-post* (a task-local marker, seen by its posting-thread observer, which runs
///   inside `post`), so it does not send the value out again (``Statistics/repostsNotResent``).
///   Other posts made meanwhile, such as a value of another type that a local observer posts in
///   reaction, travel as usual.
/// - **Order per origin.** Every receiving hub posts the values of one sending link in the order that
///   link sent them. Sequence numbers reveal gaps and replays, which are reported.
///
/// ## What does not travel
///
/// - **Subjects stay local**: a post's `from:` subject is an object of this process. Remote hubs
///   receive the value without a subject, so only their observers without `from:` see it.
/// - **`postAndWait` waits for local observers only**: remote hubs run their observers later.
/// - **Oversize values stay local**: an envelope over ``maximumPayloadBytes`` (PostgreSQL's `NOTIFY`
///   limit) still reaches the local observers, and is reported as
///   ``PostgresLinkError/Code/payloadTooLarge`` with its size and the limit.
/// - **Nothing is durable in plain mode** (durable mode, ``Options/durability``, keeps every post in
///   a log table that each link reads as a named consumer): `NOTIFY` keeps nothing for listeners
///   that are not connected. If a
///   connection drops or the server restarts, the link reports
///   ``PostgresLinkError/Code/connectionLost``, reconnects with backoff (``Reconnection``), listens
///   again, and reports the window in which notifications may have been lost as
///   ``PostgresLinkError/Code/outage``; peers' sequence numbers then show how many were missed
///   (``PostgresLinkError/Code/sequenceGap``). Posts made while the sending connection is down wait
///   in a bounded queue (``Options/sendQueueLimit``) and are sent, in order, once it is back. So
///   delivery is exactly once while connected, and at most once across outages.
///
/// ## Threading
///
/// `share(_:)` and `close()` may be called from any thread or task. Received values are posted into
/// the hub from the link's listening task, one at a time. That task runs on the event loop of the
/// link's connections (a SwiftNIO thread), where postgres-nio reads each message, so a posting-thread
/// observer of a remote value runs on that event loop: keep such observers short and never block in
/// them (no waiting on a future, a semaphore or a slow `postAndWait`), or observe on a queue or an
/// actor instead. Errors go to ``errorHandler`` on whichever thread found them.
public final class PostgresLink: Sendable {
    /// The largest envelope, in UTF-8 bytes, that PostgreSQL accepts in a `NOTIFY` by default:
    /// the payload must be shorter than 8000 bytes.
    public static let maximumPayloadBytes = 7999

    /// The channel this link sends and listens on.
    public let channel: String

    /// The id that marks this link's messages on the channel.
    public let origin: UUID

    /// The hub this link connects.
    public let hub: NotificationHub

    let core: LinkCore

    /// Opens the link's two connections (one sending, one listening), starts listening on the
    /// channel, and returns once messages posted on the channel from now on will be received.
    ///
    /// The types in `sharing` are shared before `LISTEN` takes effect, so that no message of theirs
    /// arrives unshared (a type shared later with ``share(_:)`` misses what arrives before, and such
    /// messages are refused as ``PostgresLinkError/Code/unknownType``):
    ///
    /// ```swift
    /// let link = try await PostgresLink.connect(
    ///     hub: hub, channel: "orders", configuration: configuration, sharing: [UserCreated.self, OrderPlaced.self])
    /// ```
    ///
    /// - Parameters:
    ///   - hub: The hub to connect.
    ///   - channel: A PostgreSQL channel name: 1 to 63 ASCII letters, digits or underscores, not
    ///     starting with a digit. Every hub that shares types on it must use the same name.
    ///   - configuration: The connection configuration (host, credentials, TLS), used for both
    ///     connections.
    ///   - sharing: The notification types that travel, shared (as by ``share(_:)``) before the link
    ///     connects.
    ///   - origin: The id of this link's messages; a fresh one by default. A fixed one may be given
    ///     again after a restart (each run of a link is a new *incarnation*, with sequence numbers of
    ///     its own); two links running at once with one origin are reported as
    ///     ``PostgresLinkError/Code/originClash``.
    ///   - options: How the link reconnects, how many posts it queues, whether it signs envelopes
    ///     and whether it batches bursts.
    ///   - logger: A logger for connection events. Payloads are never logged.
    /// - Returns: The link. Call ``close()`` at the end.
    /// - Throws: ``PostgresLinkError`` with code ``PostgresLinkError/Code/invalidChannelName``, or
    ///   the connection's error if a connection or the `LISTEN` fails.
    public static func connect(
        hub: NotificationHub,
        channel: String,
        configuration: PostgresConnection.Configuration,
        sharing: [any WireNotification.Type],
        origin: UUID = UUID(),
        options: Options = Options(),
        logger: Logger = Logger(label: "HeraldPostgres")
    ) async throws -> PostgresLink {
        let link = try PostgresLink(
            hub: hub, channel: channel, configuration: configuration, sharing: sharing, origin: origin,
            options: options, logger: logger)
        link.core.startRunning()
        try await link.listening()
        return link
    }

    /// Opens the link as ``connect(hub:channel:configuration:sharing:origin:options:logger:)`` does,
    /// with no type shared before `LISTEN` takes effect: a type shared afterwards with ``share(_:)``
    /// misses the messages that arrive before it is shared. Prefer giving the types as `sharing:`.
    ///
    /// - Parameters: as for ``connect(hub:channel:configuration:sharing:origin:options:logger:)``.
    /// - Returns: The link. Call ``close()`` at the end.
    /// - Throws: As ``connect(hub:channel:configuration:sharing:origin:options:logger:)``.
    public static func connect(
        hub: NotificationHub,
        channel: String,
        configuration: PostgresConnection.Configuration,
        origin: UUID = UUID(),
        options: Options = Options(),
        logger: Logger = Logger(label: "HeraldPostgres")
    ) async throws -> PostgresLink {
        try await connect(
            hub: hub, channel: channel, configuration: configuration, sharing: [], origin: origin,
            options: options, logger: logger)
    }

    /// Creates a link without connecting it, to run as a service (``run()``), for example in a
    /// swift-service-lifecycle `ServiceGroup`.
    ///
    /// ```swift
    /// let link = try PostgresLink(
    ///     hub: hub, channel: "orders", configuration: configuration, sharing: [UserCreated.self])
    /// hub.post(UserCreated(userID: 7))                    // before run(): waits for the connection
    /// let group = ServiceGroup(services: [link, …], gracefulShutdownSignals: [.sigterm], logger: logger)
    /// try await group.run()
    /// ```
    ///
    /// - Parameters: as for ``connect(hub:channel:configuration:sharing:origin:options:logger:)``.
    /// - Throws: ``PostgresLinkError`` with code ``PostgresLinkError/Code/invalidChannelName`` or
    ///   ``PostgresLinkError/Code/invalidSigningKeyID``.
    public convenience init(
        hub: NotificationHub,
        channel: String,
        configuration: PostgresConnection.Configuration,
        sharing: [any WireNotification.Type],
        origin: UUID = UUID(),
        options: Options = Options(),
        logger: Logger = Logger(label: "HeraldPostgres")
    ) throws {
        guard Self.isValidChannelName(channel) else { throw PostgresLinkError.invalidChannelName(channel) }
        if let id = options.keys.map(\.id).first(where: { !SigningKey.isValidID($0) }) {
            throw PostgresLinkError.invalidSigningKeyID(id)
        }
        self.init(
            core: LinkCore(
                hub: hub, channel: channel, origin: origin, configuration: configuration, options: options,
                logger: logger))
        for type in sharing { share(type) }
    }

    /// Creates a link as ``init(hub:channel:configuration:sharing:origin:options:logger:)`` does,
    /// sharing no type yet: share each with ``share(_:)`` before ``run()`` starts listening.
    ///
    /// - Parameters: as for ``connect(hub:channel:configuration:sharing:origin:options:logger:)``.
    /// - Throws: As ``init(hub:channel:configuration:sharing:origin:options:logger:)``.
    public convenience init(
        hub: NotificationHub,
        channel: String,
        configuration: PostgresConnection.Configuration,
        origin: UUID = UUID(),
        options: Options = Options(),
        logger: Logger = Logger(label: "HeraldPostgres")
    ) throws {
        try self.init(
            hub: hub, channel: channel, configuration: configuration, sharing: [], origin: origin,
            options: options, logger: logger)
    }

    /// Runs the link: opens its two connections, listens on the channel, and sends and receives,
    /// reconnecting as needed, until ``close()``, a graceful shutdown of its `ServiceGroup`, or the
    /// cancellation of its task.
    ///
    /// On ``close()`` or a graceful shutdown it sends every post made before, and closes both
    /// connections, then returns. On cancellation it returns promptly, without sending what is
    /// queued: each post not yet sent is reported as ``PostgresLinkError/Code/notSent`` with its
    /// sequence number (one in flight may have reached the server). Posts made once the shutdown has
    /// begun (or after a run that failed) stay local, and each is reported as
    /// ``PostgresLinkError/Code/postAfterShutdown``, until the link is released. A link runs once;
    /// `connect` runs it.
    ///
    /// When it connects, it takes the offset between its clock and the database server's
    /// (``serverClockOffset``), by which signed envelopes are timed.
    ///
    /// - Throws: The connection's error if a connection or the `LISTEN` fails at the start, or
    ///   ``PostgresLinkError/Code/alreadyRunning``.
    public func run() async throws {
        try await core.run()
    }

    /// Returns once the link's `LISTEN` is in effect: messages posted on the channel from then on
    /// are received.
    ///
    /// - Throws: The error that ended ``run()`` before it listened, or `CancellationError` if the
    ///   link stopped.
    public func listening() async throws {
        try await core.listening()
    }

    /// How a link reconnects, what it queues, and whether it signs; pass them to `connect`.
    public struct Options: Sendable {
        /// How long to wait between reconnection attempts.
        public var reconnection = Reconnection()
        /// How many posts may wait for the sending connection, while it reconnects or when posts
        /// outpace it. A post beyond it reaches local observers only, and is reported as
        /// ``PostgresLinkError/Code/sendQueueFull`` (it takes no sequence number: no gap).
        public var sendQueueLimit = 10_000
        /// A key shared by every link on the channel. With it, the link signs each envelope with
        /// HMAC-SHA256 and refuses unsigned, forged and stale messages. Use 32 random bytes; never
        /// log it. Envelopes name it by the id `default`; to rotate keys, use ``signingKeys``.
        public var signingKey: SymmetricKey?
        /// The keys that the link accepts, each with the id that envelopes name it by; the first
        /// signs. When set, it replaces ``signingKey``.
        ///
        /// To rotate without losing a message: first give every link both keys, the old one first
        /// (they sign with it and accept either); then put the new one first (they sign with it);
        /// then drop the old one.
        public var signingKeys: [SigningKey] = []
        /// How old a signed envelope may be when it arrives, and how far apart the clocks of the
        /// linked hosts may be. Without a signing key it is not used.
        public var freshness = Freshness()
        /// The link's clock. Corrected by the offset to the database server's clock taken at connect
        /// (``PostgresLink/serverClockOffset``), it times when the link began listening, and when
        /// each signed envelope is issued and received. Tests inject one; keep the real one
        /// otherwise.
        public var now: @Sendable () -> Date = { Date() }
        /// Where the link reports its metrics (sent, received, refused by reason, gaps, send-queue
        /// depth, and, with a signing key, the latency from issue to delivery; see the README for
        /// their labels); `nil`, the default, for `MetricsSystem.factory`,
        /// the factory that the application bootstrapped. Tests pass a factory of their own.
        public var metricsFactory: (any MetricsFactory)?
        /// Whether posts that wait while a `NOTIFY` is in flight go out together in the next one,
        /// as many as fit in ``PostgresLink/maximumPayloadBytes``, in one version 3 envelope (its
        /// `count` above 1). A post that finds the connection idle always goes out at once, alone
        /// (a version 3 envelope of one). With ``legacyEnvelopes``, a batch is written as version 2
        /// and a lone post as version 1, as earlier releases wrote them.
        ///
        /// Turn it off, with ``legacyEnvelopes``, only while links of releases that read
        /// version 1 alone share the channel: they report batches as
        /// ``PostgresLinkError/Code/unsupportedVersion`` and skip them.
        public var batchesBursts = true
        /// Whether the link writes the envelopes of earlier releases (versions 1 and 2, without
        /// incarnation), which links of those releases read, instead of version 3, which they report
        /// as ``PostgresLinkError/Code/unsupportedVersion`` and skip. Turn it on for a rolling
        /// upgrade, while links of an earlier release share the channel, and off once none is left:
        /// without an incarnation, receivers take the first messages of a process that restarted
        /// with the same `origin:` for replays, and cannot tell two processes with one origin apart.
        /// This build reads every version either way. With a signing key, it also signs as those
        /// releases did (one key, no key id, no issue time), and admits such envelopes, which it
        /// refuses otherwise (``PostgresLinkError/Code/staleEnvelope``): they can be replayed to
        /// any link that has not heard their sender's later numbers.
        public var legacyEnvelopes = false
        /// Durable mode: each shared post is appended to a log table (``DurableLog``) instead of
        /// being sent in a `NOTIFY`, and the link reads the log as a named consumer; `nil`, the
        /// default, for plain `LISTEN`/`NOTIFY`. In durable mode the channel carries only empty
        /// wake-up `NOTIFY`s: give it a channel of its own, which no plain link uses, or, to switch
        /// a running service on its channel, go through the phases of
        /// ``Durability/phase`` (``Durability/Phase``). See the README's "Durable mode".
        public var durability: Durability?

        public init(
            reconnection: Reconnection = Reconnection(), sendQueueLimit: Int = 10_000, signingKey: SymmetricKey? = nil,
            batchesBursts: Bool = true, legacyEnvelopes: Bool = false, signingKeys: [SigningKey] = [],
            freshness: Freshness = Freshness(), now: @escaping @Sendable () -> Date = { Date() },
            metricsFactory: (any MetricsFactory)? = nil
        ) {
            self.reconnection = reconnection
            self.sendQueueLimit = sendQueueLimit
            self.signingKey = signingKey
            self.batchesBursts = batchesBursts
            self.legacyEnvelopes = legacyEnvelopes
            self.signingKeys = signingKeys
            self.freshness = freshness
            self.now = now
            self.metricsFactory = metricsFactory
        }

        /// The keys in effect: ``signingKeys``, or ``signingKey`` with the id `default`.
        var keys: [SigningKey] {
            if !signingKeys.isEmpty { return signingKeys }
            return signingKey.map { [SigningKey(id: "default", key: $0)] } ?? []
        }
    }

    /// A key that signs or checks envelopes, and the id by which envelopes name it.
    public struct SigningKey: Sendable {
        /// The id written in each envelope signed with the key: 1 to 64 ASCII letters, digits, `-`,
        /// `_` or `.`; not secret.
        public var id: String
        /// The key: 32 random bytes, the same for every link that uses this id.
        public var key: SymmetricKey

        public init(id: String, key: SymmetricKey) {
            self.id = id
            self.key = key
        }

        static func isValidID(_ id: String) -> Bool {
            let bytes = Array(id.utf8)
            return (1...64).contains(bytes.count)
                && bytes.allSatisfy {
                    (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0)
                        || [45, 46, 95].contains($0)
                }
        }
    }

    /// When a signed envelope is fresh enough to be accepted.
    ///
    /// A link refuses (``PostgresLinkError/Code/staleEnvelope``) a signed envelope issued more than
    /// ``maximumAge`` before it arrives, or issued before the link began listening: `NOTIFY` reaches
    /// only the listeners already listening, so such an envelope can only be a replay. Each bound
    /// is widened by ``clockSkew``, and an envelope issued more than ``clockSkew`` in the future is
    /// refused too. So a captured envelope replayed to a link that started more than ``clockSkew``
    /// after the capture is refused; replayed within ``maximumAge`` to a link that was listening
    /// already, it is refused by its sequence number if that link heard it or a later one.
    public struct Freshness: Sendable, Hashable {
        /// How long after its issue an envelope is still accepted; 60 seconds by default.
        public var maximumAge: Duration
        /// How far two links' times may differ; 500 milliseconds by default. Times are by the
        /// database server's clock (each link's clock corrected by the offset taken at connect,
        /// ``PostgresLink/serverClockOffset``), so the hosts' clocks may differ by far more: this
        /// covers the error of that offset (half a round trip to the server) and the delivery of a
        /// `NOTIFY`, and may be lowered accordingly.
        public var clockSkew: Duration

        public init(maximumAge: Duration = .seconds(60), clockSkew: Duration = .milliseconds(500)) {
            self.maximumAge = maximumAge
            self.clockSkew = clockSkew
        }
    }

    /// Exponential backoff between reconnection attempts: the first attempt after `initialDelay`,
    /// each later one `multiplier` times longer, at most `maximumDelay`. A link keeps trying until
    /// it is closed.
    public struct Reconnection: Sendable, Hashable {
        /// The wait before the first attempt.
        public var initialDelay: Duration
        /// The longest wait between attempts.
        public var maximumDelay: Duration
        /// The factor from one wait to the next.
        public var multiplier: Int

        public init(
            initialDelay: Duration = .milliseconds(100), maximumDelay: Duration = .seconds(5), multiplier: Int = 2
        ) {
            self.initialDelay = initialDelay
            self.maximumDelay = max(maximumDelay, initialDelay)
            self.multiplier = max(multiplier, 1)
        }
    }

    private init(core: LinkCore) {
        self.core = core
        self.channel = core.channel
        self.origin = core.origin
        self.hub = core.hub
    }

    deinit {
        core.abandon()
    }

    /// Sends the posts of `type` on this hub to the channel, and posts the values of `type` that
    /// arrive on the channel into this hub.
    ///
    /// Call it once per type, on every linked hub. Posts made before the call do not travel, and
    /// messages of the type that arrive before it are refused
    /// (``PostgresLinkError/Code/unknownType``): on a link that already listens (after `connect`),
    /// prefer giving the types to `connect` (its `sharing` parameter), which shares them before
    /// `LISTEN` takes effect. Before ``run()`` the two are alike. Sharing a type twice does nothing. After the shutdown began (``close()``, a graceful
    /// shutdown, a cancelled or failed run), the type's posts stay local and are each reported as
    /// ``PostgresLinkError/Code/postAfterShutdown``.
    ///
    /// - Parameter type: The notification type to share.
    public func share<N: WireNotification>(_ type: N.Type) {
        core.share(type)
    }

    /// Appends `notification` to the durable log inside the application's transaction on
    /// `connection`: it enters the log if and only if that transaction commits.
    ///
    /// ```swift
    /// try await connection.withTransaction(logger: logger) { connection in
    ///     try await connection.query("INSERT INTO orders (id) VALUES (\(id))", logger: logger)
    ///     try await link.post(OrderPlaced(orderID: id), in: connection)
    /// }
    /// ```
    ///
    /// It runs one statement on `connection`: an `INSERT` of the row and a wake-up `NOTIFY` on the
    /// link's channel (which PostgreSQL sends at commit, taking its cluster-wide notify lock then).
    /// No observer runs now: every linked hub, this one included, receives the value when its
    /// consumer reads the committed row. Rolled back, nothing travels, and no consumer reports a
    /// gap (durable rows are checked by their positions, not by sequence numbers). An error from
    /// `COMMIT` does not prove that nothing travelled: the commit may have taken effect before the
    /// connection failed.
    ///
    /// While the link sends plain copies (``Durability/Phase/sendsPlainCopies``), the `NOTIFY`
    /// carries the value's plain envelope, which links that read payloads receive at the commit (a
    /// write-only link's own hub included), under a lane of its own (an origin and incarnation
    /// numbered 1, 2, 3…, used by one open transaction at a time); one more statement on
    /// `connection`, before the `INSERT`, asks which lanes are free. A value whose copy is over
    /// ``maximumPayloadBytes`` is refused.
    ///
    /// - Parameters:
    ///   - notification: The value; its type should be shared by the receiving links.
    ///   - connection: A connection inside the application's transaction (outside one, the row
    ///     commits at once).
    /// - Throws: ``PostgresLinkError`` with code ``PostgresLinkError/Code/notDurable``,
    ///   ``PostgresLinkError/Code/encodingFailed`` or (with plain copies)
    ///   ``PostgresLinkError/Code/payloadTooLarge``, or the connection's error.
    public func post<N: WireNotification>(_ notification: N, in connection: PostgresConnection) async throws {
        try await core.append(notification, in: connection)
    }

    /// Receives every ``PostgresLinkError`` of this link.
    ///
    /// By default the error goes to the hub's `errorHandler`, as an `ObserverFailure` whose
    /// notification type is the error's type name (or `PostgresLink`).
    public var errorHandler: (@Sendable (PostgresLinkError) -> Void)? {
        get { core.errorHandler }
        set { core.errorHandler = newValue }
    }

    /// The database server's clock less this link's clock (``Options/now``), taken when the link
    /// connects (half the round trip of one `SELECT clock_timestamp()` is its error); zero before.
    /// Issue times of signed envelopes, and their freshness, are by the server's clock: the link's
    /// clock plus this offset.
    public var serverClockOffset: Duration { .milliseconds(core.serverClock.offset.load(ordering: .relaxed)) }

    /// What the link has done so far; for tests and metrics.
    public var statistics: Statistics { core.statistics }

    /// Sends what was posted before, stops listening and closes both connections; returns once
    /// ``run()`` has returned.
    ///
    /// Posts made after `close()` starts stay local, and each is reported as
    /// ``PostgresLinkError/Code/postAfterShutdown`` (the link keeps observing its shared types for
    /// that until it is released). Values that arrive meanwhile are still posted into the hub until
    /// the listening connection closes. Calling it again does nothing. On a link that never ran, the
    /// posts it queued are reported as ``PostgresLinkError/Code/notSent``.
    public func close() async {
        await core.stop()
    }

    /// Counters of a link's traffic and faults.
    public struct Statistics: Sendable, Equatable {
        /// Notifications handed to `pg_notify` successfully, alone or in batches.
        public var sent = 0
        /// `NOTIFY`s that carried a batch of several notifications (counted one by one in ``sent``).
        public var batchesSent = 0
        /// Values received from other links and posted into the hub.
        public var received = 0
        /// This link's own messages, heard back on the channel and dropped by their origin.
        public var echoesIgnored = 0
        /// Posts that the link saw as its own re-posts of received values, and did not send out.
        public var repostsNotResent = 0
        /// Outgoing values over ``PostgresLink/maximumPayloadBytes``, kept local.
        public var oversize = 0
        /// Outgoing values that failed to encode or to send.
        public var sendFailures = 0
        /// Incoming messages skipped as malformed, of a newer version, of an unknown type, whose
        /// payload did not decode, or (with a signing key) unsigned, forged or stale.
        public var rejected = 0
        /// Gaps seen in an origin's sequence numbers.
        public var gaps = 0
        /// Incoming messages skipped as already delivered (duplicates and replays; see
        /// ``PostgresLinkError/Code/duplicateSequence``).
        public var duplicates = 0
        /// Without a signing key: notifications delivered although their sequence number was below
        /// the last one accepted from their sender (``PostgresLinkError/Code/sequenceRegression``).
        public var regressions = 0
        /// New incarnations of origins already heard (``PostgresLinkError/Code/originRestarted``).
        public var restarts = 0
        /// Pairs of processes found sending with one origin (``PostgresLinkError/Code/originClash``).
        public var clashes = 0
        /// Signed envelopes refused as too old, from the future, issued before the link began
        /// listening, or without issue time (``PostgresLinkError/Code/staleEnvelope``); also counted
        /// in ``rejected``.
        public var stale = 0
        /// Attempts to open a connection again after a loss.
        public var reconnectAttempts = 0
        /// Connections opened again after a loss.
        public var reconnections = 0
        /// Outages of the listening connection that ended with `LISTEN` in effect again.
        public var outages = 0
        /// Durable mode: reads of the log (each one statement, of up to a batch of rows).
        public var logReads = 0
        /// Durable mode: rows read from the log (delivered, skipped as this link's own, or refused).
        public var logRowsRead = 0
        /// Durable mode: rows that retention deleted before this link's consumer read them
        /// (``PostgresLinkError/Code/rowsDeleted``).
        public var rowsLost = 0
    }

    static func isValidChannelName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...63).contains(bytes.count), let first = bytes.first else { return false }
        func isLetter(_ byte: UInt8) -> Bool { (65...90).contains(byte) || (97...122).contains(byte) || byte == 95 }
        return isLetter(first) && bytes.allSatisfy { isLetter($0) || (48...57).contains($0) }
    }
}

extension PostgresLink: Service {}

import Foundation

/// A fault that a ``PostgresLink`` reports instead of trapping or dropping something silently.
///
/// Every error goes to the link's error handler (by default the hub's `errorHandler`), and is
/// counted in ``PostgresLink/Statistics``. Match on ``code``:
///
/// ```swift
/// link.errorHandler = { error in
///     if error.code == .sequenceGap { metrics.increment("herald.pg.gap") }
/// }
/// ```
///
/// Messages name what was expected and what was found. They never include a payload.
public struct PostgresLinkError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of fault.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum _Code: String, Hashable, Sendable {
            case payloadTooLarge, encodingFailed, malformedEnvelope, unsupportedVersion, unknownType
            case payloadDecodingFailed, sequenceGap, duplicateSequence, sendFailed, connectionLost
            case invalidChannelName, outage, sendQueueFull, notSent, unsignedEnvelope, invalidSignature
            case originRestarted, originClash, sequenceRegression, staleEnvelope, invalidSigningKeyID
            case alreadyRunning, postAfterShutdown
            case invalidIdentifier, invalidConsumerName, unsupportedServer, durableLogMissing, consumerInUse
            case rowsDeleted, notDurable, positionAhead
        }

        fileprivate let code: _Code

        /// An outgoing envelope is over PostgreSQL's `NOTIFY` limit; it reached local observers only.
        public static let payloadTooLarge = Code(code: .payloadTooLarge)
        /// An outgoing value could not be encoded; it reached local observers only.
        public static let encodingFailed = Code(code: .encodingFailed)
        /// A message on the channel is not a Herald envelope (not JSON, or a field missing or mistyped).
        public static let malformedEnvelope = Code(code: .malformedEnvelope)
        /// A message on the channel has an envelope version newer than this link reads.
        public static let unsupportedVersion = Code(code: .unsupportedVersion)
        /// A message names a type that this link does not share.
        public static let unknownType = Code(code: .unknownType)
        /// A message's payload does not decode as the type it names.
        public static let payloadDecodingFailed = Code(code: .payloadDecodingFailed)
        /// Sequence numbers from one origin skipped: messages were lost (the later one is delivered).
        public static let sequenceGap = Code(code: .sequenceGap)
        /// A message already delivered, heard again: skipped. With a signing key (and for envelopes
        /// of earlier releases), any sequence number at or below the last one accepted from that
        /// origin's incarnation; without a key, a copy of a message recently delivered (the same
        /// sequence numbers and bytes).
        public static let duplicateSequence = Code(code: .duplicateSequence)
        /// Without a signing key: a sequence number below the last one accepted from that origin's
        /// incarnation, which is not a copy of a recent message. It is delivered (an unsigned channel
        /// cannot tell a forged number from a genuine one, and no number may silence a sender), and
        /// reported: someone may be sending under that origin.
        public static let sequenceRegression = Code(code: .sequenceRegression)
        /// A new incarnation of an origin already heard, whose previous incarnation no longer runs:
        /// a process that restarted with the same fixed `origin:` (a previous incarnation that still
        /// runs is a replica: ``originClash``). Its sequence numbers start again and are
        /// accepted; ``PostgresLinkError/lastSequence`` is the last one heard from the previous
        /// incarnation, so what it sent after that was lost for this hub.
        public static let originRestarted = Code(code: .originRestarted)
        /// Two processes are sending with the same origin at once (two incarnations heard in turn, or
        /// another process under this link's own origin). Both are delivered, each with its own
        /// sequence numbers; give each process its own origin.
        public static let originClash = Code(code: .originClash)
        /// `pg_notify` failed for an outgoing message; it reached local observers only.
        public static let sendFailed = Code(code: .sendFailed)
        /// A connection of the link (``PostgresLinkError/found`` says which) ended; the link reconnects
        /// with backoff. Until the listening connection is back, notifications sent on the channel
        /// are lost for this hub; posts made meanwhile wait for the sending connection.
        public static let connectionLost = Code(code: .connectionLost)
        /// The listening connection is back and listening again after a loss. Notifications sent on
        /// the channel within ``PostgresLinkError/outage`` may have been lost for this hub.
        public static let outage = Code(code: .outage)
        /// More posts than ``PostgresLink/Options/sendQueueLimit`` wait for the sending connection
        /// (it is reconnecting, or slower than the posts); this one reached local observers only.
        public static let sendQueueFull = Code(code: .sendQueueFull)
        /// A post that the link accepted (it has a sequence number) and did not send; it reached
        /// local observers only: the link closed while its sending connection was reconnecting, its
        /// run was cancelled, it could not connect, or it was closed before it ran
        /// (``PostgresLinkError/found`` says which, and ``PostgresLinkError/expected`` names the
        /// sequence number).
        public static let notSent = Code(code: .notSent)
        /// A post made after the link's shutdown began (``PostgresLink/close()``, a graceful
        /// shutdown of its service group, the cancellation of its run, or a run that failed): it
        /// reached local observers only, and took no sequence number. Reported for each such post of
        /// a shared type until the link is released.
        public static let postAfterShutdown = Code(code: .postAfterShutdown)
        /// The link has a signing key, and a message on the channel carries no signature: skipped.
        public static let unsignedEnvelope = Code(code: .unsignedEnvelope)
        /// The link has a signing key, and a message's signature does not match its bytes (forged,
        /// altered, signed with another key, or sent on another channel): skipped.
        public static let invalidSignature = Code(code: .invalidSignature)
        /// The link has a signing key, and a signed message was issued too long ago, in the future,
        /// before the link began listening, or (an envelope of an earlier release) without issue
        /// time: a replay, or a clock out of step (``PostgresLink/Freshness``). Skipped.
        public static let staleEnvelope = Code(code: .staleEnvelope)
        /// A key id in ``PostgresLink/Options/signingKeys`` is not 1 to 64 ASCII letters, digits,
        /// `-`, `_` or `.`.
        public static let invalidSigningKeyID = Code(code: .invalidSigningKeyID)
        /// ``PostgresLink/run()`` was called on a link that runs, or ran, already (a link runs once;
        /// `connect` runs it).
        public static let alreadyRunning = Code(code: .alreadyRunning)
        /// The channel name is not a plain PostgreSQL identifier.
        public static let invalidChannelName = Code(code: .invalidChannelName)
        /// A schema or table name given to ``DurableLog`` is not a plain lower-case PostgreSQL
        /// identifier of the allowed length.
        public static let invalidIdentifier = Code(code: .invalidIdentifier)
        /// A durable consumer name is empty or longer than 200 bytes.
        public static let invalidConsumerName = Code(code: .invalidConsumerName)
        /// Durable mode needs PostgreSQL 13 or later (`xid8`, `pg_current_xact_id()`,
        /// `pg_current_snapshot()`); the server is older. The link's run fails.
        public static let unsupportedServer = Code(code: .unsupportedServer)
        /// A table of the durable log (``DurableLog``) does not exist: run its migration, or set
        /// ``PostgresLink/Durability/createsLog``. The link's run fails.
        public static let durableLogMissing = Code(code: .durableLogMissing)
        /// Another live link reads the durable log under the same consumer name
        /// (``PostgresLink/Durability/consumer``). At the start, the link's run fails; after a lost
        /// connection, the link reports it and tries again with backoff.
        public static let consumerInUse = Code(code: .consumerInUse)
        /// Retention deleted rows of the durable log that this consumer had not read: never a
        /// silent gap. ``PostgresLinkError/lostRange`` names the first and last positions lost and
        /// ``PostgresLinkError/lostCount`` how many committed rows were deleted; the consumer goes
        /// on from the oldest row kept.
        public static let rowsDeleted = Code(code: .rowsDeleted)
        /// The durable consumer's position names a transaction id that the server has not handed
        /// out yet: the server lacks the last rows the consumer read (an asynchronous replica was
        /// promoted, or a backup restored) and will hand those ids out again. Also reported when
        /// the link reconnects to a server on a new timeline (promoted or restored since the link
        /// last read from it), which may have handed those ids out again already. The link resumes
        /// at the position stored on this server if it lies below, or at the latest rows otherwise
        /// (``PostgresLinkError/found`` says where): rows may be delivered again, and none written
        /// on this server is skipped.
        public static let positionAhead = Code(code: .positionAhead)
        /// ``PostgresLink/post(_:in:)`` was called on a link that is not in durable mode.
        public static let notDurable = Code(code: .notDurable)

        public var description: String { code.rawValue }
    }

    /// The kind of fault.
    public let code: Code
    /// The wire name of the notification type concerned, when there is one.
    public let typeName: String?
    /// The origin (sending link) concerned, when known.
    public let origin: UUID?
    /// What the link expected.
    public let expected: String?
    /// What it found instead.
    public let found: String?
    /// For ``Code/outage``: from when the listening connection was found lost to when `LISTEN` was
    /// in effect again. Notifications sent on the channel within it may have been lost (and
    /// notifications sent shortly before its start, while the connection was failing unnoticed).
    public let outage: ClosedRange<Date>?
    /// For ``Code/originRestarted``: the last sequence number heard from the previous incarnation.
    public let lastSequence: UInt64?
    /// For ``Code/rowsDeleted``: the first and the last position of the durable log that the
    /// consumer lost (both deleted; the rows between them that were committed were deleted too).
    public let lostRange: ClosedRange<DurablePosition>?
    /// For ``Code/rowsDeleted``: how many committed rows were deleted unread (an exact count, not a
    /// difference of positions); `nil` otherwise.
    public let lostCount: Int64?

    private init(
        _ code: Code._Code, typeName: String? = nil, origin: UUID? = nil, expected: String? = nil,
        found: String? = nil, outage: ClosedRange<Date>? = nil, lastSequence: UInt64? = nil,
        lostRange: ClosedRange<DurablePosition>? = nil, lostCount: Int64? = nil
    ) {
        self.lostRange = lostRange
        self.lostCount = lostCount
        self.code = Code(code: code)
        self.typeName = typeName
        self.origin = origin
        self.expected = expected
        self.found = found
        self.outage = outage
        self.lastSequence = lastSequence
    }

    public var description: String {
        var text = "PostgresLinkError.\(code)"
        if let typeName { text += " type \(typeName)" }
        if let origin { text += " origin \(origin)" }
        if let expected { text += ": expected \(expected)" }
        if let found { text += ", found \(found)" }
        if let outage { text += " (from \(outage.lowerBound) to \(outage.upperBound))" }
        return text
    }

    static func payloadTooLarge(type: String, size: Int, limit: Int) -> Self {
        .init(.payloadTooLarge, typeName: type, expected: "at most \(limit) bytes", found: "\(size) bytes")
    }

    static func encodingFailed(type: String, error: any Error) -> Self {
        .init(.encodingFailed, typeName: type, expected: "an encodable value", found: describe(encodingError: error))
    }

    static func malformedEnvelope(expected: String, found: String, origin: UUID? = nil) -> Self {
        .init(.malformedEnvelope, origin: origin, expected: expected, found: found)
    }

    static func unsupportedVersion(found: Int, supported: Int) -> Self {
        .init(.unsupportedVersion, expected: "envelope version \(supported) or older", found: "version \(found)")
    }

    static func unknownType(_ name: String, origin: UUID, shared: [String]) -> Self {
        .init(
            .unknownType, typeName: name, origin: origin,
            expected: "one of the shared types [\(shared.sorted().joined(separator: ", "))]", found: name)
    }

    static func payloadDecodingFailed(type: String, origin: UUID, expected: String, found: String) -> Self {
        .init(.payloadDecodingFailed, typeName: type, origin: origin, expected: expected, found: found)
    }

    static func sequenceGap(origin: UUID, expected: UInt64, found: UInt64) -> Self {
        .init(
            .sequenceGap, origin: origin, expected: "sequence \(expected)",
            found: "sequence \(found) (\(found - expected) lost)")
    }

    static func duplicateSequence(origin: UUID, lastAccepted: UInt64, found: UInt64) -> Self {
        .init(
            .duplicateSequence, origin: origin, expected: "a sequence above \(lastAccepted)",
            found: "sequence \(found)")
    }

    static func sequenceRegression(origin: UUID, lastAccepted: UInt64, found: UInt64) -> Self {
        .init(
            .sequenceRegression, origin: origin, expected: "a sequence above \(lastAccepted)",
            found: "sequence \(found), not a copy of a recent message; delivered")
    }

    static func originRestarted(
        origin: UUID, previous: Incarnation, lastSequence: UInt64, current: Incarnation
    ) -> Self {
        .init(
            .originRestarted, origin: origin,
            expected: "incarnation \(previous) to go on after sequence \(lastSequence)",
            found: "a new incarnation \(current), numbering from its own start", lastSequence: lastSequence)
    }

    static func originClash(origin: UUID, _ first: Incarnation, _ second: Incarnation, isOwn: Bool) -> Self {
        .init(
            .originClash, origin: origin, expected: "one process per origin",
            found: isOwn
                ? "another process sending under this link's origin (incarnation \(second))"
                : "two incarnations sending at once: \(first) and \(second)")
    }

    static func sendFailed(type: String, sequence: UInt64, error: any Error) -> Self {
        .init(
            .sendFailed, typeName: type, expected: "pg_notify to succeed for sequence \(sequence)",
            found: String(describing: Swift.type(of: error)))
    }

    enum Role: String {
        case listening, sending
    }

    static func connectionLost(_ role: Role, error: (any Error)?) -> Self {
        .init(
            .connectionLost, expected: "the \(role) connection to stay open",
            found: (error.map { String(describing: $0) } ?? "the server ended the notification stream")
                + "; reconnecting")
    }

    static func outage(from start: Date, to end: Date) -> Self {
        .init(
            .outage, expected: "to listen without interruption",
            found: "no listening connection for \(Self.seconds(end.timeIntervalSince(start))); listening again",
            outage: start...max(start, end))
    }

    static func sendQueueFull(type: String, limit: Int) -> Self {
        .init(
            .sendQueueFull, typeName: type, expected: "at most \(limit) posts waiting to be sent",
            found: "\(limit) waiting")
    }

    /// Why accepted posts were not sent.
    enum NotSentReason: String {
        case closedWhileReconnecting = "the link closed while its sending connection was reconnecting"
        case cancelled = "the link's run was cancelled"
        case couldNotRun = "the link could not connect or listen"
        case closedBeforeRunning = "the link closed before it ran"
    }

    static func notSent(type: String, sequence: UInt64, _ reason: NotSentReason) -> Self {
        .init(.notSent, typeName: type, expected: "to send sequence \(sequence)", found: reason.rawValue)
    }

    static func postAfterShutdown(type: String) -> Self {
        .init(
            .postAfterShutdown, typeName: type, expected: "a post made before the link's shutdown began",
            found: "a post after it (kept local)")
    }

    static func alreadyRunning() -> Self {
        .init(.alreadyRunning, expected: "one run() per link", found: "a second run()")
    }

    static func unsignedEnvelope(size: Int) -> Self {
        .init(.unsignedEnvelope, expected: "a signed envelope", found: "\(size) bytes without a signature")
    }

    static func invalidSignature(size: Int) -> Self {
        .init(
            .invalidSignature, expected: "a valid HMAC-SHA256 signature",
            found: "\(size) bytes whose signature does not match")
    }

    /// An encoding failure, without the value that failed (`EncodingError.invalidValue` holds it).
    private static func describe(encodingError error: any Error) -> String {
        guard let error = error as? EncodingError else { return String(describing: Swift.type(of: error)) }
        switch error {
        case .invalidValue(let value, let context):
            let path = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
            let at = path.isEmpty ? "the top level" : "\"\(path.joined(separator: "."))\""
            return "an invalid \(Swift.type(of: value)) at \(at)"
        @unknown default:
            return "EncodingError"
        }
    }

    private static func seconds(_ interval: TimeInterval) -> String {
        String(format: "%.3f s", interval)
    }

    static func staleEnvelope(size: Int, found: String) -> Self {
        .init(
            .staleEnvelope, expected: "a signed envelope issued while this link was listening, and fresh",
            found: "\(size) bytes \(found)")
    }

    static func unknownSigningKey(size: Int, id: String) -> Self {
        .init(
            .invalidSignature, expected: "a signature with one of the accepted keys",
            found: "\(size) bytes signed with key \"\(id)\", which this link does not accept")
    }

    static func invalidSigningKeyID(_ id: String) -> Self {
        .init(
            .invalidSigningKeyID, expected: "a key id of 1 to 64 ASCII letters, digits, '-', '_' or '.'",
            found: "\(id.utf8.count) bytes")
    }

    static func invalidIdentifier(_ what: String, _ name: String, maximumLength: Int) -> Self {
        .init(
            .invalidIdentifier,
            expected:
                "a \(what) name of 1 to \(maximumLength) lower-case ASCII letters, digits or underscores, not starting with a digit",
            found: "\"\(name)\"")
    }

    static func invalidConsumerName(_ name: String) -> Self {
        .init(.invalidConsumerName, expected: "a consumer name of 1 to 200 bytes", found: "\(name.utf8.count) bytes")
    }

    static func unsupportedServer(versionNumber: Int) -> Self {
        .init(
            .unsupportedServer,
            expected: "PostgreSQL 13 or later (server_version_num 130000 or above) for durable mode",
            found: "server_version_num \(versionNumber)")
    }

    static func durableLogMissing(_ table: String) -> Self {
        .init(
            .durableLogMissing, expected: "the durable log's table \(table) (run DurableLog's migration)",
            found: "no such table")
    }

    static func consumerInUse(_ name: String) -> Self {
        .init(
            .consumerInUse, expected: "one live link per durable consumer name",
            found: "another link reading as consumer \"\(name)\"")
    }

    static func rowsDeleted(first: DurablePosition, last: DurablePosition, count: Int64, isUpperBound: Bool) -> Self {
        .init(
            .rowsDeleted, expected: "to read every committed row of the durable log",
            found:
                "\(isUpperBound ? "at most " : "")\(count) rows deleted by retention before this consumer read them, positions \(first) to \(last); going on from the oldest row kept",
            lostRange: first...max(first, last), lostCount: count)
    }

    static func positionAhead(_ position: DurablePosition, next: UInt64, resumingAt resumed: DurablePosition) -> Self {
        .init(
            .positionAhead, expected: "a durable position below the server's next transaction id \(next)",
            found:
                "position \(position), which this server has not reached (a promoted replica or a restored backup); resuming at \(resumed)"
        )
    }

    static func positionAhead(
        _ position: DurablePosition, timeline: String, serverTimeline: String, resumingAt resumed: DurablePosition
    ) -> Self {
        .init(
            .positionAhead, expected: "a durable position read on the server's timeline \(serverTimeline)",
            found:
                "position \(position), read on timeline \(timeline) (a promoted replica or a restored backup, which may have handed out its transaction ids again); resuming at \(resumed)"
        )
    }

    static func notDurable() -> Self {
        .init(.notDurable, expected: "a link in durable mode (Options.durability set)", found: "a plain link")
    }

    static func invalidChannelName(_ name: String) -> Self {
        .init(
            .invalidChannelName,
            expected: "1 to 63 ASCII letters, digits or underscores, not starting with a digit",
            found: "\"\(name)\"")
    }
}

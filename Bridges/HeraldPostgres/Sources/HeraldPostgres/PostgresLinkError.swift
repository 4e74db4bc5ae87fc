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
            case invalidChannelName
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
        /// A sequence number at or below one already accepted from that origin: skipped.
        public static let duplicateSequence = Code(code: .duplicateSequence)
        /// `pg_notify` failed for an outgoing message; it reached local observers only.
        public static let sendFailed = Code(code: .sendFailed)
        /// The listening connection ended; the link receives nothing more.
        public static let connectionLost = Code(code: .connectionLost)
        /// The channel name is not a plain PostgreSQL identifier.
        public static let invalidChannelName = Code(code: .invalidChannelName)

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

    private init(
        _ code: Code._Code, typeName: String? = nil, origin: UUID? = nil, expected: String? = nil,
        found: String? = nil
    ) {
        self.code = Code(code: code)
        self.typeName = typeName
        self.origin = origin
        self.expected = expected
        self.found = found
    }

    public var description: String {
        var text = "PostgresLinkError.\(code)"
        if let typeName { text += " type \(typeName)" }
        if let origin { text += " origin \(origin)" }
        if let expected { text += ": expected \(expected)" }
        if let found { text += ", found \(found)" }
        return text
    }

    static func payloadTooLarge(type: String, size: Int, limit: Int) -> Self {
        .init(.payloadTooLarge, typeName: type, expected: "at most \(limit) bytes", found: "\(size) bytes")
    }

    static func encodingFailed(type: String, error: any Error) -> Self {
        .init(.encodingFailed, typeName: type, expected: "an encodable value", found: "\(error)")
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

    static func sendFailed(type: String, sequence: UInt64, error: any Error) -> Self {
        .init(
            .sendFailed, typeName: type, expected: "pg_notify to succeed for sequence \(sequence)",
            found: String(describing: Swift.type(of: error)))
    }

    static func connectionLost(error: (any Error)?) -> Self {
        .init(
            .connectionLost, expected: "the listening connection to stay open",
            found: error.map { String(describing: $0) } ?? "the server ended the notification stream")
    }

    static func invalidChannelName(_ name: String) -> Self {
        .init(
            .invalidChannelName,
            expected: "1 to 63 ASCII letters, digits or underscores, not starting with a digit",
            found: "\"\(name)\"")
    }
}

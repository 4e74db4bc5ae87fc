import Foundation
import Synchronization

/// The wire format: one JSON object per `NOTIFY` payload.
///
/// Version 3, which this build writes: `count` consecutive notifications of one incarnation of an
/// origin, the first with `sequence`, each next one with the number after (one notification is a
/// batch of one):
///
/// ```json
/// {"version":3,"origin":"6F1C…","incarnation":"9a0b…","started":1764000000000,"sequence":42,"count":2,"batch":[{"type":"UserCreated","payload":{"userID":7}},…]}
/// ```
///
/// The versions of earlier releases, which this build reads, and writes with
/// ``PostgresLink/Options/legacyEnvelopes``: version 1, a single notification, and version
/// 2, a batch, both without incarnation:
///
/// ```json
/// {"version":1,"type":"UserCreated","origin":"6F1C…","sequence":42,"payload":{"userID":7}}
/// {"version":2,"origin":"6F1C…","sequence":42,"count":2,"batch":[{"type":"UserCreated","payload":{"userID":7}},…]}
/// ```
///
/// - `version`: 1, 2 or 3. A reader skips (and reports) newer versions.
/// - `type`: the ``WireNotification/wireName`` of the payload's type.
/// - `origin`: the UUID of the sending link (fixed by `connect(origin:)`, or fresh).
/// - `incarnation`: 16 hexadecimal digits, random for each link, and `started`, when that link was
///   created (milliseconds since 1970, by the database server's clock). A link drops its own
///   messages by origin and incarnation.
/// - `sequence`: 1, 2, 3… per incarnation, across all types; receivers detect gaps and replays with it.
/// - `payload`: the value, encoded by its `Codable` conformance.
/// - `horizon` (last, in the plain copies of a durable link's posts only,
///   ``PostgresLink/Durability/Phase/sendsPlainCopies``): the `xmin` of a snapshot taken before
///   the statement that sent it; every transaction below it had ended. Readers that do not know it
///   ignore it.
enum Envelope {
    /// The newest version this build reads and writes.
    static let current = 3
    /// The version of a single notification, without incarnation.
    static let singleVersion = 1
    /// The version of a batch, without incarnation.
    static let batchVersion = 2

    /// One outgoing notification, encoded, with its sequence number.
    struct Item: Sendable {
        /// The wire name, for error reports.
        let typeName: String
        /// The wire name as a JSON string literal.
        let typeJSON: String
        let payloadJSON: String
        let sequence: UInt64
        /// Durable mode with plain copies: the link's horizon when the post was queued, which its
        /// copy carries (the largest of a batch's), so that a copy sent again is the same message.
        var horizon: UInt64 = 0
    }

    /// The most bytes that the `horizon` field adds to an envelope.
    static let horizonBound = #","horizon":"#.utf8.count + digits(.max)

    private static let horizonKey = Array(#","horizon":"#.utf8)

    /// Splits a received envelope into its `horizon` (the last field, in the layout that
    /// ``Writer/text(_:horizon:)`` writes) and the envelope without it; `nil` if it has none.
    static func horizon(in bytes: [UInt8]) -> (horizon: UInt64, envelope: [UInt8])? {
        guard bytes.count > horizonKey.count + 2, bytes.last == UInt8(ascii: "}") else { return nil }
        var start = bytes.count - 1
        var horizon: UInt64 = 0
        var scale: UInt64 = 1
        while start > 0, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[start - 1]) {
            guard bytes.count - 1 - start < 19 else { return nil }
            horizon += UInt64(bytes[start - 1] - UInt8(ascii: "0")) * scale
            scale *= 10
            start -= 1
        }
        guard start < bytes.count - 1, start >= horizonKey.count,
            bytes[(start - horizonKey.count)..<start].elementsEqual(horizonKey)
        else { return nil }
        var envelope = Array(bytes[..<(start - horizonKey.count)])
        envelope.append(UInt8(ascii: "}"))
        return (horizon, envelope)
    }

    // MARK: - Writing

    /// The single envelope of `item`.
    static func single(_ item: Item, origin: String) -> String {
        single(typeJSON: item.typeJSON, origin: origin, payloadJSON: item.payloadJSON, sequence: String(item.sequence))
    }

    private static func single(typeJSON: String, origin: String, payloadJSON: String, sequence: String) -> String {
        #"{"version":1,"type":\#(typeJSON),"origin":"\#(origin)","sequence":\#(sequence),"payload":\#(payloadJSON)}"#
    }

    /// The batch envelope of `items`, consecutive in sequence.
    static func batch(_ items: some Collection<Item>, origin: String) -> String {
        var text = batchHead(origin: origin, sequence: String(items.first?.sequence ?? 0), count: String(items.count))
        text.reserveCapacity(items.reduce(batchOverhead) { $0 + batchItemSize($1) })
        var isFirst = true
        for item in items {
            if !isFirst { text += "," }
            isFirst = false
            text += #"{"type":"#
            text += item.typeJSON
            text += #","payload":"#
            text += item.payloadJSON
            text += "}"
        }
        text += "]}"
        return text
    }

    private static func batchHead(origin: String, sequence: String, count: String) -> String {
        #"{"version":2,"origin":"\#(origin)","sequence":\#(sequence),"count":\#(count),"batch":["#
    }

    private static let uuidLength = 36

    /// The bytes of a single envelope around its type, payload and sequence digits.
    private static let singleOverhead =
        single(typeJSON: "", origin: String(repeating: "0", count: uuidLength), payloadJSON: "", sequence: "").utf8
        .count

    /// The bytes of a batch envelope around its items and first sequence digits.
    private static let batchOverhead =
        (batchHead(origin: String(repeating: "0", count: uuidLength), sequence: "", count: "") + "]}").utf8.count

    /// The size in bytes of `item`'s single envelope.
    static func singleSize(_ item: Item) -> Int {
        singleOverhead + item.typeJSON.utf8.count + item.payloadJSON.utf8.count + digits(item.sequence)
    }

    /// The bytes of `item` inside a batch, without the comma before it.
    static func batchItemSize(_ item: Item) -> Int {
        #"{"type":,"payload":}"#.utf8.count + item.typeJSON.utf8.count + item.payloadJSON.utf8.count
    }

    /// How many of `items`, from the first, go in the next `NOTIFY`: as many as fit in `limit`
    /// bytes as one batch (with `extra` bytes more, the signature), and always at least the first,
    /// which fits alone as a single envelope.
    static func batchCount(_ items: some Sequence<Item>, limit: Int, extra: Int) -> Int {
        var count = 0
        var size = 0
        for item in items {
            if count == 0 {
                size = batchOverhead + digits(item.sequence) + 1 + extra + batchItemSize(item)
            } else {
                // The count field may take one more digit.
                let next = size + 1 + batchItemSize(item) + digits(UInt64(count + 1)) - digits(UInt64(count))
                guard next <= limit else { break }
                size = next
            }
            count += 1
        }
        // A first item too large for a batch of its own still goes, as a single envelope.
        return count > 1 && size > limit ? 1 : count
    }

    static func digits(_ value: UInt64) -> Int {
        var value = value
        var count = 1
        while value >= 10 {
            value /= 10
            count += 1
        }
        return count
    }

    // MARK: - Writing version 3

    /// Writes one link's envelopes: version 3, or versions 1 and 2 for links of earlier releases.
    ///
    /// The incarnation's start time is taken by the link's own clock when it is created, and moved
    /// to the database server's clock (``rebase(startedOnServer:)``) once the link has connected,
    /// before its first envelope is written.
    final class Writer: Sendable {
        let origin: String
        /// The incarnation's id, random.
        private let id: UInt64
        /// When the incarnation started, in milliseconds since 1970.
        private let started: Atomic<UInt64>
        let writesLegacyEnvelopes: Bool
        /// The bytes of a version 3 envelope around its items, sequence, count and `started` digits.
        private let overhead: Int

        init(origin: String, incarnation: Incarnation, writesLegacyEnvelopes: Bool) {
            self.origin = origin
            id = incarnation.id
            started = Atomic(incarnation.started)
            self.writesLegacyEnvelopes = writesLegacyEnvelopes
            let empty = Incarnation(id: incarnation.id, started: 0)
            let head = Envelope.head(origin: origin, incarnation: empty, sequence: "", count: "")
            overhead = (head + "]}").utf8.count - 1  // less the one digit of `started`, 0
        }

        /// The incarnation written in this link's envelopes.
        var incarnation: Incarnation { Incarnation(id: id, started: started.load(ordering: .relaxed)) }

        /// Moves the incarnation's start time to `started`, the same moment by the database server's
        /// clock.
        func rebase(startedOnServer started: UInt64) { self.started.store(started, ordering: .relaxed) }

        /// The bytes of a version 3 envelope around its items, sequence and count digits.
        private var headSize: Int { overhead + Envelope.digits(started.load(ordering: .relaxed)) }

        /// The envelope of `items`, consecutive in sequence; at least one.
        func text(_ items: some Collection<Item>) -> String {
            text(items, horizon: nil)
        }

        /// The envelope of `items`, as ``text(_:)`` writes it, with `horizon` as its last field
        /// (version 3 only): a durable link's plain copy.
        func text(_ items: some Collection<Item>, horizon: UInt64?) -> String {
            if writesLegacyEnvelopes {
                if items.count == 1, let item = items.first { return Envelope.single(item, origin: origin) }
                return Envelope.batch(items, origin: origin)
            }
            var text = Envelope.head(
                origin: origin, incarnation: incarnation, sequence: String(items.first?.sequence ?? 0),
                count: String(items.count))
            text.reserveCapacity(items.reduce(headSize + 40) { $0 + Envelope.batchItemSize($1) + 1 })
            var isFirst = true
            for item in items {
                if !isFirst { text += "," }
                isFirst = false
                text += #"{"type":"#
                text += item.typeJSON
                text += #","payload":"#
                text += item.payloadJSON
                text += "}"
            }
            text += "]"
            if let horizon {
                text += #","horizon":"#
                text += String(horizon)
            }
            text += "}"
            return text
        }

        /// The size in bytes of `item`'s envelope, alone.
        func size(alone item: Item) -> Int {
            if writesLegacyEnvelopes { return Envelope.singleSize(item) }
            return headSize + Envelope.digits(item.sequence) + 1 + Envelope.batchItemSize(item)
        }

        /// How many of `items`, from the first, go in the next `NOTIFY`: as many as fit in `limit`
        /// bytes (with `extra` bytes more, the signature), and always at least the first, which was
        /// checked to fit alone when it was queued.
        func count(_ items: some Sequence<Item>, limit: Int, extra: Int) -> Int {
            if writesLegacyEnvelopes { return Envelope.batchCount(items, limit: limit, extra: extra) }
            let headSize = self.headSize
            var count = 0
            var size = 0
            for item in items {
                if count == 0 {
                    size = headSize + Envelope.digits(item.sequence) + 1 + extra + Envelope.batchItemSize(item)
                } else {
                    let next =
                        size + 1 + Envelope.batchItemSize(item) + Envelope.digits(UInt64(count + 1))
                        - Envelope.digits(UInt64(count))
                    guard next <= limit else { break }
                    size = next
                }
                count += 1
            }
            return count
        }
    }

    private static func head(origin: String, incarnation: Incarnation, sequence: String, count: String) -> String {
        #"{"version":3,"origin":"\#(origin)","incarnation":"\#(incarnation.idText)","started":\#(incarnation.started),"sequence":\#(sequence),"count":\#(count),"batch":["#
    }

    // MARK: - Reading

    enum Keys: String, CodingKey {
        case version, type, origin, incarnation, started, sequence, count, payload, batch
    }

    /// Decodes the payload of a type that the link shares, and returns how to post it: from the
    /// envelope's container (the full parse), or from the payload's bytes alone (the quick look).
    struct PayloadDecoder: Sendable {
        let fromContainer: @Sendable (KeyedDecodingContainer<Keys>) throws -> Delivery
        let fromBytes: @Sendable (JSONDecoder, ArraySlice<UInt8>) throws -> Delivery
    }

    /// Posts a decoded value into the hub.
    typealias Delivery = @Sendable () -> Void

    /// What a reader needs while decoding: its own origin, to skip its echoes undecoded, and the
    /// payload decoders of the shared types.
    final class Context: Sendable {
        static let key = CodingUserInfoKey(rawValue: "HeraldPostgres.Envelope.Context")!

        let origin: UUID
        /// The reader's incarnation: a version 3 envelope is an echo when it names this one too.
        let incarnation: Incarnation?
        let decoder: @Sendable (_ wireName: String) -> PayloadDecoder?

        init(
            origin: UUID, incarnation: Incarnation? = nil, decoder: @escaping @Sendable (String) -> PayloadDecoder?
        ) {
            self.origin = origin
            self.incarnation = incarnation
            self.decoder = decoder
        }
    }

    /// An envelope version that this build does not read: newer, or below 1.
    struct UnsupportedVersion: Error {
        let found: Int
    }

    /// A received message, parsed once: header, and every payload decoded as its shared type.
    struct Incoming: Decodable {
        /// One notification of the message.
        struct Item {
            enum Content {
                case value(Delivery)
                case unknownType
                /// The payload did not decode as the shared type: what was expected and found.
                case undecodable(expected: String, found: String)
            }

            let typeName: String
            let content: Content
        }

        let origin: UUID
        /// The sender's incarnation; `nil` in the envelopes of earlier releases (versions 1 and 2).
        let incarnation: Incarnation?
        /// The sequence number of the first notification; the others follow one by one.
        let sequence: UInt64
        /// How many notifications the message holds.
        let count: Int
        /// Empty for the link's own messages (echoes), whose payloads are not decoded.
        let items: [Item]
        let isEcho: Bool

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            let version = try container.decode(Int.self, forKey: .version)
            guard (Envelope.singleVersion...Envelope.current).contains(version) else {
                throw UnsupportedVersion(found: version)
            }
            origin = try container.decode(UUID.self, forKey: .origin)
            sequence = try container.decode(UInt64.self, forKey: .sequence)
            guard let context = decoder.userInfo[Context.key] as? Context else {
                throw DecodingError.dataCorruptedError(
                    forKey: .origin, in: container, debugDescription: "no reading context")
            }
            if version >= 3 {
                let id = try container.decode(String.self, forKey: .incarnation)
                let started = try container.decode(UInt64.self, forKey: .started)
                guard let incarnation = Incarnation(idText: Array(id.utf8)[...], started: started) else {
                    throw DecodingError.dataCorruptedError(
                        forKey: .incarnation, in: container, debugDescription: "not 16 hexadecimal digits")
                }
                self.incarnation = incarnation
                isEcho = origin == context.origin && incarnation == context.incarnation
            } else {
                incarnation = nil
                isEcho = origin == context.origin
            }
            if version == Envelope.singleVersion {
                let type = try container.decode(String.self, forKey: .type)
                count = 1
                items = isEcho ? [] : [Self.item(type, in: container, context: context)]
                return
            }
            let declared = try container.decode(Int.self, forKey: .count)
            var batch = try container.nestedUnkeyedContainer(forKey: .batch)
            var items: [Item] = []
            items.reserveCapacity(isEcho ? 0 : batch.count ?? 0)
            var count = 0
            while !batch.isAtEnd {
                let entry = try batch.nestedContainer(keyedBy: Keys.self)
                let type = try entry.decode(String.self, forKey: .type)
                if !isEcho { items.append(Self.item(type, in: entry, context: context)) }
                count += 1
            }
            guard count > 0 else {
                throw DecodingError.dataCorruptedError(
                    forKey: .batch, in: container, debugDescription: "an empty batch")
            }
            guard count == declared else {
                throw DecodingError.dataCorruptedError(
                    forKey: .count, in: container, debugDescription: "count \(declared), but \(count) notifications")
            }
            guard sequence <= UInt64.max - UInt64(count - 1) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .sequence, in: container,
                    debugDescription: "sequence \(sequence) with \(count) notifications, past the largest sequence")
            }
            self.count = count
            self.items = items
        }

        private static func item(_ type: String, in container: KeyedDecodingContainer<Keys>, context: Context) -> Item {
            guard let decode = context.decoder(type) else { return Item(typeName: type, content: .unknownType) }
            do {
                return Item(typeName: type, content: .value(try decode.fromContainer(container)))
            } catch {
                let (expected, found) = Envelope.describe(error, input: "")
                return Item(typeName: type, content: .undecodable(expected: expected, found: found))
            }
        }
    }

    // MARK: - Reading the layouts this build writes, without a JSON parser

    /// What a scan of a message's bytes found. It recognises only the exact layouts that this
    /// build writes; anything else (another key order, white space, escapes in the type name) is
    /// ``other``, and the full parse reads it, so the scan decides nothing that the parse would not.
    enum QuickLook: Equatable {
        /// The reader's own message: a single envelope, or a batch of `count`.
        case echo(count: Int)
        /// A version 1 envelope of another origin; `origin` and `payload` are ranges of the bytes.
        case single(type: String, origin: Range<Int>, sequence: UInt64, payload: Range<Int>)
        /// A version 3 envelope of one notification, of another origin or incarnation.
        case current(type: String, origin: Range<Int>, incarnation: Incarnation, sequence: UInt64, payload: Range<Int>)
        case other
    }

    private static let currentStart = Array(#"{"version":3,"origin":""#.utf8)
    private static let incarnationKey = Array(#"","incarnation":""#.utf8)
    private static let startedKey = Array(#"","started":"#.utf8)
    private static let numberThenSequenceKey = Array(#","sequence":"#.utf8)
    private static let batchKey = Array(#","batch":["#.utf8)
    private static let itemStart = Array(#"{"type":"#.utf8)
    private static let currentEnd = Array("}]}".utf8)

    private static let singleStart = Array(#"{"version":1,"type":"#.utf8)
    private static let batchStart = Array(#"{"version":2,"origin":""#.utf8)
    private static let originKey = Array(#","origin":""#.utf8)
    private static let sequenceKey = Array(#"","sequence":"#.utf8)
    private static let countKey = Array(#","count":"#.utf8)
    private static let payloadKey = Array(#","payload":"#.utf8)

    /// Scans `bytes` for the layouts that ``Writer``, ``single(_:origin:)`` and
    /// ``batch(_:origin:)`` write. `own` and `ownIncarnation` are the reader's origin and
    /// incarnation id as written.
    static func quickLook(_ bytes: [UInt8], own: [UInt8], ownIncarnation: [UInt8] = []) -> QuickLook {
        var scanner = ByteScanner(bytes: bytes)
        if scanner.skip(currentStart) {
            guard let origin = scanner.take(uuidLength), scanner.skip(incarnationKey),
                let id = scanner.take(Incarnation.idLength), scanner.skip(startedKey), let started = scanner.number(),
                scanner.skip(numberThenSequenceKey), let sequence = scanner.number(), scanner.skip(countKey),
                let count = scanner.number(), count > 0, count <= UInt64(bytes.count), scanner.skip(batchKey)
            else { return .other }
            if bytes[origin].elementsEqual(own), bytes[id].elementsEqual(ownIncarnation) {
                return .echo(count: Int(count))
            }
            guard count == 1, scanner.skip(itemStart), let type = scanner.plainString(), scanner.skip(payloadKey),
                bytes.count - scanner.index > currentEnd.count,
                bytes.suffix(currentEnd.count).elementsEqual(currentEnd),
                let incarnation = Incarnation(idText: bytes[id], started: started)
            else { return .other }
            return .current(
                type: type, origin: origin, incarnation: incarnation, sequence: sequence,
                payload: scanner.index..<(bytes.count - currentEnd.count))
        }
        if scanner.skip(batchStart) {
            guard let origin = scanner.take(uuidLength), bytes[origin].elementsEqual(own), scanner.skip(sequenceKey),
                scanner.number() != nil, scanner.skip(countKey), let count = scanner.number(), count > 0,
                count <= UInt64(bytes.count)
            else { return .other }
            return .echo(count: Int(count))
        }
        guard scanner.skip(singleStart), let type = scanner.plainString(), scanner.skip(originKey),
            let origin = scanner.take(uuidLength), scanner.skip(sequenceKey), let sequence = scanner.number(),
            scanner.skip(payloadKey), bytes.last == UInt8(ascii: "}"), scanner.index < bytes.count - 1
        else { return .other }
        if bytes[origin].elementsEqual(own) { return .echo(count: 1) }
        return .single(type: type, origin: origin, sequence: sequence, payload: scanner.index..<(bytes.count - 1))
    }

    /// Reads the tokens of ``quickLook(_:own:)``; each method moves past what it read, or returns
    /// `nil`/`false`.
    private struct ByteScanner {
        let bytes: [UInt8]
        var index = 0

        mutating func skip(_ literal: [UInt8]) -> Bool {
            guard bytes.count - index >= literal.count,
                bytes[index..<(index + literal.count)].elementsEqual(literal)
            else { return false }
            index += literal.count
            return true
        }

        mutating func take(_ count: Int) -> Range<Int>? {
            guard bytes.count - index >= count else { return nil }
            defer { index += count }
            return index..<(index + count)
        }

        /// A JSON string of printable ASCII without escapes.
        mutating func plainString() -> String? {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
            var end = index + 1
            while end < bytes.count, bytes[end] != UInt8(ascii: "\"") {
                guard (0x20..<0x7F).contains(bytes[end]), bytes[end] != UInt8(ascii: "\\") else { return nil }
                end += 1
            }
            guard end < bytes.count else { return nil }
            defer { index = end + 1 }
            return String(decoding: bytes[(index + 1)..<end], as: UTF8.self)
        }

        /// A JSON number that is a `UInt64`, without sign, fraction, exponent or leading zeros.
        mutating func number() -> UInt64? {
            var value: UInt64 = 0
            var end = index
            while end < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[end]) {
                let (times10, overflow) = value.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(UInt64(bytes[end] - UInt8(ascii: "0")))
                guard !overflow, !overflow2 else { return nil }
                value = sum
                end += 1
            }
            guard end > index, bytes[index] != UInt8(ascii: "0") || end == index + 1 else { return nil }
            index = end
            return value
        }
    }

    /// Describes a decoding failure as "expected … found …", without quoting the input.
    static func describe(_ error: any Error, input: String) -> (expected: String, found: String) {
        guard let error = error as? DecodingError else {
            return ("a JSON object", "\(input.utf8.count) bytes: \(error)")
        }
        func path(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
            return path.isEmpty ? "the top level" : "\"\(path.joined(separator: "."))\""
        }
        switch error {
        case .keyNotFound(let key, let context):
            let at = context.codingPath.isEmpty ? "" : " in \(path(context))"
            return ("key \"\(key.stringValue)\"\(at)", "no such key")
        case .typeMismatch(let type, let context):
            return ("\(type) at \(path(context))", context.debugDescription)
        case .valueNotFound(let type, let context):
            return ("\(type) at \(path(context))", "null")
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                return ("a JSON object", "\(input.utf8.count) bytes that are not valid JSON")
            }
            return ("a valid value at \(path(context))", context.debugDescription)
        @unknown default:
            return ("a Herald envelope", "\(error)")
        }
    }
}

/// One run of a link: a random id, and when the link was created. A process that restarts with the
/// same fixed origin is a new incarnation, with sequence numbers of its own; two processes started
/// with the same origin are two incarnations at once.
struct Incarnation: Hashable, Sendable, CustomStringConvertible {
    /// The id, random.
    let id: UInt64
    /// When the link was created, in milliseconds since 1970, by the database server's clock (the
    /// sending link's clock corrected by the offset it takes when it connects), so that the start
    /// times of links on different hosts compare whatever their hosts' clocks say.
    let started: UInt64

    /// The length of the id as written: 16 hexadecimal digits.
    static let idLength = 16

    init(id: UInt64, started: UInt64) {
        self.id = id
        self.started = started
    }

    /// A new incarnation, started at `date`.
    static func make(startedAt date: Date) -> Incarnation {
        let milliseconds = (date.timeIntervalSince1970 * 1_000).rounded(.down)
        return Incarnation(
            id: UInt64.random(in: 0 ... .max),
            started: milliseconds > 0 && milliseconds < 1e18 ? UInt64(milliseconds) : 0)
    }

    /// Reads an id written as ``idText``: 16 lowercase hexadecimal digits.
    init?(idText: some Collection<UInt8>, started: UInt64) {
        guard idText.count == Self.idLength else { return nil }
        var id: UInt64 = 0
        for byte in idText {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            default: return nil
            }
            id = id << 4 | UInt64(digit)
        }
        self.init(id: id, started: started)
    }

    /// The id as written in envelopes: 16 lowercase hexadecimal digits.
    var idText: String {
        let digits = String(id, radix: 16)
        return String(repeating: "0", count: Self.idLength - digits.count) + digits
    }

    /// When the link was created.
    var startDate: Date { Date(timeIntervalSince1970: Double(started) / 1_000) }

    var description: String { "\(idText) (started \(startDate))" }
}

import Crypto
import Foundation

/// Signed envelopes: with shared keys, each envelope carries an HMAC-SHA256 in front of it, the id
/// of the key that made it, and when it was issued.
///
/// The signature is the first field, so that the receiver can check the exact bytes that were
/// signed without re-encoding anything:
///
/// ```json
/// {"signature":"<44 base64 characters>","key":"2026-11","issued":1764000000000,"version":3,…}
/// ```
///
/// The signed bytes (the *canonical envelope*) are the channel name, one zero byte, and the message
/// as it reads without its signature field: `{"key":…,"issued":…,"version":3,…}`, byte for byte.
/// The channel name is included so that a message cannot be replayed on another channel. The
/// envelope proper is what follows `issued`: `{"version":3,…}`.
///
/// Earlier releases signed the envelope alone (`{"signature":"…","version":1,…}`), with one key, and
/// without issue time; such a message is checked against every accepted key, and admitted only
/// with ``PostgresLink/Options/legacyEnvelopes``.
struct Signer: Sendable {
    /// A key, keyed and fed with the channel name and the zero byte: each message copies it (its
    /// digest state is copied on write) and adds only its canonical envelope, so the key is not
    /// processed again for every message.
    struct PreparedKey: Sendable {
        let id: String
        let prepared: HMACSHA256
    }

    let channel: String
    /// The key that signs.
    private let signing: PreparedKey
    /// What the signing key puts in front of each envelope, up to the issue time: `{"key":"<id>","issued":`.
    private let signingHead: [UInt8]
    /// The keys accepted, by id; the signing key among them.
    private let accepted: [String: PreparedKey]
    /// Whether the link writes and admits the signed envelopes of earlier releases.
    let isLegacy: Bool

    /// A signer with `keys`, the first of which signs; `nil` if `keys` is empty.
    init?(keys: [PostgresLink.SigningKey], channel: String, isLegacy: Bool) {
        func prepare(_ key: PostgresLink.SigningKey) -> PreparedKey {
            var prepared = HMACSHA256(key: key.key)
            (Array(channel.utf8) + [0]).withUnsafeBytes { prepared.update($0) }
            return PreparedKey(id: key.id, prepared: prepared)
        }
        guard let first = keys.first else { return nil }
        self.channel = channel
        signing = prepare(first)
        signingHead = Self.keyHead + Self.quoted(first.id) + Self.issuedKey
        var accepted: [String: PreparedKey] = [:]
        for key in keys where accepted[key.id] == nil { accepted[key.id] = prepare(key) }
        self.accepted = accepted
        self.isLegacy = isLegacy
    }

    /// `{"signature":"`
    static let head = Array(#"{"signature":""#.utf8)
    /// The length of a base64 HMAC-SHA256.
    static let signatureLength = 44
    /// `",`
    static let tail = Array(#"","#.utf8)
    private static let keyHead = Array(#"{"key":"#.utf8)
    private static let issuedKey = Array(#","issued":"#.utf8)

    /// How many bytes signing adds to an envelope issued at `issued` (milliseconds since 1970): the
    /// head, the signature, the tail, the key id and the issue time's digits replace `{`.
    func overhead(issued: UInt64) -> Int {
        let legacy = Self.head.count + Self.signatureLength + Self.tail.count - 1
        if isLegacy { return legacy }
        return legacy + signingHead.count + Envelope.digits(issued)
    }

    /// The key id as a JSON string.
    private static func quoted(_ id: String) -> [UInt8] {
        (try? JSONEncoder().encode(id)).map(Array.init) ?? Array("\"\"".utf8)
    }

    private static func code(_ key: PreparedKey, for canonical: [UInt8]) -> SHA256Digest {
        var mac = key.prepared
        canonical.withUnsafeBytes { mac.update($0) }
        return mac.finalize()
    }

    /// The signed form of an outgoing envelope, issued at `issued` (milliseconds since 1970).
    func sign(_ envelope: String, issued: UInt64) -> String {
        var canonical: [UInt8]
        if isLegacy {
            canonical = Array(envelope.utf8)
        } else {
            canonical = signingHead
            canonical.reserveCapacity(signingHead.count + 21 + envelope.utf8.count)
            canonical.append(contentsOf: String(issued).utf8)
            canonical.append(UInt8(ascii: ","))
            canonical.append(contentsOf: envelope.utf8.dropFirst())
        }
        // One buffer, one string: `{"signature":"<base64>",` and the canonical envelope after its `{`.
        var message = Self.head
        message.reserveCapacity(Self.head.count + Self.signatureLength + Self.tail.count + canonical.count)
        Self.code(signing, for: canonical).withUnsafeBytes { Base64.append($0, to: &message) }
        message.append(contentsOf: Self.tail)
        message.append(contentsOf: canonical.dropFirst())
        return String(decoding: message, as: UTF8.self)
    }

    enum Verdict {
        /// The envelope proper, whose signature checked out, and when it was issued (`nil` in the
        /// envelopes of earlier releases).
        case valid([UInt8], issued: UInt64?)
        case unsigned
        case forged
        /// Signed with a key id that is not among the accepted keys.
        case unknownKey(String)
        /// The reader's own envelope, heard back (its header names the reader's origin and
        /// incarnation): not checked, since it is dropped whether genuine or forged.
        case echo([UInt8])
    }

    /// What an envelope of the link of `origin` and `incarnation` starts with, after its `{`: a
    /// received envelope that starts so is the link's own, or a forgery of it.
    static func echoMarker(origin: UUID, incarnation: Incarnation) -> [UInt8] {
        Array(#""version":3,"origin":"\#(origin.uuidString)","incarnation":"\#(incarnation.idText)""#.utf8)
    }

    /// Checks a received message and returns the envelope that was signed.
    ///
    /// - Parameter echoMarker: The reader's ``echoMarker(origin:incarnation:)``: an envelope that
    ///   starts with it is returned as ``Verdict/echo(_:)`` without computing its MAC (one HMAC less
    ///   per message sent, on the sender).
    func verify(_ text: String, echoMarker: [UInt8]? = nil) -> Verdict {
        let bytes = Array(text.utf8)
        let start = Self.head.count + Self.signatureLength + Self.tail.count
        guard bytes.count > start, bytes.starts(with: Self.head) else { return .unsigned }
        let signatureBytes = bytes[Self.head.count..<(Self.head.count + Self.signatureLength)]
        guard bytes[(start - Self.tail.count)..<start].elementsEqual(Self.tail),
            let signature = Base64.decode(signatureBytes), signature.count == SHA256.byteCount
        else { return .forged }
        // The canonical envelope is `{` and the bytes from `start` on; it is fed to the MAC in these
        // two parts, and only the envelope proper is copied out.
        let open = [UInt8(ascii: "{")]
        func isSigned(with key: PreparedKey) -> Bool {
            var mac = key.prepared
            open.withUnsafeBytes { mac.update($0) }
            bytes[start...].withUnsafeBytes { mac.update($0) }
            return HMACSHA256.isEqual(mac.finalize(), signature)
        }
        guard bytes[start...].starts(with: Self.keyHead.dropFirst()) else {
            // An envelope of an earlier release: no key id, no issue time.
            guard accepted.values.contains(where: isSigned) else { return .forged }
            return .valid(open + bytes[start...], issued: nil)
        }
        // {"key":"<id>","issued":<digits>,<envelope without its {>
        var index = start + Self.keyHead.count - 1
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return .forged }
        var end = index + 1
        while end < bytes.count, bytes[end] != UInt8(ascii: "\"") {
            guard bytes[end] != UInt8(ascii: "\\") else { return .forged }
            end += 1
        }
        guard end < bytes.count else { return .forged }
        let id = String(decoding: bytes[(index + 1)..<end], as: UTF8.self)
        index = end + 1
        guard bytes.count - index > Self.issuedKey.count,
            bytes[index..<(index + Self.issuedKey.count)].elementsEqual(Self.issuedKey)
        else { return .forged }
        index += Self.issuedKey.count
        var issued: UInt64 = 0
        let digitsStart = index
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]),
            index - digitsStart < 19
        {
            issued = issued * 10 + UInt64(bytes[index] - UInt8(ascii: "0"))
            index += 1
        }
        guard index > digitsStart, index < bytes.count, bytes[index] == UInt8(ascii: ",") else {
            return .forged
        }
        if let echoMarker, bytes[(index + 1)...].starts(with: echoMarker) {
            return .echo([UInt8(ascii: "{")] + bytes[(index + 1)...])
        }
        guard let key = accepted[id] else { return .unknownKey(id) }
        guard isSigned(with: key) else { return .forged }
        var envelope = [UInt8]()
        envelope.reserveCapacity(bytes.count - index)
        envelope.append(UInt8(ascii: "{"))
        envelope.append(contentsOf: bytes[(index + 1)...])
        return .valid(envelope, issued: issued)
    }
}

/// HMAC-SHA256 (RFC 2104) on swift-crypto's `SHA256`, a concrete type. swift-crypto's `HMAC<H>` is
/// generic and not inlinable, so called from this module each `update`, `finalize` and `==` ran
/// unspecialized, looking up `H`'s associated types and the `DataProtocol` regions of its argument
/// at run time, which cost more than the hashing: one MAC of a 400-byte envelope took 1.8–2.0 µs
/// that way and takes 0.6–0.9 µs this way, in a loop; in profiles of the signed bench contender
/// (4,000 messages), `Signer.verify` went from 346 samples to 89.
/// The bytes are `HMAC<SHA256>`'s (tested against it, and the tests' envelopes are signed with it).
struct HMACSHA256: Sendable {
    /// The hash of the key's inner padding block, and of its outer padding block.
    private var inner = SHA256()
    private var outer = SHA256()

    init(key: SymmetricKey) {
        // A key longer than a block is hashed first; a shorter one is padded with zeros.
        var block = [UInt8](repeating: 0, count: SHA256.blockByteCount)
        key.withUnsafeBytes { key in
            if key.count > block.count {
                var hash = SHA256()
                hash.update(bufferPointer: key)
                hash.finalize().withUnsafeBytes { block.replaceSubrange(0..<$0.count, with: $0) }
            } else {
                block.replaceSubrange(0..<key.count, with: key)
            }
        }
        block.map { $0 ^ 0x36 }.withUnsafeBytes { inner.update(bufferPointer: $0) }
        block.map { $0 ^ 0x5c }.withUnsafeBytes { outer.update(bufferPointer: $0) }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        inner.update(bufferPointer: bytes)
    }

    func finalize() -> SHA256Digest {
        var outer = self.outer
        inner.finalize().withUnsafeBytes { outer.update(bufferPointer: $0) }
        return outer.finalize()
    }

    /// Whether `code` is `bytes`, compared in constant time.
    static func isEqual(_ code: SHA256Digest, _ bytes: [UInt8]) -> Bool {
        code.withUnsafeBytes { code in
            guard code.count == bytes.count else { return false }
            var difference: UInt8 = 0
            for index in 0..<code.count { difference |= code[index] ^ bytes[index] }
            return difference == 0
        }
    }
}

/// Base64 (RFC 4648, standard alphabet, padded) for signatures, without Foundation's `Data` on the
/// way: signing and checking a message each write or read one.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// The value of each ASCII byte as a base64 digit; 0xFF for bytes that are not one.
    private static let values: [UInt8] = {
        var values = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in alphabet.enumerated() { values[Int(byte)] = UInt8(value) }
        return values
    }()

    /// Appends the base64 form of `bytes` to `output`.
    static func append(_ bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        var index = 0
        while bytes.count - index >= 3 {
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output.append(alphabet[Int(group >> 18 & 63)])
            output.append(alphabet[Int(group >> 12 & 63)])
            output.append(alphabet[Int(group >> 6 & 63)])
            output.append(alphabet[Int(group & 63)])
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let group = UInt32(bytes[index]) << 16
            output.append(alphabet[Int(group >> 18 & 63)])
            output.append(alphabet[Int(group >> 12 & 63)])
            output.append(contentsOf: [UInt8(ascii: "="), UInt8(ascii: "=")])
        case 2:
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            output.append(alphabet[Int(group >> 18 & 63)])
            output.append(alphabet[Int(group >> 12 & 63)])
            output.append(alphabet[Int(group >> 6 & 63)])
            output.append(UInt8(ascii: "="))
        default:
            break
        }
    }

    /// The bytes that `text` (padded base64) stands for, or `nil` if it is not base64.
    static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        var output = [UInt8]()
        output.reserveCapacity(text.count / 4 * 3)
        var group: UInt32 = 0
        var digits = 0
        var padding = 0
        for byte in text {
            if byte == UInt8(ascii: "=") {
                padding += 1
                group <<= 6
            } else {
                let value = values[Int(byte)]
                guard value != 0xFF, padding == 0 else { return nil }
                group = group << 6 | UInt32(value)
            }
            digits += 1
            if digits == 4 {
                output.append(UInt8(truncatingIfNeeded: group >> 16))
                output.append(UInt8(truncatingIfNeeded: group >> 8))
                output.append(UInt8(truncatingIfNeeded: group))
                group = 0
                digits = 0
            }
        }
        guard padding <= 2 else { return nil }
        output.removeLast(padding)
        return output
    }
}

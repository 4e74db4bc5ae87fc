import Crypto
import Foundation

/// Signed envelopes: with a shared key, each envelope carries an HMAC-SHA256 in front of it.
///
/// The signature is the first field, so that the receiver can check the exact bytes that were
/// signed without re-encoding anything:
///
/// ```json
/// {"signature":"<44 base64 characters>","version":1,"type":…,"origin":…,"sequence":42,"payload":…}
/// ```
///
/// The signed bytes (the *canonical envelope*) are the channel name, one zero byte, and the envelope
/// as it reads without its signature field: `{"version":1,…,"payload":…}`, byte for byte. The
/// channel name is included so that a message cannot be replayed on another channel.
struct Signer: Sendable {
    let channel: String
    /// HMAC-SHA256 keyed, and fed with the channel name and the zero byte: each message copies it
    /// (its digest state is copied on write) and adds only its canonical envelope, so the key is
    /// not processed again for every message.
    private let prepared: HMAC<SHA256>

    init(key: SymmetricKey, channel: String) {
        self.channel = channel
        var prepared = HMAC<SHA256>(key: key)
        prepared.update(data: Array(channel.utf8) + [0])
        self.prepared = prepared
    }

    /// `{"signature":"`
    static let head = Array(#"{"signature":""#.utf8)
    /// The length of a base64 HMAC-SHA256.
    static let signatureLength = 44
    /// `",`
    static let tail = Array(#"","#.utf8)
    /// How many bytes signing adds to an envelope: the head, the signature and the tail replace `{`.
    static let overhead = head.count + signatureLength + tail.count - 1

    private func code(for canonical: [UInt8]) -> HashedAuthenticationCode<SHA256> {
        var mac = prepared
        mac.update(data: canonical)
        return mac.finalize()
    }

    /// The signed form of an outgoing canonical envelope.
    func sign(_ canonical: String) -> String {
        let signature = Data(code(for: Array(canonical.utf8))).base64EncodedString()
        return #"{"signature":""# + signature + #"","# + canonical.dropFirst()
    }

    enum Verdict {
        /// The canonical envelope, whose signature checked out.
        case valid([UInt8])
        case unsigned
        case forged
    }

    /// Checks a received message and returns the canonical envelope that was signed.
    func verify(_ text: String) -> Verdict {
        let bytes = Array(text.utf8)
        let start = Self.head.count + Self.signatureLength + Self.tail.count
        guard bytes.count > start, bytes.starts(with: Self.head) else { return .unsigned }
        let signatureBytes = bytes[Self.head.count..<(Self.head.count + Self.signatureLength)]
        guard bytes[(start - Self.tail.count)..<start].elementsEqual(Self.tail),
            let signature = Data(base64Encoded: Data(signatureBytes)), signature.count == SHA256.byteCount
        else { return .forged }
        var canonical = [UInt8]()
        canonical.reserveCapacity(bytes.count - start + 1)
        canonical.append(UInt8(ascii: "{"))
        canonical.append(contentsOf: bytes[start...])
        // `==` between a code and bytes compares in constant time.
        guard code(for: canonical) == signature else { return .forged }
        return .valid(canonical)
    }
}

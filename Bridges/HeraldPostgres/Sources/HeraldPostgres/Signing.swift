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
    let key: SymmetricKey
    let channel: String

    /// `{"signature":"`
    static let head = Array(#"{"signature":""#.utf8)
    /// The length of a base64 HMAC-SHA256.
    static let signatureLength = 44
    /// `",`
    static let tail = Array(#"","#.utf8)
    /// How many bytes signing adds to an envelope: the head, the signature and the tail replace `{`.
    static let overhead = head.count + signatureLength + tail.count - 1

    private func authenticated(_ canonical: some Sequence<UInt8>) -> [UInt8] {
        Array(channel.utf8) + [0] + canonical
    }

    /// The signed form of an outgoing canonical envelope.
    func sign(_ canonical: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: authenticated(canonical.utf8), using: key)
        let signature = Data(mac).base64EncodedString()
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
        let canonical = [UInt8(ascii: "{")] + bytes[start...]
        guard HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: authenticated(canonical), using: key)
        else { return .forged }
        return .valid(canonical)
    }
}

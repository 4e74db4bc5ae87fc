import Crypto
import Foundation
import Testing

@testable import HeraldPostgres

/// Signing and checking envelopes, without a server: key ids, issue times and the envelopes of
/// earlier releases.
@Suite("Signer")
struct SignerTests {
    let old = PostgresLink.SigningKey(id: "2026-10", key: SymmetricKey(size: .bits256))
    let new = PostgresLink.SigningKey(id: "2026-11", key: SymmetricKey(size: .bits256))
    let envelope = #"{"version":3,"origin":"X","sequence":1,"payload":{}}"#

    private func signer(_ keys: [PostgresLink.SigningKey], legacy: Bool = false) throws -> Signer {
        try #require(Signer(keys: keys, channel: "orders", isLegacy: legacy))
    }

    @Test func anEnvelopeSignedWithAnyAcceptedKeyChecksOutWithItsIssueTime() throws {
        let text = try signer([new, old]).sign(envelope, issued: 1_764_000_000_123)
        #expect(text.hasPrefix(#"{"signature":""#))
        #expect(text.contains(#","key":"2026-11","issued":1764000000123,"version":3,"#))
        for keys in [[old, new], [new]] {
            guard case .valid(let bytes, let issued) = try signer(keys).verify(text) else {
                Issue.record("expected a valid signature with \(keys.map(\.id))")
                continue
            }
            #expect(String(decoding: bytes, as: UTF8.self) == envelope)
            #expect(issued == 1_764_000_000_123)
        }
        guard case .unknownKey("2026-11") = try signer([old]).verify(text) else {
            Issue.record("expected an unknown key")
            return
        }
    }

    /// A link's own envelope, heard back, is recognised by its header and not checked: it is
    /// dropped whether genuine or forged. Another origin's, or another incarnation's, is checked.
    @Test func theReadersOwnEnvelopeIsAnEchoWithoutCheckingItsSignature() throws {
        let origin = UUID()
        let incarnation = Incarnation(id: 0xABC, started: 5)
        let marker = Signer.echoMarker(origin: origin, incarnation: incarnation)
        let own =
            #"{"version":3,"origin":"\#(origin.uuidString)","incarnation":"\#(incarnation.idText)","started":5,"sequence":1,"count":1,"batch":[]}"#
        let signer = try signer([new])
        let text = signer.sign(own, issued: 1)
        guard case .echo(let bytes) = signer.verify(text, echoMarker: marker) else {
            Issue.record("expected an echo")
            return
        }
        #expect(String(decoding: bytes, as: UTF8.self) == own)
        // Another incarnation of the same origin (a replica) is checked as any other envelope.
        let other = Signer.echoMarker(origin: origin, incarnation: Incarnation(id: 0xABD, started: 5))
        guard case .valid = signer.verify(text, echoMarker: other) else {
            Issue.record("expected a checked, valid envelope")
            return
        }
        // A forgery of the reader's own envelope is dropped as its echo would be.
        let forged = try self.signer([old]).sign(own, issued: 1).replacingOccurrences(of: "2026-10", with: "2026-11")
        guard case .echo = signer.verify(forged, echoMarker: marker), case .forged = signer.verify(forged) else {
            Issue.record("expected the forgery dropped as an echo, and refused when checked")
            return
        }
    }

    @Test func alteringTheKeyIdTheIssueTimeOrTheEnvelopeIsAForgery() throws {
        let signer = try signer([new, old])
        let text = signer.sign(envelope, issued: 1_764_000_000_123)
        for altered in [
            text.replacingOccurrences(of: "1764000000123", with: "1764000009999"),
            text.replacingOccurrences(of: #""key":"2026-11""#, with: #""key":"2026-10""#),
            text.replacingOccurrences(of: #""sequence":1"#, with: #""sequence":2"#),
            text.replacingOccurrences(of: #","issued":"#, with: #","issued":-"#),
        ] {
            guard case .forged = signer.verify(altered) else {
                Issue.record("expected a forgery: \(altered)")
                continue
            }
        }
        guard case .unsigned = signer.verify(envelope) else {
            Issue.record("expected an unsigned envelope")
            return
        }
    }

    @Test func theEnvelopesOfEarlierReleasesCheckOutWithoutIssueTime() throws {
        let legacy = try signer([old], legacy: true)
        let text = legacy.sign(envelope, issued: 1)
        #expect(text.hasPrefix(#"{"signature":""#) && text.hasSuffix(String(envelope.dropFirst())))
        #expect(!text.contains("issued"))
        guard case .valid(let bytes, .none) = try signer([new, old]).verify(text) else {
            Issue.record("expected a valid legacy signature")
            return
        }
        #expect(String(decoding: bytes, as: UTF8.self) == envelope)
    }

    @Test func theOverheadIsExactlyWhatSigningAdds() throws {
        for legacy in [false, true] {
            let signer = try signer([new], legacy: legacy)
            for issued: UInt64 in [0, 7, 1_764_000_000_123, UInt64(Date().timeIntervalSince1970 * 1_000)] {
                let text = signer.sign(envelope, issued: issued)
                #expect(text.utf8.count - envelope.utf8.count == signer.overhead(issued: issued))
            }
        }
    }

    @Test(arguments: ["", String(repeating: "a", count: 65), "a b", #"a"b"#, "é"])
    func aKeyIdThatIsNotPlainIsRefused(_ id: String) {
        #expect(!PostgresLink.SigningKey.isValidID(id))
    }
}

/// The signatures' base64, against Foundation's.
@Suite("Base64")
struct Base64Tests {
    @Test(arguments: 0..<40)
    func itMatchesFoundation(_ count: Int) {
        let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ count) }
        var encoded: [UInt8] = []
        bytes.withUnsafeBytes { Base64.append($0, to: &encoded) }
        #expect(String(decoding: encoded, as: UTF8.self) == Data(bytes).base64EncodedString())
        #expect(Base64.decode(encoded) == bytes)
    }

    @Test(arguments: ["A", "AB=", "A===", "AB=C", "AB C", "ABC?"])
    func notBase64IsRefused(_ text: String) {
        #expect(Base64.decode(Array(text.utf8)) == nil)
    }
}

/// The signer's HMAC-SHA256, against swift-crypto's `HMAC<SHA256>`.
@Suite("HMACSHA256")
struct HMACSHA256Tests {
    /// Keys shorter than, as long as and longer than SHA-256's 64-byte block; messages fed in one
    /// part or two, and a prepared state copied for a second message.
    @Test(arguments: [0, 1, 32, 63, 64, 65, 200])
    func itMatchesSwiftCrypto(keyLength: Int) {
        let key = SymmetricKey(data: (0..<keyLength).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ keyLength) })
        var prepared = HMACSHA256(key: key)
        let head = Array("orders".utf8) + [0]
        head.withUnsafeBytes { prepared.update($0) }
        for length in [0, 1, 55, 56, 64, 300, 8_000] {
            let message = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ length) }
            var mac = prepared
            message.prefix(length / 2).withUnsafeBytes { mac.update($0) }
            message.dropFirst(length / 2).withUnsafeBytes { mac.update($0) }
            let expected = Array(HMAC<SHA256>.authenticationCode(for: head + message, using: key))
            let code = mac.finalize()
            #expect(Array(code) == expected)
            #expect(HMACSHA256.isEqual(code, expected))
            var altered = expected
            altered[length % altered.count] ^= 1
            #expect(!HMACSHA256.isEqual(code, altered))
            #expect(!HMACSHA256.isEqual(code, Array(expected.dropLast())))
        }
    }
}

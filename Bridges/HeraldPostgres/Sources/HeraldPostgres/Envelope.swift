import Foundation

/// The wire format: one JSON object per `NOTIFY` payload.
///
/// ```json
/// {"version":1,"type":"UserCreated","origin":"6F1C…","sequence":42,"payload":{"userID":7}}
/// ```
///
/// - `version`: the envelope version, ``current``. A reader skips (and reports) newer versions.
/// - `type`: the ``WireNotification/wireName`` of the payload's type.
/// - `origin`: the UUID of the sending link; a link drops its own messages by it.
/// - `sequence`: 1, 2, 3… per origin, across all types; receivers detect gaps and replays with it.
/// - `payload`: the value, encoded by its `Codable` conformance.
enum Envelope {
    /// The version this build writes and the newest it reads.
    static let current = 1

    struct Version: Decodable {
        let version: Int
    }

    struct Header: Decodable {
        let version: Int
        let type: String
        let origin: UUID
        let sequence: UInt64
    }

    struct Payload<N: Decodable>: Decodable {
        let payload: N
    }

    /// The part of an outgoing envelope before the sequence number, built outside any lock.
    static func prefix(typeJSON: String, origin: UUID, payloadJSON: String) -> String {
        #"{"version":\#(current),"type":\#(typeJSON),"origin":"\#(origin.uuidString)","payload":\#(payloadJSON),"sequence":"#
    }

    /// Completes an outgoing envelope with its sequence number.
    static func complete(prefix: String, sequence: UInt64) -> String {
        prefix + String(sequence) + "}"
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

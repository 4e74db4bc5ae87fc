import Foundation
import Herald

// Notification types declared in an app module with default main-actor isolation. A conformance
// in the primary declaration just works: the type's stored `let`s are Sendable, so they are read
// from any isolation. A conformance in an extension needs a `nonisolated` type.

// snippet: begin
/// A background import reports its progress far faster than the screen can show it.
struct ImportProgress: TypedNotification, Equatable {
    let fileIndex: Int
    let fileCount: Int

    nonisolated var fraction: Double { fileCount == 0 ? 0 : Double(fileIndex) / Double(fileCount) }
}

/// One file was imported.
struct FileImported: TypedNotification, Equatable {
    let name: String
}

/// The import finished. Its conformance sits in an extension, so the type says `nonisolated`:
/// otherwise it stays main-actor isolated, and a handler on a queue could not read `fileCount`.
nonisolated struct ImportFinished {
    let fileCount: Int
}

extension ImportFinished: TypedNotification {}
// snippet: end

// A bridged conformance written in an extension crosses into main-actor code unless the type and
// the extension are `nonisolated`: `nonisolated extension` alone is not enough when `Codable` or
// `Equatable` sit in the primary declaration, because those conformances would be main-actor
// isolated and `NotificationConvertible` needs them from any thread.

// snippet: begin
/// A profile, bridged to legacy `NotificationCenter` code that reads `userInfo`.
nonisolated struct ProfileSaved: Codable, Equatable {
    var userID: Int
    var homePage: URL?
    var requestID: UUID
    var savedAt: Date
}

nonisolated extension ProfileSaved: NotificationConvertible {
    static let notificationName = Notification.Name("ProfileSavedNotification")
}
// snippet: end

// A family protocol, user-info keys and a shared hub declared in the app module are main-actor
// isolated too unless they say `nonisolated`: then background code and handlers on other targets
// can use them.

// snippet: begin
/// Every analytics event, observed as one family.
nonisolated protocol AnalyticsEvent: TypedNotification {
    var name: String { get }
}

struct ScreenViewed: AnalyticsEvent {
    let name: String
}

struct ButtonTapped: AnalyticsEvent {
    let name: String
}

nonisolated extension UserInfoKey {
    static var userID: UserInfoKey<Int> { .init("userID") }
    static var homePage: UserInfoKey<URL> { .init("homePage") }
}

extension NotificationHub {
    /// The app's hub.
    nonisolated static let app = NotificationHub()
}
// snippet: end

import Foundation
import Herald
import Testing

extension UserInfoKey {
    static var status: UserInfoKey<Int> { .init("status") }
    static var title: UserInfoKey<String> { .init("title") }
    static var level: UserInfoKey<UInt8> { .init("level") }
    static var profile: UserInfoKey<EveryType.Profile> { .init("profile") }
    static var homePage: UserInfoKey<URL> { .init("homePage") }
    static var mood: UserInfoKey<EveryType.Mood> { .init("mood") }
    static var sender: UserInfoKey<NonCodableSender> { .init("sender") }
    static var payload: UserInfoKey<[String: Any]> { .init("payload") }
}

/// A class that is not Codable.
final class NonCodableSender: Sendable {}

@Suite struct UserInfoKeyTests {
    @Test("A typed key reads a notification's user info as an optional of its type")
    func readsNotificationUserInfo() {
        let note = Notification(name: Notification.Name("x"), object: nil, userInfo: ["status": 201, "title": "Hi"])
        let status: Int? = note.userInfo[.status]
        #expect(status == 201)
        #expect(note.userInfo[.title] == "Hi")
        #expect(Notification(name: Notification.Name("x")).userInfo[.status] == nil)
    }

    @Test("A wrong-typed value reads as nil from the subscript and as a typed error from value(for:)")
    func wrongTypeIsNilOrError() throws {
        let userInfo: [AnyHashable: Any] = ["status": "201", "level": 300]
        #expect(userInfo[.status] == nil)
        #expect(userInfo[.level] == nil)

        let statusError = try #require(throws: UserInfoDecodingError.self) { try userInfo.value(for: .status) }
        #expect(statusError.description == #"userInfo["status"]: expected Int, found String "201""#)
        let levelError = try #require(throws: UserInfoDecodingError.self) { try userInfo.value(for: .level) }
        #expect(levelError.code == .numberOutOfRange)
    }

    @Test("A missing key reads as nil from the subscript and as keyNotFound from value(for:)")
    func missingKeyIsNilOrError() throws {
        let userInfo: [AnyHashable: Any] = [:]
        #expect(userInfo[.status] == nil)
        let error = try #require(throws: UserInfoDecodingError.self) { try userInfo.value(for: .status) }
        #expect(error.code == .keyNotFound)
        #expect(error.keyPath == #"userInfo["status"]"#)

        let none: [AnyHashable: Any]? = nil
        #expect(throws: UserInfoDecodingError.self) { try none.value(for: .status) }
        #expect(throws: UserInfoDecodingError.self) { try Notification(name: .init("x")).value(for: .status) }
    }

    @Test("Numbers from NSNumber read exactly: 201.0 is an Int, 201.5 is not")
    func numbersReadExactly() {
        #expect(([AnyHashable: Any](dictionaryLiteral: ("status", NSNumber(value: 201.0))))[.status] == 201)
        #expect(([AnyHashable: Any](dictionaryLiteral: ("status", NSNumber(value: 201.5))))[.status] == nil)
        #expect(([AnyHashable: Any](dictionaryLiteral: ("level", Int64(255))))[.level] == 255)
    }

    @Test("Codable values read from their user-info form: a dictionary, a string, a raw value")
    func codableValuesReadFromStoredForm() throws {
        let userInfo: [AnyHashable: Any] = [
            "profile": ["name": "Ada", "age": 36],
            "homePage": "https://example.com",
            "mood": "happy",
        ]
        #expect(try userInfo.value(for: .profile) == EveryType.Profile(name: "Ada", age: 36, email: nil))
        #expect(userInfo[.homePage] == URL(string: "https://example.com"))
        #expect(userInfo[.mood] == .happy)

        let error = try #require(throws: UserInfoDecodingError.self) {
            try ["profile": ["name": "Ada", "age": "old"]].value(for: .profile)
        }
        #expect(error.description == #"userInfo["profile"]["age"]: expected Int, found String "old""#)
    }

    @Test("Writing a Codable value stores its legacy-readable form, and nil removes the key")
    func writingStoresEncodedForm() throws {
        var userInfo: [AnyHashable: Any] = [:]
        userInfo[.status] = 7
        userInfo[.profile] = EveryType.Profile(name: "Ada", age: 36, email: nil)
        userInfo[.homePage] = URL(string: "https://example.com")
        userInfo[.mood] = .grumpy

        #expect(userInfo["status"] as? Int == 7)
        let profile = try #require(userInfo["profile"] as? [String: Any])
        #expect(profile["age"] as? Int == 36)
        #expect(userInfo["homePage"] as? URL == URL(string: "https://example.com"))
        #expect(userInfo["mood"] as? String == "grumpy")
        #expect(userInfo[.profile] == EveryType.Profile(name: "Ada", age: 36, email: nil))

        userInfo[.status] = nil
        #expect(userInfo.keys.contains("status") == false)
    }

    @Test("Types that are not Codable are stored and read as they are")
    func nonCodableTypesUseCasts() {
        let sender = NonCodableSender()
        var userInfo: [AnyHashable: Any] = [:]
        userInfo[.sender] = sender
        userInfo[.payload] = ["a": 1]
        #expect(userInfo[.sender] === sender)
        #expect(userInfo[.payload]?["a"] as? Int == 1)
        #expect(([AnyHashable: Any](dictionaryLiteral: ("sender", "not an object")))[.sender] == nil)
    }

    @Test("Setting a key on a nil user info makes a dictionary; setting nil leaves it nil")
    func optionalDictionarySetter() {
        var userInfo: [AnyHashable: Any]? = nil
        userInfo[.status] = nil
        #expect(userInfo == nil)
        userInfo[.status] = 3
        #expect(userInfo?["status"] as? Int == 3)
    }

    @Test("A key describes its name and type")
    func keyDescription() {
        #expect(UserInfoKey<Int>.status.description == #""status" (Int)"#)
        #expect(UserInfoKey<Int>("a") == UserInfoKey<Int>("a"))
        #expect(UserInfoKey<Int>("a") != UserInfoKey<Int>("b"))
    }
}

@Suite struct UserInfoBuilderTests {
    @Test("The builder chains typed entries into a user-info dictionary")
    func chainsEntries() {
        let userInfo = UserInfoBuilder()
            .setting(.status, to: 201)
            .setting(.title, to: "Created")
            .setting(.mood, to: .happy)
            .userInfo
        #expect(userInfo.count == 3)
        #expect(userInfo["status"] as? Int == 201)
        #expect(userInfo["title"] as? String == "Created")
        #expect(userInfo["mood"] as? String == "happy")
    }

    @Test("The builder starts from an existing dictionary and can remove entries")
    func startsFromExistingDictionary() {
        var builder = UserInfoBuilder(["status": 1, "legacy": true])
        builder[.status] = 2
        builder[.title] = "t"
        let removed = builder.setting(.title, to: nil)

        #expect(builder.userInfo["status"] as? Int == 2)
        #expect(builder.userInfo["legacy"] as? Bool == true)
        #expect(builder[.title] == "t")
        #expect(removed.userInfo["title"] == nil)
    }

    @Test("A builder's output posts as a legacy notification that a typed key reads back")
    func outputReadsBack() throws {
        let note = Notification(
            name: Notification.Name("x"), object: nil,
            userInfo: UserInfoBuilder().setting(.profile, to: .init(name: "B", age: 2, email: nil)).userInfo)
        #expect(try note.value(for: .profile) == EveryType.Profile(name: "B", age: 2, email: nil))
    }
}

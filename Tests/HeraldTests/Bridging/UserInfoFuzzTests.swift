import Foundation
import Herald
import Testing

/// Seeded random user-info dictionaries: malformed, odd, or valid but bridged differently.
///
/// The number of cases and the seed come from the environment, so that a hardening pass can run
/// many more cases under a sanitizer:
///
/// ```sh
/// HERALD_USERINFO_FUZZ_CASES=100000 ASAN_OPTIONS=detect_leaks=0 swift test --sanitize=address \
///     --scratch-path .build-asan --filter UserInfoFuzzTests
/// ```
///
/// That run takes about 15 minutes on a 2-core machine. `detect_leaks=0` silences a 144-byte leak
/// that LeakSanitizer reports in the Linux XCTest runner itself (`XCTestSuiteRun`), not in Herald.
///
/// - `HERALD_USERINFO_FUZZ_CASES`: the number of dictionaries per test (default 10,000).
/// - `HERALD_USERINFO_FUZZ_SEED`: the seed (default 0x4845_5241_4C44, "HERALD"). A failure prints
///   the seed and case number that reproduce it.
@Suite struct UserInfoFuzzTests {
    static var caseCount: Int {
        ProcessInfo.processInfo.environment["HERALD_USERINFO_FUZZ_CASES"].flatMap { Int($0) } ?? 10_000
    }

    static var seed: UInt64 {
        ProcessInfo.processInfo.environment["HERALD_USERINFO_FUZZ_SEED"].flatMap { UInt64($0) } ?? 0x4845_5241_4C44
    }

    @Test("Decoding seeded random malformed user info never traps, and every failure is an error value")
    func randomUserInfoNeverTraps() async {
        // Seconds of work, minutes under ThreadSanitizer: on a thread of its own, it leaves the
        // test workers free for the tests that run alongside.
        let outcome = await onNewThread { Self.fuzz(cases: Self.caseCount, seed: Self.seed) }
        #expect(outcome.cases == Self.caseCount)
        #expect(outcome.badErrors.isEmpty, "errors without a well-formed message: \(outcome.badErrors.prefix(5))")
        #expect(outcome.failures > 0)
        #expect(outcome.successes > 0)
        // Every kind of failure that random input can produce shows up.
        for code: UserInfoDecodingError.Code in [
            .keyNotFound, .valueNotFound, .typeMismatch, .numberOutOfRange, .numberNotExact, .invalidValue,
        ] {
            #expect(outcome.codes[code, default: 0] > 0, "no \(code) error in \(outcome.cases) cases")
        }
    }

    @Test("User info that differs only in Foundation bridging decodes to the same value")
    func bridgedUserInfoDecodesToTheSameValue() throws {
        var generator = OddUserInfoGenerator(seed: Self.seed ^ 0xB41D)
        let original = try UserInfoEncoder().encode(PlistFriendly.sample)
        let everyType = try UserInfoEncoder().encode(EveryType.sample)
        for index in 0..<max(1, Self.caseCount / 10) {
            let bridged = generator.bridged(original)
            let decoded = try #require(
                try? UserInfoDecoder().decode(PlistFriendly.self, from: bridged as? [AnyHashable: Any] ?? [:]),
                "case \(index) with seed \(Self.seed)")
            #expect(decoded == PlistFriendly.sample, "case \(index) with seed \(Self.seed)")

            let bridgedEveryType = generator.bridged(everyType) as? [AnyHashable: Any] ?? [:]
            let decodedEveryType = try UserInfoDecoder().decode(EveryType.self, from: bridgedEveryType)
            #expect(decodedEveryType == EveryType.sample, "case \(index) with seed \(Self.seed)")
        }
    }

    struct Outcome {
        var cases = 0
        var successes = 0
        var failures = 0
        var codes: [UserInfoDecodingError.Code: Int] = [:]
        var badErrors: [String] = []
    }

    /// Decodes `cases` random dictionaries into several types; records what happened.
    ///
    /// Each case either mutates a valid dictionary at a random depth (to reach deep key paths) or
    /// builds a random one from scratch.
    static func fuzz(cases: Int, seed: UInt64) -> Outcome {
        var generator = OddUserInfoGenerator(seed: seed)
        let validEveryType = (try? UserInfoEncoder().encode(EveryType.sample)) ?? [:]
        let validSample = UserInfoSample.validUserInfo
        var outcome = Outcome()

        func check<T: Decodable>(_ type: T.Type, _ userInfo: [AnyHashable: Any], index: Int) {
            do {
                let value = try UserInfoDecoder().decode(type, from: userInfo)
                outcome.successes += 1
                if let encodable = value as? any Encodable {
                    _ = try? UserInfoEncoder().encode(encodable)
                }
            } catch {
                outcome.failures += 1
                outcome.codes[error.code, default: 0] += 1
                let message = error.description
                let wellFormed =
                    message.hasPrefix(error.keyPath + ": expected \(error.expected), found \(error.found)")
                    && error.keyPath.hasPrefix("userInfo") && !error.expected.isEmpty && !error.found.isEmpty
                if !wellFormed && outcome.badErrors.count < 20 {
                    outcome.badErrors.append("case \(index) with seed \(seed): \(message)")
                }
            }
        }

        for index in 0..<cases {
            outcome.cases += 1
            switch generator.next(upperBound: 10) {
            case 0...3:
                check(EveryType.self, generator.mutated(validEveryType), index: index)
            case 4...5:
                check(UserInfoSample.self, generator.mutated(validSample), index: index)
            case 6:
                check(LegacyUserChanged.self, generator.randomUserInfo(keys: legacyKeys), index: index)
            case 7:
                check(UserInfoTree.self, generator.randomTree(), index: index)
            case 8:
                check([String: [Int?]].self, generator.randomUserInfo(keys: ["a", "b", "c"]), index: index)
            default:
                let userInfo = generator.randomUserInfo(keys: ["status", "profile", "level", "homePage", "mood"])
                _ = userInfo[.status]
                _ = userInfo[.profile]
                _ = userInfo[.homePage]
                check(EveryType.Profile.self, (userInfo["profile"] as? [AnyHashable: Any]) ?? userInfo, index: index)
                do {
                    _ = try userInfo.value(for: .level)
                    _ = try userInfo.value(for: .mood)
                } catch {
                    _ = error.description
                }
            }
        }
        return outcome
    }

    static let legacyKeys = [
        "userID", "status", "ratio", "isAdmin", "profile", "tags", "homePage", "requestID", "note",
    ]
}

/// SplitMix64: a small, fast, seedable generator, the same on every platform.
struct UserInfoRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Makes odd values of every kind a user-info dictionary can hold.
struct OddUserInfoGenerator {
    private var random: UserInfoRandom

    init(seed: UInt64) {
        random = UserInfoRandom(seed: seed)
    }

    mutating func next(upperBound: Int) -> Int {
        Int(random.next(upperBound: UInt64(upperBound)))
    }

    private mutating func chance(_ percent: Int) -> Bool {
        next(upperBound: 100) < percent
    }

    private mutating func pick<T>(_ choices: [T]) -> T {
        choices[next(upperBound: choices.count)]
    }

    /// A scalar: numbers of every width and edge, strings, Foundation values, nulls and objects.
    mutating func scalar() -> Any {
        switch next(upperBound: 12) {
        case 0:
            return pick([0, -1, 1, 3, 255, 256, 300, 65_536, Int.max, Int.min] as [Int])
        case 1:
            return pick(
                [
                    Int8.min, Int8(-1), UInt8.max, Int16.min, UInt16.max, Int32.max, UInt32.max, Int64.min, UInt64.max,
                    UInt(3), Int128(Int64.max) * 4, UInt128.max,
                ] as [Any])
        case 2:
            return pick(
                [
                    0.0, -0.0, 3.0, 3.5, -2.5, .nan, .infinity, -.infinity, 1e300, .leastNonzeroMagnitude,
                    Double(Int64.max), 1e40,
                ] as [Double])
        case 3:
            return pick([Float.nan, Float(0.1), Float.greatestFiniteMagnitude, Float(-1), CGFloat(2.5)] as [Any])
        case 4:
            return pick([
                NSNumber(value: true), NSNumber(value: false), NSNumber(value: Int8(-3)), NSNumber(value: Int64.min),
                NSNumber(value: UInt64.max), NSNumber(value: Double.nan), NSNumber(value: Float(1.5)),
                NSNumber(value: 300), NSNumber(value: 3.0), NSNumber(value: 0.5),
            ])
        case 5:
            return pick([true, false])
        case 6:
            return pick(
                [
                    "", "forty", "42", "3.5", "true", "happy", "sleepy", "https://example.com", "::::", "\u{0}",
                    "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "not-a-uuid", String(repeating: "🦆", count: 100),
                    NSString(string: "bridged"),
                ] as [Any])
        case 7:
            return pick(
                [
                    Date(timeIntervalSinceReferenceDate: Double(next(upperBound: 1_000_000))),
                    NSDate(timeIntervalSince1970: 0), Date.distantFuture,
                ] as [Any])
        case 8:
            return pick(
                [
                    Data((0..<next(upperBound: 8)).map { UInt8($0) }), NSData(), [UInt8](repeating: 7, count: 3),
                ] as [Any])
        case 9:
            return pick(
                [
                    URL(string: "https://example.com/a")!, NSURL(string: "file:///tmp")!, UUID(), NSUUID(),
                ] as [Any])
        case 10:
            return pick([NSNull(), Optional<Int>.none as Any, Optional<Int?>.some(3) as Any] as [Any])
        default:
            return pick(
                [
                    NSObject(), NonCodableSender(), EveryType.Profile(name: "n", age: 1, email: nil), { () -> Void in },
                    Set([1, 2]), Character("c"), EveryType.Mood.happy,
                ] as [Any])
        }
    }

    /// Any value, with containers nested at most `depth` levels.
    mutating func value(depth: Int) -> Any {
        guard depth > 0, chance(35) else { return scalar() }
        switch next(upperBound: 5) {
        case 0:
            return (0..<next(upperBound: 4)).map { _ in value(depth: depth - 1) }
        case 1:
            return NSArray(array: (0..<next(upperBound: 3)).map { _ in value(depth: depth - 1) })
        case 2:
            var dictionary: [String: Any] = [:]
            for _ in 0..<next(upperBound: 4) {
                dictionary[pick(["name", "age", "email", "a", "b", "children", ""])] = value(depth: depth - 1)
            }
            return dictionary
        case 3:
            var dictionary: [AnyHashable: Any] = [:]
            for _ in 0..<next(upperBound: 4) {
                let key: AnyHashable = pick([
                    AnyHashable(1), AnyHashable("name"), AnyHashable(Double.nan), AnyHashable(UUID()),
                    AnyHashable(NSString(string: "age")), AnyHashable(true),
                ])
                dictionary[key] = value(depth: depth - 1)
            }
            return dictionary
        default:
            let dictionary = NSMutableDictionary()
            for _ in 0..<next(upperBound: 3) {
                dictionary[pick(["name", "age", "x"])] = value(depth: depth - 1)
            }
            return dictionary
        }
    }

    /// A random dictionary whose keys are mostly the ones a target type reads.
    mutating func randomUserInfo(keys: [String]) -> [AnyHashable: Any] {
        var userInfo: [AnyHashable: Any] = [:]
        for key in keys where chance(80) {
            userInfo[key] = value(depth: 3)
        }
        if chance(20) {
            userInfo[AnyHashable(next(upperBound: 5))] = scalar()
        }
        return userInfo
    }

    /// A `UserInfoTree` dictionary, sometimes nested past the decoder's depth limit.
    mutating func randomTree() -> [AnyHashable: Any] {
        let depth = chance(10) ? 60 + next(upperBound: 200) : next(upperBound: 6)
        var tree: Any = chance(90) ? ["children": [Any]()] : value(depth: 2)
        for _ in 0..<depth {
            tree = chance(97) ? ["children": [tree]] : ["children": [tree, value(depth: 1)]]
        }
        return tree as? [AnyHashable: Any] ?? ["children": tree]
    }

    /// `valid` with one random change at a random depth.
    mutating func mutated(_ valid: [AnyHashable: Any]) -> [AnyHashable: Any] {
        (mutate(valid, depth: 0) as? [AnyHashable: Any]) ?? [:]
    }

    private mutating func mutate(_ value: Any, depth: Int) -> Any {
        let descend = chance(depth == 0 ? 85 : 55)
        if descend, let dictionary = value as? [AnyHashable: Any], !dictionary.isEmpty {
            var copy = dictionary
            let key = pick(Array(dictionary.keys))
            if chance(10) {
                copy[key] = nil
            } else {
                copy[key] = mutate(dictionary[key] ?? NSNull(), depth: depth + 1)
            }
            return copy
        }
        if descend, var array = value as? [Any], !array.isEmpty {
            let index = next(upperBound: array.count)
            if chance(10) {
                array.remove(at: index)
            } else {
                array[index] = mutate(array[index], depth: depth + 1)
            }
            return array
        }
        switch next(upperBound: 6) {
        case 0: return [value]
        case 1: return ["value": value]
        case 2: return bridged(value)
        default: return self.value(depth: 2)
        }
    }

    /// The same value with Swift types swapped for their Foundation equivalents at random.
    mutating func bridged(_ value: Any) -> Any {
        switch value {
        case let dictionary as [String: Any]:
            var copy: [AnyHashable: Any] = [:]
            for (key, element) in dictionary {
                copy[chance(50) ? AnyHashable(NSString(string: key)) : AnyHashable(key)] = bridged(element)
            }
            return chance(50) ? NSDictionary(dictionary: copy) : copy
        case let dictionary as [AnyHashable: Any]:
            var copy: [AnyHashable: Any] = [:]
            for (key, element) in dictionary {
                copy[key] = bridged(element)
            }
            return chance(50) ? NSDictionary(dictionary: copy) : copy
        case let array as [Any]:
            let copy = array.map { bridged($0) }
            return chance(50) ? NSArray(array: copy) : copy
        case let string as String where chance(50):
            return NSString(string: string)
        case let int as Int where chance(50):
            return NSNumber(value: int)
        case let double as Double where chance(50):
            return NSNumber(value: double)
        case let bool as Bool where chance(50):
            return NSNumber(value: bool)
        case let uint64 as UInt64 where chance(50):
            return NSNumber(value: uint64)
        case let date as Date where chance(50):
            return NSDate(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate)
        case let data as Data where chance(50):
            return NSData(data: data)
        default:
            return chance(10) ? Optional<Any>.some(value) as Any : value
        }
    }
}

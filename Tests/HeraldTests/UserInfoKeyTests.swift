import Foundation
import Herald
import Testing

@Suite struct UserInfoKeyTests {
    @Test func placeholder() {}
}

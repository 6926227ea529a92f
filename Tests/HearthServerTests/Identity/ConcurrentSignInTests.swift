import Clocks
import Foundation
import HearthAccess
import HearthCore
@testable import HearthIdentity
import HearthStorage
@testable import HearthServer
import HTTPTypes
import Testing

/// The per-account sign-in lock holds when the guesses arrive together (issue 25, finding 8): each
/// attempt is counted before its password is checked.
@Suite struct ConcurrentSignInTests {
    @Test func guessesSentAtOnceGetOnlyTheLimitsWorthOfPasswordChecks() async throws {
        let clock = TestClock<Duration>()
        try await AddressRateLimitTests.server(clock: clock) {
            $0.identity.failedSignInLimit = 5
            $0.identity.failedSignInWindow = .seconds(900)
        }.run { auth async throws in
            _ = try await auth.signUp("target@example.com", "right-password")
            // From 20 addresses, so only the account's lock is in play.
            let answers = try await withThrowingTaskGroup(of: String?.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        try await auth.post(
                            "accounts:signInWithPassword", #"{"email":"target@example.com","password":"guess-\#(index)"}"#,
                            headers: AddressRateLimitTests.from("203.0.113.\(index + 1)")
                        ).authError
                    }
                }
                return try await group.reduce(into: [String?]()) { $0.append($1) }
            }
            // Only those the limit admits had their password checked; the rest were refused unchecked.
            #expect(answers.filter { $0 == "INVALID_LOGIN_CREDENTIALS" }.count == 5, "\(answers)")
            #expect(answers.filter { $0?.hasPrefix("TOO_MANY_ATTEMPTS_TRY_LATER : ") == true }.count == 15, "\(answers)")
            // The right password is refused too until the window ends.
            let right = #"{"email":"target@example.com","password":"right-password"}"#
            #expect(try await auth.post("accounts:signInWithPassword", right).authError?.hasPrefix("TOO_MANY_ATTEMPTS_TRY_LATER") == true)
            await clock.advance(by: .seconds(899))
            #expect(try await auth.post("accounts:signInWithPassword", right).authError?.hasPrefix("TOO_MANY_ATTEMPTS_TRY_LATER") == true)
            await clock.advance(by: .seconds(1))
            #expect(try await auth.post("accounts:signInWithPassword", right).status == .ok)
        }
    }

    @Test func aPasswordResetLiftsTheLock() async throws {
        let users = InMemoryUserStore()
        try await IdentityTestServer { $0.identity.failedSignInLimit = 2 }.run(users: users) { auth async throws in
            _ = try await auth.signUp("locked@example.com", "right-password")
            for _ in 0..<2 {
                #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"locked@example.com","password":"guess-123"}"#).authError == "INVALID_LOGIN_CREDENTIALS")
            }
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"locked@example.com","password":"right-password"}"#).authError?.hasPrefix("TOO_MANY_ATTEMPTS_TRY_LATER") == true)
            // "You can immediately restore it by resetting your password."
            try await auth.post("accounts:sendOobCode", #"{"requestType":"PASSWORD_RESET","email":"locked@example.com"}"#)
            let link = try #require(try await users.outbox(project: IdentityTestServer.project, limit: 1).first?.link)
            let code = try #require(URLComponents(string: link)?.queryItems?.first { $0.name == "oobCode" }?.value)
            #expect(try await auth.post("accounts:resetPassword", #"{"oobCode":"\#(code)","newPassword":"newer-password"}"#).status == .ok)
            #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"locked@example.com","password":"newer-password"}"#).status == .ok)
        }
    }

    @Test func reservationsAreExactAndASuccessIsRefundedNotAFreshStart() throws {
        let throttle = SignInThrottle(limit: 3, window: .seconds(60))
        let first = throttle.reserve("a", now: .zero)
        #expect(first == .zero)
        #expect(throttle.reserve("a", now: .seconds(1)) != nil)
        // The right password: its own attempt is taken back, the failure before it stays.
        throttle.refund("a", ticket: try #require(first))
        #expect(throttle.reserve("a", now: .seconds(2)) != nil)
        #expect(throttle.reserve("a", now: .seconds(3)) != nil)
        #expect(throttle.reserve("a", now: .seconds(4)) == nil)
        #expect(!throttle.allows("a", now: .seconds(59)))
        // A new window: a refund from the old one does not eat into it.
        let fresh = throttle.reserve("a", now: .seconds(60))
        #expect(fresh == .seconds(60))
        throttle.refund("a", ticket: .zero)
        #expect(throttle.reserve("a", now: .seconds(61)) != nil)
        #expect(throttle.reserve("a", now: .seconds(62)) != nil)
        #expect(throttle.reserve("a", now: .seconds(63)) == nil)
        // However many arrive, exactly the limit pass.
        let passed = (0..<50).map { _ in throttle.reserve("b", now: .zero) }.compactMap { $0 }.count
        #expect(passed == 3)
    }
}

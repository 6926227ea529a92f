import Clocks
import Foundation
import HearthAccess
import HearthCore
@testable import HearthIdentity
import HearthStorage
@testable import HearthServer
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import Testing

/// The per-address limits on sign-ups and failed sign-ins, on a clock the test steps.
@Suite struct AddressRateLimitTests {
    static let anonymous = #"{"returnSecureToken":true}"#

    static func from(_ address: String) -> HTTPFields {
        [HTTPField.Name("x-forwarded-for")!: "198.51.100.99, \(address)"]
    }

    /// A server behind a (pretend) proxy, so each request names its client in `X-Forwarded-For`.
    static func server(clock: TestClock<Duration>, configure: @escaping (inout ServerConfiguration) -> Void) -> IdentityTestServer {
        IdentityTestServer { configuration in
            configuration.clock = ServerClock(clock, wallMillisecondsAtStart: (Date().timeIntervalSince1970 * 1000).rounded(.down))
            configuration.identity.trustForwardedFor = true
            configure(&configuration)
        }
    }

    @Test func signUpsPerAddressAreLimitedUntilTheWindowEnds() async throws {
        let clock = TestClock<Duration>()
        try await Self.server(clock: clock) {
            $0.identity.signUpsPerAddressLimit = 3
            $0.identity.signUpsPerAddressWindow = .seconds(3600)
        }.run { auth async throws in
            for index in 0..<3 {
                let body = index == 0 ? #"{"email":"first@example.com","password":"secret123"}"# : Self.anonymous
                #expect(try await auth.post("accounts:signUp", body, headers: Self.from("203.0.113.1")).status == .ok)
            }
            let refused = try await auth.post("accounts:signUp", #"{"email":"fourth@example.com","password":"secret123"}"#, headers: Self.from("203.0.113.1"))
            #expect(refused.status == .badRequest)
            #expect(refused.authError == "TOO_MANY_ATTEMPTS_TRY_LATER")
            #expect(refused.json?["error"]?["errors"]?.arrayValue?.first?["reason"] == .string("invalid"))
            #expect(try await auth.post("accounts:signUp", Self.anonymous, headers: Self.from("203.0.113.1")).authError == "TOO_MANY_ATTEMPTS_TRY_LATER")
            // The refused email was not created, another address is unaffected, and admins are not limited.
            #expect(try await auth.post("accounts:signUp", #"{"email":"fourth@example.com","password":"secret123"}"#, headers: Self.from("203.0.113.2")).status == .ok)
            #expect(try await auth.admin("accounts", #"{"email":"by-admin@example.com","password":"secret123"}"#).status == .ok)

            await clock.advance(by: .seconds(3599))
            #expect(try await auth.post("accounts:signUp", Self.anonymous, headers: Self.from("203.0.113.1")).authError == "TOO_MANY_ATTEMPTS_TRY_LATER")
            await clock.advance(by: .seconds(1))
            #expect(try await auth.post("accounts:signUp", Self.anonymous, headers: Self.from("203.0.113.1")).status == .ok)
        }
    }

    @Test func failedSignInsAcrossAccountsLimitTheAddress() async throws {
        let clock = TestClock<Duration>()
        try await Self.server(clock: clock) {
            $0.identity.failedSignInsPerAddressLimit = 3
            $0.identity.failedSignInsPerAddressWindow = .seconds(900)
        }.run { auth async throws in
            _ = try await auth.signUp("victim@example.com", "right-password")
            // Credential stuffing: one guess each at several accounts (one of them not existing), so the
            // per-account throttle never trips.
            for email in ["victim@example.com", "nobody@example.com", "someone@example.com"] {
                let guess = try await auth.post("accounts:signInWithPassword", #"{"email":"\#(email)","password":"guess-123"}"#, headers: Self.from("203.0.113.9"))
                #expect(guess.authError == "INVALID_LOGIN_CREDENTIALS")
            }
            let right = #"{"email":"victim@example.com","password":"right-password"}"#
            let refused = try await auth.post("accounts:signInWithPassword", right, headers: Self.from("203.0.113.9"))
            #expect(refused.status == .badRequest)
            #expect(refused.authError == "TOO_MANY_ATTEMPTS_TRY_LATER")
            // The account itself is not locked: its owner elsewhere signs in, and successes do not count.
            for _ in 0..<5 {
                #expect(try await auth.post("accounts:signInWithPassword", right, headers: Self.from("203.0.113.10")).status == .ok)
            }
            await clock.advance(by: .seconds(900))
            #expect(try await auth.post("accounts:signInWithPassword", right, headers: Self.from("203.0.113.9")).status == .ok)
        }
    }

    @Test func attemptsSentAtOnceCannotAllSlipUnderTheLimit() async throws {
        // Each check counts at once, so 50 concurrent reservations against a limit of 10 let exactly 10 through.
        let limit = AddressRateLimit(limit: 10, window: .seconds(900))
        let passed = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<50 { group.addTask { limit.reserve("203.0.113.5", now: .zero) } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(passed == 10)
        // A success taken back frees its place.
        limit.release("203.0.113.5", now: .seconds(1))
        #expect(limit.reserve("203.0.113.5", now: .seconds(2)))
        #expect(!limit.reserve("203.0.113.5", now: .seconds(3)))
        #expect(limit.reserve("203.0.113.5", now: .seconds(900)))
    }

    @Test func anIPv6ClientCountsByItsSlash64AndMappedIPv4ByItsAddress() {
        #expect(IdentityService.addressKey("2001:db8:1:2::1") == IdentityService.addressKey("2001:db8:1:2:ffff::9"))
        #expect(IdentityService.addressKey("[2001:db8:1:2::1]") == IdentityService.addressKey("2001:0db8:0001:0002::5%eth0"))
        #expect(IdentityService.addressKey("2001:db8:1:2::1") != IdentityService.addressKey("2001:db8:1:3::1"))
        #expect(IdentityService.addressKey("::ffff:203.0.113.7") == "203.0.113.7")
        #expect(IdentityService.addressKey("203.0.113.7") == "203.0.113.7")
        #expect(IdentityService.addressKey(nil) == "unknown")
    }

    @Test func aFloodOfAddressesStaysBounded() {
        let limit = AddressRateLimit(limit: 5, window: .seconds(60))
        for index in 0..<(limit.capacity + 5_000) { limit.record("10.\(index >> 16).\((index >> 8) & 255).\(index & 255)", now: .seconds(1)) }
        #expect(limit.entryCount <= limit.capacity)
        // A recent address is still counted.
        for _ in 0..<5 { limit.record("192.0.2.1", now: .seconds(2)) }
        #expect(!limit.allows("192.0.2.1", now: .seconds(3)))
    }

    /// An email change (`accounts:update`) or a link (`accounts:signUp` with an ID token) answers
    /// EMAIL_EXISTS for a taken address, so it counts against the sign-up limit as a sign-up does.
    @Test func emailChangesAndLinksCountAsSignUps() async throws {
        try await IdentityTestServer {
            $0.identity.signUpsPerAddressLimit = 3
            $0.identity.emailEnumerationProtection = false  // else an app changes no address directly
        }.run { auth async throws in
            let account = try #require(try await auth.post("accounts:signUp", Self.anonymous).json)
            let idToken = try #require(account["idToken"]?.stringValue)
            // Each answer in the message: under a full suite on a slow host the link once failed unexplained.
            let changed = try await auth.post("accounts:update", #"{"idToken":"\#(idToken)","email":"probe1@example.com"}"#)
            #expect(changed.status == .ok, "\(changed.body)")
            let linked = try await auth.post("accounts:signUp", #"{"idToken":"\#(idToken)","email":"probe2@example.com","password":"secret123"}"#)
            #expect(linked.status == .ok, "\(linked.body)")
            let refused = try await auth.post("accounts:update", #"{"idToken":"\#(idToken)","email":"probe3@example.com"}"#)
            #expect(refused.authError == "TOO_MANY_ATTEMPTS_TRY_LATER", "\(refused.body)")
        }
    }

    @Test func forwardedForIsIgnoredUnlessTrusted() async throws {
        try await IdentityTestServer { $0.identity.signUpsPerAddressLimit = 2 }.run { auth async throws in
            // Untrusted, the header cannot move a client to a fresh address: all three count as one.
            #expect(try await auth.post("accounts:signUp", Self.anonymous, headers: Self.from("203.0.113.1")).status == .ok)
            #expect(try await auth.post("accounts:signUp", Self.anonymous, headers: Self.from("203.0.113.2")).status == .ok)
            #expect(try await auth.post("accounts:signUp", Self.anonymous, headers: Self.from("203.0.113.3")).authError == "TOO_MANY_ATTEMPTS_TRY_LATER")
        }
    }

    @Test func theDefaultsLimitTheDefaultModeAndNotTheEmulator() {
        let store = InMemoryUserStore()
        let production = IdentityService(store: store, signer: .generate(), configuration: IdentityConfiguration(), emulatorMode: false)
        #expect(production.signUpsPerAddress?.limit == 100)
        #expect(production.signUpsPerAddress?.window == .seconds(3600))
        #expect(production.failedSignInsPerAddress?.limit == 100)
        var off = IdentityConfiguration()
        off.signUpsPerAddressLimit = 0
        #expect(IdentityService(store: store, signer: .generate(), configuration: off, emulatorMode: false).signUpsPerAddress == nil)
        let emulator = IdentityService(store: store, signer: .generate(), configuration: IdentityConfiguration(), emulatorMode: true)
        #expect(emulator.signUpsPerAddress == nil)
        #expect(emulator.failedSignInsPerAddress == nil)
    }

    @Test func emulatorModeTakesAnyNumberOfSignUpsFromOneAddress() async throws {
        try await IdentityTestServer(emulator: true).run { auth async throws in
            for _ in 0..<101 {
                #expect(try await auth.post("accounts:signUp", Self.anonymous).status == .ok)
            }
            for _ in 0..<101 {
                #expect(try await auth.post("accounts:signInWithPassword", #"{"email":"none@example.com","password":"guess-123"}"#).authError == "EMAIL_NOT_FOUND")
            }
        }
    }

    @Test func theContextCarriesTheConnectionsPeer() throws {
        let channel = EmbeddedChannel()
        try channel.connect(to: try SocketAddress(ipAddress: "192.0.2.44", port: 51234)).wait()
        let context = HearthRequestContext(source: ApplicationRequestContextSource(channel: channel, logger: Logger(label: "test")))
        #expect(context.remoteAddress?.ipAddress == "192.0.2.44")
    }

    @Test func theLastForwardedEntryIsTheOneTheProxyAdded() {
        #expect(IdentityToolkitController.lastForwardedAddress(["10.0.0.1, 192.0.2.7"]) == "192.0.2.7")
        #expect(IdentityToolkitController.lastForwardedAddress(["10.0.0.1", "192.0.2.8 "]) == "192.0.2.8")
        #expect(IdentityToolkitController.lastForwardedAddress([" , "]) == nil)
        #expect(IdentityToolkitController.lastForwardedAddress([]) == nil)
    }

    @Test func aPortAProxyAppendsIsNotPartOfTheAddress() {
        // Some proxies write the client's port too; each new connection would otherwise count apart.
        #expect(IdentityToolkitController.lastForwardedAddress(["10.0.0.1, 203.0.113.7:51234"]) == "203.0.113.7")
        #expect(IdentityToolkitController.lastForwardedAddress(["[2001:db8:1:2::1]:51234"]) == "2001:db8:1:2::1")
        #expect(IdentityToolkitController.lastForwardedAddress(["[2001:db8:1:2::1]"]) == "2001:db8:1:2::1")
        #expect(IdentityToolkitController.lastForwardedAddress(["2001:db8:1:2::1"]) == "2001:db8:1:2::1")
        #expect(IdentityService.addressKey("203.0.113.7:1") == IdentityService.addressKey("203.0.113.7:2"))
        #expect(IdentityService.addressKey("[2001:db8:1:2::1]:1") == IdentityService.addressKey("2001:db8:1:2::9"))
        // What is not an address is not taken: the connection's peer counts instead.
        for entry in ["unknown", "203.0.113.7:port", "203.0.113.7:123456", "[2001:db8::1", "[2001:db8::1]x", "203.0.113", "_hidden", "::1:80:"] {
            #expect(IdentityToolkitController.lastForwardedAddress([entry]) == nil, "\(entry)")
        }
    }

    @Test func connectionsFromOnePortedForwardedAddressShareItsLimit() async throws {
        try await Self.server(clock: TestClock<Duration>()) { $0.identity.signUpsPerAddressLimit = 2 }.run { auth async throws in
            #expect(try await auth.post("accounts:signUp", Self.anonymous, headers: Self.from("203.0.113.7:40001")).status == .ok)
            #expect(try await auth.post("accounts:signUp", Self.anonymous, headers: Self.from("203.0.113.7:40002")).status == .ok)
            let third = try await auth.post("accounts:signUp", Self.anonymous, headers: Self.from("203.0.113.7:40003"))
            #expect(third.authError == "TOO_MANY_ATTEMPTS_TRY_LATER")
            // Garbage instead of an address counts under the connection's peer, never apart.
            #expect(try await auth.post("accounts:signUp", Self.anonymous, headers: Self.from("nonsense-1")).status == .ok)
            #expect(try await auth.post("accounts:signUp", Self.anonymous, headers: Self.from("nonsense-2")).status == .ok)
            #expect(try await auth.post("accounts:signUp", Self.anonymous, headers: Self.from("nonsense-3")).authError == "TOO_MANY_ATTEMPTS_TRY_LATER")
        }
    }

    @Test func aLiveConnectionIsCountedUnderItsAddress() async throws {
        try await IdentityTestServer { $0.identity.signUpsPerAddressLimit = 1 }.runLive { auth, _ async throws in
            #expect(try await auth.post("accounts:signUp", Self.anonymous).status == .ok)
            #expect(try await auth.post("accounts:signUp", Self.anonymous).authError == "TOO_MANY_ATTEMPTS_TRY_LATER")
        }
    }
}

import Foundation
import HearthCore
import HTTPTypes
import Synchronization

/// Decides who a request comes from, from its `Authorization: Bearer` header or `auth=` parameter.
///
/// The admin secret is admin. In emulator mode, `owner` is admin too, as in Firebase's emulator; in the
/// default mode it is just an unknown token. With an admin credential, `auth_variable_override` makes
/// the request act as the given `auth` value (`null` meaning unauthenticated).
package struct Authenticator: Sendable {
    package let adminSecret: AdminSecret?
    package let emulatorMode: Bool
    package let tokens: TokenSigner?
    /// Sessions of the web console: their tokens are the admin until they expire.
    package var consoleSessions: ConsoleSessions?
    /// Expiry is checked against the server's clock, so tests decide when a token expires.
    package let clock: ServerClock
    /// Signature checks cost tens of microseconds; a client sends the same token many times.
    package let verified = VerifiedTokenCache()

    package init(adminSecret: AdminSecret?, emulatorMode: Bool, tokens: TokenSigner?, consoleSessions: ConsoleSessions? = nil, clock: ServerClock) {
        self.adminSecret = adminSecret
        self.emulatorMode = emulatorMode
        self.tokens = tokens
        self.consoleSessions = consoleSessions
        self.clock = clock
    }

    /// What a client locked out of the admin secret is told (429).
    package static let tooManyGuessesMessage = "Too many wrong admin secrets from this address; try again in a minute."

    /// Checks a credential (REST `auth=`/Bearer, or the WebSocket `auth`/`gauth` message). An admin
    /// credential may act as another `auth` value (`override`, `.some(.null)` meaning unauthenticated).
    ///
    /// During an HTTP request a wrong admin secret counts against the client's address
    /// (``AdminSecretGuard``): once it is locked out, secret-shaped credentials from it throw
    /// ``TokenError/tooManyGuesses`` unchecked; ID tokens are unaffected.
    package func authenticate(_ token: String, override: JSONValue?) throws(TokenError) -> Authentication {
        // An ID token seen before needs neither the admin check (a salted hash) nor a signature check.
        if let tokens, let cached = try verified.cached(token, now: clock.wallDate, skew: tokens.allowedSkew) {
            try tokens.revocations?.check(cached.auth)
            return Authentication(identity: .user(cached.auth), expires: cached.expires)
        }
        // A console session acts as the admin until it expires or is signed out, on connections too.
        let consoleExpiry = consoleSessions?.expiry(of: token)
        var isAdmin = (emulatorMode && token == "owner") || consoleExpiry != nil
        if !isAdmin, let adminSecret {
            switch RequestClient.checkAdminSecret(token, against: adminSecret) {
            case .admin: isAdmin = true
            case .notAdmin: break
            case .locked: throw TokenError.tooManyGuesses
            }
        }
        guard isAdmin else {
            // Not admin: an ID token (signed by this server, or unsigned in emulator mode).
            guard let tokens else { throw TokenError.malformed }
            let verified = try verified.token(for: token, now: clock.wallDate, skew: tokens.allowedSkew) { token, now throws(TokenError) in
                try tokens.verify(token, now: now, allowUnsigned: emulatorMode)
            }
            try tokens.revocations?.check(verified.auth)
            return Authentication(identity: .user(verified.auth), expires: verified.expires)
        }
        var authentication: Authentication
        switch override {
        case nil: authentication = Authentication(identity: .admin)
        case .null?: authentication = Authentication(identity: .anonymous)
        case let override?: authentication = Authentication(identity: .user(override))
        }
        if let consoleExpiry {
            authentication.expires = consoleExpiry / 1000
            authentication.consoleSession = ConsoleSessions.hash(token)
        }
        return authentication
    }

    /// The token from an `Authorization: Bearer <token>` header value.
    package static func bearerToken(_ header: String?) -> String? {
        // On the bytes: every request asks, and splitting and lowercasing Characters cost more than the
        // rest of the authentication of an admin request. Tokens are ASCII; trimming with Foundation
        // would convert every token to UTF-16.
        guard let utf8 = header?.utf8 else { return nil }
        let space = UInt8(ascii: " "), tab = UInt8(ascii: "\t")
        guard let schemeStart = utf8.firstIndex(where: { $0 != space }) else { return nil }
        guard let schemeEnd = utf8[schemeStart...].firstIndex(of: space) else { return nil }
        // `byte | 0x20` lowercases an ASCII letter, and maps no other byte onto one of "bearer".
        guard utf8[schemeStart..<schemeEnd].elementsEqual("bearer".utf8, by: { $0 | 0x20 == $1 }) else { return nil }
        let rest = utf8[utf8.index(after: schemeEnd)...]
        guard !rest.isEmpty else { return nil }
        let start = rest.firstIndex { $0 != space && $0 != tab } ?? rest.endIndex
        let end = rest[start...].lastIndex { $0 != space && $0 != tab }.map { utf8.index(after: $0) } ?? start
        return String(Substring(utf8[start..<end]))
    }
}

/// Tokens whose signature was already checked, with their `auth` and expiry. Bounded: emptied when full.
/// Expiry is checked on every use, so a cached token stops working when it expires.
package final class VerifiedTokenCache: Sendable {
    private let entries = Mutex<[String: VerifiedToken]>([:])
    package let capacity = 10_000

    /// A token verified before, if it is still valid.
    package func cached(_ token: String, now: Date, skew: Double) throws(TokenError) -> VerifiedToken? {
        guard let entry = entries.withLock({ $0[token] }) else { return nil }
        if let expires = entry.expires, expires + skew <= now.timeIntervalSince1970 { throw TokenError.expired }
        return entry
    }

    package func token(
        for token: String,
        now: Date,
        skew: Double,
        verify: (String, Date) throws(TokenError) -> VerifiedToken
    ) throws(TokenError) -> VerifiedToken {
        if let entry = try cached(token, now: now, skew: skew) { return entry }
        let verified = try verify(token, now)
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[token] = verified
        }
        return verified
    }
}

/// Who a request or connection acts as, and when that stops being valid (seconds since 1970).
package struct Authentication: Sendable {
    package var identity: Identity
    package var expires: Double?
    /// The hash of the console session whose token this is (``ConsoleSessions/hash(_:)``): connections
    /// and streams opened with it end when it is signed out.
    package var consoleSession: Data?

    package init(identity: Identity, expires: Double? = nil) {
        self.identity = identity
        self.expires = expires
    }
}

import Crypto
import Foundation
public import HearthCore

/// The server's own ID tokens: ES256 JWTs signed with a key pair kept in the data directory, published
/// as a JWKS, and verified on every request that carries one.
///
/// Verification checks the signature, `exp`, `iat` (with a small clock skew), `aud` and `iss`. In
/// emulator mode, unsigned tokens (`alg: none`, as the Firebase SDKs' emulator helpers make) are accepted
/// too, as Firebase's emulator does; the default mode never accepts them.
///
/// For example:
/// ```swift
/// let signer = TokenSigner.generate()
/// let token = try signer.mint(uid: "ada", claims: [:], expiresIn: 3600, now: Date())
/// let auth = try signer.verify(token, now: Date(), allowUnsigned: false).auth   // {"uid": "ada", …}
/// ```
public struct TokenSigner: Sendable {
    /// The private key's raw bytes (swift-crypto 3's key types are not `Sendable`; key values are made on use).
    package let privateKeyBytes: Data
    package let publicKeyBytes: Data
    /// `iss` and `aud` of tokens this server mints and accepts.
    public let issuer: String
    /// Seconds of clock difference tolerated for `iat` and `exp`.
    public var allowedSkew: Double = 60
    /// Users whose tokens are refused before they expire (set by the application with the identity service).
    public var revocations: TokenRevocations?

    public init(key: P256.Signing.PrivateKey, issuer: String = "hearth") {
        privateKeyBytes = key.rawRepresentation
        publicKeyBytes = key.publicKey.rawRepresentation
        self.issuer = issuer
    }

    /// A signer with a new random key.
    public static func generate() -> TokenSigner {
        TokenSigner(key: P256.Signing.PrivateKey())
    }

    /// The key ID: the first 16 characters of the base64url SHA-256 of the public key.
    public var keyID: String {
        String(Base64URL.encode(Array(SHA256.hash(data: publicKeyBytes))).prefix(16))
    }

    /// The public key as a JSON Web Key Set, for `/.well-known/jwks.json`.
    public var jwks: JSONValue {
        let raw = Array(publicKeyBytes)
        return .object([
            (key: "keys", value: .array([.object([
                (key: "kty", value: .string("EC")), (key: "crv", value: .string("P-256")),
                (key: "x", value: .string(Base64URL.encode(Array(raw[0..<32])))),
                (key: "y", value: .string(Base64URL.encode(Array(raw[32..<64])))),
                (key: "kid", value: .string(keyID)), (key: "alg", value: .string("ES256")), (key: "use", value: .string("sig")),
            ])])),
        ])
    }

    /// Mints a token for `uid` with extra claims, valid for `expiresIn` seconds.
    public func mint(uid: String, claims: [(key: String, value: JSONValue)], expiresIn: Double, now: Date) throws -> String {
        let issued = now.timeIntervalSince1970.rounded(.down)
        var payload: [(key: String, value: JSONValue)] = [
            ("iss", .string(issuer)), ("aud", .string(issuer)), ("sub", .string(uid)), ("user_id", .string(uid)),
            ("iat", .number(issued)), ("auth_time", .number(issued)), ("exp", .number(issued + expiresIn.rounded(.down))),
            ("firebase", .object([(key: "sign_in_provider", value: .string("custom")), (key: "identities", value: .object([]))])),
        ]
        for claim in claims where !payload.contains(where: { $0.key == claim.key }) { payload.append(claim) }
        return try sign(payload: payload)
    }

    /// Signs a payload as it is (ES256, with this key's `kid`): the identity service builds Firebase's
    /// claims itself.
    public func sign(payload: [(key: String, value: JSONValue)]) throws -> String {
        let header = JSONValue.object([(key: "alg", value: .string("ES256")), (key: "typ", value: .string("JWT")), (key: "kid", value: .string(keyID))])
        let signingInput = Base64URL.encode(Array(header.jsonText.utf8)) + "." + Base64URL.encode(Array(JSONValue.object(payload).jsonText.utf8))
        let key = try P256.Signing.PrivateKey(rawRepresentation: privateKeyBytes)
        let signature = try key.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }

    /// Verifies a token and returns the `auth` value the rules see: `{uid, provider, token}`, with when it
    /// stops being valid. Unsigned tokens (emulator mode only) never expire: the SDKs' mock tokens carry
    /// `exp: 3600`, in 1970, and Firebase's emulator accepts them.
    public func verify(_ token: String, now: Date, allowUnsigned: Bool) throws(TokenError) -> VerifiedToken {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let payloadBytes = Base64URL.decode(parts[1]),
            case .object = try? JSONValue(parsing: headerBytes), let header = try? JSONValue(parsing: headerBytes),
            let claims = try? JSONValue(parsing: payloadBytes), case .object = claims
        else { throw TokenError.malformed }
        var unsigned = false
        switch header["alg"] {
        case .string("ES256")?:
            guard case .string(keyID)? = header["kid"] ?? .string(keyID),
                let signatureBytes = Base64URL.decode(parts[2]),
                let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
                let publicKey = try? P256.Signing.PublicKey(rawRepresentation: publicKeyBytes),
                publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
            else { throw TokenError.badSignature }
            guard isOwnIssuer(claims) else { throw TokenError.wrongAudience }
        case .string("none")? where allowUnsigned:
            unsigned = true
        default:
            throw TokenError.badSignature
        }
        let seconds = now.timeIntervalSince1970
        var expiry: Double?
        if !unsigned {
            guard case .number(let expires)? = claims["exp"], expires + allowedSkew > seconds else { throw TokenError.expired }
            if case .number(let issued)? = claims["iat"], issued - allowedSkew > seconds { throw TokenError.malformed }
            expiry = expires
        }
        guard case .string(let uid)? = claims["sub"] ?? claims["user_id"], !uid.isEmpty else { throw TokenError.malformed }
        var provider = "custom"
        if case .string(let p)? = claims["firebase"]?["sign_in_provider"] { provider = p }
        let auth = JSONValue.object([(key: "uid", value: .string(uid)), (key: "provider", value: .string(provider)), (key: "token", value: claims)])
        return VerifiedToken(auth: auth, expires: expiry)
    }

    /// Whether a token carries a valid ES256 signature by this server's key (claims unchecked).
    public func hasValidSignature(_ token: String) -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let signatureBytes = Base64URL.decode(parts[2]),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            let publicKey = try? P256.Signing.PublicKey(rawRepresentation: publicKeyBytes)
        else { return false }
        return publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
    }

    /// When the token expires (seconds since 1970), for streams that must end then.
    public static func expiry(of token: String) -> Double? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64URL.decode(parts[1]), case .number(let exp)? = (try? JSONValue(parsing: bytes))?["exp"]
        else { return nil }
        return exp
    }

    /// Tokens this server signs name it as issuer and audience (`hearth token`), or are Firebase ID tokens
    /// of a project it serves (the identity service): `iss` is `https://securetoken.google.com/<aud>`.
    package func isOwnIssuer(_ claims: JSONValue) -> Bool {
        guard case .string(let iss)? = claims["iss"] else { return false }
        if case .string(let project)? = claims["aud"], !project.isEmpty, iss == TokenSigner.firebaseIssuerPrefix + project { return true }
        return iss == issuer && TokenSigner.audience(claims["aud"], contains: issuer)
    }

    /// The issuer of Firebase ID tokens is this followed by the project id.
    public static let firebaseIssuerPrefix = "https://securetoken.google.com/"

    package static func audience(_ value: JSONValue?, contains expected: String) -> Bool {
        switch value {
        case .string(let aud)?: return aud == expected
        case .array(let items)?: return items.contains(.string(expected))
        default: return false
        }
    }

    /// Loads the signing key from `directory/signing-key`, creating it on first use.
    public static func load(from directory: URL) throws -> TokenSigner {
        let file = directory.appendingPathComponent("signing-key")
        if let text = try? String(contentsOf: file, encoding: .utf8) {
            guard let raw = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)),
                let key = try? P256.Signing.PrivateKey(rawRepresentation: raw)
            else { throw TokenError.badKeyFile(file.path) }
            return TokenSigner(key: key)
        }
        let key = P256.Signing.PrivateKey()
        try Data((key.rawRepresentation.base64EncodedString() + "\n").utf8).write(to: file, options: .atomic)
        _ = chmod(file.path, 0o600)
        return TokenSigner(key: key)
    }
}

/// Why a token was refused. Descriptions never include the token.
public enum TokenError: Error, Sendable, Equatable {
    case malformed, badSignature, wrongAudience, expired
    /// The client's address guessed the admin secret wrong too often (``AdminSecretGuard``).
    case tooManyGuesses
    case badKeyFile(String)
}

/// Base64 with the URL-safe alphabet and no padding, as JWTs use.
package enum Base64URL {
    package static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    package static func decode(_ text: Substring) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map(Array.init)
    }
}

/// A verified ID token: the `auth` value the rules see, and when it expires (seconds since 1970; nil
/// for tokens that do not expire).
public struct VerifiedToken: Sendable {
    public var auth: JSONValue
    public var expires: Double?
}

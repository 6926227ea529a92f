import Crypto
import Foundation

/// The admin secret, kept only as a salted SHA-256 hash.
///
/// The secret is 32 random bytes (or whatever `HEARTH_ADMIN_SECRET` says), so a fast hash suffices: a slow
/// password hash protects guessable passwords, and this is not one. Comparison is constant-time.
///
/// For example:
/// ```swift
/// let (secret, stored) = AdminSecret.generate()
/// #expect(stored.verify(secret))
/// ```
public struct AdminSecret: Sendable, Equatable {
    public let salt: [UInt8]
    public let digest: [UInt8]

    public init(salt: [UInt8], digest: [UInt8]) {
        self.salt = salt
        self.digest = digest
    }

    /// Hashes a known secret with a fresh salt.
    public init(hashing secret: String) {
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        self.init(salt: salt, digest: AdminSecret.hash(secret, salt: salt))
    }

    /// A new random secret (URL-safe base64 of 32 bytes) and its stored form.
    public static func generate() -> (secret: String, stored: AdminSecret) {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let secret = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return (secret, AdminSecret(hashing: secret))
    }

    public func verify(_ candidate: String) -> Bool {
        let computed = AdminSecret.hash(candidate, salt: salt)
        guard computed.count == digest.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(computed, digest) { difference |= a ^ b }
        return difference == 0
    }

    package static func hash(_ secret: String, salt: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: salt)
        hasher.update(data: Data(secret.utf8))
        return Array(hasher.finalize())
    }

    /// The one-line file form: `sha256:<salt hex>:<digest hex>`.
    public var fileContents: String {
        "sha256:\(AdminSecret.hex(salt)):\(AdminSecret.hex(digest))\n"
    }

    public init?(fileContents: String) {
        let parts = fileContents.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ":")
        guard parts.count == 3, parts[0] == "sha256", let salt = AdminSecret.unhex(parts[1]),
            let digest = AdminSecret.unhex(parts[2]), digest.count == 32
        else { return nil }
        self.init(salt: salt, digest: digest)
    }

    package static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    package static func unhex(_ text: Substring) -> [UInt8]? {
        guard text.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            guard let byte = UInt8(text[index..<next], radix: 16) else { return nil }
            out.append(byte)
            index = next
        }
        return out
    }
}

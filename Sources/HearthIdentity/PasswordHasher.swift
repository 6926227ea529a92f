import _CryptoExtras
import Crypto
import Foundation
import NIOPosix

/// Slow, salted password hashes with scrypt (swift-crypto's `KDF.Scrypt`, BoringSSL underneath).
///
/// A hash is stored as `scrypt$<log2 N>$<r>$<p>$<salt base64>$<key base64>`, so the cost can rise later:
/// a hash with other parameters still verifies, and ``needsRehash(_:)`` says when to replace it at the
/// next sign-in. Hashing runs on ``BackgroundWorkers``' low-priority threads (one fewer than the cores),
/// never on an event loop or the cooperative pool, so a sign-in storm does not stall realtime traffic.
///
/// For example:
/// ```swift
/// let hasher = PasswordHasher()
/// let stored = try await hasher.hash("correct horse")
/// #expect(await hasher.verify("correct horse", against: stored))
/// ```
public struct PasswordHasher: Sendable, Equatable {
    /// log2 of scrypt's N (CPU/memory cost). 14 (16 MiB, r=8, p=1: Firebase's own scrypt cost and Django's
    /// default) takes about 45 ms on this project's 2-core reference machine; see docs/decisions/0006.
    public var log2Rounds = 14
    public var blockSize = 8
    public var parallelism = 1

    static let saltLength = 16
    static let keyLength = 32

    public init(log2Rounds: Int = 14, blockSize: Int = 8, parallelism: Int = 1) {
        self.log2Rounds = log2Rounds
        self.blockSize = blockSize
        self.parallelism = parallelism
    }

    /// Cheap parameters for tests only.
    public static let fastForTests = PasswordHasher(log2Rounds: 4, blockSize: 8, parallelism: 1)

    /// A new hash of `password` with a fresh random salt.
    public func hash(_ password: String) async throws -> String {
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<PasswordHasher.saltLength).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let parameters = self
        return try await BackgroundWorkers.shared.run {
            let key = try parameters.derive(password, salt: salt)
            return "scrypt$\(parameters.log2Rounds)$\(parameters.blockSize)$\(parameters.parallelism)$"
                + Data(salt).base64EncodedString() + "$" + Data(key).base64EncodedString()
        }
    }

    /// Whether `password` matches a stored hash (constant-time comparison). False for unreadable hashes.
    public func verify(_ password: String, against stored: String) async -> Bool {
        if let imported = FirebaseScryptHash(stored) {
            return (try? await BackgroundWorkers.shared.run { try imported.matches(password) }) ?? false
        }
        guard let parsed = PasswordHasher.parse(stored) else { return false }
        return (try? await BackgroundWorkers.shared.run {
            let key = try parsed.parameters.derive(password, salt: parsed.salt)
            guard key.count == parsed.key.count else { return false }
            var difference: UInt8 = 0
            for (a, b) in zip(key, parsed.key) { difference |= a ^ b }
            return difference == 0
        }) ?? false
    }

    /// Spends the time of one verification, for sign-ins of unknown emails (so timing tells nothing).
    public func verifyNothing(_ password: String) async {
        _ = try? await BackgroundWorkers.shared.run { try self.derive(password, salt: [UInt8](repeating: 0, count: PasswordHasher.saltLength)) }
    }

    /// Whether a stored hash was made with other parameters than these.
    public func needsRehash(_ stored: String) -> Bool {
        PasswordHasher.parse(stored)?.parameters != self
    }

    func derive(_ password: String, salt: [UInt8], length: Int = PasswordHasher.keyLength) throws -> [UInt8] {
        let key = try KDF.Scrypt.deriveKey(
            from: Array(password.utf8), salt: salt, outputByteCount: length,
            rounds: 1 << log2Rounds, blockSize: blockSize, parallelism: parallelism
        )
        return key.withUnsafeBytes { Array($0) }
    }

    static func parse(_ stored: String) -> (parameters: PasswordHasher, salt: [UInt8], key: [UInt8])? {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0] == "scrypt", let log2N = Int(parts[1]), (1...20).contains(log2N),
            let r = Int(parts[2]), (1...32).contains(r), let p = Int(parts[3]), (1...16).contains(p),
            let salt = Data(base64Encoded: String(parts[4])), let key = Data(base64Encoded: String(parts[5])), !key.isEmpty
        else { return nil }
        return (PasswordHasher(log2Rounds: log2N, blockSize: r, parallelism: p), Array(salt), Array(key))
    }
}

/// A password hash imported from Firebase (its "modified scrypt", `hashAlgorithm: SCRYPT`): scrypt of
/// the password with the user's salt followed by the project's salt separator (N = 2^memoryCost,
/// r = rounds, p = 1, 32 bytes) keys AES-256-CTR with a zero counter, which encrypts the project's
/// signer key; the result is the stored hash. Verified at sign-in and then replaced by Hearth's own
/// scrypt (`needsRehash` is true for it).
///
/// Stored as `fbscrypt$<rounds>$<memoryCost>$<salt separator>$<signer key>$<salt>$<hash>` (base64).
///
/// For example (the published test vector of firebase/scrypt):
/// ```swift
/// let hash = FirebaseScryptHash(rounds: 8, memoryCost: 14, saltSeparator: sep, signerKey: key, salt: salt, hash: expected)
/// #expect(try hash.matches("user1password"))
/// ```
struct FirebaseScryptHash: Sendable, Equatable {
    var rounds: Int
    var memoryCost: Int
    var saltSeparator: [UInt8]
    var signerKey: [UInt8]
    var salt: [UInt8]
    var hash: [UInt8]

    init(rounds: Int, memoryCost: Int, saltSeparator: [UInt8], signerKey: [UInt8], salt: [UInt8], hash: [UInt8]) {
        self.rounds = rounds
        self.memoryCost = memoryCost
        self.saltSeparator = saltSeparator
        self.signerKey = signerKey
        self.salt = salt
        self.hash = hash
    }

    init?(_ stored: String) {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 7, parts[0] == "fbscrypt", let rounds = Int(parts[1]), (1...32).contains(rounds),
              let memoryCost = Int(parts[2]), (1...20).contains(memoryCost),
              let separator = Data(base64Encoded: String(parts[3])), let key = Data(base64Encoded: String(parts[4])), !key.isEmpty,
              let salt = Data(base64Encoded: String(parts[5])), let hash = Data(base64Encoded: String(parts[6])), !hash.isEmpty
        else { return nil }
        self.init(rounds: rounds, memoryCost: memoryCost, saltSeparator: Array(separator), signerKey: Array(key), salt: Array(salt), hash: Array(hash))
    }

    var stored: String {
        "fbscrypt$\(rounds)$\(memoryCost)$" + [saltSeparator, signerKey, salt, hash].map { Data($0).base64EncodedString() }.joined(separator: "$")
    }

    /// Whether `password` produces the stored hash (constant-time comparison).
    func matches(_ password: String) throws -> Bool {
        let key = try KDF.Scrypt.deriveKey(
            from: Array(password.utf8), salt: salt + saltSeparator, outputByteCount: 32,
            rounds: 1 << memoryCost, blockSize: rounds, parallelism: 1
        )
        let derived = try AES._CTR.encrypt(signerKey, using: key, nonce: AES._CTR.Nonce(nonceBytes: [UInt8](repeating: 0, count: 16)))
        guard derived.count == hash.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(derived, hash) { difference |= a ^ b }
        return difference == 0
    }
}


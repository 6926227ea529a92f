#if canImport(Security)
import Foundation
import Security

/// The signed-in session (it holds the refresh token) in the keychain on Apple platforms: one generic
/// password item per database (service `dev.hearth.auth`, account = the database's storage name),
/// readable after the device's first unlock and never migrated to another device. Linux keeps the
/// session in a file readable by the user only (see ``Auth``).
///
/// For example:
/// ```swift
/// let store = KeychainSessionStore(account: "127.0.0.1_9000_demo")
/// store.write(Data(#"{"uid":"u1"}"#.utf8))
/// let saved = store.read()
/// store.delete()
/// ```
struct KeychainSessionStore: Sendable {
    static let service = "dev.hearth.auth"
    let account: String

    /// The attributes that identify the item.
    private var identity: [String: Any] {
        [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: Self.service,
            kSecAttrAccount as String: account,
        ]
    }

    func read() -> Data? {
        var query = identity
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess else { return nil }
        return result as? Data
    }

    /// Replaces the stored session; false when the keychain refused (the session then lasts only
    /// until the app quits).
    @discardableResult
    func write(_ data: Data) -> Bool {
        let attributes: [String: Any] = [
            kSecValueData as String: data,
            kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
        ]
        let status = SecItemUpdate(identity as CFDictionary, attributes as CFDictionary)
        guard status == errSecItemNotFound else { return status == errSecSuccess }
        let item = identity.merging(attributes) { _, new in new }
        return SecItemAdd(item as CFDictionary, nil) == errSecSuccess
    }

    func delete() {
        SecItemDelete(identity as CFDictionary)
    }
}
#endif

/// One page of a listing, as FirebaseStorage's `StorageListResult`: the folders (`prefixes`) and
/// objects (`items`) directly under a reference, and the token of the next page.
///
/// For example:
/// ```swift
/// var page = try await Storage.storage().reference(withPath: "photos").list(maxResults: 100)
/// while true {
///     for item in page.items { print(item.fullPath) }
///     guard let token = page.pageToken else { break }
///     page = try await Storage.storage().reference(withPath: "photos").list(maxResults: 100, pageToken: token)
/// }
/// ```
public final class StorageListResult: Sendable {
    /// The "folders" directly under the reference: names that continue with a `/`.
    public let prefixes: [StorageReference]
    /// The objects directly under the reference.
    public let items: [StorageReference]
    /// Pass to `list(maxResults:pageToken:)` for the next page; nil on the last page (and for `listAll()`).
    public let pageToken: String?

    public init(prefixes: [StorageReference], items: [StorageReference], pageToken: String?) {
        self.prefixes = prefixes
        self.items = items
        self.pageToken = pageToken
    }
}

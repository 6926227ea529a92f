import Foundation

/// Why the data at one location could not become a model value: there was none, or it did not
/// decode. Typed snapshot reads report one per failing child instead of dropping the child.
///
/// The description names the location and the coding path, never the data itself (it may be user
/// content); ``underlying`` keeps the decoder's own error for debugging.
///
/// For example:
/// ```swift
/// let posts = snapshot.decodedChildren(as: Post.self)
/// for failure in posts.failures where failure.code == .invalidData {
///     print("skipped", failure.path, failure.reason)
/// }
/// ```
public struct SnapshotDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong. A struct over a private enum, so new codes can be added without breaking
    /// code that switches over them.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case noData, invalidData
        }

        private let base: Base

        /// Nothing is stored at the location.
        public static let noData = Code(base: .noData)
        /// Data is there but does not decode as the model type.
        public static let invalidData = Code(base: .invalidData)

        public var description: String {
            switch base {
            case .noData: "no data"
            case .invalidData: "invalid data"
            }
        }
    }

    public var code: Code
    /// The location, from the root: `/posts/-Nabc`.
    public var path: String
    /// The decoder's explanation (the coding path and what was expected), without any value.
    public var reason: String
    /// The decoder's error, when there was one (not compared by `==`).
    public var underlying: (any Error)?

    public init(_ code: Code, path: String, reason: String, underlying: (any Error)? = nil) {
        self.code = code
        self.path = path
        self.reason = reason
        self.underlying = underlying
    }

    /// The last segment of ``path`` (the child's key); empty at the root.
    public var key: String { path.split(separator: "/").last.map(String.init) ?? "" }

    public var description: String { "\(code) at \(path): \(reason)" }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.code == rhs.code && lhs.path == rhs.path && lhs.reason == rhs.reason
    }

    /// The error for `error` thrown while decoding the data at `path`.
    init(decoding error: any Error, at path: String) {
        self.init(.invalidData, path: path, reason: Self.reason(for: error), underlying: error)
    }

    // Built from the error's case and coding path only: `DecodingError`'s own messages can quote the
    // data ("Cannot initialize Gender from invalid String value …").
    private static func reason(for error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(type(of: error))" }
        switch error {
        case .typeMismatch(let type, let context):
            return "expected \(type) at \(describe(context.codingPath))"
        case .valueNotFound(let type, let context):
            return "missing \(type) at \(describe(context.codingPath))"
        case .keyNotFound(let key, let context):
            return "missing key '\(key.stringValue)' at \(describe(context.codingPath))"
        case .dataCorrupted(let context):
            return "invalid value at \(describe(context.codingPath))"
        @unknown default:
            return "undecodable data"
        }
    }

    private static func describe(_ codingPath: [any CodingKey]) -> String {
        codingPath.isEmpty ? "the top level" : codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
    }
}

import Foundation
import HearthCore

extension Database {
    /// Encodes `Encodable` values for ``DatabaseReference/setValue(from:encoder:completion:)``, with
    /// the strategies of Firebase's `Database.Encoder` (dates default to `deferredToDate`).
    ///
    /// ```swift
    /// let encoder = Database.Encoder()
    /// encoder.dateEncodingStrategy = .millisecondsSince1970
    /// try ref.setValue(from: message, encoder: encoder)
    /// ```
    public final class Encoder: @unchecked Sendable {
        // Firebase's names of the strategies, which are JSONEncoder's here.
        public typealias DateEncodingStrategy = JSONEncoder.DateEncodingStrategy
        public typealias DataEncodingStrategy = JSONEncoder.DataEncodingStrategy
        public typealias KeyEncodingStrategy = JSONEncoder.KeyEncodingStrategy
        public typealias NonConformingFloatEncodingStrategy = JSONEncoder.NonConformingFloatEncodingStrategy

        // Configured before use, then only read: the same contract as JSONEncoder.
        public var dateEncodingStrategy: JSONEncoder.DateEncodingStrategy = .deferredToDate
        public var dataEncodingStrategy: JSONEncoder.DataEncodingStrategy = .base64
        public var keyEncodingStrategy: JSONEncoder.KeyEncodingStrategy = .useDefaultKeys
        public var nonConformingFloatEncodingStrategy: JSONEncoder.NonConformingFloatEncodingStrategy = .throw
        public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

        public init() {}

        /// The value as FirebaseDatabase's Foundation types (`[String: Any]`, `[Any]`, `String`,
        /// `NSNumber`, `NSNull`), ready for `setValue(_:)` or `updateChildValues(_:)`.
        ///
        /// ```swift
        /// try await ref.setValue(Database.Encoder().encode(message))
        /// ```
        public func encode<T: Encodable>(_ value: T) throws -> Any {
            FoundationValue.value(of: try encodeJSON(value))
        }

        func encodeJSON<T: Encodable>(_ value: T) throws -> JSONValue {
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = dateEncodingStrategy
            encoder.dataEncodingStrategy = dataEncodingStrategy
            encoder.keyEncodingStrategy = keyEncodingStrategy
            encoder.nonConformingFloatEncodingStrategy = nonConformingFloatEncodingStrategy
            encoder.userInfo = userInfo
            let data = try encoder.encode(value)
            do {
                return try JSONValue(parsing: Array(data))
            } catch {
                throw DatabaseError(.invalidData, error.description)
            }
        }
    }

    /// Decodes snapshots for ``DataSnapshot/data(as:decoder:)``, with the strategies of Firebase's
    /// `Database.Decoder`.
    public final class Decoder: @unchecked Sendable {
        // Firebase's names of the strategies, which are JSONDecoder's here.
        public typealias DateDecodingStrategy = JSONDecoder.DateDecodingStrategy
        public typealias DataDecodingStrategy = JSONDecoder.DataDecodingStrategy
        public typealias KeyDecodingStrategy = JSONDecoder.KeyDecodingStrategy
        public typealias NonConformingFloatDecodingStrategy = JSONDecoder.NonConformingFloatDecodingStrategy

        public var dateDecodingStrategy: JSONDecoder.DateDecodingStrategy = .deferredToDate
        public var dataDecodingStrategy: JSONDecoder.DataDecodingStrategy = .base64
        public var keyDecodingStrategy: JSONDecoder.KeyDecodingStrategy = .useDefaultKeys
        public var nonConformingFloatDecodingStrategy: JSONDecoder.NonConformingFloatDecodingStrategy = .throw
        public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

        public init() {}

        /// Decodes FirebaseDatabase's Foundation types (a snapshot's `value`) as `T`.
        ///
        /// ```swift
        /// let message = try Database.Decoder().decode(Message.self, from: snapshot.value as Any)
        /// ```
        public func decode<T: Decodable>(_ type: T.Type, from structure: Any) throws -> T {
            let json = try FoundationValue.json(from: structure)  // NSNull is null there
            return try decode(T.self, from: try Node(json: json))
        }

        func decode<T: Decodable>(_ type: T.Type, from node: Node) throws -> T {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = dateDecodingStrategy
            decoder.dataDecodingStrategy = dataDecodingStrategy
            decoder.keyDecodingStrategy = keyDecodingStrategy
            decoder.nonConformingFloatDecodingStrategy = nonConformingFloatDecodingStrategy
            decoder.userInfo = userInfo
            return try decoder.decode(T.self, from: Data(node.jsonBytes()))
        }
    }
}

extension DataSnapshot {
    /// The data decoded as `T`. Missing data decodes only into an Optional; otherwise it throws
    /// `DecodingError.valueNotFound`.
    ///
    /// ```swift
    /// let user = try snapshot.data(as: User.self)
    /// ```
    public func data<T: Decodable>(as type: T.Type, decoder: Database.Decoder = Database.Decoder()) throws -> T {
        if node.isEmpty, !(T.self is any ExpressibleByNilLiteral.Type) {
            throw DecodingError.valueNotFound(T.self, DecodingError.Context(codingPath: [], debugDescription: "No data at \(ref.path)"))
        }
        return try decoder.decode(T.self, from: node)
    }

    /// The children decoded as `T`, in the query's order.
    public func children<T: Decodable>(as type: T.Type, decoder: Database.Decoder = Database.Decoder()) throws -> [T] {
        try children.map { try $0.data(as: T.self, decoder: decoder) }
    }
}

extension DatabaseReference {
    /// Encodes `value` and writes it, as `setValue(_:)`.
    ///
    /// ```swift
    /// try ref.setValue(from: User(name: "Ada"))
    /// ```
    public func setValue<T: Encodable>(
        from value: T,
        encoder: Database.Encoder = Database.Encoder(),
        completion: (@Sendable ((any Error)?) -> Void)? = nil
    ) throws {
        let json = try encoder.encodeJSON(value)
        repo.set(path: path, json: json, completion: completion)
    }

}

/// FirebaseSharedSwift's name of ``Database/Encoder``.
public typealias FirebaseDataEncoder = Database.Encoder
/// FirebaseSharedSwift's name of ``Database/Decoder``.
public typealias FirebaseDataDecoder = Database.Decoder

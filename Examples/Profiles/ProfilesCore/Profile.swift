import Foundation
import Hearth

/// A profile's gender, stored as `"male"` or `"female"` (the web app colours rows by it).
public enum Gender: String, Codable, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case male
    case female

    public var description: String { rawValue }
}

/// One person in the directory, stored at `profiles/<push id>` in the same shape the web app
/// (`/apps/profiles/`) reads and writes:
///
/// ```json
/// {"id": 3, "gender": "female", "name": "Grace Hopper", "age": 85,
///  "imageURL": "https://…", "hobbies": ["compilers", "teaching"]}
/// ```
///
/// `imageURL` and `hobbies` are left out when there are none. The push id is the model's
/// ``identifier`` (the key, never a field); ``id`` is the number the directory hands out by a
/// transaction on `meta/nextId`, unique and increasing.
///
/// For example:
/// ```swift
/// let profile = try snapshot.decoded(as: Profile.self)   // identifier = snapshot.key
/// print(profile.id, profile.name, profile.hobbies)
/// ```
public struct Profile: DatabaseModel, Hashable, Identifiable {
    /// The push id under `profiles/` (nil until saved).
    public var identifier: String?
    /// The directory's number for the profile: unique, from 1, never reused.
    public var id: Int
    public var gender: Gender
    public var name: String
    public var age: Int
    public var imageURL: String?
    public var hobbies: [String]

    public var endpoint: String { ProfileDirectory.profilesPath }

    public init(
        identifier: String? = nil, id: Int, gender: Gender, name: String, age: Int, imageURL: String? = nil, hobbies: [String] = []
    ) {
        self.identifier = identifier
        self.id = id
        self.gender = gender
        self.name = name
        self.age = age
        self.imageURL = imageURL
        self.hobbies = hobbies
    }

    /// A new profile's content with the id the directory reserved for it.
    public init(id: Int, _ content: NewProfile) {
        self.init(
            id: id, gender: content.gender, name: content.name, age: content.age, imageURL: content.imageURL, hobbies: content.hobbies
        )
    }

    enum CodingKeys: String, CodingKey {
        case id, gender, name, age, imageURL, hobbies
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        identifier = nil
        id = try container.decode(Int.self, forKey: .id)
        gender = try container.decode(Gender.self, forKey: .gender)
        name = try container.decode(String.self, forKey: .name)
        age = try container.decode(Int.self, forKey: .age)
        let image = try container.decodeIfPresent(String.self, forKey: .imageURL)
        imageURL = image?.isEmpty == false ? image : nil
        hobbies = try Self.decodeHobbies(in: container)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(gender, forKey: .gender)
        try container.encode(name, forKey: .name)
        try container.encode(age, forKey: .age)
        if let imageURL, !imageURL.isEmpty { try container.encode(imageURL, forKey: .imageURL) }
        if !hobbies.isEmpty { try container.encode(hobbies, forKey: .hobbies) }
    }

    /// Hobbies as the web app writes them (an array, which the database keeps as keys `0…n-1`), or
    /// as an object of strings written by someone else (in key order). Holes are skipped.
    private static func decodeHobbies(in container: KeyedDecodingContainer<CodingKeys>) throws -> [String] {
        guard container.contains(.hobbies), try !container.decodeNil(forKey: .hobbies) else { return [] }
        if let list = try? container.decode([String?].self, forKey: .hobbies) {
            return list.compactMap { $0 }
        }
        let object = try container.decode([String: String].self, forKey: .hobbies)
        return object.sorted { $0.key.localizedStandardCompare($1.key) == .orderedAscending }.map(\.value)
    }
}

/// A validated profile that has no id yet: what ``ProfileForm/validated()`` returns and
/// ``ProfileDirectory/add(_:)`` stores.
public struct NewProfile: Hashable, Sendable {
    public var name: String
    public var age: Int
    public var gender: Gender
    public var imageURL: String?
    public var hobbies: [String]

    public init(name: String, age: Int, gender: Gender, imageURL: String? = nil, hobbies: [String] = []) {
        self.name = name
        self.age = age
        self.gender = gender
        self.imageURL = imageURL
        self.hobbies = hobbies
    }
}

extension NewProfile {
    /// The sample directory, the same people as the web app's "Load sample profiles" (`SAMPLE` in
    /// `profiles.js`), in the same order.
    public static let samples: [NewProfile] = [
        NewProfile(name: "Ada Lovelace", age: 36, gender: .female, hobbies: ["mathematics", "poetry", "horses"]),
        NewProfile(name: "Alan Turing", age: 41, gender: .male, hobbies: ["running", "chess", "cryptography"]),
        NewProfile(name: "Grace Hopper", age: 85, gender: .female, hobbies: ["compilers", "teaching"]),
        NewProfile(name: "Edsger Dijkstra", age: 72, gender: .male, hobbies: ["piano", "fountain pens"]),
        NewProfile(name: "Margaret Hamilton", age: 38, gender: .female, hobbies: ["flying", "software"]),
        NewProfile(name: "Donald Knuth", age: 86, gender: .male, hobbies: ["organ", "typesetting", "puzzles"]),
        NewProfile(name: "Barbara Liskov", age: 84, gender: .female, hobbies: ["hiking"]),
        NewProfile(name: "Ken Thompson", age: 81, gender: .male, hobbies: ["chess endgames", "flying"]),
    ]
}

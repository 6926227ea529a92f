import Foundation

/// What a person typed into the add form (or passed to `profiles add`), before validation. The
/// rules and messages are those of the web app's `validateProfile` (`profiles.js`), so both apps
/// accept and refuse the same input with the same words.
///
/// For example:
/// ```swift
/// var form = ProfileForm(name: "Ada Lovelace", age: "36", gender: "female", hobbies: "poetry, horses")
/// do {
///     let profile = try form.validated()          // NewProfile
///     try await directory.add(profile)
/// } catch {
///     print(error.messages[.age] ?? "")           // "Age is a whole number from 0 to 150."
/// }
/// ```
public struct ProfileForm: Hashable, Sendable {
    public var name: String
    /// The age as typed: digits only, 0 to 150.
    public var age: String
    /// `"male"` or `"female"`; anything else (including nothing) is refused.
    public var gender: String
    /// An http(s) address, or empty for none.
    public var imageURL: String
    /// Comma-separated, as in the web form: trimmed, empty ones dropped, duplicates (ignoring case)
    /// kept once.
    public var hobbies: String

    public init(name: String = "", age: String = "", gender: String = "", imageURL: String = "", hobbies: String = "") {
        self.name = name
        self.age = age
        self.gender = gender
        self.imageURL = imageURL
        self.hobbies = hobbies
    }

    /// The form with hobbies given one by one (each may still hold commas, as the web form's text).
    public init(name: String, age: String, gender: String, imageURL: String = "", hobbies: [String]) {
        self.init(name: name, age: age, gender: gender, imageURL: imageURL, hobbies: hobbies.joined(separator: ","))
    }

    /// The profile to add, or every problem with the form at once.
    public func validated() throws(ProfileValidationError) -> NewProfile {
        var messages: [ProfileValidationError.Field: String] = [:]
        let name = name.trimmingCharacters(in: .whitespacesAndNewlines)
        // Lengths count UTF-16 units, as JavaScript's `length` in the web app and the rules do.
        if name.isEmpty {
            messages[.name] = ProfileValidationError.Message.nameMissing
        } else if name.utf16.count > ProfileValidationError.maximumNameLength {
            messages[.name] = ProfileValidationError.Message.nameTooLong
        }
        let ageText = age.trimmingCharacters(in: .whitespacesAndNewlines)
        let age = ageText.allSatisfy { $0.isASCII && $0.isNumber } ? Int(ageText) : nil
        if ageText.isEmpty {
            messages[.age] = ProfileValidationError.Message.ageMissing
        } else if age.map({ !ProfileValidationError.ages.contains($0) }) ?? true {
            messages[.age] = ProfileValidationError.Message.ageInvalid
        }
        let gender = Gender(rawValue: gender)
        if gender == nil { messages[.gender] = ProfileValidationError.Message.genderMissing }
        let imageURL = imageURL.trimmingCharacters(in: .whitespacesAndNewlines)
        if !imageURL.isEmpty, !Self.isWebAddress(imageURL) {
            messages[.imageURL] = ProfileValidationError.Message.imageURLInvalid
        }
        let hobbies = Self.parseHobbies(self.hobbies)
        if hobbies.contains(where: { $0.utf16.count > ProfileValidationError.maximumHobbyLength }) {
            messages[.hobbies] = ProfileValidationError.Message.hobbyTooLong
        }
        guard messages.isEmpty, let age, let gender else { throw ProfileValidationError(messages: messages) }
        return NewProfile(name: name, age: age, gender: gender, imageURL: imageURL.isEmpty ? nil : imageURL, hobbies: hobbies)
    }

    /// Hobbies from comma-separated text, as the web app's `parseHobbies`: trimmed, empty ones
    /// dropped, and a hobby that differs from an earlier one only in case left out.
    ///
    /// ```swift
    /// ProfileForm.parseHobbies("chess, Chess ,, go")   // ["chess", "go"]
    /// ```
    public static func parseHobbies(_ text: String) -> [String] {
        parseHobbies([text])
    }

    /// Hobbies from several pieces of text, each comma-separated, in order, without duplicates.
    public static func parseHobbies(_ texts: some Sequence<String>) -> [String] {
        var seen = Set<String>()
        var hobbies: [String] = []
        for text in texts {
            for piece in text.split(separator: ",", omittingEmptySubsequences: false) {
                let hobby = piece.trimmingCharacters(in: .whitespacesAndNewlines)
                guard !hobby.isEmpty, seen.insert(hobby.lowercased()).inserted else { continue }
                hobbies.append(hobby)
            }
        }
        return hobbies
    }

    /// `^https?://\S+$`, ignoring case, as the web form checks.
    static func isWebAddress(_ text: String) -> Bool {
        let lowered = text.lowercased()
        guard let scheme = ["http://", "https://"].first(where: { lowered.hasPrefix($0) }) else { return false }
        let rest = text.unicodeScalars.dropFirst(scheme.count)
        return !rest.isEmpty && !rest.contains { CharacterSet.whitespacesAndNewlines.contains($0) }
    }
}

/// Why a form was refused: one message per field, worded as the web app words them.
public struct ProfileValidationError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Field: String, CaseIterable, Hashable, Sendable {
        case name, age, gender, imageURL, hobbies
    }

    /// The messages, shared with the web app (`validateProfile` in `profiles.js`).
    public enum Message {
        public static let nameMissing = "Enter a name."
        public static let nameTooLong = "Keep the name under 80 characters."
        public static let ageMissing = "Enter an age."
        public static let ageInvalid = "Age is a whole number from 0 to 150."
        public static let genderMissing = "Choose female or male."
        public static let imageURLInvalid = "Use an http(s) address, or leave it empty."
        public static let hobbyTooLong = "Each hobby is at most 40 characters."
        /// For hobbies added from the detail view (the web app's hobby form).
        public static let addedHobbyTooLong = "A hobby is at most 40 characters."
    }

    static let maximumNameLength = 80
    static let maximumHobbyLength = 40
    static let ages = 0...150

    public var messages: [Field: String]

    public init(messages: [Field: String]) {
        self.messages = messages
    }

    public subscript(field: Field) -> String? { messages[field] }

    /// The messages in the form's order, one per line.
    public var description: String {
        Field.allCases.compactMap { messages[$0] }.joined(separator: "\n")
    }
}

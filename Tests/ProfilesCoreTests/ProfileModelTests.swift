import Foundation
import Hearth
import ProfilesCore
import Testing

/// The model without a server: JSON in the web app's shape, the form's validation (with the web
/// app's own messages, read from profiles.js), filter and sort, and change lists.
@Suite struct ProfileModelTests {
    static let ada = Profile(identifier: "-a", id: 1, gender: .female, name: "Ada Lovelace", age: 36, hobbies: ["poetry"])

    // MARK: JSON

    @Test func encodesAsTheWebAppStoresIt() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let full = Profile(
            identifier: "-key", id: 3, gender: .female, name: "Grace Hopper", age: 85,
            imageURL: "https://example.com/grace.png", hobbies: ["compilers", "teaching"]
        )
        #expect(String(decoding: try encoder.encode(full), as: UTF8.self)
            == #"{"age":85,"gender":"female","hobbies":["compilers","teaching"],"id":3,"imageURL":"https:\/\/example.com\/grace.png","name":"Grace Hopper"}"#)
        // No image and no hobbies: the fields are left out, as the web app leaves them out; the key
        // (the push id) is never a field.
        let bare = Profile(identifier: "-key", id: 4, gender: .male, name: "Ken", age: 81)
        #expect(String(decoding: try encoder.encode(bare), as: UTF8.self) == #"{"age":81,"gender":"male","id":4,"name":"Ken"}"#)
    }

    @Test func decodesWhatTheWebAppWrites() throws {
        let json = #"{"id":7,"gender":"male","name":"Alan Turing","age":41,"hobbies":["running","chess"],"imageURL":""}"#
        let profile = try JSONDecoder().decode(Profile.self, from: Data(json.utf8))
        #expect(profile == Profile(id: 7, gender: .male, name: "Alan Turing", age: 41, imageURL: nil, hobbies: ["running", "chess"]))
        #expect(profile.identifier == nil)
    }

    @Test func decodesHobbiesStoredAsAnObjectOrWithHoles() throws {
        let object = #"{"id":1,"gender":"female","name":"A","age":1,"hobbies":{"10":"c","2":"b","0":"a"}}"#
        #expect(try JSONDecoder().decode(Profile.self, from: Data(object.utf8)).hobbies == ["a", "b", "c"])
        let holes = #"{"id":1,"gender":"female","name":"A","age":1,"hobbies":["a",null,"c"]}"#
        #expect(try JSONDecoder().decode(Profile.self, from: Data(holes.utf8)).hobbies == ["a", "c"])
        let none = #"{"id":1,"gender":"female","name":"A","age":1,"hobbies":null}"#
        #expect(try JSONDecoder().decode(Profile.self, from: Data(none.utf8)).hobbies == [])
    }

    @Test(arguments: [
        #"{"gender":"female","name":"No id","age":1}"#,
        #"{"id":1,"gender":"robot","name":"Bad gender","age":1}"#,
        #"{"id":1,"gender":"male","name":"Bad age","age":"old"}"#,
        #"{"id":1.5,"gender":"male","name":"Fractional id","age":1}"#,
        #"{"id":1,"gender":"male","age":1}"#,
        #"{"id":1,"gender":"male","name":"Bad hobbies","age":1,"hobbies":[1,2]}"#,
        #""just a string""#,
    ])
    func refusesWhatIsNotAProfile(json: String) {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Profile.self, from: Data(json.utf8)) }
    }

    @Test func roundTrips() throws {
        let profile = Profile(id: 12, gender: .male, name: "Édouard", age: 0, imageURL: "http://x.org/a.png", hobbies: ["a", "b"])
        #expect(try JSONDecoder().decode(Profile.self, from: JSONEncoder().encode(profile)) == profile)
    }

    // MARK: Validation

    @Test func acceptsAndNormalisesAGoodForm() throws {
        let form = ProfileForm(name: "  Ada Lovelace ", age: " 036 ", gender: "female", imageURL: " HTTPS://e.org/a.png ", hobbies: " poetry, Poetry,,horses ")
        #expect(try form.validated() == NewProfile(
            name: "Ada Lovelace", age: 36, gender: .female, imageURL: "HTTPS://e.org/a.png", hobbies: ["poetry", "horses"]
        ))
        #expect(try ProfileForm(name: "B", age: "0", gender: "male").validated() == NewProfile(name: "B", age: 0, gender: .male))
        #expect(try ProfileForm(name: "C", age: "150", gender: "male", hobbies: ["a,b", "c", "A"]).validated().hobbies == ["a", "b", "c"])
    }

    @Test(arguments: [
        (ProfileForm(name: "", age: "1", gender: "male"), ProfileValidationError.Field.name, "Enter a name."),
        (ProfileForm(name: "   ", age: "1", gender: "male"), .name, "Enter a name."),
        (ProfileForm(name: String(repeating: "x", count: 81), age: "1", gender: "male"), .name, "Keep the name under 80 characters."),
        (ProfileForm(name: "A", age: "", gender: "male"), .age, "Enter an age."),
        (ProfileForm(name: "A", age: "151", gender: "male"), .age, "Age is a whole number from 0 to 150."),
        (ProfileForm(name: "A", age: "-1", gender: "male"), .age, "Age is a whole number from 0 to 150."),
        (ProfileForm(name: "A", age: "3.5", gender: "male"), .age, "Age is a whole number from 0 to 150."),
        (ProfileForm(name: "A", age: "old", gender: "male"), .age, "Age is a whole number from 0 to 150."),
        (ProfileForm(name: "A", age: "99999999999999999999999", gender: "male"), .age, "Age is a whole number from 0 to 150."),
        (ProfileForm(name: "A", age: "1", gender: ""), .gender, "Choose female or male."),
        (ProfileForm(name: "A", age: "1", gender: "Male"), .gender, "Choose female or male."),
        (ProfileForm(name: "A", age: "1", gender: "male", imageURL: "ftp://x"), .imageURL, "Use an http(s) address, or leave it empty."),
        (ProfileForm(name: "A", age: "1", gender: "male", imageURL: "https://"), .imageURL, "Use an http(s) address, or leave it empty."),
        (ProfileForm(name: "A", age: "1", gender: "male", imageURL: "https://a b"), .imageURL, "Use an http(s) address, or leave it empty."),
        (ProfileForm(name: "A", age: "1", gender: "male", hobbies: String(repeating: "h", count: 41)), .hobbies, "Each hobby is at most 40 characters."),
    ])
    func refusesABadField(form: ProfileForm, field: ProfileValidationError.Field, message: String) {
        #expect(throws: ProfileValidationError(messages: [field: message])) { try form.validated() }
    }

    @Test func reportsEveryProblemAtOnceInTheFormsOrder() {
        let error = #expect(throws: ProfileValidationError.self) { try ProfileForm().validated() }
        #expect(error?.messages == [.name: "Enter a name.", .age: "Enter an age.", .gender: "Choose female or male."])
        #expect(error?.description == "Enter a name.\nEnter an age.\nChoose female or male.")
    }

    @Test func limitsCountUTF16UnitsAsJavaScriptDoes() throws {
        // 40 UTF-16 units: 20 emoji of two units each. 41 units is one too many.
        #expect(try ProfileForm(name: "A", age: "1", gender: "male", hobbies: String(repeating: "😀", count: 20)).validated().hobbies.count == 1)
        #expect(throws: ProfileValidationError.self) {
            try ProfileForm(name: "A", age: "1", gender: "male", hobbies: String(repeating: "😀", count: 20) + "x").validated()
        }
        #expect(throws: ProfileValidationError.self) {
            try ProfileForm(name: String(repeating: "é", count: 40) + String(repeating: "😀", count: 21), age: "1", gender: "male").validated()
        }
    }

    /// The messages and sample people are the web app's: read profiles.js and compare.
    @Test func messagesAndSamplesMatchTheWebApp() throws {
        let script = try String(contentsOf: Self.webApp, encoding: .utf8)
        let validate = script.components(separatedBy: "export function validateProfile")[1]
            .components(separatedBy: "export function parseHobbies")[0]
        let jsMessages = Set(validate.matches(of: /errors\.\w+ = "([^"]+)"/).map { String($0.output.1) })
        let swiftMessages: Set<String> = [
            ProfileValidationError.Message.nameMissing, ProfileValidationError.Message.nameTooLong,
            ProfileValidationError.Message.ageMissing, ProfileValidationError.Message.ageInvalid,
            ProfileValidationError.Message.genderMissing, ProfileValidationError.Message.imageURLInvalid,
            ProfileValidationError.Message.hobbyTooLong,
        ]
        #expect(jsMessages == swiftMessages)
        #expect(script.contains(#""\#(ProfileValidationError.Message.addedHobbyTooLong)""#))

        let sample = script.components(separatedBy: "export const SAMPLE = [")[1].components(separatedBy: "];")[0]
        let jsSamples = sample.matches(of: /\{ name: "([^"]+)", age: (\d+), gender: "(\w+)", hobbies: \[([^\]]*)\] \}/).map { match in
            NewProfile(
                name: String(match.output.1), age: Int(match.output.2)!, gender: Gender(rawValue: String(match.output.3))!,
                hobbies: match.output.4.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
            )
        }
        #expect(jsSamples.count == 8)
        #expect(jsSamples == NewProfile.samples)
    }

    static let webApp = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/HearthWeb/Web/apps/profiles/profiles.js")

    // MARK: Filter and sort

    static let people: [Profile] = [
        Profile(identifier: "-1", id: 1, gender: .female, name: "ada", age: 36),
        Profile(identifier: "-2", id: 2, gender: .male, name: "Alan", age: 41),
        Profile(identifier: "-3", id: 3, gender: .female, name: "Grace", age: 85),
        Profile(identifier: "-4", id: 4, gender: .male, name: "Édgar", age: 41),
        Profile(identifier: "-5", id: 5, gender: .female, name: "Barbara", age: 36),
        Profile(identifier: "-6", id: 6, gender: .male, name: "Zed", age: 9),
    ]

    @Test(arguments: [
        (ProfileFilter.all, ProfileSort.id, [1, 2, 3, 4, 5, 6]),
        (.all, .ageAscending, [6, 1, 5, 2, 4, 3]),       // ties by id
        (.all, .ageDescending, [3, 2, 4, 1, 5, 6]),
        (.all, .nameAscending, [1, 2, 5, 4, 3, 6]),      // case and accents ignored: ada, Alan, Barbara, Édgar, Grace, Zed
        (.all, .nameDescending, [6, 3, 4, 5, 2, 1]),
        (.female, .id, [1, 3, 5]),
        (.female, .ageDescending, [3, 1, 5]),
        (.male, .nameDescending, [6, 4, 2]),
        (.male, .ageAscending, [6, 2, 4]),
    ])
    func filtersAndSortsCombine(filter: ProfileFilter, sort: ProfileSort, ids: [Int]) {
        #expect(Self.people.reversed().visible(filter: filter, sort: sort).map(\.id) == ids)
    }

    @Test func theDefaultIsEveryoneByID() {
        #expect(Self.people.shuffled().visible().map(\.id) == [1, 2, 3, 4, 5, 6])
        #expect(ProfileFilter(gender: nil) == .all)
        #expect(ProfileFilter(gender: .male) == .male)
        #expect(ProfileFilter.female.gender == .female)
        #expect(ProfileSort.allCases.map(\.rawValue) == ["id", "age-asc", "age-desc", "name-asc", "name-desc"])
    }

    // MARK: Changes

    @Test func changesListRemovalsChangesAdditionsAndNewInvalidEntries() {
        var grace = Self.people[2]
        grace.hobbies = ["compilers"]
        let bad = SnapshotDecodingError(.invalidData, path: "/profiles/bad", reason: "missing key 'id' at the top level")
        let before = ProfileList(profiles: Array(Self.people.prefix(3)))
        let after = ProfileList(profiles: [Self.people[0], grace, Self.people[4]], invalid: [bad])
        #expect(after.changes(since: before) == [
            .removed(Self.people[1]), .changed(from: Self.people[2], to: grace), .added(Self.people[4]), .invalid(bad),
        ])
        #expect(after.changes(since: after) == [])
        #expect(ProfileList(profiles: Self.people.reversed()).profiles.map(\.id) == [1, 2, 3, 4, 5, 6])
        #expect(after.profile(withID: 3) == grace)
        #expect(after.profile(withKey: "-5")?.name == "Barbara")
    }
}

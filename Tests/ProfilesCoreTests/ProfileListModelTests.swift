import Foundation
import Hearth
import Observation
import ProfilesCore
import Synchronization
import HearthTestSupport
import Testing

/// ``ProfileListModel`` as a SwiftUI list would use it, on the main actor, against a live server,
/// with a second client making changes elsewhere.
@MainActor
@Suite struct ProfileListModelTests {
    @Test func followsTheDirectoryWithFilterSortAndClear() async throws {
        try await TestServer.run { server in
            let model = ProfileListModel(directory: try server.directory())
            let elsewhere = try server.directory()
            #expect(model.phase == .loading)
            #expect(model.summary == "Loading the directory…")
            model.start()
            defer { model.stop() }
            await waitUntil("loaded and online") { model.phase == .loaded && model.isOnline }
            #expect(model.summary == "Nobody here yet.")

            await model.loadSamples()
            #expect(model.errorMessage == nil)
            #expect(model.notice == "Sample profiles loaded.")
            await waitUntil("the samples are listed") { model.profiles.count == 8 }
            #expect(model.visibleProfiles.map(\.id) == Array(1...8))

            model.filter = .female
            model.sort = .ageDescending
            #expect(model.visibleProfiles.map(\.name) == ["Grace Hopper", "Barbara Liskov", "Margaret Hamilton", "Ada Lovelace"])
            #expect(model.summary == "8 people, 4 shown · changes appear live")
            #expect(model.canClear)

            // A change made elsewhere lands in the filtered, sorted list, highlighted.
            let young = try await elsewhere.add(NewProfile(name: "Young One", age: 5, gender: .female))
            await waitUntil("the new profile shows") { model.visibleProfiles.last == young }
            #expect(model.recentlyChanged == [young.identifier!])
            model.sort = .nameAscending
            #expect(model.visibleProfiles.map(\.name) == ["Ada Lovelace", "Barbara Liskov", "Grace Hopper", "Margaret Hamilton", "Young One"])

            model.clearFilterAndSort()
            #expect(!model.canClear)
            #expect(model.visibleProfiles.map(\.id) == Array(1...9))
        }
    }

    @Test func theAddFormValidatesThenAdds() async throws {
        try await TestServer.run { server in
            let model = ProfileListModel(directory: try server.directory())
            model.start()
            defer { model.stop() }
            await waitUntil("loaded") { model.phase == .loaded }

            model.form = ProfileForm(name: "Ada", age: "200", gender: "female")
            #expect(await model.submitForm() == nil)
            #expect(model.formErrors == ProfileValidationError(messages: [.age: "Age is a whole number from 0 to 150."]))
            #expect(model.form.name == "Ada")   // kept for correcting

            model.form.age = "36"
            model.form.hobbies = "poetry, horses"
            let ada = try #require(await model.submitForm())
            #expect(ada.id == 1)
            #expect(ada.hobbies == ["poetry", "horses"])
            #expect(model.formErrors == nil)
            #expect(model.form == ProfileForm())
            #expect(model.notice == "Ada was added.")
            await waitUntil("Ada is listed") { model.profiles == [ada] }
        }
    }

    @Test func theDetailViewEditsHobbiesAndClosesWhenDeletedElsewhere() async throws {
        try await TestServer.run { server in
            let model = ProfileListModel(directory: try server.directory())
            let elsewhere = try server.directory()
            let ken = try await elsewhere.add(NewProfile(name: "Ken", age: 81, gender: .male, hobbies: ["chess"]))
            model.start()
            defer { model.stop() }
            await waitUntil("Ken is listed") { model.profiles.count == 1 }
            model.selectedKey = ken.identifier
            #expect(model.selected == ken)

            #expect(await model.addHobbies("flying, Chess", to: try #require(model.selected)))
            await waitUntil("the hobby shows") { model.selected?.hobbies == ["chess", "flying"] }
            #expect(await !model.addHobbies(String(repeating: "x", count: 41), to: try #require(model.selected)))
            #expect(model.errorMessage == "A hobby is at most 40 characters.")
            await model.removeHobby("chess", from: try #require(model.selected))
            await waitUntil("the hobby is gone") { model.selected?.hobbies == ["flying"] }
            #expect(model.errorMessage == nil)

            // Observation tells a view that the open profile went away.
            let changed = Mutex(false)
            withObservationTracking { _ = model.selectedKey } onChange: { changed.withLock { $0 = true } }
            try await elsewhere.delete(ken)
            await waitUntil("the detail view closes") { model.selectedKey == nil }
            #expect(changed.withLock { $0 })
            #expect(model.selected == nil)
            #expect(model.notice == "That profile was deleted.")
            #expect(model.profiles.isEmpty)
        }
    }

    @Test func deletingFromTheModelAndInvalidEntries() async throws {
        try await TestServer.run { server in
            let model = ProfileListModel(directory: try server.directory())
            let ada = try await model.directory.add(NewProfile(name: "Ada", age: 36, gender: .female))
            try await server.put("profiles/broken", json: #"{"name": "Broken"}"#)
            model.start()
            defer { model.stop() }
            await waitUntil("loaded") { model.profiles.count == 1 && model.invalidEntries.count == 1 }
            #expect(model.invalidEntries.first?.path == "/profiles/broken")
            model.selectedKey = ada.identifier
            await model.delete(ada)
            #expect(model.selectedKey == nil)
            #expect(model.notice == "Ada was deleted.")
            await waitUntil("Ada is gone") { model.profiles.isEmpty }
            #expect(try await server.value(at: "profiles/\(ada.identifier!)") is NSNull)
        }
    }
}

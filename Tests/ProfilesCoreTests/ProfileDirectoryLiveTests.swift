import Foundation
import Hearth
import ProfilesCore
import HearthTestSupport
import Testing

/// ``ProfileDirectory`` against a live server with the Profiles app's rules, two clients at once.
@Suite struct ProfileDirectoryLiveTests {
    @Test func anAddInOneClientAppearsInTheOther() async throws {
        try await TestServer.run { server in
            let alice = try server.directory()
            let bob = try server.directory()
            let seen = UpdateLog()
            let watch = bob.watch { seen.append($0) }
            defer { watch.cancel() }
            await waitUntil("bob's first update") { !seen.all.isEmpty }
            #expect(seen.all.first == ProfileUpdate(list: ProfileList(), changes: [], isInitial: true))

            let ada = try await alice.add(NewProfile(name: "Ada Lovelace", age: 36, gender: .female, hobbies: ["poetry"]))
            #expect(ada.id == 1)
            #expect(ada.identifier != nil)
            await waitUntil("bob sees Ada") { seen.latest?.profiles == [ada] }
            #expect(seen.changes == [.added(ada)])

            // Stored in the web app's shape, with the id counter beside it.
            #expect(try await server.canonicalJSON(at: "profiles/\(ada.identifier!)")
                == #"{"age":36,"gender":"female","hobbies":["poetry"],"id":1,"name":"Ada Lovelace"}"#)
            #expect(try await server.value(at: "meta/nextId") as? Int == 1)
        }
    }

    @Test func concurrentAddsFromTwoClientsGetDistinctConsecutiveIDs() async throws {
        try await TestServer.run { server in
            let directories = [try server.directory(), try server.directory()]
            let perClient = 8
            let added = try await withThrowingTaskGroup(of: Profile.self) { group in
                for (client, directory) in directories.enumerated() {
                    for index in 0..<perClient {
                        group.addTask {
                            try await directory.add(NewProfile(name: "Client \(client) #\(index)", age: index, gender: client == 0 ? .female : .male))
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let count = directories.count * perClient
            #expect(added.map(\.id).sorted() == Array(1...count))
            #expect(Set(added.compactMap(\.identifier)).count == count)
            // Both clients end up with the same directory, and the counter is exact.
            for directory in directories {
                let list = try await directory.list()
                #expect(list.profiles.map(\.id) == Array(1...count))
                #expect(list.invalid.isEmpty)
            }
            #expect(try await server.value(at: "meta/nextId") as? Int == count)
        }
    }

    @Test func deletesAndHobbyEditsPropagate() async throws {
        try await TestServer.run { server in
            let alice = try server.directory()
            let bob = try server.directory()
            let seen = UpdateLog()
            let watch = bob.watch { seen.append($0) }
            defer { watch.cancel() }
            let samples = try await alice.addSamples()
            #expect(samples.map(\.id) == Array(1...8))
            #expect(samples.map(\.name) == NewProfile.samples.map(\.name))
            await waitUntil("bob sees the samples") { seen.latest?.profiles.count == 8 }

            // Hobbies: add (duplicates ignoring case are left out), remove, replace, clear.
            let grace = try #require(samples.first { $0.name == "Grace Hopper" })
            #expect(try await alice.addHobbies(["sailing, Teaching", "  knitting "], to: grace) == ["compilers", "teaching", "sailing", "knitting"])
            await waitUntil("bob sees Grace's new hobbies") { seen.latest?.profile(withID: grace.id)?.hobbies.count == 4 }
            #expect(try await bob.removeHobbies(["COMPILERS"], from: grace) == ["teaching", "sailing", "knitting"])
            try await alice.setHobbies(["navy"], of: grace)
            await waitUntil("bob sees Grace's replaced hobbies") { seen.latest?.profile(withID: grace.id)?.hobbies == ["navy"] }
            try await alice.setHobbies([], of: grace)
            await waitUntil("bob sees Grace without hobbies") { seen.latest?.profile(withID: grace.id)?.hobbies == [] }
            #expect(try await server.value(at: "profiles/\(grace.identifier!)/hobbies") is NSNull)
            let graceChanges = seen.changes.compactMap { change -> [String]? in
                if case .changed(_, let new) = change, new.id == grace.id { return new.hobbies }
                return nil
            }
            #expect(graceChanges == [["compilers", "teaching", "sailing", "knitting"], ["teaching", "sailing", "knitting"], ["navy"], []])

            // Delete: gone for the other client too, and the id is not handed out again.
            let ken = try #require(samples.last)
            try await alice.delete(ken)
            await waitUntil("bob sees Ken deleted") { seen.latest?.profile(withID: ken.id) == nil }
            #expect(seen.changes.last == .removed(ken))
            #expect(try await bob.profile(withID: ken.id) == nil)
            await #expect(throws: ProfileDirectoryError.noProfile(id: ken.id)) { try await bob.existingProfile(withID: ken.id) }
            let next = try await bob.add(NewProfile(name: "Next", age: 1, gender: .male))
            #expect(next.id == 9)
            #expect(try await alice.existingProfile(withID: 9) == next)
        }
    }

    @Test func concurrentHobbyEditsAreAllKept() async throws {
        try await TestServer.run { server in
            let alice = try server.directory()
            let bob = try server.directory()
            let ada = try await alice.add(NewProfile(name: "Ada", age: 36, gender: .female))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<5 {
                    group.addTask { try await alice.addHobbies(["alice \(index)"], to: ada) }
                    group.addTask { try await bob.addHobbies(["bob \(index)"], to: ada) }
                }
                try await group.waitForAll()
            }
            let hobbies = try #require(try await alice.list().profile(withID: ada.id)?.hobbies)
            #expect(Set(hobbies) == Set((0..<5).flatMap { ["alice \($0)", "bob \($0)"] }))
        }
    }

    @Test func invalidDataInTheDatabaseIsReportedNotFatal() async throws {
        try await TestServer.run { server in
            let directory = try server.directory()
            let seen = UpdateLog()
            let watch = directory.watch { seen.append($0) }
            defer { watch.cancel() }
            let ada = try await directory.add(NewProfile(name: "Ada", age: 36, gender: .female))
            await waitUntil("Ada arrives") { seen.latest?.profiles.count == 1 }

            // Written past the rules, as the admin: what the app must survive.
            try await server.put("profiles/bad-gender", json: #"{"id": 50, "gender": "robot", "name": "Robbie", "age": 3}"#)
            try await server.put("profiles/no-id", json: #"{"gender": "male", "name": "Nobody", "age": 3}"#)
            try await server.put("profiles/text", json: #""just text""#)
            // And one the web app could have written, with hobbies as an object: it is fine.
            try await server.put("profiles/web", json: #"{"id": 51, "gender": "male", "name": "Web", "age": 30, "hobbies": {"0": "a", "1": "b"}}"#)
            await waitUntil("the invalid entries and the web app's profile arrive") { seen.latest?.invalid.count == 3 && seen.latest?.profiles.count == 2 }
            let list = try #require(seen.latest)
            #expect(list.profiles.map(\.name) == ["Ada", "Web"])
            #expect(list.profile(withID: 51)?.hobbies == ["a", "b"])
            #expect(list.invalid.map(\.path) == ["/profiles/bad-gender", "/profiles/no-id", "/profiles/text"])
            #expect(list.invalid.allSatisfy { $0.code == .invalidData })
            #expect(list.invalid[1].reason == "missing key 'id' at the top level")
            #expect(Set(seen.changes.compactMap { change -> String? in
                if case .invalid(let failure) = change { return failure.path }
                return nil
            }) == ["/profiles/bad-gender", "/profiles/no-id", "/profiles/text"])

            // Reads report them too, and the rest keeps working.
            #expect(try await directory.list().invalid.count == 3)
            let next = try await directory.add(NewProfile(name: "Next", age: 1, gender: .male))
            #expect(next.id == ada.id + 1)
            await waitUntil("Next arrives") { seen.latest?.profile(withID: next.id) != nil }
        }
    }

    @Test func theRulesRefuseWhatTheFormWouldHaveRefused() async throws {
        try await TestServer.run { server in
            let directory = try server.directory()
            // Past the form's validation, straight to the directory: the server's rules refuse it.
            let refused = await #expect(throws: DatabaseError.self) {
                try await directory.add(NewProfile(name: "Old", age: 151, gender: .male))
            }
            #expect(refused?.code == .permissionDenied)
            #expect(try await directory.list().profiles.isEmpty)
            // The counter only moves by one, so a skipped id is never reused.
            let database = directory.database
            let jump = await #expect(throws: DatabaseError.self) {
                try await database.reference(withPath: ProfileDirectory.nextIDPath).setValue(10)
            }
            #expect(jump?.code == .permissionDenied)
            #expect(try await directory.add(NewProfile(name: "Fine", age: 1, gender: .male)).id == 2)
        }
    }

    @Test func anUnreachableServerIsReportedInTime() async throws {
        let database = try Hearth.Database(url: "http://127.0.0.1:1?ns=profiles")
        database.callbackQueue = DispatchQueue(label: "profiles.test.unreachable")
        defer { database.goOffline() }
        let directory = ProfileDirectory(database: database)
        let started = ContinuousClock.now
        let error = await #expect(throws: ProfileDirectoryError.self) {
            try await directory.waitUntilConnected(timeout: .milliseconds(300))
        }
        guard case .unreachable(let url)? = error else {
            Issue.record("expected unreachable, got \(String(describing: error))")
            return
        }
        #expect(url.contains("127.0.0.1:1"))
        // A liveness bound, not a timing: it fails only if the wait hangs (seen at 12 s for a 300 ms
        // timeout with every core busy building).
        #expect(ContinuousClock.now - started < .seconds(60))
    }
}

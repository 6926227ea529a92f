import Foundation
import Hearth
import ProfilesCore
import HearthTestSupport
import Synchronization
import Testing

/// ``ProfileTable`` (the directory through a ``SyncedArray`` and its data source) following what
/// another client does: each change arrives as the row update a table view applies, after the rows
/// already show it.
@Suite struct ProfileTableLiveTests {
    @Test func rowsFollowAnotherClientsAddsEditsAndDeletesAsRowUpdates() async throws {
        try await TestServer.run { server in
            let alice = try server.directory()
            let table = ProfileTable(directory: try server.directory())
            let updates = Mutex<[SyncedArrayRowUpdate]>([])
            let rowsAtUpdate = Mutex<[Int]>([])
            table.start { update in
                updates.withLock { $0.append(update) }
                rowsAtUpdate.withLock { $0.append(table.numberOfRows) }
            }
            defer { table.stop() }
            func path(_ row: Int) -> IndexPath { IndexPath(indexes: [0, row]) }

            let ada = try await alice.add(NewProfile(name: "Ada Lovelace", age: 36, gender: .female, hobbies: ["poetry"]))
            let alan = try await alice.add(NewProfile(name: "Alan Turing", age: 41, gender: .male, hobbies: ["running", "chess"]))
            let grace = try await alice.add(NewProfile(name: "Grace Hopper", age: 85, gender: .female))
            await waitUntil("three rows") { table.numberOfRows == 3 }
            #expect(updates.withLock { $0 } == [.insert([path(0)]), .insert([path(1)]), .insert([path(2)])])
            #expect(rowsAtUpdate.withLock { $0 } == [1, 2, 3], "each update comes after the rows count it")
            #expect(table.profiles.map(\.id) == [ada.id, alan.id, grace.id])
            #expect(table.row(at: path(0)) == ProfileRow(ada))
            #expect(table.row(at: path(1)).title == "Alan Turing, 41")
            #expect(table.row(at: path(1)).subtitle == "running, chess")
            #expect(table.row(at: path(1)).background == .blue)
            #expect(table.row(at: path(2)).background == .pink)

            try await alice.setHobbies(["sailing"], of: alan)
            await waitUntil("Alan's new hobbies") { table.row(at: path(1)).subtitle == "sailing" }
            #expect(updates.withLock { $0.last } == .reload([path(1)]))

            try await alice.delete(ada)
            await waitUntil("two rows") { table.numberOfRows == 2 }
            #expect(updates.withLock { $0.last } == .delete([path(0)]))
            #expect(table.profiles.map(\.name) == ["Alan Turing", "Grace Hopper"])
            #expect(updates.withLock { $0.count } == 5)
        }
    }
}

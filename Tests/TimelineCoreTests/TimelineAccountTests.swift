import Foundation
import Hearth
import HearthTestSupport
import Testing
import TimelineCore

/// Accounts, profiles, search and following against a live server on loopback with the app's rules.
@MainActor
@Suite struct TimelineAccountTests {
    @Test func signUpLogInAndEditTheProfile() async throws {
        try await TestServer.run { server in
            let (app, ada) = try await server.signedUp("ada", bio: " Counting engines ", url: "https://ada.example")
            #expect(try await server.canonicalJSON(at: "users/\(ada.uid)")
                == #"{"bio":"Counting engines","url":"https://ada.example","username":"ada"}"#)

            // A wrong password and a taken email, with the web app's messages.
            try app.users.logOut()
            await #expect(throws: TimelineError.refused("Wrong email or password.")) {
                _ = try await app.users.logIn(email: "ada@example.com", password: "wrong password")
            }
            await #expect(throws: TimelineError.refused("An account already uses this email: log in instead.")) {
                _ = try await server.app().users.signUp(email: "ada@example.com", password: TimelineApp.password, profile: ProfileForm(username: "ada2"))
            }
            // A username the rules would refuse creates no account at all.
            let other = try server.app()
            await #expect(throws: TimelineError.invalidInput("Choose a username.")) {
                _ = try await other.users.signUp(email: "nobody@example.com", password: TimelineApp.password, profile: ProfileForm(username: " "))
            }
            #expect(other.auth.currentUser == nil)

            // Log in again: the profile comes back.
            let back = try await app.users.logIn(email: " ada@example.com ", password: TimelineApp.password)
            #expect(back == TimelineUser(uid: ada.uid, username: "ada", bio: "Counting engines", url: "https://ada.example"))

            // Editing: a blank bio is removed; follows are left as they are.
            let (_, grace) = try await server.signedUp("grace")
            try await app.users.follow(grace.uid)
            let saved = try await app.users.saveProfile(ProfileForm(username: "Ada L.", bio: "", url: "https://ada.example/2"))
            #expect(saved == ProfileFields(username: "Ada L.", bio: nil, url: "https://ada.example/2"))
            #expect(try await server.canonicalJSON(at: "users/\(ada.uid)")
                == #"{"follows":{"\#(grace.uid)":true},"url":"https://ada.example/2","username":"Ada L."}"#)
            await #expect(throws: TimelineError.invalidInput("A username has at most 30 characters.")) {
                _ = try await app.users.saveProfile(ProfileForm(username: String(repeating: "x", count: 31)))
            }

            // Signed out, there is nobody to follow as.
            try app.users.logOut()
            await #expect(throws: TimelineError.signedOut) { try await app.users.follow(grace.uid) }
        }
    }

    @Test func theRulesRefuseWritingSomeoneElsesProfile() async throws {
        try await TestServer.run { server in
            let (app, _) = try await server.signedUp("ada")
            let (_, grace) = try await server.signedUp("grace")
            // Past the controller, straight to the database: the rules are what stops it.
            var forged = grace
            forged.username = "not grace"
            await #expect(throws: DatabaseError.self) { try await forged.save(in: app.database) }
            await #expect(throws: DatabaseError.self) {
                _ = try await app.database.reference(withPath: "users/\(grace.uid)/follows/\(grace.uid)").setValue(true)
            }
            #expect(try await server.canonicalJSON(at: "users/\(grace.uid)") == #"{"username":"grace"}"#)
            // Following oneself is refused too.
            await #expect(throws: TimelineError.self) { try await app.users.follow(try app.users.currentUID()) }
        }
    }

    @Test func searchFindsOthersByUsername() async throws {
        try await TestServer.run { server in
            let (app, _) = try await server.signedUp("ada")
            for name in ["Grace", "greg", "bob"] { _ = try await server.signedUp(name) }
            #expect(try await app.users.search("GR").map(\.username) == ["Grace", "greg"])
            #expect(try await app.users.search("").map(\.username) == ["bob", "Grace", "greg"])
            #expect(try await app.users.search("zz").isEmpty)

            let search = SearchController(users: app.users)
            search.term = "b"
            await search.run()
            #expect(search.results.map(\.username) == ["bob"])
        }
    }

    @Test func followingShowsLiveOnBothProfiles() async throws {
        try await TestServer.run { server in
            let (adaApp, ada) = try await server.signedUp("ada", bio: "Engines")
            let (bobApp, bob) = try await server.signedUp("bob")

            // Bob looks at Ada's profile; Ada looks at her own.
            let adaSeenByBob = ProfileController(uid: ada.uid, viewer: bob.uid, users: bobApp.users, posts: bobApp.posts)
            let adaOwn = ProfileController(uid: ada.uid, viewer: ada.uid, users: adaApp.users, posts: adaApp.posts)
            adaSeenByBob.start()
            adaOwn.start()
            await waitUntil("both profiles read") { adaSeenByBob.user?.bio == "Engines" && adaOwn.user != nil }
            #expect(adaOwn.isMine && !adaSeenByBob.isMine)
            #expect(adaSeenByBob.followerCount == 0 && !adaSeenByBob.isFollowing)

            await adaSeenByBob.toggleFollow()
            await waitUntil("Ada's own profile counts Bob") { adaOwn.followerCount == 1 }
            #expect(adaSeenByBob.isFollowing && adaSeenByBob.followerCount == 1)
            #expect(try await server.canonicalJSON(at: "users/\(bob.uid)/follows") == #"{"\#(ada.uid)":true}"#)

            // Ada's bio edited in her app appears on Bob's screen.
            _ = try await adaApp.users.saveProfile(ProfileForm(username: "ada", bio: "Poetical science"))
            await waitUntil("Bob sees the new bio") { adaSeenByBob.user?.bio == "Poetical science" }

            // A post of Ada's appears in her grid on Bob's screen.
            let post = try await adaApp.share("First", as: ada)
            await waitUntil("the grid has the post") { adaSeenByBob.grid.map(\.id) == [post.id] }

            await adaSeenByBob.toggleFollow()
            await waitUntil("Ada's profile counts nobody") { adaOwn.followerCount == 0 }
            #expect(!adaSeenByBob.isFollowing)
            #expect(try await server.canonicalJSON(at: "users/\(bob.uid)/follows") == "null")

            // On one's own profile there is no follow button: toggling does nothing.
            await adaOwn.toggleFollow()
            #expect(try await server.canonicalJSON(at: "users/\(ada.uid)/follows") == "null")
            let missing = ProfileController(uid: "nobody", viewer: bob.uid, users: bobApp.users, posts: bobApp.posts)
            missing.start()
            await waitUntil("an unknown person is reported") { missing.isMissing }
            for controller in [adaSeenByBob, adaOwn, missing] { controller.stop() }
        }
    }

    @Test func theSessionControllerSignsUpRemembersAndLogsOut() async throws {
        try await TestServer.run { server in
            let app = try server.app()
            let session = SessionController(users: app.users)
            await session.restore()
            #expect(!session.isSignedIn)

            session.mode = .signUp
            session.email = "ada@example.com"
            session.password = TimelineApp.password
            session.profile = ProfileForm(username: "", bio: "Engines")
            #expect(await session.submit() == false)
            #expect(session.errorMessage == "Choose a username.")
            #expect(session.password.isEmpty)

            session.password = TimelineApp.password
            session.profile.username = "ada"
            #expect(await session.submit())
            let uid = try #require(session.user?.uid)
            #expect(session.user == TimelineUser(uid: uid, username: "ada", bio: "Engines"))

            // The same account in a second window: an edit there reaches this session live.
            let other = try server.app()
            _ = try await other.users.logIn(email: "ada@example.com", password: TimelineApp.password)
            _ = try await other.users.saveProfile(ProfileForm(username: "ada", bio: "Poetical science"))
            await waitUntil("the session shows the new bio") { session.user?.bio == "Poetical science" }

            #expect(await session.saveProfile(ProfileForm(username: "Ada", bio: "", url: "https://ada.example")))
            #expect(session.user == TimelineUser(uid: uid, username: "Ada", url: "https://ada.example"))

            // A relaunch on the same client finds the remembered session.
            let relaunched = SessionController(users: app.users)
            await relaunched.restore()
            #expect(relaunched.user?.uid == uid)
            #expect(relaunched.user?.username == "Ada")

            session.logOut()
            #expect(!session.isSignedIn && app.auth.currentUser == nil)
            session.mode = .logIn
            session.email = "ada@example.com"
            session.password = "wrong password"
            #expect(await session.submit() == false)
            #expect(session.errorMessage == "Wrong email or password.")
            relaunched.logOut()
        }
    }
}

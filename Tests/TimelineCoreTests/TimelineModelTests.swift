import Foundation
import Hearth
import Testing
import TimelineCore

/// The models and pure logic, without a server: the web app's JSON shape, the forms' checks, the
/// photo's path, search and the timeline's merge order.
@Suite struct TimelineModelTests {
    private func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    @Test func postsAndCommentsUseTheWebAppsShape() throws {
        let comment = TimelineComment(identifier: "-c1", postID: "-p1", uid: "u2", username: "bob", text: "Nice")
        // The identifier and the post are the location, never stored fields.
        #expect(try json(comment) == #"{"text":"Nice","uid":"u2","username":"bob"}"#)
        #expect(comment.endpoint == "posts/-p1/comments")

        let stored = #"""
            {"uid": "u1", "username": "ada", "image": "timeline/u1/-p1.png", "imageURL": "http://x/y", "caption": "Sunrise",
             "likes": {"u1": true, "u2": true}, "comments": {"-c2": {"uid": "u1", "username": "ada", "text": "Thanks"},
                                                           "-c1": {"uid": "u2", "username": "bob", "text": "Nice"}}}
            """#
        var post = try JSONDecoder().decode(TimelinePost.self, from: Data(stored.utf8))
        post.identifier = "-p1"
        #expect(post.likeCount == 2 && post.isLiked(by: "u2") && !post.isLiked(by: "u3"))
        #expect(post.commentCount == 2)
        #expect(post.sortedComments.map(\.text) == ["Nice", "Thanks"])
        #expect(post.sortedComments.map(\.identifier) == ["-c1", "-c2"])
        #expect(post.sortedComments.allSatisfy { $0.postID == "-p1" })

        let user = TimelineUser(uid: "u1", username: "ada", bio: "Engines", follows: ["u2": true, "u3": true])
        #expect(user.followedUIDs == ["u2", "u3"])
        #expect(user.endpoint == "users")
    }

    @Test func profileFormChecksWhatTheRulesCheck() throws {
        #expect(try ProfileForm(username: "  ada ", bio: " ", url: " https://ada.example ").validated()
            == ProfileFields(username: "ada", bio: nil, url: "https://ada.example"))
        #expect(throws: TimelineError.invalidInput("Choose a username.")) { try ProfileForm(username: "  ").validated() }
        #expect(throws: TimelineError.invalidInput("A username has at most 30 characters.")) {
            try ProfileForm(username: String(repeating: "a", count: 31)).validated()
        }
        #expect(try ProfileForm(username: String(repeating: "a", count: 30)).validated().username.count == 30)
        #expect(throws: TimelineError.invalidInput("A bio has at most 300 characters.")) {
            try ProfileForm(username: "ada", bio: String(repeating: "b", count: 301)).validated()
        }
        #expect(throws: TimelineError.invalidInput("A web address has at most 300 characters.")) {
            try ProfileForm(username: "ada", url: String(repeating: "u", count: 301)).validated()
        }
        #expect(ProfileForm(TimelineUser(uid: "u", username: "ada", url: "x")) == ProfileForm(username: "ada", bio: "", url: "x"))
    }

    @Test func photosAreNamedAndCheckedAsTheWebAppDoes() {
        #expect(ImageController.path(uid: "u1", postID: "-p1", fileExtension: "JPEG") == "timeline/u1/-p1.jpeg")
        #expect(ImageController.path(uid: "u1", postID: "-p1", fileExtension: ".p n/g") == "timeline/u1/-p1.png")
        #expect(ImageController.path(uid: "u1", postID: "-p1", fileExtension: "") == "timeline/u1/-p1.jpg")
        #expect(throws: TimelineError.invalidInput("That file is not an image.")) {
            try ImageController.validate(Data([1]), contentType: "text/plain")
        }
        #expect(throws: TimelineError.invalidInput("A photo must be smaller than 10 MB.")) {
            try ImageController.validate(Data(count: ImageController.maximumSize), contentType: "image/png")
        }
        #expect(throws: Never.self) { try ImageController.validate(Data(count: ImageController.maximumSize - 1), contentType: "image/png") }
    }

    @Test func searchMatchesUsernamesIgnoringCase() {
        let people = [
            TimelineUser(uid: "u1", username: "ada"), TimelineUser(uid: "u2", username: "Grace"),
            TimelineUser(uid: "u3", username: "greg", follows: ["u2": true]), TimelineUser(uid: "u4", username: "Bob", follows: ["u2": true]),
        ]
        #expect(people.matching(" GR ", excluding: "u1").map(\.username) == ["Grace", "greg"])
        #expect(people.matching("", excluding: "u1").map(\.username) == ["Bob", "Grace", "greg"])
        #expect(people.matching("gr", excluding: "u3").map(\.username) == ["Grace"])
        #expect(people.followerCount(of: "u2") == 2)
        #expect(people.followerCount(of: "u1") == 0)
    }

    @Test func theTimelineMergesNewestFirst() {
        func post(_ id: String, _ uid: String) -> TimelinePost {
            TimelinePost(identifier: id, uid: uid, username: uid, image: "timeline/\(uid)/\(id).png")
        }
        // Push ids sort by time: -a… is older than -b….
        let ada = [post("-a1", "ada"), post("-c3", "ada")]
        let bob = [post("-b2", "bob"), post("-d4", "bob")]
        let cy = [post("-a0", "cy")]
        #expect(PostController.merge([ada, bob, cy]).map(\.id) == ["-d4", "-c3", "-b2", "-a1", "-a0"])
        #expect(PostController.merge([bob, ada, ada]).map(\.id) == ["-d4", "-c3", "-b2", "-a1"])  // each once
        #expect(PostController.merge([]).isEmpty)
    }
}

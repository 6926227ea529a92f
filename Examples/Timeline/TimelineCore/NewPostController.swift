import Foundation
import Hearth
import Observation

/// The new post screen: the picked photo, the caption, the upload's progress, and sharing
/// (upload, then create the post).
///
/// For example, in SwiftUI:
/// ```swift
/// @State var draft = NewPostController(posts: posts, author: me)
///
/// PhotosPicker(…) { draft.pick(data, contentType: "image/jpeg", fileExtension: "jpg") }
/// TextField("Caption", text: $draft.caption)
/// ProgressView(value: draft.progress)
/// Button("Share") { Task { if await draft.share() != nil { dismiss() } } }.disabled(!draft.canShare)
/// ```
@MainActor
@Observable
public final class NewPostController {
    public let posts: PostController
    public let author: TimelineUser
    public private(set) var photo: Data?
    public private(set) var contentType = "image/jpeg"
    public private(set) var fileExtension = "jpg"
    public var caption = ""
    /// The upload's progress, 0…1.
    public private(set) var progress = 0.0
    public private(set) var isSharing = false
    public private(set) var errorMessage: String?

    public init(posts: PostController, author: TimelineUser) {
        self.posts = posts
        self.author = author
    }

    public var canShare: Bool { photo != nil && !isSharing }

    public func pick(_ data: Data, contentType: String, fileExtension: String) {
        photo = data
        self.contentType = contentType
        self.fileExtension = fileExtension
        errorMessage = nil
    }

    /// Shares the photo; returns the new post, or nil with ``errorMessage`` saying why.
    public func share() async -> TimelinePost? {
        guard let photo else {
            errorMessage = "Pick a photo."
            return nil
        }
        errorMessage = nil
        isSharing = true
        progress = 0
        defer { isSharing = false }
        do {
            let post = try await posts.share(
                photo: photo, contentType: contentType, fileExtension: fileExtension, caption: caption, as: author
            ) { [weak self] fraction in
                Task { @MainActor in self?.progress = max(self?.progress ?? 0, fraction) }
            }
            progress = 1
            self.photo = nil
            caption = ""
            return post
        } catch {
            errorMessage = "Not shared: \(TimelineError(error).description)"
            return nil
        }
    }
}

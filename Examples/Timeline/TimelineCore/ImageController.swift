import Foundation
import Hearth

/// Every call about photos: stored files under `timeline/<uid>/` in the bucket (the web app's
/// layout and the app's storage rules: images under 10 MB, written and deleted by their owner,
/// read by anyone signed in).
///
/// A Hearth server's bucket for the web app is `<project>.appspot.com`; pass that storage (for
/// example `Storage.storage(database: database, url: "gs://hearth.appspot.com")` for `hearth serve`) so the
/// Swift app and the browser share photos.
///
/// For example:
/// ```swift
/// let images = ImageController(storage: Storage.storage(database: database))
/// let photo = try await images.upload(png, contentType: "image/png", to: "timeline/\(uid)/\(postID).png")
/// print(photo.downloadURL)
/// ```
public final class ImageController: Sendable {
    public let storage: Storage
    /// The rules' limit: photos are smaller than this.
    public static let maximumSize = 10 * 1024 * 1024

    public init(storage: Storage) {
        self.storage = storage
    }

    /// A stored photo: its path in the bucket and where to download it.
    public struct StoredPhoto: Equatable, Sendable {
        public var path: String
        public var downloadURL: String
    }

    /// Where a post's photo goes: `timeline/<uid>/<post id>.<extension>` (extension lowercased,
    /// letters and digits only, `jpg` when there is none), as the web app names it.
    public static func path(uid: String, postID: String, fileExtension: String) -> String {
        let cleaned = fileExtension.lowercased().filter { $0.isASCII && ($0.isLetter || $0.isNumber) }
        return "timeline/\(uid)/\(postID).\(cleaned.isEmpty ? "jpg" : cleaned)"
    }

    /// Checks what the storage rules would refuse, with the web app's messages.
    public static func validate(_ data: Data, contentType: String) throws(TimelineError) {
        guard contentType.lowercased().hasPrefix("image/") else { throw .invalidInput("That file is not an image.") }
        guard !data.isEmpty else { throw .invalidInput("Pick a photo.") }
        guard data.count < maximumSize else { throw .invalidInput("A photo must be smaller than 10 MB.") }
    }

    /// Uploads a photo (checked first) and returns where it is; `onProgress` hears the fraction sent.
    public func upload(
        _ data: Data, contentType: String, to path: String, onProgress: (@Sendable (Double) -> Void)? = nil
    ) async throws -> StoredPhoto {
        try Self.validate(data, contentType: contentType)
        let reference = storage.reference(withPath: path)
        let metadata = StorageMetadata()
        metadata.contentType = contentType
        do {
            _ = try await reference.putDataAsync(data, metadata: metadata) { progress in
                onProgress?(progress?.fractionCompleted ?? 0)
            }
            return StoredPhoto(path: path, downloadURL: try await reference.downloadURL().absoluteString)
        } catch {
            throw TimelineError(error)
        }
    }

    /// The photo's bytes (at most ``maximumSize``).
    public func data(at path: String) async throws -> Data {
        do {
            return try await storage.reference(withPath: path).data(maxSize: Int64(Self.maximumSize))
        } catch {
            throw TimelineError(error)
        }
    }

    /// Deletes a photo; one that is already gone counts as deleted.
    public func delete(at path: String) async throws {
        do {
            try await storage.reference(withPath: path).delete()
        } catch let error as StorageError where error.code == .objectNotFound {
            return
        } catch {
            throw TimelineError(error)
        }
    }
}

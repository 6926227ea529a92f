// Timeline, ported from Firebase: written against firebase-ios-sdk's API. The only change for Hearth
// is the import line (the original: `import FirebaseStorage`).
//
// Images in Storage: uploads JPEG data under a path, downloads it back, deletes it.

import Foundation
import Hearth

public class ImageController {
    public static let shared = ImageController()

    /// The largest image the app downloads (Firebase needs a bound for `getData(maxSize:)`).
    public static let maxImageSize: Int64 = 5 * 1024 * 1024

    public init() {}

    /// `images/<identifier>.jpg`.
    public func imagePath(for identifier: String) -> String {
        return "images/\(identifier).jpg"
    }

    /// Uploads JPEG data to `path`; completes with the stored object's metadata.
    public func uploadImage(_ data: Data, toPath path: String, completion: @escaping (StorageMetadata?, Error?) -> Void) {
        let imageRef = Storage.storage().reference().child(path)
        let metadata = StorageMetadata()
        metadata.contentType = "image/jpeg"
        imageRef.putData(data, metadata: metadata) { metadata, error in
            if let error = error {
                print("Error uploading \(path): \(error.localizedDescription)")
                completion(nil, error)
                return
            }
            completion(metadata, nil)
        }
    }

    /// The image's bytes (nil and the error if it could not be downloaded).
    public func downloadImage(atPath path: String, completion: @escaping (Data?, Error?) -> Void) {
        let imageRef = Storage.storage().reference(withPath: path)
        imageRef.getData(maxSize: ImageController.maxImageSize) { data, error in
            if let error = error {
                completion(nil, error)
                return
            }
            completion(data, nil)
        }
    }

    /// A URL the image can be shown from (e.g. by an image view that loads URLs).
    public func downloadURL(forPath path: String, completion: @escaping (URL?, Error?) -> Void) {
        Storage.storage().reference(withPath: path).downloadURL { url, error in
            completion(url, error)
        }
    }

    /// The `Result` form of the download (FirebaseStorage's Result-callback overload).
    public func fetchImage(atPath path: String, completion: @escaping (Result<Data, Error>) -> Void) {
        Storage.storage().reference(withPath: path).getData(maxSize: ImageController.maxImageSize) { (result: Result<Data, Error>) in
            completion(result)
        }
    }

    /// Deletes the image. A missing image is not an error for the caller: it is gone either way.
    public func deleteImage(atPath path: String, completion: @escaping (Error?) -> Void) {
        Storage.storage().reference(withPath: path).delete { error in
            if let error = error as NSError?, error.domain == StorageErrorDomain,
               StorageErrorCode(rawValue: error.code) == .objectNotFound {
                completion(nil)
                return
            }
            completion(error)
        }
    }

    /// A message for people about a failed download or upload.
    public static func message(for error: Error) -> String {
        if let storageError = error as? StorageError {
            switch storageError {
            case .objectNotFound:
                return "This photo no longer exists."
            case .unauthenticated:
                return "Log in to see photos."
            case .unauthorized:
                return "You are not allowed to see this photo."
            case .downloadSizeExceeded:
                return "This photo is too large."
            case .cancelled:
                return "Cancelled."
            default:
                return "The photo could not be loaded: \(error.localizedDescription)"
            }
        }
        return error.localizedDescription
    }

    /// Whether `error` is Storage's "object not found" (the NSError form apps have long used).
    public static func isObjectNotFound(_ error: Error) -> Bool {
        let error = error as NSError
        return error.domain == StorageErrorDomain && StorageErrorCode(rawValue: error.code) == .objectNotFound
    }
}

import Foundation
import HearthCore
import HearthProtocol
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One answer from the file service.
struct StorageResponse: Sendable {
    var status: Int
    var body: Data
    var headers: [String: String]

    /// A header, by case-insensitive name.
    func header(_ name: String) -> String? {
        headers[name.lowercased()]
    }

    var json: JSONValue { (try? JSONValue(parsing: body)) ?? .null }
}

/// The REST calls of Firebase Storage's `/v0` API, with the user's token, retries with backoff for
/// network errors and 5xx/408/429 answers (until the storage's retry time for the kind of call is
/// spent), and FirebaseStorage's error codes for everything else.
struct StorageClient: Sendable {
    let storage: Storage

    enum RetryBudget {
        case operation, upload, download

        func seconds(_ storage: Storage) -> TimeInterval {
            switch self {
            case .operation: storage.maxOperationRetryTime
            case .upload: storage.maxUploadRetryTime
            case .download: storage.maxDownloadRetryTime
            }
        }
    }

    /// `/v0/b/{bucket}/o/{object}` (or `/v0/b/{bucket}/o` for `path` nil) on the storage's origin, with `query`.
    func url(bucket: String, path: String?, query: [(String, String)] = []) -> URL {
        var text = "\(storage.origin)/v0/b/\(Self.encode(bucket))/o"
        if let path { text += "/" + Self.encode(path) }
        if !query.isEmpty { text += "?" + query.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&") }
        return URL(string: text)!
    }

    /// One URL component as `encodeURIComponent` makes it (an object name is one path segment: `/`
    /// is `%2F`, `+` is `%2B`), as Firebase's clients send names.
    static func encode(_ text: String) -> String { PercentEncoding.component(text, keeping: "!*'()") }

    /// Sends a request once: the user's token as `Authorization: Firebase <token>`. Network failures
    /// throw ``Failure/network``; every HTTP answer is returned.
    func sendOnce(_ method: String, _ url: URL, headers: [String: String] = [:], body: Data? = nil, authorize: Bool = true) async throws
        -> StorageResponse
    {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.httpBody = body
        request.cachePolicy = .reloadIgnoringLocalCacheData
        request.timeoutInterval = 120
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.setValue("hearth-swift/\(Database.sdkVersion())", forHTTPHeaderField: "X-Firebase-Storage-Version")
        if authorize, let token = await storage.authToken() {
            request.setValue("Firebase \(token)", forHTTPHeaderField: "Authorization")
        }
        let data: Data, response: HTTPURLResponse
        do {
            (data, response) = try await storage.transport.send(request)
        } catch {
            if Task.isCancelled || (error as? URLError)?.code == .cancelled || error is CancellationError {
                throw StorageError(.cancelled, "User cancelled the operation.")
            }
            throw Failure.network("\(error.localizedDescription)")
        }
        var fields: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
        }
        return StorageResponse(status: response.statusCode, body: data, headers: fields)
    }

    /// A network failure (no HTTP answer).
    enum Failure: Error {
        case network(String)
    }

    static func isRetryable(_ status: Int) -> Bool { HTTPRetry.isTransient(status: status) }

    /// The retry policy for one call of a kind, on the database's clock.
    func retry(_ budget: RetryBudget) -> HTTPRetry {
        HTTPRetry(budget: budget.seconds(storage), clock: storage.database.repo.clock)
    }

    /// Sends a request, retrying network failures and 5xx/408/429 with ``HTTPRetry`` (0.25 s doubling
    /// to 8 s) until the budget is spent (then `retryLimitExceeded`). An answer outside `accept` throws
    /// its Firebase error.
    func send(
        _ method: String, _ url: URL, headers: [String: String] = [:], body: Data? = nil, budget: RetryBudget = .operation,
        accept: (Int) -> Bool = { (200..<300).contains($0) }, cancelCheck: (() throws(StorageError) -> Void)? = nil
    ) async throws(StorageError) -> StorageResponse {
        var backoff = retry(budget)
        while true {
            try cancelCheck?()
            let response: StorageResponse
            do {
                response = try await sendOnce(method, url, headers: headers, body: body)
            } catch let error as StorageError {
                throw error
            } catch {
                try await backoff.wait(after: "\(error)")
                continue
            }
            if accept(response.status) { return response }
            if Self.isRetryable(response.status) {
                try await backoff.wait(after: StorageError(status: response.status, body: response.body).message)
                continue
            }
            throw StorageError(status: response.status, body: response.body, url: url)
        }
    }
}

extension HTTPRetry {
    /// ``pause(after:)`` with FirebaseStorage's errors: `retryLimitExceeded` when the budget is spent,
    /// `cancelled` when the task is.
    mutating func wait(after failure: String) async throws(StorageError) {
        do {
            try await pause(after: failure)
        } catch .exhausted(let failure) {
            throw StorageError(.retryLimitExceeded, "Max retry time for operation exceeded, please try again. (\(failure))")
        } catch {
            throw StorageError(.cancelled, "User cancelled the operation.")
        }
    }
}

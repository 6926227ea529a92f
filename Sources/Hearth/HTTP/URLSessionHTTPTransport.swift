import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// HTTP through `URLSession` (no cache, no cookies), cancelled with the task that awaits it. It trusts
/// the system's certificate authorities only (see ``Database/trustedCertificateAuthorityFiles``).
struct URLSessionHTTPTransport: HTTPTransport {
    /// The one session of the process (an ephemeral session holds nothing worth separating).
    static let shared = URLSessionHTTPTransport()

    let session: URLSession

    init() {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.timeoutIntervalForRequest = 120
        session = URLSession(configuration: configuration)
    }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        var request = request
        #if canImport(FoundationNetworking)
        if request.httpBody != nil, request.value(forHTTPHeaderField: "Expect") == nil {
            // libcurl (URLSession on Linux) would wait a second for "100 Continue" before large bodies.
            request.setValue("", forHTTPHeaderField: "Expect")
        }
        #endif
        let box = DataTaskBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, HTTPURLResponse), any Error>) in
                let task = session.dataTask(with: request) { data, response, error in
                    if let error {
                        continuation.resume(throwing: error)
                    } else if let response = response as? HTTPURLResponse {
                        continuation.resume(returning: (data ?? Data(), response))
                    } else {
                        continuation.resume(throwing: URLError(.badServerResponse))
                    }
                }
                box.start(task)
            }
        } onCancel: {
            box.cancel()
        }
    }
}

/// A data task and whether the awaiting Swift task was cancelled (possibly before the data task existed).
private final class DataTaskBox: @unchecked Sendable {
    private let lock = Mutex<(task: URLSessionDataTask?, cancelled: Bool)>((nil, false))

    func start(_ task: URLSessionDataTask) {
        let cancelled = lock.withLock { state -> Bool in
            state.task = task
            return state.cancelled
        }
        task.resume()
        if cancelled { task.cancel() }
    }

    func cancel() {
        let task = lock.withLock { state -> URLSessionDataTask? in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Hearth
import HearthCore
import Synchronization
import Testing

/// Time that passes only when the SDK sleeps; records each pause (ms).
final class SleepRecordingClock: HearthClock, Sendable {
    private let state = Mutex<(now: Double, pauses: [Double])>((1_000_000, []))

    var pauses: [Double] { state.withLock { $0.pauses } }

    func milliseconds() -> Double { state.withLock { $0.now } }

    func sleep(milliseconds: Double) async throws {
        try Task.checkCancellation()
        state.withLock { state in
            state.now += milliseconds
            state.pauses.append(milliseconds)
        }
    }
}

/// Answers requests from a script (then 500 for ever), recording what was asked.
final class ScriptedHTTPTransport: HTTPTransport, Sendable {
    enum Step: Sendable {
        case answer(Int, String)
        /// No answer, as a dropped connection.
        case drop
    }

    private let state: Mutex<(steps: [Step], requests: [String])>

    init(_ steps: [Step]) {
        state = Mutex((steps, []))
    }

    /// `METHOD url` of each request, in order.
    var requests: [String] { state.withLock { $0.requests } }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let step = state.withLock { state -> Step in
            state.requests.append("\(request.httpMethod ?? "GET") \(request.url?.absoluteString ?? "")")
            return state.steps.isEmpty ? .answer(500, "") : state.steps.removeFirst()
        }
        switch step {
        case .drop:
            throw URLError(.networkConnectionLost)
        case .answer(let status, let body):
            let response = HTTPURLResponse(url: request.url!, statusCode: status, httpVersion: "HTTP/1.1", headerFields: ["Content-Type": "application/json"])!
            return (Data(body.utf8), response)
        }
    }
}

/// The SDK's HTTP layer: the retry policy on the database's clock, the one backoff, and the transport
/// Auth and Storage share, injected.
@Suite struct HTTPLayerTests {
    static let metadata = #"{"name": "a/b", "bucket": "demo.appspot.com", "size": "1", "contentType": "text/plain"}"#

    static func storage(_ transport: ScriptedHTTPTransport, clock: SleepRecordingClock) throws -> Storage {
        let database = try Hearth.Database(url: "http://127.0.0.1:9?ns=http-layer-\(UUID().uuidString.prefix(8).lowercased())", clock: clock)
        let storage = Storage.storage(database: database)
        storage.transport = transport
        return storage
    }

    @Test func theHTTPRetryBackoffStartsImmediatelyAndDoublesFromAQuarterSecondToEight() {
        var backoff = Backoff.httpRetry
        #expect((0..<9).map { _ in backoff.nextDelay() } == [0, 250, 500, 1_000, 2_000, 4_000, 8_000, 8_000, 8_000])
    }

    @Test func aDroppedConnectionAndAServerFailureAreRetriedAfterTheBackoffsPauses() async throws {
        let clock = SleepRecordingClock()
        let transport = ScriptedHTTPTransport([.drop, .answer(503, ""), .answer(200, Self.metadata)])
        let storage = try Self.storage(transport, clock: clock)
        let metadata = try await storage.reference(withPath: "a/b").getMetadata()
        #expect(metadata.name == "b")
        #expect(transport.requests.count == 3)
        #expect(Set(transport.requests).count == 1)
        #expect(clock.pauses == [250, 500])
    }

    @Test func retriesStopWhenTheBudgetIsSpentAndTheLastPauseEndsAtTheDeadline() async throws {
        let clock = SleepRecordingClock()
        let transport = ScriptedHTTPTransport([])
        let storage = try Self.storage(transport, clock: clock)
        storage.maxOperationRetryTime = 10
        await #expect(throws: StorageError.self) { _ = try await storage.reference(withPath: "a/b").getMetadata() }
        do {
            _ = try await storage.reference(withPath: "a/b").getMetadata()
        } catch let error as StorageError {
            #expect(error.code == .retryLimitExceeded)
        }
        // 250 + 500 + 1,000 + 2,000 + 4,000 ms, then the 2,250 ms left of 10 s; twice.
        #expect(clock.pauses == [250, 500, 1_000, 2_000, 4_000, 2_250, 250, 500, 1_000, 2_000, 4_000, 2_250])
        #expect(transport.requests.count == 14)
    }

    @Test func anAnswerThatIsNotTransientIsNotRetried() async throws {
        let clock = SleepRecordingClock()
        let transport = ScriptedHTTPTransport([.answer(404, #"{"error": {"code": 404, "message": "Not Found."}}"#)])
        let storage = try Self.storage(transport, clock: clock)
        do {
            _ = try await storage.reference(withPath: "a/b").getMetadata()
            Issue.record("expected objectNotFound")
        } catch let error as StorageError {
            #expect(error.code == .objectNotFound)
        }
        #expect(transport.requests.count == 1)
        #expect(clock.pauses.isEmpty)
    }

    @Test func authCallsGoThroughTheInjectedTransportAndAreNotRetried() async throws {
        let clock = SleepRecordingClock()
        let database = try Hearth.Database(url: "http://127.0.0.1:9?ns=http-layer-auth-\(UUID().uuidString.prefix(8).lowercased())", clock: clock)
        let auth = Auth(database: database, clock: clock)
        let failing = ScriptedHTTPTransport([.answer(503, "")])
        auth.transport = failing
        await #expect(throws: AuthError.self) { try await auth.signInAnonymously() }
        #expect(failing.requests == ["POST http://127.0.0.1:9/identitytoolkit.googleapis.com/v1/accounts:signUp?key=hearth"])
        #expect(clock.pauses.isEmpty)

        let refused = ScriptedHTTPTransport([.answer(400, #"{"error": {"code": 400, "message": "EMAIL_EXISTS"}}"#)])
        auth.transport = refused
        do {
            try await auth.createUser(withEmail: "ada@example.com", password: "correct horse")
            Issue.record("expected EMAIL_EXISTS")
        } catch let error as AuthError {
            #expect(error.code == .emailAlreadyInUse)
        }
        #expect(refused.requests.count == 1)
        database.goOffline()
    }

    @Test func withoutTrustedAuthoritiesTheDatabaseUsesURLSessionAndWithThemNIOForHTTPS() throws {
        let database = try Hearth.Database(url: "https://localhost:9443?ns=demo")
        #expect(database.httpTransport is URLSessionHTTPTransport)
        database.trustedCertificateAuthorityFiles = [URL(fileURLWithPath: "/etc/hearth/ca.pem")]
        let transport = try #require(database.httpTransport as? NIOHTTPTransport)
        #expect(transport.certificateAuthorityFiles == [URL(fileURLWithPath: "/etc/hearth/ca.pem")])
        #expect(Storage.storage(database: database).transport is NIOHTTPTransport)
    }
}

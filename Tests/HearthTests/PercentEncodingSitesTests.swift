import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Hearth
import HearthCore
import Synchronization
import Testing

/// `PercentEncoding` (HearthCore) at the SDK's call sites that used Foundation's encoders before.
@Suite struct PercentEncodingSitesTests {
    @Test func aReferencesURLEscapesEachKeyAsAPathSegment() throws {
        let database = try Hearth.Database(url: "http://127.0.0.1:9000?ns=demo")
        let reference = database.reference(withPath: "a b/100%/x+y/é/ü:@!&'()*,=~")
        #expect(reference.url == "http://127.0.0.1:9000/a%20b/100%25/x+y/%C3%A9/%C3%BC:@!&'()*,=~?ns=demo")
        #expect(database.reference(fromURL: reference.url).url == reference.url)
    }

    @Test func aRefreshTokenIsFormEncodedAsOneComponent() async throws {
        let transport = RecordingBodyTransport()
        let client = IdentityClient(origin: "http://127.0.0.1:9", apiKey: "hearth", transport: transport)
        _ = try? await client.refresh("a b/c%d+e=é")
        #expect(transport.bodies == ["grant_type=refresh_token&refresh_token=a%20b%2Fc%25d%2Be%3D%C3%A9"])
    }
}

/// Records request bodies as text and answers 400.
final class RecordingBodyTransport: HTTPTransport, Sendable {
    private let recorded = Mutex<[String]>([])
    var bodies: [String] { recorded.withLock { $0 } }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        recorded.withLock { $0.append(String(decoding: request.httpBody ?? Data(), as: UTF8.self)) }
        return (Data(), HTTPURLResponse(url: request.url!, statusCode: 400, httpVersion: "HTTP/1.1", headerFields: [:])!)
    }
}

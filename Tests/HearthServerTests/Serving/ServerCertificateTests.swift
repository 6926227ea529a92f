import Foundation
import HearthServer
import HearthTestSupport
import Testing

/// Certificate and key files at start-up and at reload: errors name the file at fault, and a reload
/// that fails keeps the certificate being served.
@Suite struct ServerCertificateTests {
    @Test(arguments: [TestCertificates.Key.ecdsa, .rsa])
    func aChainAndItsKeyLoad(key: TestCertificates.Key) async throws {
        let certificates = try await TestCertificates.make(key: key)
        defer { certificates.remove() }
        let certificate = try ServerCertificate(certificateFile: certificates.chainFile.path, keyFile: certificates.keyFile.path)
        // openssl made it for two days.
        #expect(certificate.notValidAfter > Date().addingTimeInterval(86_400))
        #expect(certificate.notValidAfter < Date().addingTimeInterval(3 * 86_400))
    }

    @Test func eachUnusableFileIsNamedWithWhatIsWrong() async throws {
        let certificates = try await TestCertificates.make()
        let other = try await TestCertificates.make(key: .rsa)
        defer {
            certificates.remove()
            other.remove()
        }
        let garbage = certificates.folder.appendingPathComponent("garbage.pem")
        try Data("not a certificate\n".utf8).write(to: garbage)
        let missing = certificates.folder.appendingPathComponent("missing.pem").path

        let cases: [(certificate: String, key: String, file: String, problem: String)] = [
            (missing, certificates.keyFile.path, missing, "does not exist"),
            (garbage.path, certificates.keyFile.path, garbage.path, "not a PEM certificate"),
            (certificates.chainFile.path, garbage.path, garbage.path, "not a PEM private key"),
            // A key of another certificate.
            (certificates.chainFile.path, other.keyFile.path, other.keyFile.path, "does not hold the private key"),
        ]
        for item in cases {
            let error = #expect(throws: ServerCertificateError.self) {
                try ServerCertificate(certificateFile: item.certificate, keyFile: item.key)
            }
            #expect(error?.file == item.file)
            #expect(error?.message.contains(item.problem) == true, "\(error?.message ?? "-")")
            #expect(error?.message.hasPrefix(item.file) == true)
        }
    }

    @Test func aReloadReadsRenewedFilesAndAFailedOneKeepsTheOld() async throws {
        let first = try await TestCertificates.make()
        let renewed = try await TestCertificates.make(key: .rsa, validDays: 60)
        defer {
            first.remove()
            renewed.remove()
        }
        try first.install(into: first)
        let certificate = try ServerCertificate(certificateFile: first.liveChainFile.path, keyFile: first.liveKeyFile.path)
        let firstExpiry = certificate.notValidAfter

        // A renewal half done (new certificate, old key): refused, the first pair stays.
        try renewed.install(into: first, only: .chain)
        #expect(throws: ServerCertificateError.self) { try certificate.reload() }
        #expect(certificate.notValidAfter == firstExpiry)

        // Both files renewed: served from now on.
        try renewed.install(into: first, only: .key)
        try certificate.reload()
        #expect(certificate.notValidAfter > Date().addingTimeInterval(59 * 86_400))
    }
}

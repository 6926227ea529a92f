import Foundation
import Hearth
import Testing

/// Hearth's errors bridge to `NSError` as Firebase's do, so code that inspects `(error as NSError)`
/// ports unchanged (issue 29: domains, codes and userInfo keys).
@Suite struct ErrorBridgingTests {
    @Test func authErrorsCarryFirebaseAuthsDomainCodeAndName() {
        let error: any Error = AuthError(serverMessage: "INVALID_PASSWORD")
        let nsError = error as NSError
        #expect(nsError.domain == "FIRAuthErrorDomain")
        #expect(nsError.code == 17009)
        #expect(AuthErrorCode(rawValue: nsError.code) == .wrongPassword)
        #expect(nsError.userInfo[AuthError.userInfoNameKey] as? String == "ERROR_WRONG_PASSWORD")
        // The server's detail, when it gave one, is the description.
        let weak = AuthError(serverMessage: "WEAK_PASSWORD : Password should be at least 6 characters") as NSError
        #expect(weak.code == 17026 && weak.localizedDescription == "Password should be at least 6 characters")
        #expect((AuthError(.networkError, "offline") as NSError).userInfo[AuthError.userInfoNameKey] as? String == "ERROR_NETWORK_REQUEST_FAILED")
    }

    @Test func databaseErrorsCarryFirebaseDatabasesDomainAndCodes() {
        let denied = DatabaseError(.permissionDenied, "Permission denied") as NSError
        #expect(denied.domain == "com.firebase" && denied.code == 1 && denied.localizedDescription == "Permission denied")
        #expect((DatabaseError(.unavailable, "down") as NSError).code == 2)
        #expect((DatabaseError(.writeCanceled, "cancelled") as NSError).code == 3)
        // Firebase gives every other status 9999.
        #expect((DatabaseError(.expiredToken, "expired") as NSError).code == 9999)
    }

    @Test func storageErrorsCarryFirebaseStoragesDomain() {
        let error = StorageError(.unauthorized, "Permission denied.", httpStatus: 403) as NSError
        #expect(error.domain == "FIRStorageErrorDomain")
        #expect(StorageErrorCode(rawValue: error.code) == .unauthorized)
        #expect(error.userInfo["ResponseErrorCode"] as? Int == 403)
    }
}

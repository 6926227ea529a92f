import HearthCore
@testable import HearthIdentity
import HearthStorage
import Testing

/// `IdentityToolkitCodec`: the exact JSON text of the answers (member order, omissions, numbers
/// versus strings), and requests decoded as Firebase reads them, including fields sent without text.
@Suite struct IdentityToolkitCodecTests {
    typealias Codec = IdentityToolkitCodec
    static let tokens = SessionTokens(idToken: "id.token", refreshToken: "refresh", expiresIn: 3600)

    static var ada: UserRecord {
        var user = UserRecord(localId: "ada", createdAt: 1_700_000_000_000)
        user.email = "ada@example.com"
        user.passwordHash = "stored"
        user.passwordUpdatedAt = 1_700_000_000_500
        user.validSince = 1_700_000_000
        return user
    }

    @Test func signInAnswersKeepFirebasesMembersAndStringNumbers() {
        #expect(Codec.signUpResponse(SignUp.Result(user: Self.ada, tokens: nil)).jsonText
            == #"{"kind":"identitytoolkit#SignupNewUserResponse","localId":"ada","email":"ada@example.com"}"#)
        #expect(Codec.signUpResponse(SignUp.Result(user: UserRecord(localId: "anon", createdAt: 0), tokens: Self.tokens)).jsonText
            == #"{"kind":"identitytoolkit#SignupNewUserResponse","localId":"anon","idToken":"id.token","refreshToken":"refresh","expiresIn":"3600"}"#)
        // `displayName` is always there, empty when the user has none; `profilePicture` only with a photo.
        #expect(Codec.verifyPasswordResponse(SignInResult(user: Self.ada, tokens: Self.tokens)).jsonText
            == #"{"kind":"identitytoolkit#VerifyPasswordResponse","registered":true,"localId":"ada","email":"ada@example.com","displayName":"","idToken":"id.token","refreshToken":"refresh","expiresIn":"3600"}"#)
        #expect(Codec.verifyCustomTokenResponse(SignInResult(user: Self.ada, tokens: Self.tokens, isNewUser: true)).jsonText
            == #"{"kind":"identitytoolkit#VerifyCustomTokenResponse","isNewUser":true,"idToken":"id.token","refreshToken":"refresh","expiresIn":"3600"}"#)
        #expect(Codec.emailLinkSigninResponse(SignInResult(user: Self.ada, tokens: Self.tokens)).jsonText
            == #"{"kind":"identitytoolkit#EmailLinkSigninResponse","localId":"ada","email":"ada@example.com","idToken":"id.token","refreshToken":"refresh","expiresIn":"3600","isNewUser":false}"#)
        #expect(Codec.tokenResponse(TokenRefresh.Result(tokens: Self.tokens, localId: "ada")).jsonText
            == #"{"id_token":"id.token","access_token":"id.token","expires_in":"3600","refresh_token":"refresh","token_type":"Bearer","user_id":"ada","project_id":"12345"}"#)
    }

    @Test func accountAnswersRedactTheHashAndOmitWhatIsMissing() {
        #expect(Codec.getAccountInfoResponse([]).jsonText == #"{"kind":"identitytoolkit#GetAccountInfoResponse"}"#)
        #expect(Codec.userInfo(Self.ada).jsonText
            == #"{"localId":"ada","email":"ada@example.com","emailVerified":false,"passwordHash":"UkVEQUNURUQ=","passwordUpdatedAt":1700000000500,"providerUserInfo":[{"providerId":"password","email":"ada@example.com","federatedId":"ada@example.com","rawId":"ada@example.com"}],"validSince":"1700000000","disabled":false,"createdAt":"1700000000000"}"#)
        #expect(Codec.setAccountInfoResponse(.oobCodeApplied(Self.ada)).jsonText
            == #"{"kind":"identitytoolkit#SetAccountInfoResponse","localId":"ada","email":"ada@example.com","emailVerified":false,"providerUserInfo":[{"providerId":"password","email":"ada@example.com","federatedId":"ada@example.com","rawId":"ada@example.com"}]}"#)
        #expect(Codec.setAccountInfoResponse(.updated(UserRecord(localId: "x", createdAt: 0), tokens: nil)).jsonText
            == #"{"kind":"identitytoolkit#SetAccountInfoResponse","localId":"x","emailVerified":false,"providerUserInfo":[]}"#)
        #expect(Codec.getOobConfirmationCodeResponse(SendOobCode.Result(email: "ada@example.com")).jsonText
            == #"{"kind":"identitytoolkit#GetOobConfirmationCodeResponse","email":"ada@example.com"}"#)
        #expect(Codec.batchDeleteAccountsResponse([]).jsonText == #"{"kind":"identitytoolkit#BatchDeleteAccountsResponse"}"#)
        #expect(Codec.uploadAccountResponse([BatchCreate.Refusal(index: 2, message: "email is invalid")]).jsonText
            == #"{"kind":"identitytoolkit#UploadAccountResponse","error":[{"index":2,"message":"email is invalid"}]}"#)
        #expect(Codec.queryAccountsResponse(AccountQuery.Result(count: 3, users: nil)).jsonText == #"{"recordsCount":"3"}"#)
    }

    @Test func errorsUseFirebasesEnvelope() {
        #expect(IdentityError.emailNotFound.body.jsonText
            == #"{"error":{"code":400,"message":"EMAIL_NOT_FOUND","errors":[{"message":"EMAIL_NOT_FOUND","reason":"invalid","domain":"global"}]}}"#)
        #expect(IdentityError.weakPassword.firebaseCode == "WEAK_PASSWORD")
        #expect(IdentityError.notFound.body.jsonText
            == #"{"error":{"code":404,"message":"Not Found","errors":[{"message":"Not Found","reason":"notFound"}],"status":"NOT_FOUND"}}"#)
    }

    @Test func fieldsSentWithoutTextAreTold() throws {
        // A client may not name a localId at all; an idToken without text is an empty (missing) token.
        let signUp = Codec.signUp(try IdentityRequestBody(json: Array(#"{"localId":["x"],"idToken":{},"email":["y"]}"#.utf8)))
        #expect(signUp.localId == nil && signUp.namesLocalId)
        #expect(signUp.idToken == "")
        #expect(signUp.email == nil && signUp.isPasswordAccount)
        let anonymous = Codec.signUp(IdentityRequestBody())
        #expect(!anonymous.namesLocalId && !anonymous.isPasswordAccount && anonymous.idToken == nil)
        // displayName: text sets it, empty text or null removes it, anything else leaves it.
        let update = Codec.accountUpdate(try IdentityRequestBody(json: Array(#"{"displayName":"","photoUrl":5,"customAttributes":[],"validSince":"17"}"#.utf8)))
        #expect(update.displayName == .remove)
        #expect(update.photoUrl == nil)
        #expect(update.customAttributes == nil && update.namesCustomAttributes)
        #expect(update.validSince == 17)
        #expect(Codec.accountUpdate(try IdentityRequestBody(json: Array(#"{"displayName":null}"#.utf8))).displayName == .remove)
        #expect(Codec.tokenRefresh(IdentityRequestBody(form: "grant_type=refresh_token&refresh_token=abc")).refreshToken == "abc")
        #expect(throws: IdentityError.invalidMaxResults) { try Codec.accountDownload(IdentityRequestBody(form: "maxResults=abc")) }
    }
}

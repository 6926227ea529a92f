// FirebaseAuth's Swift API, used the way Firebase declares it, against `import Hearth` alone.
//
// Never-called functions that only have to type-check, then offline tests. Each use of a `same` row of
// docs/compatibility.md follows a `// API: <ID>` line (checked by scripts/check-api-inventory.py).

import Foundation
import Hearth
import Testing

/// Synchronous code: the completion-handler forms, listeners, properties.
func authAPIs(credential: AuthCredential) throws {
    // API: Auth
    // API: Auth.auth()
    let auth: Auth = Auth.auth()
    // API: Auth.useEmulator(withHost:port:)
    auth.useEmulator(withHost: "127.0.0.1", port: 9099)
    // API: Auth.languageCode
    auth.languageCode = "fr"
    let _: String? = auth.languageCode
    // API: Auth.useAppLanguage()
    auth.useAppLanguage()
    // API: Auth.currentUser
    // API: User
    let _: User? = auth.currentUser

    // API: Auth.signIn(withCustomToken:completion:)
    auth.signIn(withCustomToken: "token") { result, error in
        let _: AuthDataResult? = result
        let _: (any Error)? = error
    }
    // API: Auth.confirmPasswordReset(withCode:newPassword:completion:)
    auth.confirmPasswordReset(withCode: "code", newPassword: "new password") { error in
        let _: (any Error)? = error
    }
    // API: Auth.checkActionCode(_:completion:)
    auth.checkActionCode("code") { info, error in
        let _: (any Error)? = error
        guard let info else { return }
        // API: ActionCodeInfo.operation
        let _: ActionCodeOperation = info.operation
        // API: ActionCodeInfo.email
        let _: String = info.email
        // API: ActionCodeInfo.previousEmail
        let _: String? = info.previousEmail
    }
    // API: Auth.verifyPasswordResetCode(_:completion:)
    auth.verifyPasswordResetCode("code") { email, error in
        let _: String? = email
        let _: (any Error)? = error
    }
    // API: Auth.applyActionCode(_:completion:)
    auth.applyActionCode("code") { error in
        let _: (any Error)? = error
    }
    // API: Auth.sendPasswordReset(withEmail:completion:)
    auth.sendPasswordReset(withEmail: "ada@example.com") { error in
        let _: (any Error)? = error
    }
    // API: Auth.sendPasswordReset(withEmail:completion:)
    auth.sendPasswordReset(withEmail: "ada@example.com")
    // API: ActionCodeSettings
    // API: ActionCodeSettings.init()
    let settings = ActionCodeSettings()
    // API: ActionCodeSettings.url
    settings.url = URL(string: "https://example.com/finish")
    // API: ActionCodeSettings.handleCodeInApp
    settings.handleCodeInApp = true
    // API: ActionCodeSettings.setIOSBundleID(_:)
    settings.setIOSBundleID("com.example.app")
    // API: ActionCodeSettings.iOSBundleID
    let _: String? = settings.iOSBundleID
    // API: ActionCodeSettings.setAndroidPackageName(_:installIfNotAvailable:minimumVersion:)
    settings.setAndroidPackageName("com.example.android", installIfNotAvailable: true, minimumVersion: "12")
    // API: ActionCodeSettings.androidPackageName
    let _: String? = settings.androidPackageName
    // API: ActionCodeSettings.androidMinimumVersion
    let _: String? = settings.androidMinimumVersion
    // API: ActionCodeSettings.androidInstallIfNotAvailable
    let _: Bool = settings.androidInstallIfNotAvailable
    // API: ActionCodeSettings.linkDomain
    settings.linkDomain = "example.page.link"
    // API: Auth.sendPasswordReset(withEmail:actionCodeSettings:completion:)
    auth.sendPasswordReset(withEmail: "ada@example.com", actionCodeSettings: settings) { error in
        let _: (any Error)? = error
    }
    // API: Auth.signOut()
    try auth.signOut()

    // API: Auth.addStateDidChangeListener(_:)
    let handle = auth.addStateDidChangeListener { auth, user in
        let _: Auth = auth
        let _: User? = user
    }
    // API: Auth.removeStateDidChangeListener(_:)
    auth.removeStateDidChangeListener(handle)
    // API: Auth.addIDTokenDidChangeListener(_:)
    let tokenHandle = auth.addIDTokenDidChangeListener { auth, user in
        let _: Auth = auth
        let _: User? = user
    }
    // API: Auth.removeIDTokenDidChangeListener(_:)
    auth.removeIDTokenDidChangeListener(tokenHandle)

    // API: AuthCredential
    // API: EmailAuthProvider
    // API: EmailAuthProvider.credential(withEmail:password:)
    let emailCredential: AuthCredential = EmailAuthProvider.credential(withEmail: "ada@example.com", password: "secret")
    // API: AuthCredential.provider
    let _: String = emailCredential.provider
    // API: EmailAuthProvider.id
    let _: String = EmailAuthProvider.id

    guard let user = auth.currentUser else { return }
    userAPIs(user: user, settings: settings)
}

func userAPIs(user: User, settings: ActionCodeSettings) {
    // API: User.uid
    let _: String = user.uid
    // API: User.providerID
    let _: String = user.providerID
    // API: User.email
    let _: String? = user.email
    // API: User.phoneNumber
    let _: String? = user.phoneNumber
    // API: User.isAnonymous
    let _: Bool = user.isAnonymous
    // API: User.isEmailVerified
    let _: Bool = user.isEmailVerified
    // API: User.refreshToken
    let _: String? = user.refreshToken
    // API: User.providerData
    // API: UserInfo
    let infos: [any UserInfo] = user.providerData
    for info in infos {
        // API: UserInfo.providerID
        let _: String = info.providerID
        // API: UserInfo.uid
        let _: String = info.uid
        // API: UserInfo.displayName
        let _: String? = info.displayName
        // API: UserInfo.photoURL
        let _: URL? = info.photoURL
        // API: UserInfo.email
        let _: String? = info.email
        // API: UserInfo.phoneNumber
        let _: String? = info.phoneNumber
    }
    // API: UserInfo
    let _: any UserInfo = user
    // API: User.metadata
    // API: UserMetadata
    let metadata: UserMetadata = user.metadata
    // API: UserMetadata.creationDate
    let _: Date? = metadata.creationDate
    // API: UserMetadata.lastSignInDate
    let _: Date? = metadata.lastSignInDate

    // API: User.updateEmail(to:completion:)
    user.updateEmail(to: "ada@example.org") { error in
        let _: (any Error)? = error
    }
    // API: User.updatePassword(to:completion:)
    user.updatePassword(to: "new secret") { error in
        let _: (any Error)? = error
    }
    // API: User.updatePassword(to:completion:)
    user.updatePassword(to: "new secret")
    // API: User.createProfileChangeRequest()
    // API: UserProfileChangeRequest
    let change: UserProfileChangeRequest = user.createProfileChangeRequest()
    // API: UserProfileChangeRequest.displayName
    change.displayName = "Ada"
    // API: UserProfileChangeRequest.photoURL
    change.photoURL = URL(string: "https://example.com/ada.png")
    // API: UserProfileChangeRequest.commitChanges(completion:)
    change.commitChanges { error in
        let _: (any Error)? = error
    }
    // API: User.reload(completion:)
    user.reload { error in
        let _: (any Error)? = error
    }
    // API: User.reload(completion:)
    user.reload()
    // API: User.sendEmailVerification(with:completion:)
    user.sendEmailVerification { error in
        let _: (any Error)? = error
    }
    // API: User.sendEmailVerification(with:completion:)
    user.sendEmailVerification(with: settings) { _ in }
    // API: User.sendEmailVerification(with:completion:)
    user.sendEmailVerification()
    // API: User.sendEmailVerification(beforeUpdatingEmail:actionCodeSettings:completion:)
    user.sendEmailVerification(beforeUpdatingEmail: "ada@example.org") { error in
        let _: (any Error)? = error
    }
    // API: User.sendEmailVerification(beforeUpdatingEmail:actionCodeSettings:completion:)
    user.sendEmailVerification(beforeUpdatingEmail: "ada@example.org", actionCodeSettings: settings, completion: nil)
    // API: User.delete(completion:)
    user.delete { error in
        let _: (any Error)? = error
    }
    // API: User.getIDToken(completion:)
    user.getIDToken { token, error in
        let _: String? = token
        let _: (any Error)? = error
    }
    // API: User.getIDTokenForcingRefresh(_:completion:)
    user.getIDTokenForcingRefresh(true) { token, error in
        let _: String? = token
        let _: (any Error)? = error
    }
    // API: User.getIDTokenResult(completion:)
    user.getIDTokenResult { result, error in
        let _: (any Error)? = error
        guard let result else { return }
        tokenResultAPIs(result)
    }
    // API: User.getIDTokenResult(forcingRefresh:completion:)
    user.getIDTokenResult(forcingRefresh: true) { result, _ in
        let _: AuthTokenResult? = result
    }
}

func tokenResultAPIs(_ result: AuthTokenResult) {
    // API: AuthTokenResult
    let r: AuthTokenResult = result
    // API: AuthTokenResult.token
    let _: String = r.token
    // API: AuthTokenResult.expirationDate
    let _: Date = r.expirationDate
    // API: AuthTokenResult.authDate
    let _: Date = r.authDate
    // API: AuthTokenResult.issuedAtDate
    let _: Date = r.issuedAtDate
    // API: AuthTokenResult.signInProvider
    let _: String = r.signInProvider
    // API: AuthTokenResult.claims
    let _: Bool? = r.claims["admin"] as? Bool
}

func authDataResultAPIs(_ result: AuthDataResult) {
    // API: AuthDataResult.user
    let _: User = result.user
    // API: AuthDataResult.credential
    _ = result.credential
    // API: AuthDataResult.additionalUserInfo
    // API: AdditionalUserInfo
    if let info: AdditionalUserInfo = result.additionalUserInfo {
        // API: AdditionalUserInfo.providerID
        let _: String = info.providerID
        // API: AdditionalUserInfo.profile
        let _: [String: Any]? = info.profile
        // API: AdditionalUserInfo.username
        let _: String? = info.username
        // API: AdditionalUserInfo.isNewUser
        let _: Bool = info.isNewUser
        // API: AdditionalUserInfo.newUser()
        let _: Bool = info.newUser()
    }
}

/// Async code: the hand-written async forms, and synchronous calls without `await`.
func authAPIsAsync(credential: AuthCredential, settings: ActionCodeSettings) async throws {
    let auth = Auth.auth()
    // API: Auth.createUser(withEmail:password:) async
    let created: AuthDataResult = try await auth.createUser(withEmail: "ada@example.com", password: "secret")
    authDataResultAPIs(created)
    // API: Auth.signIn(withEmail:password:) async
    try await auth.signIn(withEmail: "ada@example.com", password: "secret")
    // API: Auth.signIn(with:) async
    try await auth.signIn(with: credential)
    // API: Auth.signInAnonymously() async
    let anonymous = try await auth.signInAnonymously()
    _ = anonymous.user.uid
    // API: Auth.signIn(withCustomToken:) async
    try await auth.signIn(withCustomToken: "token")
    // API: Auth.confirmPasswordReset(withCode:newPassword:) async
    try await auth.confirmPasswordReset(withCode: "code", newPassword: "new secret")
    // API: Auth.checkActionCode(_:) async
    let info: ActionCodeInfo = try await auth.checkActionCode("code")
    // API: ActionCodeInfo.operation
    // API: ActionCodeOperation.passwordReset
    if info.operation == .passwordReset {}
    // API: Auth.verifyPasswordResetCode(_:) async
    let _: String = try await auth.verifyPasswordResetCode("code")
    // API: Auth.applyActionCode(_:) async
    try await auth.applyActionCode("code")
    // API: Auth.sendPasswordReset(withEmail:actionCodeSettings:) async
    try await auth.sendPasswordReset(withEmail: "ada@example.com")
    // API: Auth.sendPasswordReset(withEmail:actionCodeSettings:) async
    try await auth.sendPasswordReset(withEmail: "ada@example.com", actionCodeSettings: settings)

    guard let user = auth.currentUser else { return }
    // API: User.updateEmail(to:) async
    try await user.updateEmail(to: "ada@example.org")
    // API: User.updatePassword(to:) async
    try await user.updatePassword(to: "newer secret")
    // API: User.reload() async
    try await user.reload()
    // API: User.reauthenticate(with:) async
    try await user.reauthenticate(with: credential)
    // API: User.link(with:) async
    try await user.link(with: credential)
    // API: User.sendEmailVerification(with:) async
    try await user.sendEmailVerification()
    // API: User.sendEmailVerification(with:) async
    try await user.sendEmailVerification(with: settings)
    // API: User.sendEmailVerification(beforeUpdatingEmail:actionCodeSettings:) async
    try await user.sendEmailVerification(beforeUpdatingEmail: "ada@example.org")
    // API: User.sendEmailVerification(beforeUpdatingEmail:actionCodeSettings:) async
    try await user.sendEmailVerification(beforeUpdatingEmail: "ada@example.org", actionCodeSettings: settings)
    // API: User.getIDToken(forcingRefresh:) async
    let _: String = try await user.getIDToken()
    // API: User.getIDToken(forcingRefresh:) async
    let _: String = try await user.getIDToken(forcingRefresh: true)
    // API: User.idTokenForcingRefresh(_:) async
    let _: String = try await user.idTokenForcingRefresh(false)
    // API: User.getIDTokenResult(forcingRefresh:) async
    let result: AuthTokenResult = try await user.getIDTokenResult()
    // API: User.getIDTokenResult(forcingRefresh:) async
    let _: AuthTokenResult = try await user.getIDTokenResult(forcingRefresh: true)
    tokenResultAPIs(result)

    // Synchronous calls in async code, without `await`.
    // API: User.createProfileChangeRequest()
    let change = user.createProfileChangeRequest()
    // API: UserProfileChangeRequest.displayName
    change.displayName = "Ada Lovelace"
    // API: UserProfileChangeRequest.commitChanges() async
    try await change.commitChanges()
    // API: Auth.addStateDidChangeListener(_:)
    let handle = auth.addStateDidChangeListener { _, _ in }
    // API: Auth.removeStateDidChangeListener(_:)
    auth.removeStateDidChangeListener(handle)
    // API: User.delete() async
    try await user.delete()
    // API: Auth.signOut()
    try auth.signOut()

    // Matching errors as Firebase's documentation does.
    do {
        try await auth.signIn(withEmail: "ada@example.com", password: "wrong")
    } catch {
        let nsError = error as NSError
        // API: AuthErrorDomain
        // API: AuthErrorCode.init(rawValue:)
        if nsError.domain == AuthErrorDomain, let code = AuthErrorCode(rawValue: nsError.code) {
            switch code {
            // API: AuthErrorCode.wrongPassword
            case .wrongPassword: break
            // API: AuthErrorCode.userNotFound
            case .userNotFound: break
            default: break
            }
        }
        // API: AuthErrorCode.invalidCredential
        if nsError.code == AuthErrorCode.invalidCredential.rawValue {}
        // API: AuthErrorUserInfoNameKey
        let _: String? = nsError.userInfo[AuthErrorUserInfoNameKey] as? String
        // API: AuthErrorUserInfoEmailKey
        let _: String? = nsError.userInfo[AuthErrorUserInfoEmailKey] as? String
        // API: AuthErrorUserInfoUpdatedCredentialKey
        let _: Any? = nsError.userInfo[AuthErrorUserInfoUpdatedCredentialKey]
        // API: AuthErrorUserInfoMultiFactorResolverKey
        let _: Any? = nsError.userInfo[AuthErrorUserInfoMultiFactorResolverKey]
        // API: AuthErrorCode
        // API: AuthErrorCode.code
        if let code = error as? AuthErrorCode, code.code == .networkError {}
    }
}

/// `AuthErrorCode` is an `Error` in Firebase: it can be thrown and caught as itself.
func throwsAuthErrorCode() throws {
    // API: AuthErrorCode
    // API: AuthErrorCode.internalError
    throw AuthErrorCode.internalError
}

/// Listener handles kept in a property, as a view controller keeps them.
final class SignInScreen {
    // API: AuthStateDidChangeListenerHandle
    var authHandle: AuthStateDidChangeListenerHandle?
    // API: IDTokenDidChangeListenerHandle
    var tokenHandle: IDTokenDidChangeListenerHandle?

    func appear() {
        authHandle = Auth.auth().addStateDidChangeListener { _, _ in }
        tokenHandle = Auth.auth().addIDTokenDidChangeListener { _, _ in }
    }

    func disappear() {
        if let authHandle { Auth.auth().removeStateDidChangeListener(authHandle) }
        if let tokenHandle { Auth.auth().removeIDTokenDidChangeListener(tokenHandle) }
    }
}

/// Sign-in forms with their completion defaulted, email links, listeners as sequences and
/// notifications, unlinking, action links.
func authSignInAndLinkAPIs(auth: Auth, user: User, credential: AuthCredential, settings: ActionCodeSettings) {
    // API: Auth.signIn(withEmail:password:completion:)
    auth.signIn(withEmail: "ada@example.com", password: "secret")
    auth.signIn(withEmail: "ada@example.com", password: "secret") { result, error in
        let _: AuthDataResult? = result
        let _: (any Error)? = error
    }
    // API: Auth.signIn(with:completion:)
    auth.signIn(with: credential)
    auth.signIn(with: credential) { result, _ in
        // API: AuthDataResult
        let _: AuthDataResult? = result
    }
    // API: Auth.signInAnonymously(completion:)
    auth.signInAnonymously()
    // API: Auth.createUser(withEmail:password:completion:)
    auth.createUser(withEmail: "ada@example.com", password: "secret")
    auth.createUser(withEmail: "ada@example.com", password: "secret") { result, error in
        let _: String? = result?.user.uid
        let _: (any Error)? = error
    }
    // API: Auth.sendSignInLink(toEmail:actionCodeSettings:completion:)
    auth.sendSignInLink(toEmail: "ada@example.com", actionCodeSettings: settings) { error in
        let _: (any Error)? = error
    }
    // API: Auth.isSignIn(withEmailLink:)
    let link = "https://example.com/?mode=signIn&oobCode=code"
    if auth.isSignIn(withEmailLink: link) {
        // API: Auth.signIn(withEmail:link:completion:)
        auth.signIn(withEmail: "ada@example.com", link: link) { result, error in
            let _: AuthDataResult? = result
            let _: (any Error)? = error
        }
    }
    // API: EmailAuthProvider.credential(withEmail:link:)
    let linkCredential: AuthCredential = EmailAuthProvider.credential(withEmail: "ada@example.com", link: link)
    // API: User.reauthenticate(with:completion:)
    user.reauthenticate(with: linkCredential)
    user.reauthenticate(with: credential) { result, error in
        let _: AuthDataResult? = result
        let _: (any Error)? = error
    }
    // API: User.link(with:completion:)
    user.link(with: credential)
    user.link(with: credential) { result, _ in
        let _: AuthDataResult? = result
    }
    // API: User.unlink(fromProvider:completion:)
    // API: EmailAuthProviderID
    user.unlink(fromProvider: EmailAuthProviderID) { user, error in
        let _: User? = user
        let _: (any Error)? = error
    }
    // API: EmailPasswordAuthSignInMethod
    // API: EmailLinkAuthSignInMethod
    let _: [String] = [EmailPasswordAuthSignInMethod, EmailLinkAuthSignInMethod]
    // API: User.anonymous()
    let _: Bool = user.anonymous()
    // API: User.emailVerified()
    let _: Bool = user.emailVerified()
    // API: User.displayName
    user.displayName = "Ada"
    let _: String? = user.displayName
    // API: User.photoURL
    user.photoURL = URL(string: "https://example.com/ada.png")
    let _: URL? = user.photoURL
    // API: Auth.settings
    // API: AuthSettings
    let authSettings: AuthSettings? = auth.settings
    // API: AuthSettings.appVerificationDisabledForTesting
    auth.settings?.appVerificationDisabledForTesting = true
    // API: AuthSettings.isAppVerificationDisabledForTesting
    let _: Bool? = authSettings?.isAppVerificationDisabledForTesting
    // API: Auth.tenantID
    auth.tenantID = nil
    let _: String? = auth.tenantID
    // API: OAuthCredential
    if let oauth = credential as? OAuthCredential {
        // API: OAuthCredential.idToken
        let _: String? = oauth.idToken
        // API: OAuthCredential.accessToken
        let _: String? = oauth.accessToken
        // API: OAuthCredential.secret
        let _: String? = oauth.secret
    }
    // API: Auth.updateCurrentUser(_:completion:)
    auth.updateCurrentUser(user) { error in
        let _: (any Error)? = error
    }
    // API: Auth.authStateDidChangeNotification
    // API: NSNotification.Name.AuthStateDidChange
    let names: [NSNotification.Name] = [Auth.authStateDidChangeNotification, .AuthStateDidChange]
    _ = NotificationCenter.default.addObserver(forName: names[0], object: nil, queue: nil) { _ in }
    // API: ActionCodeURL
    // API: ActionCodeURL.init(link:)
    if let action: ActionCodeURL = ActionCodeURL(link: link) {
        // API: ActionCodeURL.apiKey
        let _: String? = action.apiKey
        // API: ActionCodeURL.operation
        let _: ActionCodeOperation = action.operation
        // API: ActionCodeURL.code
        let _: String? = action.code
        // API: ActionCodeURL.continueURL
        let _: URL? = action.continueURL
        // API: ActionCodeURL.languageCode
        let _: String? = action.languageCode
    }
}

func authSignInAndLinkAPIsAsync(auth: Auth, user: User, settings: ActionCodeSettings) async throws {
    // API: Auth.sendSignInLink(toEmail:actionCodeSettings:) async
    try await auth.sendSignInLink(toEmail: "ada@example.com", actionCodeSettings: settings)
    // API: Auth.signIn(withEmail:link:) async
    let result = try await auth.signIn(withEmail: "ada@example.com", link: "https://example.com/?mode=signIn&oobCode=code")
    // API: Auth.updateCurrentUser(_:) async
    try await auth.updateCurrentUser(result.user)
    // API: User.unlink(fromProvider:) async
    let _: User = try await user.unlink(fromProvider: EmailAuthProviderID)
    // API: Auth.authStateChanges
    // API: Auth.AuthStateChangesSequence
    let states: Auth.AuthStateChangesSequence = auth.authStateChanges
    for await user in states {
        let _: User? = user
        break
    }
    // API: Auth.idTokenChanges
    // API: Auth.IDTokenChangesSequence
    let tokens: Auth.IDTokenChangesSequence = Auth.IDTokenChangesSequence(auth)
    for await user in tokens where user != nil { break }
    _ = auth.idTokenChanges
    // API: ActionCodeInfo
    let info: ActionCodeInfo = try await auth.checkActionCode("code")
    let _: ActionCodeOperation = info.operation
    // API: AuthTokenResult.signInSecondFactor
    let _: String = try await user.getIDTokenResult().signInSecondFactor
}

@Suite("FirebaseAuth API, offline")
struct AuthAPIOfflineTests {
    @Test("Hearth's auth errors bridge to Firebase's NSError domain, code and name key")
    func authErrorBridging() throws {
        let error: any Error = AuthError(.userNotFound, "EMAIL_NOT_FOUND")
        let nsError = error as NSError
        // API: AuthErrorDomain
        #expect(nsError.domain == AuthErrorDomain)
        // API: AuthErrors.domain
        #expect(nsError.domain == AuthErrors.domain)
        // API: AuthErrorCode.userNotFound
        #expect(nsError.code == AuthErrorCode.userNotFound.rawValue)
        // API: AuthErrorCode.init(rawValue:)
        #expect(AuthErrorCode(rawValue: nsError.code) == .userNotFound)
        // API: AuthErrorUserInfoNameKey
        #expect(nsError.userInfo[AuthErrorUserInfoNameKey] as? String == "ERROR_USER_NOT_FOUND")
        #expect(!nsError.localizedDescription.isEmpty)
    }

    @Test("The error constants have Firebase's values")
    func errorConstants() {
        // API: AuthErrorDomain
        #expect(AuthErrorDomain == "FIRAuthErrorDomain")
        // API: AuthErrorUserInfoNameKey
        #expect(AuthErrorUserInfoNameKey == "FIRAuthErrorUserInfoNameKey")
        // API: AuthErrorUserInfoEmailKey
        #expect(AuthErrorUserInfoEmailKey == "FIRAuthErrorUserInfoEmailKey")
        // API: AuthErrorUserInfoUpdatedCredentialKey
        #expect(AuthErrorUserInfoUpdatedCredentialKey == "FIRAuthErrorUserInfoUpdatedCredentialKey")
        // API: AuthErrorUserInfoMultiFactorResolverKey
        #expect(AuthErrorUserInfoMultiFactorResolverKey == "FIRAuthErrorUserInfoMultiFactorResolverKey")
        // API: AuthErrors
        // API: AuthErrors.domain
        #expect(AuthErrors.domain == "FIRAuthErrorDomain")
        // API: AuthErrors.userInfoNameKey
        #expect(AuthErrors.userInfoNameKey == AuthErrorUserInfoNameKey)
        // API: AuthErrors.userInfoEmailKey
        #expect(AuthErrors.userInfoEmailKey == AuthErrorUserInfoEmailKey)
        // API: AuthErrors.userInfoUpdatedCredentialKey
        #expect(AuthErrors.userInfoUpdatedCredentialKey == AuthErrorUserInfoUpdatedCredentialKey)
        // API: AuthErrors.userInfoMultiFactorResolverKey
        #expect(AuthErrors.userInfoMultiFactorResolverKey == AuthErrorUserInfoMultiFactorResolverKey)
    }

    @Test("AuthErrorCode is an Error whose code is itself")
    func authErrorCodeIsAnError() {
        // API: AuthErrorCode
        let error: any Error = AuthErrorCode.weakPassword
        // API: AuthErrorCode.code
        // API: AuthErrorCode.weakPassword
        #expect((error as? AuthErrorCode)?.code == .weakPassword)
    }

    @Test("ActionCodeOperation has Firebase's raw values")
    func actionCodeOperationRawValues() {
        // API: ActionCodeOperation
        // API: ActionCodeOperation.unknown
        #expect(ActionCodeOperation.unknown.rawValue == 0)
        // API: ActionCodeOperation.passwordReset
        #expect(ActionCodeOperation.passwordReset.rawValue == 1)
        // API: ActionCodeOperation.verifyEmail
        #expect(ActionCodeOperation.verifyEmail.rawValue == 2)
        // API: ActionCodeOperation.recoverEmail
        #expect(ActionCodeOperation.recoverEmail.rawValue == 3)
        // API: ActionCodeOperation.emailLink
        #expect(ActionCodeOperation.emailLink.rawValue == 4)
        // API: ActionCodeOperation.verifyAndChangeEmail
        #expect(ActionCodeOperation.verifyAndChangeEmail.rawValue == 5)
        // API: ActionCodeOperation.revertSecondFactorAddition
        #expect(ActionCodeOperation.revertSecondFactorAddition.rawValue == 6)
    }

    @Test("ActionCodeSettings is a class whose setters fill Firebase's properties")
    func actionCodeSettings() {
        // API: ActionCodeSettings.init()
        let settings = ActionCodeSettings()
        let same = settings
        // API: ActionCodeSettings.handleCodeInApp
        #expect(settings.handleCodeInApp == false)
        same.handleCodeInApp = true
        #expect(settings.handleCodeInApp)
        // API: ActionCodeSettings.setIOSBundleID(_:)
        settings.setIOSBundleID("com.example.app")
        // API: ActionCodeSettings.iOSBundleID
        #expect(settings.iOSBundleID == "com.example.app")
        // API: ActionCodeSettings.setAndroidPackageName(_:installIfNotAvailable:minimumVersion:)
        settings.setAndroidPackageName("com.example.android", installIfNotAvailable: true, minimumVersion: "12")
        // API: ActionCodeSettings.androidPackageName
        #expect(settings.androidPackageName == "com.example.android")
        // API: ActionCodeSettings.androidInstallIfNotAvailable
        #expect(settings.androidInstallIfNotAvailable)
        // API: ActionCodeSettings.androidMinimumVersion
        #expect(settings.androidMinimumVersion == "12")
        // API: ActionCodeSettings.url
        settings.url = URL(string: "https://example.com")
        #expect(settings.url?.host == "example.com")
    }

    @Test("EmailAuthProvider's credential names the password provider")
    func emailCredential() {
        // API: EmailAuthProvider.credential(withEmail:password:)
        // API: AuthCredential.provider
        // API: EmailAuthProvider.id
        #expect(EmailAuthProvider.credential(withEmail: "ada@example.com", password: "secret").provider == EmailAuthProvider.id)
        #expect(EmailAuthProvider.id == "password")
    }

    @Test("AuthErrorCode has Firebase's 91 cases and raw values")
    func authErrorCodeRawValues() {
        // API: AuthErrorCode.invalidCustomToken
        #expect(AuthErrorCode.invalidCustomToken.rawValue == 17000)
        // API: AuthErrorCode.customTokenMismatch
        #expect(AuthErrorCode.customTokenMismatch.rawValue == 17002)
        // API: AuthErrorCode.invalidCredential
        #expect(AuthErrorCode.invalidCredential.rawValue == 17004)
        // API: AuthErrorCode.userDisabled
        #expect(AuthErrorCode.userDisabled.rawValue == 17005)
        // API: AuthErrorCode.operationNotAllowed
        #expect(AuthErrorCode.operationNotAllowed.rawValue == 17006)
        // API: AuthErrorCode.emailAlreadyInUse
        #expect(AuthErrorCode.emailAlreadyInUse.rawValue == 17007)
        // API: AuthErrorCode.invalidEmail
        #expect(AuthErrorCode.invalidEmail.rawValue == 17008)
        // API: AuthErrorCode.wrongPassword
        #expect(AuthErrorCode.wrongPassword.rawValue == 17009)
        // API: AuthErrorCode.tooManyRequests
        #expect(AuthErrorCode.tooManyRequests.rawValue == 17010)
        // API: AuthErrorCode.userNotFound
        #expect(AuthErrorCode.userNotFound.rawValue == 17011)
        // API: AuthErrorCode.accountExistsWithDifferentCredential
        #expect(AuthErrorCode.accountExistsWithDifferentCredential.rawValue == 17012)
        // API: AuthErrorCode.requiresRecentLogin
        #expect(AuthErrorCode.requiresRecentLogin.rawValue == 17014)
        // API: AuthErrorCode.providerAlreadyLinked
        #expect(AuthErrorCode.providerAlreadyLinked.rawValue == 17015)
        // API: AuthErrorCode.noSuchProvider
        #expect(AuthErrorCode.noSuchProvider.rawValue == 17016)
        // API: AuthErrorCode.invalidUserToken
        #expect(AuthErrorCode.invalidUserToken.rawValue == 17017)
        // API: AuthErrorCode.networkError
        #expect(AuthErrorCode.networkError.rawValue == 17020)
        // API: AuthErrorCode.userTokenExpired
        #expect(AuthErrorCode.userTokenExpired.rawValue == 17021)
        // API: AuthErrorCode.invalidAPIKey
        #expect(AuthErrorCode.invalidAPIKey.rawValue == 17023)
        // API: AuthErrorCode.userMismatch
        #expect(AuthErrorCode.userMismatch.rawValue == 17024)
        // API: AuthErrorCode.credentialAlreadyInUse
        #expect(AuthErrorCode.credentialAlreadyInUse.rawValue == 17025)
        // API: AuthErrorCode.weakPassword
        #expect(AuthErrorCode.weakPassword.rawValue == 17026)
        // API: AuthErrorCode.appNotAuthorized
        #expect(AuthErrorCode.appNotAuthorized.rawValue == 17028)
        // API: AuthErrorCode.expiredActionCode
        #expect(AuthErrorCode.expiredActionCode.rawValue == 17029)
        // API: AuthErrorCode.invalidActionCode
        #expect(AuthErrorCode.invalidActionCode.rawValue == 17030)
        // API: AuthErrorCode.invalidMessagePayload
        #expect(AuthErrorCode.invalidMessagePayload.rawValue == 17031)
        // API: AuthErrorCode.invalidSender
        #expect(AuthErrorCode.invalidSender.rawValue == 17032)
        // API: AuthErrorCode.invalidRecipientEmail
        #expect(AuthErrorCode.invalidRecipientEmail.rawValue == 17033)
        // API: AuthErrorCode.missingEmail
        #expect(AuthErrorCode.missingEmail.rawValue == 17034)
        // API: AuthErrorCode.missingIosBundleID
        #expect(AuthErrorCode.missingIosBundleID.rawValue == 17036)
        // API: AuthErrorCode.missingAndroidPackageName
        #expect(AuthErrorCode.missingAndroidPackageName.rawValue == 17037)
        // API: AuthErrorCode.unauthorizedDomain
        #expect(AuthErrorCode.unauthorizedDomain.rawValue == 17038)
        // API: AuthErrorCode.invalidContinueURI
        #expect(AuthErrorCode.invalidContinueURI.rawValue == 17039)
        // API: AuthErrorCode.missingContinueURI
        #expect(AuthErrorCode.missingContinueURI.rawValue == 17040)
        // API: AuthErrorCode.missingPhoneNumber
        #expect(AuthErrorCode.missingPhoneNumber.rawValue == 17041)
        // API: AuthErrorCode.invalidPhoneNumber
        #expect(AuthErrorCode.invalidPhoneNumber.rawValue == 17042)
        // API: AuthErrorCode.missingVerificationCode
        #expect(AuthErrorCode.missingVerificationCode.rawValue == 17043)
        // API: AuthErrorCode.invalidVerificationCode
        #expect(AuthErrorCode.invalidVerificationCode.rawValue == 17044)
        // API: AuthErrorCode.missingVerificationID
        #expect(AuthErrorCode.missingVerificationID.rawValue == 17045)
        // API: AuthErrorCode.invalidVerificationID
        #expect(AuthErrorCode.invalidVerificationID.rawValue == 17046)
        // API: AuthErrorCode.missingAppCredential
        #expect(AuthErrorCode.missingAppCredential.rawValue == 17047)
        // API: AuthErrorCode.invalidAppCredential
        #expect(AuthErrorCode.invalidAppCredential.rawValue == 17048)
        // API: AuthErrorCode.sessionExpired
        #expect(AuthErrorCode.sessionExpired.rawValue == 17051)
        // API: AuthErrorCode.quotaExceeded
        #expect(AuthErrorCode.quotaExceeded.rawValue == 17052)
        // API: AuthErrorCode.missingAppToken
        #expect(AuthErrorCode.missingAppToken.rawValue == 17053)
        // API: AuthErrorCode.notificationNotForwarded
        #expect(AuthErrorCode.notificationNotForwarded.rawValue == 17054)
        // API: AuthErrorCode.appNotVerified
        #expect(AuthErrorCode.appNotVerified.rawValue == 17055)
        // API: AuthErrorCode.captchaCheckFailed
        #expect(AuthErrorCode.captchaCheckFailed.rawValue == 17056)
        // API: AuthErrorCode.webContextAlreadyPresented
        #expect(AuthErrorCode.webContextAlreadyPresented.rawValue == 17057)
        // API: AuthErrorCode.webContextCancelled
        #expect(AuthErrorCode.webContextCancelled.rawValue == 17058)
        // API: AuthErrorCode.appVerificationUserInteractionFailure
        #expect(AuthErrorCode.appVerificationUserInteractionFailure.rawValue == 17059)
        // API: AuthErrorCode.invalidClientID
        #expect(AuthErrorCode.invalidClientID.rawValue == 17060)
        // API: AuthErrorCode.webNetworkRequestFailed
        #expect(AuthErrorCode.webNetworkRequestFailed.rawValue == 17061)
        // API: AuthErrorCode.webInternalError
        #expect(AuthErrorCode.webInternalError.rawValue == 17062)
        // API: AuthErrorCode.webSignInUserInteractionFailure
        #expect(AuthErrorCode.webSignInUserInteractionFailure.rawValue == 17063)
        // API: AuthErrorCode.localPlayerNotAuthenticated
        #expect(AuthErrorCode.localPlayerNotAuthenticated.rawValue == 17066)
        // API: AuthErrorCode.nullUser
        #expect(AuthErrorCode.nullUser.rawValue == 17067)
        // API: AuthErrorCode.invalidProviderID
        #expect(AuthErrorCode.invalidProviderID.rawValue == 17071)
        // API: AuthErrorCode.tenantIDMismatch
        #expect(AuthErrorCode.tenantIDMismatch.rawValue == 17072)
        // API: AuthErrorCode.unsupportedTenantOperation
        #expect(AuthErrorCode.unsupportedTenantOperation.rawValue == 17073)
        // API: AuthErrorCode.rejectedCredential
        #expect(AuthErrorCode.rejectedCredential.rawValue == 17075)
        // API: AuthErrorCode.gameKitNotLinked
        #expect(AuthErrorCode.gameKitNotLinked.rawValue == 17076)
        // API: AuthErrorCode.secondFactorRequired
        #expect(AuthErrorCode.secondFactorRequired.rawValue == 17078)
        // API: AuthErrorCode.missingMultiFactorSession
        #expect(AuthErrorCode.missingMultiFactorSession.rawValue == 17081)
        // API: AuthErrorCode.missingMultiFactorInfo
        #expect(AuthErrorCode.missingMultiFactorInfo.rawValue == 17082)
        // API: AuthErrorCode.invalidMultiFactorSession
        #expect(AuthErrorCode.invalidMultiFactorSession.rawValue == 17083)
        // API: AuthErrorCode.multiFactorInfoNotFound
        #expect(AuthErrorCode.multiFactorInfoNotFound.rawValue == 17084)
        // API: AuthErrorCode.adminRestrictedOperation
        #expect(AuthErrorCode.adminRestrictedOperation.rawValue == 17085)
        // API: AuthErrorCode.unverifiedEmail
        #expect(AuthErrorCode.unverifiedEmail.rawValue == 17086)
        // API: AuthErrorCode.secondFactorAlreadyEnrolled
        #expect(AuthErrorCode.secondFactorAlreadyEnrolled.rawValue == 17087)
        // API: AuthErrorCode.maximumSecondFactorCountExceeded
        #expect(AuthErrorCode.maximumSecondFactorCountExceeded.rawValue == 17088)
        // API: AuthErrorCode.unsupportedFirstFactor
        #expect(AuthErrorCode.unsupportedFirstFactor.rawValue == 17089)
        // API: AuthErrorCode.emailChangeNeedsVerification
        #expect(AuthErrorCode.emailChangeNeedsVerification.rawValue == 17090)
        // API: AuthErrorCode.missingClientIdentifier
        #expect(AuthErrorCode.missingClientIdentifier.rawValue == 17093)
        // API: AuthErrorCode.missingOrInvalidNonce
        #expect(AuthErrorCode.missingOrInvalidNonce.rawValue == 17094)
        // API: AuthErrorCode.blockingCloudFunctionError
        #expect(AuthErrorCode.blockingCloudFunctionError.rawValue == 17105)
        // API: AuthErrorCode.recaptchaNotEnabled
        #expect(AuthErrorCode.recaptchaNotEnabled.rawValue == 17200)
        // API: AuthErrorCode.missingRecaptchaToken
        #expect(AuthErrorCode.missingRecaptchaToken.rawValue == 17201)
        // API: AuthErrorCode.invalidRecaptchaToken
        #expect(AuthErrorCode.invalidRecaptchaToken.rawValue == 17202)
        // API: AuthErrorCode.invalidRecaptchaAction
        #expect(AuthErrorCode.invalidRecaptchaAction.rawValue == 17203)
        // API: AuthErrorCode.missingClientType
        #expect(AuthErrorCode.missingClientType.rawValue == 17204)
        // API: AuthErrorCode.missingRecaptchaVersion
        #expect(AuthErrorCode.missingRecaptchaVersion.rawValue == 17205)
        // API: AuthErrorCode.invalidRecaptchaVersion
        #expect(AuthErrorCode.invalidRecaptchaVersion.rawValue == 17206)
        // API: AuthErrorCode.invalidReqType
        #expect(AuthErrorCode.invalidReqType.rawValue == 17207)
        // API: AuthErrorCode.recaptchaSDKNotLinked
        #expect(AuthErrorCode.recaptchaSDKNotLinked.rawValue == 17208)
        // API: AuthErrorCode.recaptchaSiteKeyMissing
        #expect(AuthErrorCode.recaptchaSiteKeyMissing.rawValue == 17209)
        // API: AuthErrorCode.recaptchaActionCreationFailed
        #expect(AuthErrorCode.recaptchaActionCreationFailed.rawValue == 17210)
        // API: AuthErrorCode.passwordDoesNotMeetRequirements
        #expect(AuthErrorCode.passwordDoesNotMeetRequirements.rawValue == 17211)
        // API: AuthErrorCode.invalidHostingLinkDomain
        #expect(AuthErrorCode.invalidHostingLinkDomain.rawValue == 17214)
        // API: AuthErrorCode.keychainError
        #expect(AuthErrorCode.keychainError.rawValue == 17995)
        // API: AuthErrorCode.internalError
        #expect(AuthErrorCode.internalError.rawValue == 17999)
        // API: AuthErrorCode.malformedJWT
        #expect(AuthErrorCode.malformedJWT.rawValue == 18000)
    }
}

import Foundation
import HearthCore
import Synchronization

/// Where an account email's link leads and which app handles it, as FirebaseAuth's
/// `ActionCodeSettings`; sent with ``Auth/sendPasswordReset(withEmail:actionCodeSettings:)`` and
/// ``User/sendEmailVerification(with:)`` (the fields of `accounts:sendOobCode`: `continueUrl`,
/// `canHandleCodeInApp`, `iOSBundleId`, `androidPackageName`, …). Hearth's server puts `url` in the
/// link as its `continueUrl` (it must be on an authorized domain); it ignores the app fields.
///
/// For example:
/// ```swift
/// let settings = ActionCodeSettings()
/// settings.url = URL(string: "https://example.com/welcome")
/// try await Auth.auth().sendPasswordReset(withEmail: email, actionCodeSettings: settings)
/// ```
open class ActionCodeSettings: @unchecked Sendable {
    private struct Fields {
        var url: URL?
        var handleCodeInApp = false
        var iOSBundleID: String?
        var androidPackageName: String?
        var androidMinimumVersion: String?
        var androidInstallIfNotAvailable = false
        var linkDomain: String?
    }

    private let fields: Mutex<Fields>

    /// The continue URL: where the link's page sends the user after the action.
    open var url: URL? {
        get { fields.withLock { $0.url } }
        set { fields.withLock { $0.url = newValue } }
    }

    /// Whether the link opens the app directly rather than the server's action page first.
    open var handleCodeInApp: Bool {
        get { fields.withLock { $0.handleCodeInApp } }
        set { fields.withLock { $0.handleCodeInApp = newValue } }
    }

    /// The iOS bundle ID (the app's own by default).
    open var iOSBundleID: String? {
        get { fields.withLock { $0.iOSBundleID } }
        set { fields.withLock { $0.iOSBundleID = newValue } }
    }

    open var androidPackageName: String? {
        get { fields.withLock { $0.androidPackageName } }
        set { fields.withLock { $0.androidPackageName = newValue } }
    }

    open var androidMinimumVersion: String? {
        get { fields.withLock { $0.androidMinimumVersion } }
        set { fields.withLock { $0.androidMinimumVersion = newValue } }
    }

    open var androidInstallIfNotAvailable: Bool {
        get { fields.withLock { $0.androidInstallIfNotAvailable } }
        set { fields.withLock { $0.androidInstallIfNotAvailable = newValue } }
    }

    /// The custom domain of links handled in the app.
    public var linkDomain: String? {
        get { fields.withLock { $0.linkDomain } }
        set { fields.withLock { $0.linkDomain = newValue } }
    }

    public init() {
        fields = Mutex(Fields(iOSBundleID: Bundle.main.bundleIdentifier))
    }

    /// Sets the Android package name, whether to install the app where it is missing, and the
    /// minimum version of the app.
    open func setAndroidPackageName(_ androidPackageName: String, installIfNotAvailable: Bool, minimumVersion: String?) {
        fields.withLock {
            $0.androidPackageName = androidPackageName
            $0.androidInstallIfNotAvailable = installIfNotAvailable
            $0.androidMinimumVersion = minimumVersion
        }
    }

    /// Sets the iOS bundle ID.
    open func setIOSBundleID(_ bundleID: String) {
        fields.withLock { $0.iOSBundleID = bundleID }
    }

    /// The settings as members of an `accounts:sendOobCode` body (Identity Toolkit's names).
    var requestMembers: [(key: String, value: JSONValue)] {
        let fields = fields.withLock { $0 }
        var members: [(key: String, value: JSONValue)] = []
        if let url = fields.url { members.append(("continueUrl", .string(url.absoluteString))) }
        if let bundle = fields.iOSBundleID { members.append(("iOSBundleId", .string(bundle))) }
        if let package = fields.androidPackageName { members.append(("androidPackageName", .string(package))) }
        if fields.androidInstallIfNotAvailable { members.append(("androidInstallApp", .bool(true))) }
        if let version = fields.androidMinimumVersion { members.append(("androidMinimumVersion", .string(version))) }
        if fields.handleCodeInApp { members.append(("canHandleCodeInApp", .bool(true))) }
        if let domain = fields.linkDomain { members.append(("linkDomain", .string(domain))) }
        return members
    }
}

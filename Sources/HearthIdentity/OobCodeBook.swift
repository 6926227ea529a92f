import Foundation
import HearthAccess
import Synchronization

/// The out-of-band codes (password reset, email verification, email change) the identity service has
/// issued and not yet used. No mail is sent: an app's admin gets the link from `returnOobLink`
/// (firebase-admin's `generate_password_reset_link`), and in emulator mode every pending code is
/// listed at `/emulator/v1/projects/{project}/oobCodes`, as Firebase's Auth emulator does.
///
/// Codes live in memory for an hour and are single-use: a restart forgets them, and the user asks for
/// a new mail (a lost code changes nothing in the account). Never logged.
///
/// For example:
/// ```swift
/// let book = OobCodeBook()
/// let code = book.issue(.init(project: "demo", localId: "u1", email: "a@b.c", requestType: "PASSWORD_RESET"), now: 0)
/// #expect(book.take(code, now: 1)?.localId == "u1")
/// ```
final class OobCodeBook: Sendable {
    struct Entry: Sendable, Equatable {
        var project: String
        var localId: String
        var email: String
        /// `PASSWORD_RESET`, `VERIFY_EMAIL`, `VERIFY_AND_CHANGE_EMAIL`, `EMAIL_SIGNIN` or
        /// `RECOVER_EMAIL` (listed only: an undo is kept with its account).
        var requestType: String
        /// The address a `VERIFY_AND_CHANGE_EMAIL` code moves the account to; the one a
        /// `RECOVER_EMAIL` code moves it back from.
        var newEmail: String?
        var issuedAt: Int64 = 0
        /// For an email change: when an undo had last moved the account back, as the request saw it
        /// (``HearthStorage/UserRecord/emailRecoveredAt``). A code asked for before an undo is refused.
        var recoveredAt: Int64?

        /// Where the code was mailed: the new address for a change, else the account's.
        var recipient: String { requestType == "VERIFY_AND_CHANGE_EMAIL" ? newEmail ?? email : email }
    }

    enum Lookup: Equatable {
        case valid(Entry)
        case expired
        case unknown
    }

    static let lifetimeMillis: Int64 = 60 * 60 * 1000
    private let entries = Mutex<[String: Entry]>([:])
    /// When expired codes were last swept (ms since 1970): at most once a minute, not at every issue,
    /// which made a flood of requests quadratic under the lock.
    private let lastSweep = Mutex<Int64>(0)

    /// Issues a code for `entry`; `now` in ms since 1970.
    func issue(_ entry: Entry, now: Int64) -> String {
        var bytes = [UInt8](repeating: 0, count: 24)
        var generator = SystemRandomNumberGenerator()
        for index in bytes.indices { bytes[index] = generator.next() }
        let code = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        var stored = entry
        stored.issuedAt = now
        let sweep = lastSweep.withLock { last in
            guard now - last >= 60_000 else { return false }
            last = now
            return true
        }
        entries.withLock { entries in
            if sweep { entries = entries.filter { now - $0.value.issuedAt < Self.lifetimeMillis } }
            entries[code] = stored
        }
        return code
    }

    /// Lists a code made elsewhere (an undo of an address change) with the pending ones, for the
    /// emulator's listing; it is used up here as any other.
    func list(_ code: String, _ entry: Entry, now: Int64) {
        var stored = entry
        stored.issuedAt = now
        entries.withLock { $0[code] = stored }
    }

    /// Voids the pending codes of an account (once an undo has moved it back, those asked for before
    /// would move it again), except its listed undos.
    func revoke(project: String, localId: String) {
        entries.withLock { entries in
            entries = entries.filter { $0.value.project != project || $0.value.localId != localId || $0.value.requestType == "RECOVER_EMAIL" }
        }
    }

    /// What a code is for, without using it.
    func peek(_ code: String, now: Int64) -> Lookup {
        entries.withLock { entries in
            guard let entry = entries[code] else { return .unknown }
            return now - entry.issuedAt < Self.lifetimeMillis ? .valid(entry) : .expired
        }
    }

    /// Uses a code: it is valid once.
    func take(_ code: String, now: Int64) -> Lookup {
        entries.withLock { entries in
            guard let entry = entries.removeValue(forKey: code) else { return .unknown }
            return now - entry.issuedAt < Self.lifetimeMillis ? .valid(entry) : .expired
        }
    }

    /// The pending codes of a project, oldest first.
    func pending(project: String, now: Int64) -> [(code: String, entry: Entry)] {
        entries.withLock { entries in
            entries.filter { $0.value.project == project && now - $0.value.issuedAt < Self.lifetimeMillis }
                .map { (code: $0.key, entry: $0.value) }
                .sorted { $0.entry.issuedAt < $1.entry.issuedAt }
        }
    }
}

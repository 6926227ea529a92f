import Foundation
import Hearth
import Synchronization

/// The one place that talks to the database for the Profiles app: everything else (the model,
/// validation, filters, the list model, the terminal client) goes through it. The data is the web
/// app's (`/apps/profiles/`): `profiles/<push id>` holds ``Profile``s and `meta/nextId` the last id
/// handed out, so both apps see and change the same directory at once.
///
/// For example:
/// ```swift
/// let database = try Database(url: "http://127.0.0.1:9000?ns=profiles")
/// let directory = ProfileDirectory(database: database)
/// let ada = try await directory.add(NewProfile(name: "Ada Lovelace", age: 36, gender: .female))
/// for try await update in directory.updates() {
///     print(update.list.profiles.map(\.name), update.changes)
/// }
/// ```
public final class ProfileDirectory: Sendable {
    /// Where profiles live.
    public static let profilesPath = "profiles"
    /// The counter ids come from (the last id handed out).
    public static let nextIDPath = "meta/nextId"

    public let database: Database
    private let profiles: DatabaseReference

    public init(database: Database) {
        self.database = database
        profiles = database.reference(withPath: Self.profilesPath)
    }

    // MARK: Reading and watching

    /// Calls `onUpdate` with the whole directory now and after every change made anywhere (on the
    /// database's callback queue, in order), with what changed since the previous call. Keep the
    /// returned ``ProfileWatch`` and cancel it to stop.
    ///
    /// ```swift
    /// let watch = directory.watch { update in
    ///     for change in update.changes { print(change) }
    /// } onError: { error in print("stopped:", error) }
    /// ```
    public func watch(
        _ onUpdate: @escaping @Sendable (ProfileUpdate) -> Void,
        onError: (@Sendable (any Error) -> Void)? = nil
    ) -> ProfileWatch {
        let differ = Differ()
        let handle = profiles.observe(.value, with: { snapshot in
            onUpdate(differ.update(with: ProfileList(snapshot: snapshot)))
        }, withCancel: { error in onError?(error) })
        return ProfileWatch(query: profiles, handle: handle)
    }

    /// The directory now and after every change made anywhere, each with what changed since the
    /// one before; none is skipped (unbounded buffering), so the changes add up exactly. Ends with
    /// an error if the server refuses the listen; ending the loop or cancelling the task stops
    /// watching.
    public func updates() -> AsyncThrowingStream<ProfileUpdate, any Error> {
        let (stream, continuation) = AsyncThrowingStream<ProfileUpdate, any Error>.makeStream()
        let watch = watch({ continuation.yield($0) }, onError: { continuation.finish(throwing: $0) })
        continuation.onTermination = { _ in watch.cancel() }
        return stream
    }

    /// Whether the client is connected to the server, now and after each change (`.info/connected`).
    public func connection() -> AsyncStream<Bool> {
        let (stream, continuation) = AsyncStream<Bool>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let connected = database.reference(withPath: ".info/connected")
        let handle = connected.observe(.value) { snapshot in continuation.yield((snapshot.value as? Bool) ?? false) }
        continuation.onTermination = { _ in connected.removeObserver(withHandle: handle) }
        return stream
    }

    /// Returns once connected; throws ``ProfileDirectoryError/unreachable(_:)`` after `timeout`.
    /// Writes made while unreachable would wait for the server forever, so tools check first.
    public func waitUntilConnected(timeout: Duration = .seconds(5)) async throws {
        let connection = connection()
        let connected = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await isConnected in connection where isConnected { return true }
                return false
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return false
            }
            defer { group.cancelAll() }
            return try await group.next() ?? false
        }
        guard connected else { throw ProfileDirectoryError.unreachable(profiles.root.url) }
    }

    /// The whole directory, read once.
    public func list() async throws -> ProfileList {
        ProfileList(snapshot: try await profiles.getData())
    }

    /// The profile with `id`, or nil when there is none.
    public func profile(withID id: Int) async throws -> Profile? {
        let snapshot = try await profiles.queryOrdered(byChild: "id").queryEqual(toValue: id).getData()
        return ProfileList(snapshot: snapshot).profile(withID: id)
    }

    /// The profile with `id`; throws ``ProfileDirectoryError/noProfile(id:)`` when there is none.
    public func existingProfile(withID id: Int) async throws -> Profile {
        guard let profile = try await profile(withID: id) else { throw ProfileDirectoryError.noProfile(id: id) }
        return profile
    }

    // MARK: Changing

    /// Stores a new profile under a new push id, with the next id from a transaction on
    /// `meta/nextId`: two clients adding at once get different, consecutive ids.
    @discardableResult
    public func add(_ content: NewProfile) async throws -> Profile {
        var profile = Profile(id: try await reserveID(), content)
        try await profile.save(in: database)
        return profile
    }

    /// Adds the sample people (``NewProfile/samples``, the web app's), one after another.
    @discardableResult
    public func addSamples() async throws -> [Profile] {
        var added: [Profile] = []
        for sample in NewProfile.samples { added.append(try await add(sample)) }
        return added
    }

    /// Removes a profile (its id is never handed out again).
    public func delete(_ profile: Profile) async throws {
        try await delete(key: try key(of: profile))
    }

    /// Removes the profile stored under `key`.
    public func delete(key: String) async throws {
        try await profiles.child(key).removeValue()
    }

    /// Replaces a profile's hobbies (none removes the field), as the web app does.
    public func setHobbies(_ hobbies: [String], of profile: Profile) async throws {
        try await setHobbies(hobbies, key: try key(of: profile))
    }

    /// Replaces the hobbies of the profile stored under `key`.
    public func setHobbies(_ hobbies: [String], key: String) async throws {
        try await profiles.child(key).child("hobbies").setValue(hobbies.isEmpty ? nil : hobbies)
    }

    /// Adds hobbies (comma-separated text allowed; ones it already has, ignoring case, are left
    /// out) by a transaction on the profile's hobbies, so edits made at the same time elsewhere
    /// are kept. Returns the hobbies stored.
    ///
    /// - Throws: ``ProfileValidationError`` (`hobbies`) for a hobby over 40 characters, or the
    ///   server's refusal (`permissionDenied` when the profile was deleted meanwhile).
    @discardableResult
    public func addHobbies(_ hobbies: [String], to profile: Profile) async throws -> [String] {
        let added = ProfileForm.parseHobbies(hobbies)
        if added.contains(where: { $0.utf16.count > ProfileValidationError.maximumHobbyLength }) {
            throw ProfileValidationError(messages: [.hobbies: ProfileValidationError.Message.addedHobbyTooLong])
        }
        return try await editHobbies(key: try key(of: profile)) { ProfileForm.parseHobbies($0 + added) }
    }

    /// Removes hobbies (ignoring case) by a transaction on the profile's hobbies. Returns the
    /// hobbies stored.
    @discardableResult
    public func removeHobbies(_ hobbies: [String], from profile: Profile) async throws -> [String] {
        let removed = Set(hobbies.map { $0.trimmingCharacters(in: .whitespacesAndNewlines).lowercased() })
        return try await editHobbies(key: try key(of: profile)) { $0.filter { !removed.contains($0.lowercased()) } }
    }

    // MARK: Helpers

    /// The next id: `meta/nextId` + 1, by transaction (the rules accept nothing else).
    private func reserveID() async throws -> Int {
        let counter = database.reference(withPath: Self.nextIDPath)
        let (committed, snapshot) = try await counter.runTransactionBlock { data in
            data.value = ((data.value as? Int) ?? 0) + 1
            return .success(withValue: data)
        }
        guard committed, let id = snapshot.value as? Int else { throw ProfileDirectoryError.idNotReserved }
        return id
    }

    private func editHobbies(key: String, _ edit: @escaping @Sendable ([String]) -> [String]) async throws -> [String] {
        let location = profiles.child(key).child("hobbies")
        let (committed, snapshot) = try await location.runTransactionBlock { data in
            let hobbies = edit(Self.strings(in: data.value))
            data.value = hobbies.isEmpty ? nil : hobbies
            return .success(withValue: data)
        }
        guard committed else { throw ProfileDirectoryError.hobbiesNotSaved }
        return Self.strings(in: snapshot.value)
    }

    /// Hobbies from a Foundation value: an array, or an object read in key order.
    private static func strings(in value: Any?) -> [String] {
        if let list = value as? [Any] { return list.compactMap { $0 as? String } }
        if let object = value as? [String: Any] {
            return object.sorted { $0.key.localizedStandardCompare($1.key) == .orderedAscending }.compactMap { $0.value as? String }
        }
        return []
    }

    private func key(of profile: Profile) throws -> String {
        guard let key = profile.identifier else { throw ProfileDirectoryError.notSaved(id: profile.id) }
        return key
    }

    /// Remembers the last list a watch saw, to report what changed (callbacks run one at a time,
    /// in order, on the callback queue; the lock only makes that safe to state).
    private final class Differ: Sendable {
        private let previous = Mutex<ProfileList?>(nil)

        func update(with list: ProfileList) -> ProfileUpdate {
            previous.withLock { previous in
                defer { previous = list }
                guard let before = previous else { return ProfileUpdate(list: list, changes: [], isInitial: true) }
                return ProfileUpdate(list: list, changes: list.changes(since: before), isInitial: false)
            }
        }
    }
}

/// A running ``ProfileDirectory/watch(_:onError:)``; ``cancel()`` stops it (idempotent).
public final class ProfileWatch: Sendable {
    private let query: DatabaseQuery
    private let handle: Mutex<DatabaseHandle?>

    init(query: DatabaseQuery, handle: DatabaseHandle) {
        self.query = query
        self.handle = Mutex(handle)
    }

    public func cancel() {
        guard let handle = handle.withLock({ handle in defer { handle = nil }; return handle }) else { return }
        query.removeObserver(withHandle: handle)
    }
}

/// The directory at one moment: the profiles in id order, and the entries under `profiles/` that
/// are not valid profiles (written by hand or by an older client), reported rather than dropped.
public struct ProfileList: Equatable, Sendable {
    /// In id order.
    public var profiles: [Profile]
    /// One per entry that did not decode, naming its location and why.
    public var invalid: [SnapshotDecodingError]

    public init(profiles: [Profile] = [], invalid: [SnapshotDecodingError] = []) {
        self.profiles = profiles.sorted(by: ProfileSort.id.areInIncreasingOrder)
        self.invalid = invalid
    }

    /// The children of a snapshot of `profiles/`.
    public init(snapshot: DataSnapshot) {
        let decoded = snapshot.decodedChildren(as: Profile.self)
        self.init(profiles: decoded.values, invalid: decoded.failures)
    }

    public func profile(withID id: Int) -> Profile? { profiles.first { $0.id == id } }

    public func profile(withKey key: String) -> Profile? { profiles.first { $0.identifier == key } }

    /// What turns `previous` into this list: profiles removed, changed and added (each in id
    /// order, matched by push id), then entries that became invalid.
    public func changes(since previous: ProfileList) -> [ProfileChange] {
        let before = Dictionary(previous.profiles.compactMap { p in p.identifier.map { ($0, p) } }, uniquingKeysWith: { a, _ in a })
        let after = Dictionary(profiles.compactMap { p in p.identifier.map { ($0, p) } }, uniquingKeysWith: { a, _ in a })
        var changes: [ProfileChange] = []
        for old in previous.profiles where after[old.identifier ?? ""] == nil { changes.append(.removed(old)) }
        for new in profiles {
            guard let old = before[new.identifier ?? ""] else { continue }
            if old != new { changes.append(.changed(from: old, to: new)) }
        }
        for new in profiles where before[new.identifier ?? ""] == nil { changes.append(.added(new)) }
        for failure in invalid where !previous.invalid.contains(failure) { changes.append(.invalid(failure)) }
        return changes
    }
}

/// One change to the directory, as ``ProfileList/changes(since:)`` reports it.
public enum ProfileChange: Equatable, Sendable {
    case added(Profile)
    case changed(from: Profile, to: Profile)
    case removed(Profile)
    /// An entry under `profiles/` that is not a valid profile appeared (or changed).
    case invalid(SnapshotDecodingError)

    /// The profile as it is now (as it was, when removed); nil for invalid data.
    public var profile: Profile? {
        switch self {
        case .added(let profile), .removed(let profile), .changed(_, let profile): profile
        case .invalid: nil
        }
    }
}

/// What a watch delivers: the directory and what changed since the previous delivery (nothing for
/// the first, ``isInitial``).
public struct ProfileUpdate: Equatable, Sendable {
    public var list: ProfileList
    public var changes: [ProfileChange]
    public var isInitial: Bool

    public init(list: ProfileList, changes: [ProfileChange], isInitial: Bool) {
        self.list = list
        self.changes = changes
        self.isInitial = isInitial
    }
}

/// Why the directory could not do what was asked.
public enum ProfileDirectoryError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No connection to the server at the URL within the time allowed.
    case unreachable(String)
    /// No profile has this id.
    case noProfile(id: Int)
    /// The profile was never stored, so it has no push id.
    case notSaved(id: Int)
    /// The transaction on `meta/nextId` did not commit.
    case idNotReserved
    /// A hobby edit's transaction did not commit.
    case hobbiesNotSaved

    public var description: String {
        switch self {
        case .unreachable(let url): "cannot reach the Hearth server at \(url)"
        case .noProfile(let id): "no profile with id \(id)"
        case .notSaved(let id): "profile \(id) was never saved"
        case .idNotReserved: "Could not reserve an id; try again."
        case .hobbiesNotSaved: "The hobbies were not saved; try again."
        }
    }
}
